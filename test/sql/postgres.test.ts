// The PostgreSQL executor and introspection against a real server started by the test (test/support/postgres.ts).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { createExecutor, engineOf, introspectDatabase } from '../../src/sql/executor.ts';
import { pgDocs } from '../../src/prompt/pg-docs.ts';
import { sandboxRoleSql } from '../../src/sql/pg-setup.ts';
import { isPostgresUrl, PgExecutor, pgClientConfig, redactUrl, typeParsers, withoutRedactedPassword } from '../../src/sql/postgres.ts';
import { CappedQuery } from '../../src/sql/pg-capped-query.ts';
import pg from 'pg';
import { renderSchema } from '../../src/prompt/render.ts';
import type { ExecResult, SqlExecutor } from '../../src/sql/types.ts';
import { PG, startPostgres, type PgServer } from '../support/postgres.ts';
import { makeDb, tempDir } from './helpers.ts';

function ok(r: ExecResult): Extract<ExecResult, { ok: true }> {
  assert.ok(r.ok, r.ok ? '' : `${r.error}: ${r.message}`);
  return r;
}

test('a database string is a SQLite path or a postgres:// URL', () => {
  assert.equal(engineOf('data/databases/music_store/music_store.sqlite'), 'sqlite');
  assert.equal(engineOf('postgres://u:p@127.0.0.1:5432/shop'), 'postgres');
  assert.equal(engineOf('postgresql://127.0.0.1/shop'), 'postgres');
  assert.equal(isPostgresUrl('./postgres/file.sqlite'), false);
});

test('a URL without its password: redacted for reports, then without one (PGPASSWORD gives it); a {db_id} root stays one', () => {
  assert.equal(redactUrl('postgres://u:secret@h:5432/shop?sslmode=disable'), 'postgres://u:***@h:5432/shop?sslmode=disable');
  assert.equal(withoutRedactedPassword('postgres://u:***@h:5432/shop'), 'postgres://u@h:5432/shop');
  assert.equal(withoutRedactedPassword('postgres://u:pw@h/shop'), 'postgres://u:pw@h/shop');
  assert.equal(redactUrl('/data/shop.sqlite'), '/data/shop.sqlite');
  // An `agro eval --db-root 'postgres://u:p@h/bird_{db_id}'` report is read back as that root (the dashboard's side by side).
  assert.equal(redactUrl('postgres://u:secret@h/bird_{db_id}'), 'postgres://u:***@h/bird_{db_id}');
  assert.equal(withoutRedactedPassword(redactUrl('postgres://u:secret@h/bird_{db_id}')), 'postgres://u@h/bird_{db_id}');
});

describe('PostgreSQL executor and introspection', { skip: PG.skip }, () => {
  let server: PgServer;
  let url: string;
  let exec: SqlExecutor;
  const tmp = tempDir('agro-pg-');

  before(async () => {
    server = await startPostgres();
    await server.createDatabase('shop');
    await server.admin(
      `CREATE TABLE customer (id integer PRIMARY KEY, name text NOT NULL, vip boolean, born date);
       CREATE TABLE "Order" (cust integer, n integer, total numeric(10,2), big bigint, ratio double precision, blob bytea, tags jsonb,
                             PRIMARY KEY (cust, n), FOREIGN KEY (cust) REFERENCES customer (id));
       CREATE TABLE line (cust integer, n integer, item text, FOREIGN KEY (cust, n) REFERENCES "Order" (cust, n));
       INSERT INTO customer VALUES (1, 'Ada', true, '1815-12-10'), (2, 'Alan', false, NULL), (3, 'Grace', NULL, '1906-12-09');
       INSERT INTO "Order" VALUES (1, 1, 10.50, 9007199254740993, 0.25, '\\x00ff', '{"a": 1}'), (1, 2, 3, 2, 1.5, NULL, NULL), (2, 1, 7.25, 3, NULL, NULL, '[]');
       INSERT INTO line VALUES (1, 1, 'pen'), (1, 1, 'ink');
       COMMENT ON DATABASE shop IS 'A small shop''s customers and orders.';
       COMMENT ON TABLE customer IS 'People who bought something.';
       COMMENT ON COLUMN customer.vip IS 'True for customers with the loyalty card.';
       COMMENT ON COLUMN "Order".total IS 'Order total in euros.'`,
      'shop',
    );
    for (const q of sandboxRoleSql({ role: 'reader', password: 'reader-pw', database: 'shop' })) await server.admin(q, 'shop');
    url = server.url('reader', 'reader-pw', 'shop');
    exec = createExecutor({ size: 2 });
  });
  after(async () => {
    await exec?.close();
    await server?.stop();
    tmp.cleanup();
  });

  test('cells come back as SQLite would give them: integers, floats, 1/0 booleans, bytes, dates as text', async () => {
    const r = ok(await exec.execute(url, 'SELECT c.id, c.vip, c.born, o.total, o.big, o.ratio, o.blob, o.tags FROM customer c JOIN "Order" o ON o.cust = c.id ORDER BY c.id, o.n'));
    assert.deepEqual(r.columns, ['id', 'vip', 'born', 'total', 'big', 'ratio', 'blob', 'tags']);
    assert.deepEqual(r.rows[0].slice(0, 4), [1, 1, '1815-12-10', 10.5]);
    assert.equal(r.rows[0][5], 0.25);
    assert.deepEqual([...(r.rows[0][6] as Uint8Array)], [0, 255]);
    assert.equal(r.rows[0][7], '{"a": 1}');
    assert.deepEqual(r.rows[2].slice(0, 3), [2, 0, null]);
    const exact = ok(await exec.execute(url, 'SELECT big, total, count(*) OVER () FROM "Order" ORDER BY big DESC', { safeIntegers: true }));
    assert.deepEqual(exact.rows[0], [9007199254740993n, 10.5, 3n]);
    // SUM of integers is numeric in PostgreSQL: integral, so an integer as SQLite's SUM would give.
    assert.deepEqual(ok(await exec.execute(url, 'SELECT sum(n), avg(n) FROM "Order"', { safeIntegers: true })).rows, [[4n, 1.3333333333333333]]);
  });

  test('row and byte caps cut the transfer and say so', async () => {
    const rows = ok(await exec.execute(url, 'SELECT g FROM generate_series(1, 100000) g', { maxRows: 7 }));
    assert.equal(rows.rows.length, 7);
    assert.equal(rows.truncated, true);
    const bytes = ok(await exec.execute(url, "SELECT repeat('x', 1000) FROM generate_series(1, 1000)", { maxBytes: 10_000 }));
    // Bytes as SQLite's executor counts them: text in UTF-8, 1,000 bytes a row here.
    assert.equal(bytes.rows.length, 10);
    assert.equal(bytes.truncated, true);
    assert.equal(bytes.truncatedBy, 'bytes');
    const euros = ok(await exec.execute(url, "SELECT repeat('€', 1000) FROM generate_series(1, 1000)", { maxBytes: 10_000 }));
    assert.equal(euros.rows.length, 3, 'a "€" is 3 bytes of UTF-8');
    assert.equal(rows.truncatedBy, 'rows');
    assert.equal(ok(await exec.execute(url, 'SELECT 1 WHERE false')).truncated, false);
    const none = ok(await exec.execute(url, 'SELECT g FROM generate_series(1, 3) g', { maxRows: 0 }));
    assert.deepEqual([none.rows, none.truncated, none.columns], [[], true, ['g']]);
    const exact = ok(await exec.execute(url, 'SELECT g FROM generate_series(1, 3) g', { maxRows: 3 }));
    assert.deepEqual([exact.rows.length, exact.truncated], [3, false]);
  });

  test('an error after some rows fails the query, and the connection serves the next one', async () => {
    const r = await exec.execute(url, 'SELECT 10 / (g - 3) FROM generate_series(1, 5) g');
    assert.ok(!r.ok && r.error === 'runtime' && /division by zero/.test(r.message), JSON.stringify(r));
    const rs = await Promise.all(Array.from({ length: 4 }, () => exec.execute(url, 'SELECT count(*) FROM customer')));
    for (const x of rs) assert.deepEqual(ok(x).rows, [[3]]);
  });

  test('a query goes out in one socket write: its five extended-protocol messages corked together, as pg\'s own queries are', async () => {
    const c = new pg.Client(pgClientConfig(url, 'agro-test'));
    await c.connect();
    try {
      const stream = (c as unknown as { connection: { stream: { _write: (...a: unknown[]) => unknown; _writev?: (...a: unknown[]) => unknown } } }).connection.stream;
      let writes = 0;
      const write = stream._write.bind(stream);
      stream._write = (...a: unknown[]) => (writes++, write(...a));
      if (stream._writev) {
        const writev = stream._writev.bind(stream);
        stream._writev = (...a: unknown[]) => (writes++, writev(...a));
      }
      const parsers = typeParsers(false);
      for (const sql of ['SELECT name FROM customer WHERE id = 2', 'SELECT nope FROM customer']) {
        writes = 0;
        const q = new CappedQuery(sql, { maxRows: 10, maxBytes: 1 << 20, parserFor: (oid) => parsers.getTypeParser(oid, 'text') as (t: string) => string });
        c.query(q);
        const r = await q.done.catch((e: Error) => e);
        assert.equal(writes, 1, `${sql}: ${writes} socket writes`);
        if (sql.includes('nope')) assert.match((r as Error).message, /nope/);
        else assert.deepEqual((r as { rows: unknown[][] }).rows, [['Alan']]);
      }
    } finally {
      await c.end();
    }
  });

  test('errors are classified as on SQLite', async () => {
    const cases: Array<[string, string]> = [
      ['SELECT nosuch FROM customer', 'syntax'],
      ['SELECT * FROM nosuch', 'syntax'],
      ['SELEC 1', 'syntax'],
      ['SELECT 1/0', 'runtime'],
      ['DELETE FROM customer', 'refused'],
    ];
    for (const [sql, kind] of cases) {
      const r = await exec.execute(url, sql);
      assert.equal(r.ok ? 'ok' : r.error, kind, sql);
    }
    const noDb = await exec.execute(server.url('reader', 'reader-pw', 'nosuchdb'), 'SELECT 1');
    assert.equal(noDb.ok ? 'ok' : noDb.error, 'no_database');
    const badPw = await exec.execute(server.url('reader', 'wrong', 'shop'), 'SELECT 1');
    assert.equal(badPw.ok ? 'ok' : badPw.error, 'bad_database');
    assert.ok(!badPw.ok && !badPw.message.includes('wrong'), 'the password is not echoed');
  });

  test('a runaway stops at its wall or CPU limit', async () => {
    // 50 ms past the limit, scaled on an oversubscribed machine (see pg-sandbox.test.ts). A stop that was
    // late once runs again: a cancel that does not work is late every time, a burst of load delays one run.
    const bound = (): number => 200 + 50 * Math.max(1, loadavg()[0] / availableParallelism());
    let wall = await exec.execute(url, 'SELECT pg_sleep(5)', { timeoutMs: 200 });
    if (wall.elapsedMs >= bound()) wall = await exec.execute(url, 'SELECT pg_sleep(5)', { timeoutMs: 200 });
    assert.ok(!wall.ok && wall.error === 'timeout' && wall.limit === 'wall', JSON.stringify(wall));
    assert.ok(wall.elapsedMs < bound(), String(wall.elapsedMs));
    const cpu = await exec.execute(url, 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r', { timeoutMs: 10_000, cpuMs: 150 });
    assert.ok(!cpu.ok && cpu.error === 'timeout' && cpu.limit === 'cpu', JSON.stringify(cpu));
    assert.ok(cpu.elapsedMs < 1000, String(cpu.elapsedMs));
    assert.deepEqual(ok(await exec.execute(url, 'SELECT count(*) FROM customer')).rows, [[3]]);
  });

  test('one executor runs SQLite files and PostgreSQL URLs side by side', async () => {
    const file = makeDb(join(tmp.dir, 'shop.sqlite'), "CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customer VALUES (1, 'Ada');");
    const [a, b] = await Promise.all([exec.execute(file, 'SELECT name FROM customer WHERE id = 1'), exec.execute(url, 'SELECT name FROM customer WHERE id = 1')]);
    assert.deepEqual(ok(a).rows, ok(b).rows);
  });

  test('the pool opens at most `size` connections per server', async () => {
    const small = new PgExecutor({ size: 2 });
    try {
      const rs = await Promise.all(Array.from({ length: 6 }, () => small.execute(url, 'SELECT pg_backend_pid() FROM pg_sleep(0.05)')));
      const pids = new Set(rs.map((r) => ok(r).rows[0][0]));
      assert.ok(pids.size <= 2, `${pids.size} backends`);
      const busy = [small.execute(url, 'SELECT pg_sleep(0.3)'), small.execute(url, 'SELECT pg_sleep(0.3)')];
      const waited = await small.execute(url, 'SELECT 1', { maxWaitMs: 50 });
      assert.ok(!waited.ok && waited.error === 'timeout' && waited.limit === 'wait', JSON.stringify(waited));
      for (const r of await Promise.all(busy)) ok(r);
      ok(await small.execute(url, 'SELECT 1', { maxWaitMs: 50 }));
    } finally {
      await small.close();
    }
  });

  test('introspection reads tables, columns, types, primary and foreign keys', async () => {
    const schema = await introspectDatabase(url, { samples: 2 });
    assert.equal(schema.dbId, 'shop');
    assert.deepEqual(schema.tables.map((t) => t.name), ['Order', 'customer', 'line']);
    const order = schema.tables.find((t) => t.name === 'Order')!;
    assert.deepEqual(order.primaryKey, ['cust', 'n']);
    assert.deepEqual(order.foreignKeys, [{ fromTable: 'Order', fromColumns: ['cust'], toTable: 'customer', toColumns: ['id'], inferred: false }]);
    assert.deepEqual(
      order.columns.map((c) => [c.name, c.type, c.affinity, c.pk, c.notNull]),
      [
        ['cust', 'integer', 'INTEGER', 1, true],
        ['n', 'integer', 'INTEGER', 2, true],
        ['total', 'numeric(10,2)', 'NUMERIC', 0, false],
        ['big', 'bigint', 'INTEGER', 0, false],
        ['ratio', 'double precision', 'REAL', 0, false],
        ['blob', 'bytea', 'BLOB', 0, false],
        ['tags', 'jsonb', 'TEXT', 0, false],
      ],
    );
    assert.equal(order.rowCount, 3);
    const line = schema.tables.find((t) => t.name === 'line')!;
    assert.deepEqual(line.foreignKeys[0].fromColumns, ['cust', 'n']);
    assert.deepEqual(line.foreignKeys[0].toColumns, ['cust', 'n']);
    assert.equal(line.foreignKeys[0].toTable, 'Order');
    const vip = schema.tables.find((t) => t.name === 'customer')!.columns.find((c) => c.name === 'vip')!;
    assert.deepEqual([vip.stats.nullCount, vip.stats.distinctCount], [1, 2]);
    const total = order.columns.find((c) => c.name === 'total')!;
    assert.deepEqual([total.stats.min, total.stats.max], [3, 10.5]);
    const text = renderSchema(schema);
    assert.match(text, /CREATE TABLE "Order"/);
  });

  test('COMMENTs are the database documentation', async () => {
    const docs = await pgDocs(url);
    assert.equal(docs.overview, "A small shop's customers and orders.");
    assert.deepEqual(docs.tables, [
      { table: 'Order', columns: [{ column: 'total', description: 'Order total in euros.' }] },
      { table: 'customer', description: 'People who bought something.', columns: [{ column: 'vip', description: 'True for customers with the loyalty card.' }] },
    ]);
  });
});
