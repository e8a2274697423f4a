// The Runs page's arithmetic for the person training: where a run is (step / total, ETA) and smoothed curves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { duration, runProgress, smooth } from '../../web/src/metrics.ts';
import { toColumns } from '../../src/server/dashboard/metrics.ts';

const rows = (n: number, secPerStep: number) => toColumns(Array.from({ length: n }, (_, i) => JSON.stringify({ step: i + 1, loss: 1 / (i + 1), elapsed_s: (i + 1) * secPerStep })));

test('runProgress: the last step of the total its config names (SFT `steps`, RL `train.steps`), and an ETA at the recent pace', () => {
  const sft = runProgress(rows(30, 2), { steps: 130 });
  assert.deepEqual(sft && { step: sft.step, total: sft.total }, { step: 30, total: 130 });
  assert.ok(Math.abs(sft!.etaS! - 200) < 1e-9, `100 steps left at 2 s each: ${sft!.etaS}`);
  assert.equal(runProgress(rows(10, 1), { train: { steps: 40 } })?.etaS, 30);
  // No total: the step alone; no rows: nothing.
  assert.deepEqual(runProgress(rows(5, 1), {}), { step: 5 });
  assert.equal(runProgress(toColumns([]), { steps: 10 }), null);
});

test('smooth: TensorBoard-style EMA with its start debiased; 0 is the raw series; nulls are kept', () => {
  assert.deepEqual(smooth([1, 2, null, 3], 0), [1, 2, null, 3]);
  const s = smooth([4, 4, 4], 0.9);
  for (const v of s) assert.ok(Math.abs((v as number) - 4) < 1e-9, 'a constant stays itself (no pull toward 0)');
  const z = smooth([0, 10, null, 0], 0.5);
  assert.equal(z[0], 0);
  assert.ok(Math.abs((z[1] as number) - 10 * 0.5 / 0.75) < 1e-9);
  assert.equal(z[2], null);
  assert.ok((z[3] as number) > 0 && (z[3] as number) < (z[1] as number));
});

test('duration', () => {
  assert.equal(duration(42), '42 s');
  assert.equal(duration(95), '1 min 35 s');
  assert.equal(duration(4000), '1 h 7 min');
});
