import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SqlPool } from '../../src/sql/pool.ts';
import { LanedExecutor } from '../../src/sql/lanes.ts';
import { makeDb, tempDir } from './helpers.ts';

const tmp = tempDir();
const DB = join(tmp.dir, 'lanes.sqlite');
const RUNAWAY = 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c';

before(() => {
  makeDb(DB, `CREATE TABLE t (id INTEGER PRIMARY KEY); INSERT INTO t VALUES (1), (2), (3);`);
});
after(() => tmp.cleanup());

test('cpuMs stops a query that burns CPU long before its wall-clock limit (read from /proc: Linux)', async () => {
  const pool = new SqlPool({ size: 1 });
  try {
    await pool.execute(DB, 'SELECT 1'); // the child is started and ready
    const r = await pool.execute(DB, RUNAWAY, { timeoutMs: 20_000, cpuMs: 200 });
    assert.equal(r.ok, false);
    assert.ok(!r.ok && r.error === 'timeout' && /200 ms of CPU time/.test(r.message), JSON.stringify(r));
    // It used at least its 200 ms of CPU, and was stopped far before the 20 s wall limit.
    assert.ok(r.elapsedMs >= 200 && r.elapsedMs < 10_000, `elapsed ${r.elapsedMs}`);
    // A quick query under the same budget is untouched, and the pool goes on after the kill.
    const q = await pool.execute(DB, 'SELECT COUNT(*) FROM t', { timeoutMs: 20_000, cpuMs: 200 });
    assert.ok(q.ok && q.rows[0][0] === 3);
  } finally {
    await pool.close();
  }
});

test('lanes: a runaway moves to the slow lane and times out at its own limit; quick queries stay in the fast lane', async () => {
  const lanes = new LanedExecutor({ fastSize: 1, slowSize: 1, fastMs: 100 });
  try {
    const quick = await lanes.execute(DB, 'SELECT COUNT(*) FROM t', { timeoutMs: 1500 });
    assert.ok(quick.ok && quick.rows[0][0] === 3);
    assert.equal(lanes.movedToSlow, 0);
    const r = await lanes.execute(DB, RUNAWAY, { timeoutMs: 1500 });
    assert.ok(!r.ok && r.error === 'timeout', JSON.stringify(r));
    assert.equal(lanes.movedToSlow, 1);
    // The two stages together ran about the query's own limit, not the limit plus the fast budget's rerun.
    assert.ok(r.elapsedMs >= 1400 && r.elapsedMs < 6000, `elapsed ${r.elapsedMs}`);
    const after2 = await lanes.execute(DB, 'SELECT 1 + 1', { timeoutMs: 1500 });
    assert.ok(after2.ok && after2.rows[0][0] === 2);
  } finally {
    await lanes.close();
  }
});
