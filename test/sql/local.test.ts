import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { LocalSqlite } from '../../src/sql/local.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { CachingExecutor } from '../../src/factory/exec-cache.ts';
import type { ExecResult, SqlExecutor } from '../../src/sql/types.ts';
import { makeDb, tempDir } from './helpers.ts';

const tmp = tempDir();
const A = join(tmp.dir, 'a.sqlite');
const B = join(tmp.dir, 'b.sqlite');
let pool: SqlPool;
let local: LocalSqlite;

before(() => {
  makeDb(A, `CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, data BLOB, big INTEGER);
    WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 300)
    INSERT INTO t SELECT x, 'name-' || x, x'00ff10', 9007199254740993 FROM r;`);
  // The same table, other rows: a variant database as the factory makes them.
  makeDb(B, `CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, data BLOB, big INTEGER);
    INSERT INTO t VALUES (1, 'other', NULL, 1);`);
  pool = new SqlPool({ size: 1 });
  const l = LocalSqlite.create(pool);
  assert.ok(l, "agro's SQLite extension is built (npm run build:native): queries in this process can be stopped");
  local = l;
});

after(async () => {
  await local.close();
  await pool.close();
  tmp.cleanup();
});

/** A result without its timing, for comparing two executors' answers. */
const answer = (r: ExecResult) => {
  const { elapsedMs: _e, ...rest } = r;
  return rest;
};

test('in-process answers are the pool processes\' answers: rows, blobs, big integers, caps, errors', async () => {
  const cases: Array<[string, string, object]> = [
    [A, 'SELECT id, name, data FROM t ORDER BY id', { maxRows: 7 }],
    [A, 'SELECT id, name FROM t ORDER BY id', { maxBytes: 100 }],
    [A, 'SELECT big FROM t LIMIT 2', { safeIntegers: true }],
    [A, 'SELECT "name-1" FROM t LIMIT 1', {}], // a double-quoted string, as SQLite's default build reads it
    [A, 'SELECT nope FROM t', {}],
    [A, 'DELETE FROM t', {}],
    [A, 'SELECT 1; SELECT 2', {}],
    [join(tmp.dir, 'missing.sqlite'), 'SELECT 1', {}],
    [B, 'SELECT * FROM t', {}],
  ];
  for (const [db, sql, opts] of cases) assert.deepEqual(answer(await local.execute(db, sql, opts)), answer(await pool.execute(db, sql, opts)), sql);
  const blob = await local.execute(A, 'SELECT data FROM t LIMIT 1');
  assert.ok(blob.ok);
  // A Buffer, as the pool's processes send it back (a pair's stored result is written from it).
  assert.ok(Buffer.isBuffer(blob.rows[0][0]));
  assert.equal(local.executed, cases.length - 2 + 1); // the guard refused two before they ran
});

test('a runaway query is stopped at its limit and the executor goes on', async () => {
  const t0 = performance.now();
  const r = await local.execute(A, 'WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r', { timeoutMs: 300 });
  assert.ok(!r.ok && r.error === 'timeout', JSON.stringify(r));
  assert.ok(performance.now() - t0 < 3000);
  const next = await local.execute(A, 'SELECT count(*) FROM t');
  assert.ok(next.ok);
  assert.deepEqual(next.rows, [[300]]);
});

test('a cached answer is reused for the same database and SQL, never for another database or other limits', async () => {
  let asked = 0;
  const counting: SqlExecutor = {
    execute: (db, sql, opts) => {
      asked++;
      return local.execute(db, sql, opts);
    },
    close: async () => {},
  };
  const cache = new CachingExecutor(counting);
  const sql = 'SELECT count(*) FROM t';
  const a1 = await cache.execute(A, sql);
  const a2 = await cache.execute(A, sql);
  assert.equal(asked, 1);
  assert.equal(a2, a1);
  // The variant has the same table and the same SQL: its own answer, asked of its own file.
  const b = await cache.execute(B, sql);
  assert.equal(asked, 2);
  assert.ok(a1.ok && b.ok);
  assert.deepEqual([a1.rows, b.rows], [[[300]], [[1]]]);
  // Other row caps are another question (a capped answer is not the whole one).
  await cache.execute(A, sql, { maxRows: 1 });
  assert.equal(asked, 3);
  assert.deepEqual([cache.hits, cache.misses], [1, 3]);
});
