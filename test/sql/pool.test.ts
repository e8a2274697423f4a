import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqlPool } from '../../src/sql/pool.ts';
import type { ExecResult } from '../../src/sql/types.ts';
import { makeDb, tempDir } from './helpers.ts';
import { withPool } from '../support/with.ts';

const tmp = tempDir();
const DB = join(tmp.dir, 'shop.sqlite');
let pool: SqlPool;

before(() => {
  // 1000 rows so that a 4-way cross join (10^12 rows) cannot finish.
  makeDb(
    DB,
    `CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, data BLOB);
     WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 1000)
     INSERT INTO t SELECT x, 'name-' || x, x'00ff10' FROM r;`,
  );
  pool = new SqlPool({ size: 2, defaults: { timeoutMs: 10_000 } });
});

after(async () => {
  await pool.close();
  tmp.cleanup();
});

function ok(r: ExecResult): Extract<ExecResult, { ok: true }> {
  assert.ok(r.ok, r.ok ? '' : `${r.error}: ${r.message}`);
  return r;
}

function failed(r: ExecResult): Extract<ExecResult, { ok: false }> {
  assert.ok(!r.ok, 'expected an error result');
  return r;
}

test('a query returns columns and rows; blobs come back as bytes', async () => {
  const r = ok(await pool.execute(DB, 'SELECT id, name, data FROM t WHERE id IN (2, 3) ORDER BY id'));
  assert.deepEqual(r.columns, ['id', 'name', 'data']);
  assert.equal(r.rows.length, 2);
  assert.deepEqual(r.rows[0].slice(0, 2), [2, 'name-2']);
  assert.deepEqual([...(r.rows[1][2] as Uint8Array)], [0, 255, 16]);
  assert.equal(r.truncated, false);
});

test('every refused kind comes back as error "refused" and never runs', async () => {
  const refused = [
    'INSERT INTO t (id) VALUES (5000)',
    'UPDATE t SET name = 1',
    'DELETE FROM t',
    'REPLACE INTO t (id) VALUES (1)',
    'CREATE TABLE x (a)',
    'DROP TABLE t',
    'ALTER TABLE t ADD COLUMN z',
    `ATTACH DATABASE '${join(tmp.dir, 'attached.sqlite')}' AS a`,
    'DETACH DATABASE main',
    'PRAGMA user_version = 3',
    'VACUUM',
    'REINDEX',
    'ANALYZE',
    'BEGIN',
    'COMMIT',
    'SAVEPOINT s',
    'SELECT 1; SELECT 2',
    // Allowed first keyword, but the prepared statement writes: the second gate catches it.
    'WITH x AS (SELECT 1) DELETE FROM t',
    'WITH x AS (SELECT 1) INSERT INTO t (id) SELECT 9999 FROM x',
  ];
  for (const sql of refused) {
    const r = failed(await pool.execute(DB, sql));
    assert.equal(r.error, 'refused', sql);
  }
  const db = new Database(DB, { readonly: true });
  assert.equal(db.pragma('user_version', { simple: true }), 0, 'PRAGMA write never ran');
  assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 1000, 'no row deleted or added');
  db.close();
  assert.equal(existsSync(join(tmp.dir, 'attached.sqlite')), false, 'ATTACH never created its file');
});

test('a trailing semicolon and comments are accepted', async () => {
  const r = ok(await pool.execute(DB, '-- count\nSELECT count(*) /* all */ FROM t; -- done'));
  assert.deepEqual(r.rows, [[1000]]);
});

test('row cap stops an endless result early and marks it truncated', async () => {
  const r = ok(await pool.execute(DB, 'WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT x FROM r', { maxRows: 5 }));
  assert.deepEqual(r.rows, [[1], [2], [3], [4], [5]]);
  assert.equal(r.truncated, true);
});

test('byte cap cuts the result and marks it truncated', async () => {
  // Each row: 'name-NNN' (8 chars for ids 100..999) + an 8-byte integer = 16 bytes; 100 bytes keep 6 rows.
  const r = ok(await pool.execute(DB, 'SELECT id, name FROM t WHERE id >= 100 ORDER BY id', { maxBytes: 100 }));
  assert.equal(r.rows.length, 6);
  assert.deepEqual(r.rows[5], [105, 'name-105']);
  assert.equal(r.truncated, true);
  const full = ok(await pool.execute(DB, 'SELECT id FROM t WHERE id <= 10', { maxBytes: 80 }));
  assert.equal(full.rows.length, 10);
  assert.equal(full.truncated, false, '10 rows x 8 bytes fit exactly');
});

test('a 4-way cross join is stopped near its time limit and the pool answers the next query', async () => {
  const limit = 400;
  const t0 = performance.now();
  const r = failed(await pool.execute(DB, 'SELECT count(*) FROM t a, t b, t c, t d', { timeoutMs: limit }));
  const took = performance.now() - t0;
  assert.equal(r.error, 'timeout');
  assert.ok(took >= limit - 5, `stopped after ${took} ms`);
  assert.ok(took < limit + 3000, `stopped after ${took} ms`);
  const next = ok(await pool.execute(DB, 'SELECT max(id) FROM t'));
  assert.deepEqual(next.rows, [[1000]]);
});

test('an infinite recursive CTE is stopped near its time limit; queued queries still run in order', async () => {
  const limit = 300;
  const runaway = 'WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r';
  const t0 = performance.now();
  const results = await Promise.all([
    pool.execute(DB, runaway, { timeoutMs: limit }),
    pool.execute(DB, runaway, { timeoutMs: limit }),
    pool.execute(DB, 'SELECT 41 + 1'),
    pool.execute(DB, 'SELECT name FROM t WHERE id = 7'),
  ]);
  const took = performance.now() - t0;
  assert.equal(failed(results[0]).error, 'timeout');
  assert.equal(failed(results[1]).error, 'timeout');
  assert.deepEqual(ok(results[2]).rows, [[42]]);
  assert.deepEqual(ok(results[3]).rows, [['name-7']]);
  assert.ok(took < limit + 4000, `all four answered after ${took} ms`);
});

test('queued queries go to a child several at a time, each with its own limit; a runaway in a batch stops only itself', async () => {
  await withPool({ size: 1, defaults: { timeoutMs: 10_000 } }, async (one) => {
    ok(await one.execute(DB, 'SELECT 1')); // started and loaded
    const sent = one.messages;
    const spawned = one.spawned;
    const runaway = 'WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r';
    // The first query runs alone; the 7 queued behind it go as one batch, the runaway third in it.
    const ids = [1, 2, 3, 4, 5, 6, 7, 8];
    const results = await Promise.all(ids.map((id) => (id === 4 ? one.execute(DB, runaway, { timeoutMs: 300 }) : one.execute(DB, `SELECT name FROM t WHERE id = ${id}`))));
    assert.equal(failed(results[3]).error, 'timeout');
    for (const [i, id] of ids.entries()) if (id !== 4) assert.deepEqual(ok(results[i]).rows, [[`name-${id}`]], `query ${id}`);
    assert.equal(one.spawned, spawned);
    // 1 alone + 1 batch of 7: the child stops the runaway itself and goes on with the rest of the batch.
    assert.equal(one.messages - sent, 2);
  });
});

test('a runaway query is stopped inside its SQL process: no process is killed or started, and the same process answers next', async () => {
  await withPool({ size: 1 }, async (own) => {
    await own.execute(DB, 'SELECT 1'); // started and ready
    const [pid] = own.childPids();
    const spawned = own.spawned;
    const runaway = 'WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r';
    const wall = failed(await own.execute(DB, runaway, { timeoutMs: 300 }));
    assert.equal(wall.error, 'timeout');
    assert.match(wall.message, /300 ms limit/);
    assert.equal(wall.limit, 'wall');
    const cpu = failed(await own.execute(DB, 'SELECT count(*) FROM t a, t b, t c, t d', { timeoutMs: 20_000, cpuMs: 150 }));
    assert.equal(cpu.error, 'timeout');
    assert.match(cpu.message, /150 ms of CPU time/);
    assert.equal(cpu.limit, 'cpu');
    assert.ok(cpu.elapsedMs < 10_000, `elapsed ${cpu.elapsedMs}`);
    assert.equal(own.spawned, spawned, 'no process was started to replace a killed one');
    assert.deepEqual(own.childPids(), [pid]);
    assert.deepEqual(ok(await own.execute(DB, 'SELECT name FROM t WHERE id = 3')).rows, [['name-3']]);
  });
});

test('a query cannot lift its own limit: agro_limit without its process\'s secret is refused', async () => {
  const r = failed(await pool.execute(DB, "SELECT agro_limit('guess', 0, 0)"));
  assert.equal(r.error, 'runtime');
  assert.match(r.message, /agro_limit: not authorized/);
  const runaway = "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r WHERE (SELECT agro_limit('', 0, 0)) IS NULL";
  const t = failed(await pool.execute(DB, runaway, { timeoutMs: 300 }));
  assert.ok(t.error === 'timeout' || t.error === 'runtime', JSON.stringify(t));
});

test('missing database, garbage file and syntax errors map to their kinds', async () => {
  assert.equal(failed(await pool.execute(join(tmp.dir, 'nope.sqlite'), 'SELECT 1')).error, 'no_database');
  const garbage = join(tmp.dir, 'garbage.sqlite');
  writeFileSync(garbage, 'this is not a database, just text '.repeat(200));
  assert.equal(failed(await pool.execute(garbage, 'SELECT * FROM sqlite_schema')).error, 'bad_database');
  assert.equal(failed(await pool.execute(tmp.dir, 'SELECT 1')).error, 'bad_database', 'a directory');
  const syn = failed(await pool.execute(DB, 'SELECT FROM WHERE'));
  assert.equal(syn.error, 'syntax');
  assert.equal(failed(await pool.execute(DB, 'SELECT nope FROM t')).error, 'syntax');
  assert.equal(failed(await pool.execute(DB, 'SELECT abs(-9223372036854775808)')).error, 'runtime');
});

/** Waits until a loaded child other than `not` runs the query (a respawn after a kill). */
async function nextChild(p: SqlPool, not: number[]): Promise<number> {
  for (;;) {
    const pid = p.runningPids().find((x) => !not.includes(x));
    if (pid) return pid;
    await new Promise((r) => setTimeout(r, 20));
  }
}

const SLOW_COUNT = 'WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 2000000) SELECT count(*) FROM r';

test('a child killed from outside is not the query\'s fault: the query runs again on a fresh child', async () => {
  await withPool({ size: 1 }, async (p) => {
    ok(await p.execute(DB, 'SELECT 1'));
    const [pid] = p.childPids();
    assert.ok(pid > 0);
    const running = p.execute(DB, SLOW_COUNT, { timeoutMs: 60_000 });
    await new Promise((r) => setTimeout(r, 100));
    process.kill(pid, 'SIGKILL');
    assert.deepEqual(ok(await running).rows, [[2000000]]);
    assert.notEqual(p.childPids()[0], pid);
  });
});

test('a query whose child is killed on every run fails after 3 runs, and the pool recovers', async () => {
  await withPool({ size: 1 }, async (p) => {
    ok(await p.execute(DB, 'SELECT 1'));
    const running = p.execute(DB, 'WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r', { timeoutMs: 60_000 });
    const killed: number[] = [];
    for (let i = 0; i < 3; i++) {
      const pid = await nextChild(p, killed);
      killed.push(pid);
      process.kill(pid, 'SIGKILL');
    }
    const r = failed(await running);
    assert.equal(r.error, 'runtime');
    assert.match(r.message, /died \(signal SIGKILL\).*3 times/);
    assert.deepEqual(ok(await p.execute(DB, 'SELECT count(*) FROM t')).rows, [[1000]]);
  });
});

test('a result bigger than the child may hold fails as the query\'s own error, and is not retried', async () => {
  await withPool({ size: 1, memoryLimitMiB: 256 }, async (p) => {
    // Eight lazy 100 MB zeroblobs: SQLite's own allocation fails (SQLITE_NOMEM), the child lives on.
    const cols = Array.from({ length: 8 }, () => 'zeroblob(100000000)').join(', ');
    const r = failed(await p.execute(DB, `SELECT ${cols}`, { maxBytes: 1 << 30, timeoutMs: 60_000 }));
    assert.equal(r.error, 'runtime');
    assert.match(r.message, /more memory than the SQL executor may use/);
    assert.equal(p.spawned, 1);
    // 150 MB fits in SQLite but not twice (its copy out to JavaScript): V8 aborts the child. That is
    // the query's own limit: one replacement child, no second run.
    const big = failed(await p.execute(DB, 'SELECT randomblob(150000000)', { maxBytes: 1 << 30, timeoutMs: 60_000 }));
    assert.match(big.message, /more memory than the SQL executor may use \(256 MiB\)/);
    assert.equal(p.spawned, 1, 'the replacement starts with the next query');
    assert.deepEqual(ok(await p.execute(DB, 'SELECT count(*) FROM t')).rows, [[1000]]);
    assert.equal(p.spawned, 2);
  });
});

test('a reply that arrived while this process was busy past the limit is not a timeout', async () => {
  await withPool({ size: 1 }, async (p) => {
    ok(await p.execute(DB, 'SELECT 1'));
    const running = p.execute(DB, 'SELECT count(*) FROM t', { timeoutMs: 200 });
    const until = performance.now() + 800;
    while (performance.now() < until); // block the event loop well past the 200 ms limit
    const r = ok(await running);
    assert.deepEqual(r.rows, [[1000]]);
    assert.ok(r.elapsedMs < 200, `timed in the child: ${r.elapsedMs} ms`);
  });
});

test('close() resolves pending queries and later calls are rejected', async () => {
  const p = new SqlPool({ size: 1 });
  const running = p.execute(DB, 'WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r');
  const queued = p.execute(DB, 'SELECT 1');
  await new Promise((r) => setTimeout(r, 50));
  await p.close();
  assert.equal(failed(await running).error, 'runtime');
  assert.equal(failed(await queued).error, 'runtime');
  await assert.rejects(p.execute(DB, 'SELECT 1'), /closed/);
});

test('a database rewritten at the same path is reopened, not served from a stale handle', async () => {
  const path = join(tmp.dir, 'variant.sqlite');
  makeDb(path, 'CREATE TABLE v (x INTEGER); INSERT INTO v VALUES (1);');
  await withPool({ size: 1 }, async (p) => {
    assert.deepEqual(ok(await p.execute(path, 'SELECT x FROM v')).rows, [[1]]);
    makeDb(join(tmp.dir, 'next.sqlite'), 'CREATE TABLE v (x INTEGER); INSERT INTO v VALUES (2), (3);');
    renameSync(join(tmp.dir, 'next.sqlite'), path);
    assert.deepEqual(ok(await p.execute(path, 'SELECT x FROM v ORDER BY x')).rows, [[2], [3]]);
  });
});

test('bad options are a usage error', async () => {
  assert.throws(() => new SqlPool({ size: 0 }), /size/);
  assert.throws(() => new SqlPool({ memoryLimitMiB: 16 }), /memoryLimitMiB/);
  await assert.rejects(pool.execute(DB, 'SELECT 1', { timeoutMs: -1 }), /timeoutMs/);
  // setTimeout would turn a limit past 2^31-1 ms into 1 ms.
  await assert.rejects(pool.execute(DB, 'SELECT 1', { timeoutMs: 99_999_999_999 }), /timeoutMs must be an integer from 1 to/);
});
