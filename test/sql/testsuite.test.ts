import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SqlPool } from '../../src/sql/pool.ts';
import { testSuiteMatch } from '../../src/sql/testsuite.ts';
import { makeDb, tempDir } from './helpers.ts';

const tmp = tempDir();
const pool = new SqlPool({ size: 2 });
let dbs: string[];

before(() => {
  // Same schema, different data: the second database exposes a query that is only accidentally right.
  dbs = [
    makeDb(join(tmp.dir, 'v1.sqlite'), 'CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1), (2), (3);'),
    makeDb(join(tmp.dir, 'v2.sqlite'), 'CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1), (5), (9);'),
  ];
});

after(async () => {
  await pool.close();
  tmp.cleanup();
});

test('a query right on one database but wrong on a variant fails the suite', async () => {
  const r = await testSuiteMatch(pool, 'SELECT a FROM t WHERE a IN (2, 3)', 'SELECT a FROM t WHERE a > 1', dbs, { mode: 'spider' });
  assert.equal(r.match, false);
  assert.deepEqual(r.perDb.map((d) => [d.db, d.match]), [[dbs[0], true], [dbs[1], false]]);
  const good = await testSuiteMatch(pool, 'SELECT a FROM t WHERE a >= 2', 'SELECT a FROM t WHERE a > 1', dbs, { mode: 'spider' });
  assert.equal(good.match, true);
});

test('order comes from the gold query in spider mode; bird ignores it', async () => {
  const pred = 'SELECT a FROM t ORDER BY a';
  const gold = 'SELECT a FROM t ORDER BY a DESC';
  assert.equal((await testSuiteMatch(pool, pred, gold, dbs, { mode: 'spider' })).match, false);
  assert.equal((await testSuiteMatch(pool, pred, gold, dbs, { mode: 'bird' })).match, true);
});

test('a failing prediction or gold is reported per database', async () => {
  const r = await testSuiteMatch(pool, 'SELECT b FROM t', 'SELECT a FROM t', dbs, { mode: 'bird' });
  assert.equal(r.match, false);
  assert.match(r.perDb[0].error ?? '', /predicted query failed: syntax: no such column: b/);
  const g = await testSuiteMatch(pool, 'SELECT a FROM t', 'DELETE FROM t', dbs.slice(0, 1), { mode: 'bird' });
  assert.match(g.perDb[0].error ?? '', /gold query failed: refused/);
  const cut = await testSuiteMatch(pool, 'SELECT a FROM t', 'SELECT a FROM t', dbs.slice(0, 1), { mode: 'bird', maxRows: 2 });
  assert.match(cut.perDb[0].error ?? '', /truncated/);
  await assert.rejects(testSuiteMatch(pool, 'SELECT 1', 'SELECT 1', [], { mode: 'bird' }), /at least one database/);
});
