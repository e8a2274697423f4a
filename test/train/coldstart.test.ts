import { test } from 'node:test';
import assert from 'node:assert/strict';
import { selectColdStart } from '../../src/train/coldstart.ts';
import type { ColdStartTrajectory } from '../../src/train/coldstart.ts';
import { randomIndices } from '../../src/factory/diversity/select.ts';
import { sqlFeatures, structureKey } from '../../src/sql/features.ts';
import { skewedPool } from '../factory/diversity/pool.ts';
import { Rng } from '../../src/util/rng.ts';

/** Trajectories: an exploration query on the table, then the final SQL; reasoning mentions both. */
function trajectories(n: number, seed: number): ColdStartTrajectory[] {
  const rng = new Rng(seed + 100);
  return skewedPool(n, seed).map((p) => {
    const table = /FROM (\w+)/.exec(p.sql)?.[1] ?? 't';
    const explore = rng.next() < 0.5 ? `SELECT * FROM ${table} LIMIT 3` : `PRAGMA table_info(${table})`;
    return {
      id: p.id,
      sqls: [explore, p.sql],
      reasoning: `I look at ${table} first. The question asks: ${p.question} So I write the query.`,
      difficulty: p.difficulty,
    };
  });
}

/** Distinct structures of the final SQLs in a selection. */
const structures = (ts: ColdStartTrajectory[], ids: string[]): number => {
  const byId = new Map(ts.map((t) => [t.id, t]));
  return new Set(ids.map((id) => structureKey(sqlFeatures(byId.get(id)!.sqls.at(-1)!)))).size;
};

test('cold-start selection covers more SQL structures than a random subset of the same size', () => {
  const ts = trajectories(240, 21);
  for (const seed of [1, 2, 3, 4]) {
    const kc = selectColdStart(ts, 20, { seed, method: 'kcenter', sqlWeight: 0.7 });
    const cl = selectColdStart(ts, 20, { seed, method: 'cluster', sqlWeight: 0.7 });
    const rnd = randomIndices(ts.length, 20, seed).map((i) => ts[i].id);
    assert.equal(kc.length, 20);
    assert.equal(new Set(kc).size, 20);
    const [a, b, r] = [structures(ts, kc), structures(ts, cl), structures(ts, rnd)];
    assert.ok(a > r, `seed ${seed}: kcenter ${a} vs random ${r}`);
    assert.ok(b > r, `seed ${seed}: cluster ${b} vs random ${r}`);
  }
});

test('cold-start: deterministic for a seed, honors a difficulty mix, n >= pool returns all', () => {
  const ts = trajectories(120, 5);
  const a = selectColdStart(ts, 12, { seed: 9 });
  assert.deepEqual(selectColdStart(ts, 12, { seed: 9 }), a);
  const mixed = selectColdStart(ts, 12, { seed: 9, mix: { simple: 0.5, moderate: 0.25, challenging: 0.25 } });
  const diff = new Map(ts.map((t) => [t.id, t.difficulty]));
  const count = (d: string): number => mixed.filter((id) => diff.get(id) === d).length;
  assert.deepEqual([count('simple'), count('moderate'), count('challenging')], [6, 3, 3]);
  assert.deepEqual(selectColdStart(ts.slice(0, 3), 5), ts.slice(0, 3).map((t) => t.id));
});

test('cold-start: bad options are one-line errors', () => {
  assert.throws(() => selectColdStart([], 1, { sqlWeight: 2 }), /sqlWeight/);
  assert.throws(() => selectColdStart([], -1), /non-negative/);
});
