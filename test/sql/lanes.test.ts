import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { getPriority } from 'node:os';
import { join } from 'node:path';
import { LanedExecutor } from '../../src/sql/lanes.ts';
import { makeDb, tempDir } from './helpers.ts';
import { withPool } from '../support/with.ts';

const tmp = tempDir();
const DB = join(tmp.dir, 'lanes.sqlite');
const RUNAWAY = 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c';

before(() => {
  makeDb(DB, `CREATE TABLE t (id INTEGER PRIMARY KEY); INSERT INTO t VALUES (1), (2), (3);`);
});
after(() => tmp.cleanup());

test('cpuMs stops a query that burns CPU long before its wall-clock limit (read from /proc: Linux)', async () => {
  await withPool({ size: 1 }, async (pool) => {
    await pool.execute(DB, 'SELECT 1'); // the child is started and ready
    const r = await pool.execute(DB, RUNAWAY, { timeoutMs: 20_000, cpuMs: 200 });
    assert.equal(r.ok, false);
    assert.ok(!r.ok && r.error === 'timeout' && /200 ms of CPU time/.test(r.message), JSON.stringify(r));
    // It used at least its 200 ms of CPU, and was stopped far before the 20 s wall limit.
    assert.ok(r.elapsedMs >= 200 && r.elapsedMs < 10_000, `elapsed ${r.elapsedMs}`);
    // A quick query under the same budget is untouched, and the pool goes on after the kill.
    const q = await pool.execute(DB, 'SELECT COUNT(*) FROM t', { timeoutMs: 20_000, cpuMs: 200 });
    assert.ok(q.ok && q.rows[0][0] === 3);
  });
});

test('lanes: a runaway moves to the slow lane and times out at its own limit; quick queries stay in the fast lane', async () => {
  const lanes = new LanedExecutor({ fastSize: 1, slowSize: 1, fastMs: 100 });
  try {
    const quick = await lanes.execute(DB, 'SELECT COUNT(*) FROM t', { timeoutMs: 600 });
    assert.ok(quick.ok && quick.rows[0][0] === 3);
    assert.equal(lanes.movedToSlow, 0);
    const r = await lanes.execute(DB, RUNAWAY, { timeoutMs: 600 });
    assert.ok(!r.ok && r.error === 'timeout', JSON.stringify(r));
    assert.equal(lanes.movedToSlow, 1);
    if (process.platform === 'linux') {
      // The limit is CPU time: the two stages together burn the query's own 600 ms, not the limit plus the
      // fast budget's rerun. On a saturated machine the slow lane (nice 19) may get so little CPU that the
      // wall-clock cap (5× the limit) stops it first: both are this query's timeout, never another's.
      const msg = !r.ok ? r.message : '';
      assert.ok(/600 ms limit of CPU time/.test(msg) || /past 3000 ms of wall time \(5× its 600 ms CPU limit/.test(msg), msg);
      assert.ok(r.elapsedMs >= 550, `elapsed ${r.elapsedMs}`);
    } else {
      assert.ok(r.elapsedMs >= 550 && r.elapsedMs < 6000, `elapsed ${r.elapsedMs}`);
    }
    // Nothing was killed in the fast lane: its process stopped the query itself and lives on.
    assert.equal(lanes.fast.spawned, 1);
    // The slow lane's process runs at the lowest priority, the fast lane's at the normal one.
    // A query answered there means its process has started (a process killed by the backstop is replaced,
    // and the replacement is reniced once it has started).
    assert.ok((await lanes.slow.execute(DB, 'SELECT 1')).ok);
    const [slowPid] = lanes.slow.childPids();
    assert.equal(getPriority(slowPid), 19);
    assert.equal(getPriority(lanes.fast.childPids()[0]), getPriority());
    const after2 = await lanes.execute(DB, 'SELECT 1 + 1', { timeoutMs: 600 });
    assert.ok(after2.ok && after2.rows[0][0] === 2);
  } finally {
    await lanes.close();
  }
});

test('a query that waits past maxWaitMs for a free SQL process fails as a timeout without running', async () => {
  await withPool({ size: 1 }, async (pool) => {
    await pool.execute(DB, 'SELECT 1');
    const busy = pool.execute(DB, RUNAWAY, { timeoutMs: 1500 });
    const t0 = performance.now();
    const waited = await pool.execute(DB, 'SELECT COUNT(*) FROM t', { maxWaitMs: 200 });
    const took = performance.now() - t0;
    assert.ok(!waited.ok && waited.error === 'timeout' && /waited 200 ms for a free SQL process/.test(waited.message), JSON.stringify(waited));
    assert.equal(waited.limit, 'wait');
    assert.ok(took >= 190 && took < 1400, `answered after ${took} ms, before the busy query ended`);
    assert.ok(!(await busy).ok);
    // Without a wait limit the same query waits its turn and runs.
    const q = await pool.execute(DB, 'SELECT COUNT(*) FROM t', { maxWaitMs: 0 });
    assert.ok(q.ok && q.rows[0][0] === 3);
  });
});

test('worstWaitMs: nothing ahead is 0; a running CPU-limited query counts what is left of its limit, a queued one all of it', async () => {
  await withPool({ size: 1 }, async (pool) => {
    await pool.execute(DB, 'SELECT 1');
    assert.equal(pool.worstWaitMs(), 0);
    const running = pool.execute(DB, RUNAWAY, { timeoutMs: 5000, cpuMs: 800 });
    const queued = pool.execute(DB, RUNAWAY, { timeoutMs: 5000, cpuMs: 800 });
    const w = pool.worstWaitMs();
    assert.ok(w > 800 && w <= 1600, `worst wait ${w}`);
    await Promise.all([running, queued]);
    assert.equal(pool.worstWaitMs(), 0);
  });
});

test('lanes: under a flood of runaways the slow lane takes what it can finish and sheds the rest at once, as a wait timeout', async () => {
  const lanes = new LanedExecutor({ fastSize: 1, slowSize: 1, fastMs: 50 });
  try {
    await lanes.execute(DB, 'SELECT 1');
    // 12 runaways with a 600 ms limit: the one slow process can start at most about 3000 / 550 of them
    // before their 3 s wall caps (on Linux; the limit itself elsewhere), so most must be shed.
    const t0 = performance.now();
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => lanes.execute(DB, RUNAWAY.replace('SELECT 1', `SELECT ${i + 1}`), { timeoutMs: 600 }).then((r) => ({ r, at: performance.now() - t0 }))));
    assert.ok(results.every(({ r }) => !r.ok && r.error === 'timeout'), JSON.stringify(results.map(({ r }) => r)));
    const shed = results.filter(({ r }) => !r.ok && r.limit === 'wait');
    assert.equal(shed.length, lanes.shed);
    assert.equal(lanes.shed + lanes.movedToSlow, 12);
    assert.ok(lanes.shed >= 3 && lanes.movedToSlow >= 1, `shed ${lanes.shed}, moved ${lanes.movedToSlow}`);
    for (const { r } of shed) assert.match(!r.ok ? r.message : '', /slow lane is full .*not run further/);
    // A shed query answers after its fast-lane budget, not after waiting out its cap behind the others.
    const slowest = Math.max(...results.filter(({ r }) => !r.ok && r.limit !== 'wait').map(({ at }) => at));
    assert.ok(shed.some(({ at }) => at < slowest / 2), `shed at ${shed.map(({ at }) => Math.round(at))}, admitted done by ${Math.round(slowest)}`);
    // Quick queries were never in the way.
    const q = await lanes.execute(DB, 'SELECT COUNT(*) FROM t', { timeoutMs: 600 });
    assert.ok(q.ok && q.rows[0][0] === 3);
  } finally {
    await lanes.close();
  }
});
