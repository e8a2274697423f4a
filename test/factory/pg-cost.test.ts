// Issue 34, the factory on a server: the plan-cost gate from PostgreSQL's EXPLAIN (factory/cost.ts PgQueryCost,
// sql/pg-plan.ts) on a real server, beside SQLite's in shapes-throughput.test.ts.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { runFactory } from '../../src/factory/pipeline.ts';
import { PgQueryCost, MAX_ROWS_READ } from '../../src/factory/cost.ts';
import { introspectDatabase } from '../../src/sql/executor.ts';
import { copySqliteToPostgres } from '../../src/sql/pg-copy.ts';
import { PG, postgresForTests } from '../support/postgres.ts';
import { makeShopDb, tmpDir } from './fixtures.ts';

describe('the cost gate on a PostgreSQL server', { skip: PG.skip }, () => {
  const live = postgresForTests();

  test('cost gate: the planner\'s cost drops a cross join of big tables and keeps a key lookup; the factory drops such queries before running them', async () => {
    await live.server.createDatabase('big');
    await live.server.admin(
      `CREATE TABLE kinds (kind_id INTEGER PRIMARY KEY, name TEXT, family TEXT);
       CREATE TABLE events (event_id INTEGER PRIMARY KEY, kind_id INTEGER REFERENCES kinds(kind_id), score INTEGER, place TEXT);
       CREATE TABLE people (person_id INTEGER PRIMARY KEY, name TEXT, city TEXT);
       INSERT INTO kinds SELECT x, 'kind ' || x, 'family ' || (x % 4) FROM generate_series(1, 60) x;
       INSERT INTO events SELECT x, x % 60 + 1, x % 97, 'place ' || (x % 13) FROM generate_series(1, 150000) x;
       INSERT INTO people SELECT x, 'person ' || x, 'city ' || (x % 50) FROM generate_series(1, 30000) x;
       ANALYZE`,
      'big',
    );
    const url = live.server.adminUrl('big');
    const schema = await introspectDatabase(url, { statsRowLimit: 1000 });
    const cost = new PgQueryCost(url, schema);
    try {
      assert.ok(cost.active);
      assert.ok(await cost.tooCostly('SELECT COUNT(*) FROM events AS T1 CROSS JOIN people AS T2 WHERE T1.score > T2.person_id'));
      assert.ok(await cost.tooCostly('SELECT COUNT(*) FROM people AS T1 INNER JOIN people AS T2 ON T1.city = T2.city'));
      assert.ok(!(await cost.tooCostly('SELECT score FROM events WHERE event_id = 7')));
      assert.ok(!(await cost.tooCostly('SELECT T2.name, COUNT(*) FROM events AS T1 INNER JOIN kinds AS T2 ON T1.kind_id = T2.kind_id GROUP BY T2.name')));
      // Not a read query, or not plannable: no verdict (the guard and the run say why).
      assert.equal(await cost.estimate('DELETE FROM events'), 0);
      assert.equal(await cost.estimate('SELECT nope FROM events'), 0);
      assert.equal((await live.server.admin('SELECT COUNT(*) FROM events', 'big'))[0][0], '150000');
    } finally {
      await cost.close();
    }
    // The knob: a smaller limit drops a plain scan of the big table.
    const strict = new PgQueryCost(url, schema, 10_000);
    try {
      assert.equal(strict.maxCost, 400);
      assert.ok(await strict.tooCostly('SELECT AVG(score) FROM events'));
    } finally {
      await strict.close();
    }
    // Small databases are never checked.
    await copySqliteToPostgres(makeShopDb(tmpDir()), live.server.adminUrl('shop'));
    const small = new PgQueryCost(live.server.adminUrl('shop'), await introspectDatabase(live.server.adminUrl('shop')));
    assert.equal(small.active, false);
    assert.equal(await small.tooCostly('SELECT COUNT(*) FROM orders AS a CROSS JOIN orders AS b CROSS JOIN orders AS c'), false);
    await small.close();
    // The factory on the big database: too-costly candidates are dropped, and every written query is within the gate.
    const r = await runFactory({ db: url, out: join(tmpDir(), 'out'), n: 20, seed: 1, variants: 0 }, { executor: live.exec });
    assert.ok((r.manifest.rejections.synthesize?.too_costly ?? 0) > 0, JSON.stringify(r.manifest.rejections));
    assert.equal(r.manifest.args.maxRowsRead, MAX_ROWS_READ);
    const check = new PgQueryCost(url, schema);
    try {
      for (const row of r.rows) assert.ok((await check.estimate(row.SQL)) <= check.maxCost, row.SQL);
    } finally {
      await check.close();
    }
    assert.ok(r.rows.length >= 10 || r.manifest.shortfall, 'filled or explained');
  });
});
