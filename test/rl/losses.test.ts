import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs-core';
import { AgroError } from '../../src/errors.ts';
import {
  aggregate,
  computePolicyLoss,
  entropyFromLogits,
  klPenalty,
  type LossConfig,
  type PolicyLossInput,
} from '../../src/rl/losses.ts';
import { setupTf } from './tf_setup.ts';

await setupTf();

const TOL = 2e-5; // float32

function near(actual: number, expected: number, tol = TOL, what = ''): void {
  assert.ok(Math.abs(actual - expected) <= tol * Math.max(1, Math.abs(expected)), `${what} ${actual} vs ${expected}`);
}
function nearAll(actual: number[], expected: number[], tol = TOL): void {
  assert.equal(actual.length, expected.length);
  actual.forEach((a, i) => near(a, expected[i], tol, `[${i}]`));
}

function cfg(over: Partial<LossConfig['loss']> = {}, kl: Partial<LossConfig['kl']> = {}, entropyCoef = 0): LossConfig {
  return {
    loss: {
      name: 'ppo',
      clipLow: 0.2,
      clipHigh: 0.28,
      dualClip: 3,
      logRatioClamp: 20,
      aggregation: 'token-mean',
      aggNormalizer: null,
      seqLogRatioMax: 10,
      ...over,
    },
    kl: { coef: 0, estimator: 'k3', clamp: true, ...kl },
    entropyCoef,
  };
}

/** Build logp/oldLogp with the given ratios: oldLogp = logp − ln ρ. */
function ratios(logp: number[][], rho: number[][]): { logp: tf.Tensor2D; oldLogp: tf.Tensor2D } {
  return { logp: tf.tensor2d(logp), oldLogp: tf.tensor2d(logp.map((row, b) => row.map((x, t) => x - Math.log(rho[b][t])))) };
}

// The shared case: seq0 has A = +1, ratios [1.5, 1, 0.9]; seq1 has A = −1, ratios [0.5, 4, 1] with its last token masked.
// Per-token losses (ε_low 0.2, ε_high 0.28, c 3):
//   seq0 (A=+1): −min(ρ, clip ρ) → ρ=1.5 → −1.28 (clipped high); ρ=1 → −1; ρ=0.9 → −0.9
//   seq1 (A=−1): max(ρ, clip ρ) → ρ=0.5 → 0.8 (clipped low); ρ=4 → max(4, 1.28) = 4 → dual clip min(3, 4) = 3
function sharedCase(): PolicyLossInput {
  return {
    ...ratios([[-1, -2, -0.5], [-1.5, -0.3, -1]], [[1.5, 1, 0.9], [0.5, 4, 1]]),
    advantages: tf.tensor1d([1, -1]),
    mask: tf.tensor2d([[1, 1, 1], [1, 1, 0]]),
  };
}

test('ppo with clip-higher and dual clip: every aggregation mode on one case where they differ', () => {
  tf.tidy(() => {
    const x = sharedCase();
    // token-mean: (−1.28 − 1 − 0.9 + 0.8 + 3)/5 = 0.62/5
    near(computePolicyLoss(x, cfg()).metrics.pgLoss, 0.124);
    // seq-mean-token-sum: (−3.18 + 3.8)/2
    near(computePolicyLoss(x, cfg({ aggregation: 'seq-mean-token-sum' })).metrics.pgLoss, 0.31);
    // seq-mean-token-mean: (−3.18/3 + 3.8/2)/2 = (−1.06 + 1.9)/2
    near(computePolicyLoss(x, cfg({ aggregation: 'seq-mean-token-mean' })).metrics.pgLoss, 0.42);
    // seq-mean-token-sum-norm: 0.62 / T (= 3), or / a constant 10, not divided by the 2 sequences
    near(computePolicyLoss(x, cfg({ aggregation: 'seq-mean-token-sum-norm' })).metrics.pgLoss, 0.62 / 3);
    near(computePolicyLoss(x, cfg({ aggregation: 'seq-mean-token-sum-norm', aggNormalizer: 10 })).metrics.pgLoss, 0.062);
  });
});

test('ppo metrics: clip fractions low/high, dual clip, mean ratio, approx KL', () => {
  tf.tidy(() => {
    const m = computePolicyLoss(sharedCase(), cfg()).metrics;
    assert.equal(m.tokens, 5);
    assert.equal(m.sequences, 2);
    near(m.clipFracHigh, 1 / 5); // ρ = 1.5 with A > 0
    near(m.clipFracLow, 1 / 5); // ρ = 0.5 with A < 0
    near(m.clipFrac, 2 / 5);
    near(m.dualClipFrac, 1 / 5); // ρ = 4 > c with A < 0
    near(m.meanRatio, (1.5 + 1 + 0.9 + 0.5 + 4) / 5);
    // mean of oldLogp − logp = −mean(ln ρ) = −ln(1.5·1·0.9·0.5·4)/5 = −ln(2.7)/5
    near(m.approxKl, -Math.log(2.7) / 5);
    assert.equal(m.entropy, undefined);
  });
});

test('TRL configuration (no dual clip) gives the undamped loss for the large negative-advantage ratio', () => {
  tf.tidy(() => {
    // the ρ = 4 token now costs 4 instead of 3: (−3.18 + 0.8 + 4)/5
    const m = computePolicyLoss(sharedCase(), cfg({ dualClip: null })).metrics;
    near(m.pgLoss, 1.62 / 5);
    assert.equal(m.dualClipFrac, 0);
  });
});

test('verl clamps the log-ratio at ±20 (value and gradient), TRL does not', () => {
  const logp = tf.tensor2d([[-1]]);
  const oldLogp = tf.tensor2d([[-26]]); // Δ = 25
  const base = { oldLogp, advantages: tf.tensor1d([-1]), mask: tf.tensor2d([[1]]) };
  const lossAt = (clamp: number | null) => (lp: tf.Tensor) =>
    computePolicyLoss({ ...base, logp: lp as tf.Tensor2D }, cfg({ dualClip: null, logRatioClamp: clamp })).loss;
  // A = −1: L = max(ρ, clip ρ) = ρ → e^20 clamped, e^25 not
  near(lossAt(20)(logp).dataSync()[0], Math.exp(20), 1e-5);
  near(lossAt(null)(logp).dataSync()[0], Math.exp(25), 1e-5);
  // dL/dlogp = ρ without the clamp; 0 inside the clamped region (torch.clamp passes no gradient there)
  near(tf.grad(lossAt(20))(logp).dataSync()[0], 0);
  near(tf.grad(lossAt(null))(logp).dataSync()[0], Math.exp(25), 1e-5);
});

test('invariant: the gradient wrt logp has the opposite sign of the advantage; masked tokens get none', () => {
  // at ρ = 1 (logp = oldLogp), token-mean over 3 policy tokens: dL/dlogp_t = −A/3
  const old = tf.tensor2d([[-1, -1], [-2, -2]]);
  const input = { oldLogp: old, advantages: tf.tensor1d([2, -1]), mask: tf.tensor2d([[1, 1], [1, 0]]) };
  const g = tf.grad((lp: tf.Tensor) => computePolicyLoss({ ...input, logp: lp as tf.Tensor2D }, cfg()).loss)(old.clone());
  nearAll(Array.from(g.dataSync()), [-2 / 3, -2 / 3, 1 / 3, 0]);
  // the same with per-token advantages [B,T]
  const adv2 = tf.tensor2d([[2, -1], [0.5, 7]]);
  const g2 = tf.grad((lp: tf.Tensor) => computePolicyLoss({ ...input, advantages: adv2, logp: lp as tf.Tensor2D }, cfg()).loss)(old.clone());
  nearAll(Array.from(g2.dataSync()), [-2 / 3, 1 / 3, -0.5 / 3, 0]);
});

test('gspo: one length-normalized sequence ratio per response, stop-gradient form, seq-mean-token-mean forced', () => {
  // seq0 Δ = [0.1, 0.3] → s = e^0.2 = 1.22140 (inside 1 ± 0.2/0.28) → L = −1.22140 on both tokens
  // seq1 Δ = [0.5, (masked 9)] → s = e^0.5 = 1.64872 → clipped at 1.28 → L = −1.28
  // seq-mean-token-mean = (−1.22140 − 1.28)/2 even though the config says token-mean
  // (token-mean would be (2·−1.22140 − 1.28)/3 = −1.24093)
  const old = tf.tensor2d([[-1, -1], [-1, -1]]);
  const logp = tf.tensor2d([[-0.9, -0.7], [-0.5, 8]]);
  const input = { oldLogp: old, advantages: tf.tensor1d([1, 1]), mask: tf.tensor2d([[1, 1], [1, 0]]) };
  const c = cfg({ name: 'gspo', dualClip: null });
  const out = computePolicyLoss({ ...input, logp }, c);
  near(out.metrics.pgLoss, (-Math.exp(0.2) - 1.28) / 2);
  near(out.metrics.clipFracHigh, 1 / 3); // the one policy token of seq1
  near(out.metrics.meanRatio, (2 * Math.exp(0.2) + Math.exp(0.5)) / 3);
  // gradient: d(−A s)/dlogp_t = −A·s on every token of the sequence (the same s, unlike token-level PPO),
  // divided by n_tok (2) and by the number of sequences (2); the clipped sequence gets 0
  const g = tf.grad((lp: tf.Tensor) => computePolicyLoss({ ...input, logp: lp as tf.Tensor2D }, c).loss)(logp);
  nearAll(Array.from(g.dataSync()), [-Math.exp(0.2) / 4, -Math.exp(0.2) / 4, 0, 0]);
});

test('cispo: −sg(clip ρ)·A·logp', () => {
  // ρ = 1.5 clipped to 1.28, A = 1, logp = ln 0.5 → L = −1.28·ln 0.5 = 0.887228; dL/dlogp = −1.28
  const logp = tf.tensor2d([[Math.log(0.5)]]);
  const input = { oldLogp: tf.tensor2d([[Math.log(0.5) - Math.log(1.5)]]), advantages: tf.tensor1d([1]), mask: tf.tensor2d([[1]]) };
  const c = cfg({ name: 'cispo' });
  near(computePolicyLoss({ ...input, logp }, c).metrics.pgLoss, -1.28 * Math.log(0.5));
  const g = tf.grad((lp: tf.Tensor) => computePolicyLoss({ ...input, logp: lp as tf.Tensor2D }, c).loss)(logp);
  near(g.dataSync()[0], -1.28);
});

test('KL estimators k1, abs, k2, k3 and verl\'s k3 clamps', () => {
  // d = logp − ref = [0.5, −1]
  const logp = tf.tensor2d([[-1, -2]]);
  const ref = tf.tensor2d([[-1.5, -1]]);
  nearAll(Array.from(klPenalty(logp, ref, 'k1').dataSync()), [0.5, -1]);
  nearAll(Array.from(klPenalty(logp, ref, 'abs').dataSync()), [0.5, 1]);
  nearAll(Array.from(klPenalty(logp, ref, 'k2').dataSync()), [0.125, 0.5]); // ½d²
  // k3 = e^{−d} + d − 1: e^{−0.5} − 0.5 = 0.106531; e^{1} − 2 = 0.718282
  nearAll(Array.from(klPenalty(logp, ref, 'k3').dataSync()), [Math.exp(-0.5) - 0.5, Math.E - 2]);
  // d = −30: clamped −d → 20, result → 10; unclamped e^30 + (−30) − 1
  const far = [tf.tensor2d([[-31]]), tf.tensor2d([[-1]])] as const;
  near(klPenalty(far[0], far[1], 'k3', true).dataSync()[0], 10);
  near(klPenalty(far[0], far[1], 'k3', false).dataSync()[0], Math.exp(30) - 31, 1e-5);
});

test('KL penalty and entropy bonus enter the loss with their coefficients', () => {
  tf.tidy(() => {
    // A = 0 → the policy term is 0; k3 per token [0.106531, 0.718282], token-mean 0.412406
    const logp = tf.tensor2d([[-1, -2]]);
    const base = { logp, oldLogp: logp, advantages: tf.tensor1d([0]), mask: tf.tensor2d([[1, 1]]), refLogp: tf.tensor2d([[-1.5, -1]]) };
    const k3mean = (Math.exp(-0.5) - 0.5 + Math.E - 2) / 2;
    const withKl = computePolicyLoss(base, cfg({}, { coef: 0.1 }));
    near(withKl.metrics.loss, 0.1 * k3mean);
    near(withKl.metrics.kl!, k3mean);
    // entropies from logits: [0,0] → ln 2; [0, ln 3] → p = [¼, ¾] → −(¼ ln ¼ + ¾ ln ¾) = 0.562335
    const logits = tf.tensor3d([[[0, 0], [0, Math.log(3)]]]);
    const h = [Math.LN2, -(0.25 * Math.log(0.25) + 0.75 * Math.log(0.75))];
    nearAll(Array.from(entropyFromLogits(logits).dataSync()), h);
    const withEnt = computePolicyLoss({ ...base, logits }, cfg({}, { coef: 0.1 }, 0.01));
    near(withEnt.metrics.entropy!, (h[0] + h[1]) / 2);
    near(withEnt.metrics.loss, 0.1 * k3mean - 0.01 * ((h[0] + h[1]) / 2));
    assert.throws(
      () => computePolicyLoss({ ...base, refLogp: undefined }, cfg({}, { coef: 0.1 })),
      (e: unknown) => e instanceof AgroError && /needs refLogp/.test(e.message),
    );
  });
});

test('fully masked sequences are left out of seq-* means; an all-masked batch gives 0, not NaN', () => {
  tf.tidy(() => {
    const lm = tf.tensor2d([[1, 2], [5, 5], [3, 0]]);
    const mask = tf.tensor2d([[1, 1], [0, 0], [1, 0]]);
    // seq-mean-token-sum: (3 + 3)/2 sequences (not 3); seq-mean-token-mean: (1.5 + 3)/2; token-mean: 6/3
    near(aggregate(lm, mask, 'seq-mean-token-sum').dataSync()[0], 3);
    near(aggregate(lm, mask, 'seq-mean-token-mean').dataSync()[0], 2.25);
    near(aggregate(lm, mask, 'token-mean').dataSync()[0], 2);
    const zero = tf.zeros([2, 2]) as tf.Tensor2D;
    for (const mode of ['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'] as const) {
      assert.equal(aggregate(tf.slice(lm, [0, 0], [2, 2]) as tf.Tensor2D, zero, mode).dataSync()[0], 0, mode);
    }
    const out = computePolicyLoss({ ...sharedCase(), mask: tf.zeros([2, 3]) as tf.Tensor2D }, cfg());
    assert.equal(out.metrics.pgLoss, 0);
    assert.equal(out.metrics.tokens, 0);
    assert.equal(out.metrics.clipFrac, 0);
  });
});

test('works under tf.variableGrads; metrics do not disturb the gradient', () => {
  const v = tf.variable(tf.tensor2d([[-1, -1]]));
  const input = { oldLogp: tf.tensor2d([[-1, -1]]), advantages: tf.tensor1d([1]), mask: tf.tensor2d([[1, 1]]) };
  let ratio = 0;
  const { value, grads } = tf.variableGrads(() => {
    const out = computePolicyLoss({ ...input, logp: v as unknown as tf.Tensor2D }, cfg());
    ratio = out.metrics.meanRatio;
    return out.loss;
  });
  near(value.dataSync()[0], -1); // −A·ρ = −1 on both tokens, token-mean
  near(ratio, 1);
  nearAll(Array.from(grads[v.name].dataSync()), [-0.5, -0.5]);
});

test('bad tensors are rejected: NaN, Inf, shape mismatch, non-binary mask, bad dual clip', () => {
  const ok = sharedCase();
  const isInvalid = (re: RegExp) => (e: unknown) => e instanceof AgroError && e.kind === 'invalid_input' && re.test(e.message);
  assert.throws(() => computePolicyLoss({ ...ok, logp: tf.tensor2d([[Number.NaN, 0, 0], [0, 0, 0]]) }, cfg()), isInvalid(/logp contains NaN/));
  assert.throws(() => computePolicyLoss({ ...ok, oldLogp: tf.tensor2d([[-Infinity, 0, 0], [0, 0, 0]]) }, cfg()), isInvalid(/oldLogp contains -Infinity/));
  assert.throws(() => computePolicyLoss({ ...ok, advantages: tf.tensor1d([1, 2, 3]) }, cfg()), isInvalid(/advantages has shape \[3\], expected \[2\]/));
  assert.throws(() => computePolicyLoss({ ...ok, mask: tf.tensor2d([[1, 1], [1, 1]]) }, cfg()), isInvalid(/mask has shape/));
  assert.throws(() => computePolicyLoss({ ...ok, mask: tf.tensor2d([[1, 0.5, 1], [1, 1, 1]]) }, cfg()), isInvalid(/0 or 1/));
  assert.throws(() => computePolicyLoss(ok, cfg({ dualClip: 0.9 })), isInvalid(/dualClip/));
  assert.throws(() => computePolicyLoss(ok, cfg({ name: 'nope' })), isInvalid(/unknown policy loss "nope" \(known: ppo, gspo/));
});
