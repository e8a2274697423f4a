import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs-core';
import {
  clipCovSelection,
  computePolicyLoss,
  highEntropyMask,
  klCovSelection,
  klPenalty,
  lldsPenalty,
  microBatchShares,
  POLICY_LOSSES,
  vespoWeight,
  DEFAULT_POLICY_LOSS_PARAMS,
  type LossConfig,
  type PolicyLossInput,
} from '../../src/rl/losses.ts';
import { setupTf } from './tf_setup.ts';

await setupTf();

const TOL = 2e-5;
function near(actual: number, expected: number, tol = TOL, what = ''): void {
  assert.ok(Math.abs(actual - expected) <= tol * Math.max(1, Math.abs(expected)), `${what} ${actual} vs ${expected}`);
}
function cfg(over: Partial<LossConfig['loss']> = {}, kl: Partial<LossConfig['kl']> = {}, extra: Partial<LossConfig> = {}): LossConfig {
  return { loss: { name: 'ppo', clipLow: 0.2, clipHigh: 0.28, dualClip: null, ...over }, kl: { coef: 0, estimator: 'k3', clamp: true, ...kl }, entropyCoef: 0, ...extra };
}
/** logp with oldLogp = logp − ln ρ. */
function ratios(logp: number[][], rho: number[][]): { logp: tf.Tensor2D; oldLogp: tf.Tensor2D } {
  return { logp: tf.tensor2d(logp), oldLogp: tf.tensor2d(logp.map((row, b) => row.map((x, t) => x - Math.log(rho[b][t])))) };
}
function input(logp: number[][], rho: number[][], adv: number[], mask?: number[][]): PolicyLossInput {
  return { ...ratios(logp, rho), advantages: tf.tensor1d(adv), mask: tf.tensor2d(mask ?? logp.map((r) => r.map(() => 1))) };
}

test('cispo: verl clips the weight on both sides, the paper/TRL from above only; clip fraction counted as verl', () => {
  tf.tidy(() => {
    // A = +1, ρ = [1.5, 0.5], logp = [−1, −2], ε 0.2/0.28
    const x = input([[-1, -2]], [[1.5, 0.5]], [1]);
    // both: w = [1.28, 0.8] → L = −w·A·logp = [1.28, 1.6] → 1.44
    const both = computePolicyLoss(x, cfg({ name: 'cispo', cispoClip: 'both' })).metrics;
    near(both.pgLoss, 1.44);
    // verl counts ratio ≠ clip(ratio) whatever the sign of A: both tokens
    near(both.clipFrac, 1);
    // upper: w = [1.28, 0.5] → [1.28, 1.0] → 1.14; only the high token is clipped
    const upper = computePolicyLoss(x, cfg({ name: 'cispo', cispoClip: 'upper' })).metrics;
    near(upper.pgLoss, 1.14);
    near(upper.clipFrac, 0.5);
    near(upper.clipFracLow, 0);
  });
});

test('TRL loss_type="grpo" counts a fully masked row in B (×3/2 here); verl leaves it out', () => {
  tf.tidy(() => {
    // rows 0,1 of the shared case: seq means −1.06 and 1.9; row 2 fully masked
    const x: PolicyLossInput = {
      ...ratios([[-1, -2, -0.5], [-1.5, -0.3, -1], [-1, -1, -1]], [[1.5, 1, 0.9], [0.5, 4, 1], [1, 1, 1]]),
      advantages: tf.tensor1d([1, -1, 0]),
      mask: tf.tensor2d([[1, 1, 1], [1, 1, 0], [0, 0, 0]]),
    };
    const c = { aggregation: 'seq-mean-token-mean' as const, dualClip: 3 };
    near(computePolicyLoss(x, cfg({ ...c, emptySeqs: 'skip' })).metrics.pgLoss, 0.42);
    near(computePolicyLoss(x, cfg({ ...c, emptySeqs: 'count' })).metrics.pgLoss, 0.84 / 3);
  });
});

test('TRL delta caps the unclipped ratio (two-sided clipping); A > 0 is unchanged', () => {
  tf.tidy(() => {
    // A = −1, ρ = 4: max(4, 1.28) = 4, with delta 3: max(3, 1.28) = 3. A = +1, ρ = 4: −1.28 either way
    const x = input([[-1], [-1]], [[4], [4]], [-1, 1]);
    near(computePolicyLoss(x, cfg()).metrics.pgLoss, (4 - 1.28) / 2);
    near(computePolicyLoss(x, cfg({ delta: 3 })).metrics.pgLoss, (3 - 1.28) / 2);
    assert.throws(() => computePolicyLoss(x, cfg({ delta: 1.1 })), /delta/);
  });
});

test('k1+/k3+ (verl straight-through): the value of k1/k3, the gradient of k2', () => {
  const ref = tf.tensor2d([[0]]);
  const lp = tf.tensor2d([[0.5]]);
  const val = (est: 'k3' | 'k3+' | 'k1+') => klPenalty(lp, ref, est).dataSync()[0];
  const grad = (est: 'k3' | 'k3+' | 'k1' | 'k1+') => tf.grad((x: tf.Tensor) => tf.sum(klPenalty(x as tf.Tensor2D, ref, est)))(lp).dataSync()[0];
  // d = 0.5: k3 = e^−0.5 + 0.5 − 1 = 0.1065307; its gradient 1 − e^−0.5 = 0.3934693; k2's gradient d = 0.5
  near(val('k3'), 0.1065307);
  near(val('k3+'), 0.1065307);
  near(grad('k3'), 0.3934693);
  near(grad('k3+'), 0.5);
  near(val('k1+'), 0.5);
  near(grad('k1'), 1);
  near(grad('k1+'), 0.5);
});

test('sapo: soft gate σ(τ(ρ − 1))·4/τ with τ by the sign of A', () => {
  tf.tidy(() => {
    // A = +1, ρ = 1.2, τ 1: −4σ(0.2) = −2.1993363; A = −1, ρ = 0.8, τ 1.05: +σ(−0.21)·4/1.05 = 1.7054952
    const x = input([[-1], [-1]], [[1.2], [0.8]], [1, -1]);
    const sig = (z: number) => 1 / (1 + Math.exp(-z));
    const expected = (-4 * sig(0.2) + (sig(-0.21) * 4) / 1.05) / 2;
    near(expected, (-2.1993363 + 1.7054952) / 2, 1e-6);
    near(computePolicyLoss(x, cfg({ name: 'sapo', tauPos: 1, tauNeg: 1.05 })).metrics.pgLoss, expected);
  });
});

test('geo_mean (GMPO): sign-aware clip of Δ, geometric-mean ratio per sequence, mean over all rows', () => {
  tf.tidy(() => {
    // seq0 A = +1, Δ = [ln 1.5, ln 0.5] = [0.405465, −0.693147], ε 0.4: min(Δ, clamp Δ) = [0.4, −0.693147]
    //   ratio = exp(−0.146574) = 0.863664 → −0.863664
    // seq1 A = −1, Δ = [ln 2]: −min(−0.693, −0.4) = 0.693147 (not clipped upward) → ratio 2 → +2
    const x: PolicyLossInput = {
      ...ratios([[-1, -1], [-1, -1]], [[1.5, 0.5], [2, 1]]),
      advantages: tf.tensor1d([1, -1]),
      mask: tf.tensor2d([[1, 1], [1, 0]]),
    };
    near(computePolicyLoss(x, cfg({ name: 'geo_mean', clipLow: 0.4, clipHigh: 0.4 })).metrics.pgLoss, (-0.863664 + 2) / 2, 1e-5);
  });
});

test('vespo: detached φ(w) = e^λ w^k e^{−λw} of the whole-sequence ratio times −A·logp', () => {
  // φ(1) = 1 for both shapes
  near(vespoWeight(0, 1, DEFAULT_POLICY_LOSS_PARAMS), 1);
  near(vespoWeight(0, -1, DEFAULT_POLICY_LOSS_PARAMS), 1);
  // Σ Δ = 0.3, A ≥ 0 (k 2, λ 3): exp(3 + 0.6 − 3e^0.3) = exp(−0.4495764) = 0.6378983
  near(vespoWeight(0.3, 1, DEFAULT_POLICY_LOSS_PARAMS), 0.6378983, 1e-6);
  tf.tidy(() => {
    const x = input([[-1, -2]], [[Math.exp(0.1), Math.exp(0.2)]], [1]);
    // L = −φ·A·logp = 0.6378983·[1, 2] → token mean 0.9568474
    near(computePolicyLoss(x, cfg({ name: 'vespo' })).metrics.pgLoss, 0.9568474, 1e-5);
  });
});

test('luspo: the gspo sequence loss times the sequence length', () => {
  tf.tidy(() => {
    // ρ = 1, A = 1: gspo gives −1 per token; luspo sums the 2 tokens: −2 (seq-mean-token-sum)
    const x = input([[-1, -1]], [[1, 1]], [1]);
    near(computePolicyLoss(x, cfg({ name: 'gspo' })).metrics.pgLoss, -1);
    near(computePolicyLoss(x, cfg({ name: 'luspo' })).metrics.pgLoss, -2);
  });
});

test('clip_cov / kl_cov pick tokens by cov(A, logp) as verl', () => {
  // A = [1, 1, −1, −1], logp = [−0.5, −3, −0.5, −3]: means 0 and −1.75, cov = [1.25, −1.25, −1.25, 1.25]
  const adv = [[1, 1, -1, -1]];
  const lp = [[-0.5, -3, -0.5, -3]];
  const mask = [[1, 1, 1, 1]];
  const none = [[false, false, false, false]];
  // window (0.5, 5), k = max(1, ⌊0.5·4⌋) = 2: the two tokens with cov 1.25, in any order
  const sel = clipCovSelection(adv, lp, mask, none, { clipCovRatio: 0.5, clipCovLb: 0.5, clipCovUb: 5, covSeed: 1 });
  assert.deepEqual(sel.map(([, t]) => t).sort(), [0, 3]);
  // tokens the PPO clip already cut are not candidates
  assert.deepEqual(clipCovSelection(adv, lp, mask, [[true, false, false, false]], { clipCovRatio: 0.5, clipCovLb: 0.5, clipCovUb: 5, covSeed: 1 }), [[0, 3]]);
  // kl_cov: top ⌊0.25·4⌋ = 1 token by cov: tie 1.25 → first index
  assert.deepEqual(klCovSelection(adv, lp, mask, 0.25), [[0, 0]]);
  tf.tidy(() => {
    // Δ = [0.1, 0, 0, 0]: L = −Aρ + |Δ| on token 0 → (−e^0.1 + 0.1 − 1 + 1 + 1)/4
    const x = input(lp, [[Math.exp(0.1), 1, 1, 1]], [0]);
    x.advantages = tf.tensor2d(adv);
    near(computePolicyLoss(x, cfg({ name: 'kl_cov', klCovRatio: 0.25 })).metrics.pgLoss, (-Math.exp(0.1) + 0.1 + 1) / 4);
  });
});

test('r2vpo, rec (off-policy REINFORCE), disco and reg_grpo on hand-computed cases', () => {
  tf.tidy(() => {
    // r2vpo: ρ 1.2, A 1, β 1: −1.2 + 0.5·0.04 = −1.18
    near(computePolicyLoss(input([[-1]], [[1.2]], [1]), cfg({ name: 'r2vpo', r2vpoBeta: 1 })).metrics.pgLoss, -1.18);
    // rec: A = +1, ρ = [1.5, 1] → first token cut (1.5 > 1.28); −A·logp on the second: 2 → token mean 1
    near(computePolicyLoss(input([[-1, -2]], [[1.5, 1]], [1]), cfg({ name: 'rec' })).metrics.pgLoss, 1);
    // disco: group A = [+1, −1, −1], one token each, ρ = [1.2, 0.9, 1.1]: −(1.2) + mean(0.9, 1.1) = −0.2 (β 0)
    const d = { ...input([[-1], [-1], [-1]], [[1.2], [0.9], [1.1]], [1, -1, -1]), groupIds: [0, 0, 0] };
    near(computePolicyLoss(d, cfg({ name: 'disco', discoBeta: 0 })).metrics.pgLoss, -0.2);
    // all ρ = 0.5: discriminative part 0; KL = ln 2 > δ = 0 → β·(ln 2)² = 0.480453
    const k = { ...input([[-1], [-1], [-1]], [[0.5], [0.5], [0.5]], [1, -1, -1]), groupIds: [0, 0, 0] };
    near(computePolicyLoss(k, cfg({ name: 'disco', discoBeta: 1, discoDelta: 0 })).metrics.pgLoss, Math.LN2 ** 2);
    assert.throws(() => computePolicyLoss(input([[-1]], [[1]], [1]), cfg({ name: 'disco' })), /groupIds/);
    // reg_grpo: A = [1, −1], ρ = [1.2, 0.8] → centered [0.2, −0.2] → ((0.8)² + (0.8)²)/2 = 0.64
    const r = { ...input([[-1], [-1]], [[1.2], [0.8]], [1, -1]), groupIds: ['q', 'q'] };
    near(computePolicyLoss(r, cfg({ name: 'reg_grpo', regScale: 1 })).metrics.pgLoss, 0.64);
  });
});

test('top_entropy_quantile keeps the policy loss on high-entropy tokens only (normalized by all tokens)', () => {
  // entropies [0.1, 0.5, 0.9, 0.3], q = 0.5: torch.quantile = 0.3 + 0.5·0.2 = 0.4 → keep tokens 1, 2
  assert.deepEqual(highEntropyMask([[0.1, 0.5, 0.9, 0.3]], [[1, 1, 1, 1]], 0.5), [[0, 1, 1, 0]]);
  assert.deepEqual(highEntropyMask([[0.1, 0.5, 0.9, 0.3]], [[1, 1, 1, 1]], 0), [[1, 1, 1, 1]]);
  tf.tidy(() => {
    // ρ = 1, A = 1: −1 per token; 2 kept of 4 → −2/4
    const x = { ...input([[-1, -1, -1, -1]], [[1, 1, 1, 1]], [1]), entropy: tf.tensor2d([[0.1, 0.5, 0.9, 0.3]]) };
    near(computePolicyLoss(x, cfg({ topEntropyQuantile: 0.5 })).metrics.pgLoss, -0.5);
    near(computePolicyLoss(x, cfg()).metrics.pgLoss, -1);
  });
});

test('LLDS: active only for a sequence whose likelihood fell, only on the tokens that fell', () => {
  tf.tidy(() => {
    // seq0 A>0, Δ = [−0.2, 0.1] (sum −0.1: active) → [0.2, 0]; seq1 A>0, Δ = [0.2, −0.1] (sum 0.1): 0; seq2 A<0: 0
    const old = tf.tensor2d([[0, 0], [0, 0], [0, 0]]);
    const lp = tf.tensor2d([[-0.2, 0.1], [0.2, -0.1], [-1, -1]]);
    const pen = lldsPenalty(lp, old, [[1, 1], [1, 1], [1, 1]], [1, 1, -1]).arraySync();
    pen.flat().forEach((v, i) => near(v, [0.2, 0, 0, 0, 0, 0][i]));
    // 'all' scope also covers the negative response (sum −2: active) → [1, 1]
    const all = lldsPenalty(lp, old, [[1, 1], [1, 1], [1, 1]], [1, 1, -1], 'all').arraySync();
    all[2].forEach((v) => near(v, 1));
  });
});

test('micro-batches add up exactly for gspo with token-mean KL and entropy (per-term shares)', () => {
  tf.tidy(() => {
    const logp = [[-0.9, -0.7, -1.2], [-0.5, -2, -1], [-0.3, -0.4, -0.6]];
    const rho = [[1.1, 0.9, 1.3], [1.6, 1, 1], [0.7, 1.2, 1]];
    const mask = [[1, 1, 1], [1, 0, 0], [1, 1, 0]];
    const ref = [[-1, -1, -1], [-0.7, -1, -1], [-0.2, -0.5, -0.9]];
    const ent = [[1, 2, 3], [0.5, 1, 1], [2, 2, 2]];
    const c = cfg({ name: 'gspo', aggregation: 'token-mean' }, { coef: 0.5 }, { entropyCoef: 0.1 });
    const part = (rows: number[]) => ({
      ...ratios(rows.map((r) => logp[r]), rows.map((r) => rho[r])),
      advantages: tf.tensor1d(rows.map((r) => [1, -1, 0.5][r])),
      mask: tf.tensor2d(rows.map((r) => mask[r])),
      refLogp: tf.tensor2d(rows.map((r) => ref[r])),
      entropy: tf.tensor2d(rows.map((r) => ent[r])),
    });
    const whole = computePolicyLoss(part([0, 1, 2]), c).metrics.loss;
    // micro-batch A = rows {0} (3 of 6 tokens, 1 of 3 sequences), B = rows {1, 2}
    const a = computePolicyLoss(part([0]), c, microBatchShares(c.loss, 3 / 6, 1 / 3)).metrics.loss;
    const b = computePolicyLoss(part([1, 2]), c, microBatchShares(c.loss, 3 / 6, 2 / 3)).metrics.loss;
    near(a + b, whole, 1e-5);
  });
});

test('every registered loss is differentiable under tf.grad (the trainer path)', () => {
  for (const name of Object.keys(POLICY_LOSSES)) {
    const x = { ...input([[-1, -2], [-1.5, -0.5]], [[1.5, 0.9], [0.7, 1.1]], [1, -1]), entropy: tf.tensor2d([[1, 2], [0.5, 1]]), groupIds: [0, 0] };
    const g = tf.grad((lp: tf.Tensor) => computePolicyLoss({ ...x, logp: lp as tf.Tensor2D }, cfg({ name })).loss)(x.logp);
    assert.ok(Array.from(g.dataSync()).every(Number.isFinite), name);
  }
});
