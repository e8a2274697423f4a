/**
 * Policy losses on tfjs tensors, so the trainer can differentiate them (tf.grad / tf.variableGrads):
 * a registry of per-token policy losses, the loss aggregation modes, KL estimators against a reference
 * policy, and the entropy bonus. Metrics are plain numbers read from the tensors' data; reading data does
 * not cut the gradient tape, and no metric tensor feeds the loss.
 *
 * Call it inside tf.tidy (or tf.variableGrads, which tidies for you) so intermediates are freed.
 *
 * Sources: verl = volcengine/verl b178a3cd verl/trainer/ppo/core_algos.py;
 *          trl  = huggingface/trl f2cd5771 trl/trainer/grpo_trainer.py.
 */
import * as tf from '@tensorflow/tfjs-core';
import { assertFiniteData, invalid } from './validate.ts';
import { quantile } from '../util/stats.ts';
import { Rng } from '../util/rng.ts';

export const AGGREGATIONS = ['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'] as const;
export type Aggregation = (typeof AGGREGATIONS)[number];

/** 'k1+', 'k3+', 'abs+': verl's straight-through forms, the value of k1/k3/abs with the gradient of k2. */
export const KL_ESTIMATORS = ['k1', 'k2', 'k3', 'abs', 'k1+', 'k3+', 'abs+'] as const;
export type KlEstimator = (typeof KL_ESTIMATORS)[number];

export interface PolicyLossParams {
  /** Ratio clip 1 − clipLow … 1 + clipHigh (DAPO clip-higher: 0.2 / 0.28). */
  clipLow: number;
  clipHigh: number;
  /** Dual-clip bound c > 1 for negative advantages (verl default 3.0); null turns it off (TRL). */
  dualClip: number | null;
  /** Clamp of logp − oldLogp before exp (verl ±20, core_algos.py:1212); null: none (TRL). */
  logRatioClamp: number | null;
  aggregation: Aggregation;
  /** Constant divisor of seq-mean-token-sum-norm; null: the padded length T (verl's default). */
  aggNormalizer: number | null;
  /** Upper clamp of GSPO's log sequence ratio (verl 10.0, core_algos.py:1298). */
  seqLogRatioMax: number;
  /**
   * seq-mean-* aggregations: leave fully masked sequences out of the mean ('skip', verl) or count them in the
   * number of sequences ('count', TRL loss_type="grpo", which divides by B).
   */
  emptySeqs: 'skip' | 'count';
  /** CISPO's weight clip: 'both' clips to [1−clipLow, 1+clipHigh] (verl); 'upper' only from above (the paper, TRL). */
  cispoClip: 'both' | 'upper';
  /** TRL `delta` (INTELLECT-2 two-sided clipping): the unclipped ratio is capped at delta in ppo; null: off. */
  delta: number | null;
  /** SAPO gate temperatures for A > 0 and A ≤ 0 (verl defaults 1.0 / 1.05). */
  tauPos: number;
  tauNeg: number;
  /** VESPO gamma weight φ(w) = e^λ w^k e^{−λw} shapes, A ≥ 0 and A < 0 (TRL defaults 2, 3, 3, 2). */
  vespoKPos: number;
  vespoLambdaPos: number;
  vespoKNeg: number;
  vespoLambdaNeg: number;
  /** clip_cov: share of tokens to detach and the covariance window (verl 2e-4, 1, 5). */
  clipCovRatio: number;
  clipCovLb: number;
  clipCovUb: number;
  /** kl_cov: share of top-covariance tokens that get the |Δ| penalty, and its coefficient (verl 2e-4, 1). */
  klCovRatio: number;
  klCovCoef: number;
  /** Seed of clip_cov's random choice among candidate tokens (verl draws torch.randperm). */
  covSeed: number;
  /** TRL top_entropy_quantile: only tokens with entropy ≥ this quantile of the batch's get a policy loss; null: all. */
  topEntropyQuantile: number | null;
  /** R²VPO: weight of the ratio-variance penalty. */
  r2vpoBeta: number;
  /** DisCO: KL budget δ and the squared-hinge penalty weight β. */
  discoDelta: number;
  discoBeta: number;
  /** Reg-GRPO: scale of the predicted advantage (ρ − mean_g ρ)/regScale. */
  regScale: number;
}

export interface KlParams {
  /** 0 turns the KL term off (no refLogp needed). */
  coef: number;
  estimator: KlEstimator;
  /** verl's k3 clamps (−d to ±20, the result to ±10); TRL has none. */
  clamp: boolean;
}

export interface LossConfig {
  /** Unset knobs take DEFAULT_POLICY_LOSS_PARAMS. */
  loss: Partial<PolicyLossParams> & { name: string };
  kl: KlParams;
  entropyCoef: number;
  /** LLDS likelihood-preserving regularizer weight (0: off); see lldsPenalty. */
  lldsCoef?: number;
}

/** Everything but the name, at the defaults (verl's where verl has the knob). */
export const DEFAULT_POLICY_LOSS_PARAMS: PolicyLossParams = {
  clipLow: 0.2,
  clipHigh: 0.2,
  dualClip: 3,
  logRatioClamp: 20,
  aggregation: 'token-mean',
  aggNormalizer: null,
  seqLogRatioMax: 10,
  emptySeqs: 'skip',
  cispoClip: 'both',
  delta: null,
  tauPos: 1,
  tauNeg: 1.05,
  vespoKPos: 2,
  vespoLambdaPos: 3,
  vespoKNeg: 3,
  vespoLambdaNeg: 2,
  clipCovRatio: 2e-4,
  clipCovLb: 1,
  clipCovUb: 5,
  klCovRatio: 2e-4,
  klCovCoef: 1,
  covSeed: 0,
  topEntropyQuantile: null,
  r2vpoBeta: 1,
  discoDelta: 1e-4,
  discoBeta: 1e3,
  regScale: 1,
};

export interface PolicyLossInput {
  /** [B,T] log-probs of the sampled tokens under the current policy (differentiable). */
  logp: tf.Tensor2D;
  /** [B,T] log-probs under the policy that sampled them. */
  oldLogp: tf.Tensor2D;
  /** [B] (one per response) or [B,T] (per token). */
  advantages: tf.Tensor1D | tf.Tensor2D;
  /** [B,T] 1 for tokens the policy produced, 0 for prompt, observation and padding tokens. */
  mask: tf.Tensor2D;
  /** [B,T] reference-policy log-probs, needed when kl.coef > 0. */
  refLogp?: tf.Tensor2D;
  /** [B,T] per-token entropy of the policy (or give logits). */
  entropy?: tf.Tensor2D;
  /** [B,T,V] logits, from which the entropy is computed when `entropy` is absent. */
  logits?: tf.Tensor3D;
  /** Prompt group of each sequence, for the group-level losses (disco, reg_grpo). */
  groupIds?: readonly (string | number)[];
}

export interface LossMetrics {
  loss: number;
  pgLoss: number;
  klLoss: number;
  entropyLoss: number;
  /** Fraction of policy tokens clipped at 1 − clipLow (A < 0). */
  clipFracLow: number;
  /** Fraction of policy tokens clipped at 1 + clipHigh (A > 0). */
  clipFracHigh: number;
  /** clipFracLow + clipFracHigh (= verl pg_clipfrac). */
  clipFrac: number;
  /** Fraction bounded by the dual clip (= verl pg_clipfrac_lower). */
  dualClipFrac: number;
  /** Token mean of oldLogp − logp (verl ppo_kl). */
  approxKl: number;
  /** Token mean of the importance ratio the loss used (the sequence ratio for gspo). */
  meanRatio: number;
  /** Token mean of the entropy, when entropy or logits were given. */
  entropy?: number;
  /** Token mean of the KL estimate against the reference, when refLogp was given. */
  kl?: number;
  /** LLDS penalty before its coefficient, when lldsCoef > 0. */
  lldsLoss?: number;
  tokens: number;
  sequences: number;
}

interface PerTokenLoss {
  /** [B,T] loss per token (masking is applied by the aggregation). */
  losses: tf.Tensor2D;
  /** Aggregation the loss insists on (gspo, luspo), overriding the config. */
  forceAggregation?: Aggregation;
  /** Losses defined on whole sequences or groups (geo_mean, disco, reg_grpo) give their scalar directly. */
  scalar?: tf.Scalar;
}

type LossParts = {
  logp: tf.Tensor2D;
  oldLogp: tf.Tensor2D;
  adv: tf.Tensor2D;
  mask: tf.Tensor2D;
  maskData: number[][];
  /** Per-sequence advantage (the first policy token's), read once. */
  advSeq: number[];
  groupIds?: readonly (string | number)[];
};
export type PolicyLossFn = (x: LossParts, p: PolicyLossParams) => PerTokenLoss;

/** Identity forward, zero gradient (torch's .detach()). */
export function stopGradient<T extends tf.Tensor>(x: T): T {
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const t = args[0] as tf.Tensor;
    return { value: t.clone(), gradFunc: (dy: tf.Tensor) => tf.zerosLike(dy) };
  });
  return f(x) as T;
}

function logRatio(x: LossParts, p: PolicyLossParams): tf.Tensor2D {
  const d = tf.sub(x.logp, x.oldLogp) as tf.Tensor2D;
  return p.logRatioClamp === null ? d : (tf.clipByValue(d, -p.logRatioClamp, p.logRatioClamp) as tf.Tensor2D);
}

/**
 * PPO clipped surrogate with clip-higher and dual clip, verl compute_policy_loss_vanilla (core_algos.py:1160-1250):
 * ρ = exp(clamp(Δ, ±20)); L = max(−Aρ, −A·clip(ρ, 1−ε_low, 1+ε_high)); for A < 0, L = min(L, −A·c).
 * With dualClip = null and logRatioClamp = null this is TRL's −min(ρA, clip(ρ)A) (grpo_trainer.py:3084-3091).
 */
const ppo: PolicyLossFn = (x, p) => {
  const ratio = tf.exp(logRatio(x, p));
  const negA = tf.neg(x.adv);
  // TRL delta: cap the unclipped ratio too, so a huge ratio with A < 0 cannot blow the loss up (INTELLECT-2).
  const pg1 = tf.mul(negA, p.delta === null ? ratio : tf.minimum(ratio, p.delta));
  const pg2 = tf.mul(negA, tf.clipByValue(ratio, 1 - p.clipLow, 1 + p.clipHigh));
  const clip1 = tf.maximum(pg1, pg2);
  if (p.dualClip === null) return { losses: clip1 as tf.Tensor2D };
  const pg3 = tf.mul(negA, p.dualClip);
  const clip2 = tf.minimum(pg3, clip1);
  return { losses: tf.where(tf.less(x.adv, 0), clip2, clip1) as tf.Tensor2D };
};

/** Masked per-sequence mean of logp − oldLogp, [B,1]; sequences without tokens get 0 (verl clamps the length to ≥ 1). */
function seqMeanLogRatio(x: LossParts): tf.Tensor2D {
  const d = tf.mul(tf.sub(x.logp, x.oldLogp), x.mask);
  const lens = tf.tensor2d(x.maskData.map((row) => [Math.max(1, row.reduce((s, v) => s + v, 0))]));
  return tf.div(tf.sum(d, 1, true), lens) as tf.Tensor2D;
}

/**
 * GSPO, verl compute_policy_loss_gspo (core_algos.py:1254-1326), the stop-gradient form:
 * log s_t = logp_t − sg(logp_t) + sg(mean_t Δ), clamped ≤ 10; L = max(−A s, −A·clip(s, 1−ε_low, 1+ε_high));
 * aggregated with seq-mean-token-mean whatever the config says. Forward value: s = exp(mean Δ) on every token;
 * gradient: s·∇logp_t per token.
 */
const gspo: PolicyLossFn = (x, p) => {
  const logS = tf.add(tf.sub(x.logp, stopGradient(x.logp)), stopGradient(seqMeanLogRatio(x)));
  const s = tf.exp(tf.minimum(logS, p.seqLogRatioMax));
  const negA = tf.neg(x.adv);
  const pg1 = tf.mul(negA, s);
  const pg2 = tf.mul(negA, tf.clipByValue(s, 1 - p.clipLow, 1 + p.clipHigh));
  return { losses: tf.maximum(pg1, pg2) as tf.Tensor2D, forceAggregation: 'seq-mean-token-mean' };
};

/**
 * CISPO (MiniMax-M1, arXiv 2506.13585): L = −sg(r̂)·A·logp. cispoClip 'both': r̂ = clip(ρ, 1−ε_low, 1+ε_high), verl
 * compute_policy_loss_cispo; 'upper': r̂ = min(ρ, 1+ε_high), the paper (no lower bound) and TRL loss_type="cispo".
 */
const cispo: PolicyLossFn = (x, p) => {
  const ratio = tf.exp(logRatio(x, p));
  const w = stopGradient(p.cispoClip === 'upper' ? tf.minimum(ratio, 1 + p.clipHigh) : tf.clipByValue(ratio, 1 - p.clipLow, 1 + p.clipHigh));
  return { losses: tf.neg(tf.mul(tf.mul(w, x.adv), x.logp)) as tf.Tensor2D };
};

/** GPG, verl compute_policy_loss_gpg (core_algos.py:1415-1447): L = −A·logp (no ratio). */
const gpgLoss: PolicyLossFn = (x) => ({ losses: tf.neg(tf.mul(x.adv, x.logp)) as tf.Tensor2D });

/** Per-sequence token counts. */
function seqLens(x: LossParts): number[] {
  return x.maskData.map((row) => row.reduce((s, v) => s + v, 0));
}

/** [B,1] column tensor from per-sequence numbers. */
function col(xs: readonly number[]): tf.Tensor2D {
  return tf.tensor2d(xs.map((v) => [v]));
}

/**
 * GMPO, verl compute_policy_loss_geo_mean: per token the log-ratio clipped sign-aware,
 * Δ̃ = sgn(A)·min(sgn(A)·Δ, sgn(A)·clamp(Δ, −ε_low, ε_high)); the sequence ratio is the geometric mean
 * exp(Σ m·Δ̃ / (Σ m + 1e-8)), the sequence advantage the token mean of A; L = mean over all B rows of −Â·ratio
 * (verl's torch.mean, so fully masked rows count in B). No ±20 clamp, as verl.
 */
const geoMean: PolicyLossFn = (x, p) => {
  const d = tf.sub(x.logp, x.oldLogp);
  const sgn = tf.sign(x.adv);
  const dc = tf.clipByValue(d, -p.clipLow, p.clipHigh);
  const dmin = tf.mul(sgn, tf.minimum(tf.mul(sgn, d), tf.mul(sgn, dc)));
  const lens = col(seqLens(x).map((n) => n + 1e-8));
  const ratio = tf.exp(tf.div(tf.sum(tf.mul(dmin, x.mask), 1, true), lens));
  const advS = tf.div(tf.sum(tf.mul(x.adv, x.mask), 1, true), lens);
  const seqLoss = tf.neg(tf.mul(advS, ratio));
  return { losses: tf.mul(tf.onesLike(x.logp), seqLoss) as tf.Tensor2D, scalar: tf.mean(seqLoss) as tf.Scalar };
};

/**
 * SAPO (arXiv 2511.20347), verl compute_policy_loss_sapo / TRL loss_type="sapo": a soft gate instead of the clip,
 * f(ρ) = σ(τ(ρ − 1))·4/τ with τ = tauPos for A > 0 and tauNeg otherwise; L = −f(ρ)·A (ρ from the ±20-clamped Δ).
 */
const sapo: PolicyLossFn = (x, p) => {
  const ratio = tf.exp(logRatio(x, p));
  const tau = tf.where(tf.greater(x.adv, 0), tf.fill(x.adv.shape, p.tauPos), tf.fill(x.adv.shape, p.tauNeg));
  const gate = tf.div(tf.mul(tf.sigmoid(tf.mul(tau, tf.sub(ratio, 1))), 4), tau);
  return { losses: tf.neg(tf.mul(gate, x.adv)) as tf.Tensor2D };
};

/**
 * Clip-Cov (arXiv 2505.22617), verl compute_policy_loss_clip_cov: among tokens the PPO clip left alone, those whose
 * cov = (A − mean A)(logp − mean logp) lies in (lb, ub) are candidates; max(1, ⌊ratio·N⌋) of them, drawn at random,
 * get their gradient detached (loss × 0). No dual clip, no ±20 clamp, as verl.
 */
export function clipCovSelection(adv: number[][], logp: number[][], mask: number[][], clippedByPpo: boolean[][], p: Pick<PolicyLossParams, 'clipCovRatio' | 'clipCovLb' | 'clipCovUb' | 'covSeed'>): [number, number][] {
  let n = 0, sa = 0, sl = 0;
  mask.forEach((row, b) => row.forEach((m, t) => {
    if (m) { n++; sa += adv[b][t]; sl += logp[b][t]; }
  }));
  if (n === 0) return [];
  const ma = sa / n, ml = sl / n;
  const cands: [number, number][] = [];
  mask.forEach((row, b) => row.forEach((m, t) => {
    if (!m || clippedByPpo[b][t]) return;
    const c = (adv[b][t] - ma) * (logp[b][t] - ml);
    if (c > p.clipCovLb && c < p.clipCovUb) cands.push([b, t]);
  }));
  const k = Math.max(1, Math.floor(p.clipCovRatio * n));
  return new Rng(p.covSeed).shuffle(cands).slice(0, k);
}

const clipCov: PolicyLossFn = (x, p) => {
  const ratio = tf.exp(tf.sub(x.logp, x.oldLogp));
  const negA = tf.neg(x.adv);
  const pg1 = tf.mul(negA, ratio);
  const pg2 = tf.mul(negA, tf.clipByValue(ratio, 1 - p.clipLow, 1 + p.clipHigh));
  const clipped = (tf.greater(pg2, pg1).arraySync() as number[][]).map((row) => row.map(Boolean));
  const sel = clipCovSelection(x.adv.arraySync(), x.logp.arraySync(), x.maskData, clipped, p);
  const corr = x.maskData.map((row) => row.map(() => 1));
  for (const [b, t] of sel) corr[b][t] = 0;
  return { losses: tf.mul(tf.maximum(pg1, pg2), tf.tensor2d(corr)) as tf.Tensor2D };
};

/** KL-Cov (arXiv 2505.22617), verl compute_policy_loss_kl_cov: L = −Aρ, plus coef·|Δ| on the top max(1, ⌊ratio·N⌋) tokens by cov(A, logp). No clip. */
export function klCovSelection(adv: number[][], logp: number[][], mask: number[][], ratio: number): [number, number][] {
  const pos: [number, number][] = [];
  mask.forEach((row, b) => row.forEach((m, t) => m && pos.push([b, t])));
  if (pos.length === 0) return [];
  const ma = pos.reduce((s, [b, t]) => s + adv[b][t], 0) / pos.length;
  const ml = pos.reduce((s, [b, t]) => s + logp[b][t], 0) / pos.length;
  const k = Math.max(1, Math.floor(pos.length * ratio));
  return pos
    .map(([b, t], i) => ({ b, t, i, c: (adv[b][t] - ma) * (logp[b][t] - ml) }))
    .sort((u, v) => v.c - u.c || u.i - v.i)
    .slice(0, k)
    .map(({ b, t }) => [b, t]);
}

const klCov: PolicyLossFn = (x, p) => {
  const d = tf.sub(x.logp, x.oldLogp);
  const base = tf.neg(tf.mul(x.adv, tf.exp(d)));
  const sel = klCovSelection(x.adv.arraySync(), x.logp.arraySync(), x.maskData, p.klCovRatio);
  const on = x.maskData.map((row) => row.map(() => 0));
  for (const [b, t] of sel) on[b][t] = 1;
  return { losses: tf.add(base, tf.mul(tf.mul(tf.abs(d), p.klCovCoef), tf.tensor2d(on))) as tf.Tensor2D };
};

/**
 * VESPO, TRL get_gamma_weights / loss_type="vespo": a detached per-sequence weight φ(w) = e^λ·w^k·e^{−λw}
 * (φ(1) = 1), w = exp(clamp(Σ_t m·clamp(Δ, ±20), ln 1e-8, 20)) the whole-sequence ratio, (k, λ) by the sign of A
 * (A ≥ 0: kPos, λPos); L = −φ·A·logp. TRL aggregates it as dapo (token-mean).
 */
export function vespoWeight(seqLogRatio: number, a: number, p: Pick<PolicyLossParams, 'vespoKPos' | 'vespoLambdaPos' | 'vespoKNeg' | 'vespoLambdaNeg'>): number {
  const logW = Math.min(20, Math.max(Math.log(1e-8), seqLogRatio));
  const [k, lam0] = a >= 0 ? [p.vespoKPos, p.vespoLambdaPos] : [p.vespoKNeg, p.vespoLambdaNeg];
  const lam = Math.max(1e-4, lam0);
  const phi = Math.exp(lam + k * logW - lam * Math.exp(logW));
  return Number.isFinite(phi) ? phi : 0;
}

const vespo: PolicyLossFn = (x, p) => {
  const lp = x.logp.arraySync();
  const old = x.oldLogp.arraySync();
  const phi = x.maskData.map((row, b) => {
    let s = 0;
    row.forEach((m, t) => (s += m * Math.min(20, Math.max(-20, lp[b][t] - old[b][t]))));
    return vespoWeight(s, x.advSeq[b], p);
  });
  return { losses: tf.neg(tf.mul(tf.mul(col(phi), x.adv), x.logp)) as tf.Tensor2D };
};

/**
 * LUSPO, TRL loss_type="luspo" with the sequence-level ratio: (per-sequence loss × its length), mean over sequences.
 * The GSPO sequence loss is the same on every token, so this is gspo aggregated as seq-mean-token-sum.
 */
const luspo: PolicyLossFn = (x, p) => ({ ...gspo(x, p), forceAggregation: 'seq-mean-token-sum' });

/**
 * R²VPO ("Ratio-Variance Regularized Policy Optimization", 2025), core form: no hard clip; the trust region is a
 * penalty on the ratio's variance, L = −ρA + (β/2)(ρ − 1)², using E_old[ρ] = 1 so (ρ − 1)² estimates the
 * variance per token. The paper's primal-dual update of β and its stale-sample reweighting are left out (β fixed).
 */
const r2vpo: PolicyLossFn = (x, p) => {
  const ratio = tf.exp(logRatio(x, p));
  return { losses: tf.add(tf.neg(tf.mul(x.adv, ratio)), tf.mul(tf.square(tf.sub(ratio, 1)), p.r2vpoBeta / 2)) as tf.Tensor2D };
};

/**
 * Off-policy group REINFORCE ("Group-Relative REINFORCE Is Secretly an Off-Policy Algorithm", 2025), its REC
 * one-side form: L = −A·logp without importance weight, with the tokens the PPO clip would cut (A > 0, ρ > 1+ε_high;
 * A < 0, ρ < 1−ε_low) masked: the regularization that makes REINFORCE valid on stale data.
 */
const rec: PolicyLossFn = (x, p) => {
  // The mask is data, not a function of θ: read it off the current values so no comparison op sits on the tape.
  const lp = x.logp.arraySync();
  const old = x.oldLogp.arraySync();
  const adv = x.adv.arraySync();
  const keep = lp.map((row, b) =>
    row.map((v, t) => {
      const d = v - old[b][t];
      const rho = Math.exp(p.logRatioClamp === null ? d : Math.min(p.logRatioClamp, Math.max(-p.logRatioClamp, d)));
      const a = adv[b][t];
      return (a > 0 && rho > 1 + p.clipHigh) || (a < 0 && rho < 1 - p.clipLow) ? 0 : 1;
    }),
  );
  return { losses: tf.mul(tf.neg(tf.mul(x.adv, x.logp)), tf.tensor2d(keep)) as tf.Tensor2D };
};

function groupsOf(x: LossParts, who: string): number[][] {
  if (!x.groupIds) throw invalid(`loss "${who}" needs groupIds (the prompt group of each sequence)`);
  if (x.groupIds.length !== x.maskData.length) throw invalid(`groupIds has ${x.groupIds.length} entries for ${x.maskData.length} sequences`);
  const by = new Map<string | number, number[]>();
  x.groupIds.forEach((g, i) => (by.get(g) ?? by.set(g, []).get(g)!).push(i));
  return [...by.values()];
}

/**
 * DisCO-b (arXiv 2505.12366): per group, the mean score of its positive answers (A > 0) minus the mean score of its
 * negative ones (A < 0), score s(o) = (1/|o|)Σ_t ρ_t (likelihood ratio), averaged over groups that have both; KL
 * to the old policy (token mean of oldLogp − logp) kept under δ by a squared hinge β·max(0, KL − δ)².
 * The log-sum-exp variant for negatives is left out.
 */
const disco: PolicyLossFn = (x, p) => {
  const lens = seqLens(x);
  const w = new Array<number>(lens.length).fill(0);
  let used = 0;
  for (const idx of groupsOf(x, 'disco')) {
    const pos = idx.filter((i) => x.advSeq[i] > 0 && lens[i] > 0);
    const neg = idx.filter((i) => x.advSeq[i] < 0 && lens[i] > 0);
    if (!pos.length || !neg.length) continue;
    used++;
    for (const i of pos) w[i] = -1 / (pos.length * lens[i]);
    for (const i of neg) w[i] = 1 / (neg.length * lens[i]);
  }
  const ratio = tf.exp(logRatio(x, p));
  const per = tf.mul(tf.mul(ratio, col(w)), x.mask) as tf.Tensor2D;
  const nTok = Math.max(1, lens.reduce((a, b) => a + b, 0));
  const kl = tf.div(tf.sum(tf.mul(tf.sub(x.oldLogp, x.logp), x.mask)), nTok);
  const hinge = tf.mul(tf.square(tf.relu(tf.sub(kl, p.discoDelta))), p.discoBeta);
  return { losses: per, scalar: tf.add(tf.div(tf.sum(per), Math.max(1, used)), hinge) as tf.Scalar };
};

/**
 * Reg-GRPO (DeepVideo-R1, "Difficulty-aware Regressive GRPO", 2025), core form: instead of a clipped surrogate the
 * policy regresses the group advantage, L = mean_i (A_i − (ρ_i − mean_g ρ)/regScale)², ρ_i the sequence ratio
 * exp(mean_t Δ). A fixed scale stands in for the paper's normalization of the predicted advantage; the
 * difficulty-aware data augmentation is a sampler concern (group-math.ts difficultyAugment).
 */
const regGrpo: PolicyLossFn = (x) => {
  const lens = seqLens(x);
  const s = tf.exp(seqMeanLogRatio(x));
  const groups = groupsOf(x, 'reg_grpo');
  const B = lens.length;
  // centering matrix: (I − group mean) applied to the column of ratios
  const C = Array.from({ length: B }, () => new Array<number>(B).fill(0));
  for (const idx of groups) for (const i of idx) for (const j of idx) C[i][j] = (i === j ? 1 : 0) - 1 / idx.length;
  return { losses: tf.zerosLike(x.logp) as tf.Tensor2D, scalar: regLoss(tf.matMul(tf.tensor2d(C), s) as tf.Tensor2D, x) };
};

function regLoss(centered: tf.Tensor2D, x: LossParts): tf.Scalar {
  const a = col(x.advSeq);
  const active = col(x.maskData.map((row) => (row.some((m) => m) ? 1 : 0)));
  const n = Math.max(1, x.maskData.filter((row) => row.some((m) => m)).length);
  return tf.div(tf.sum(tf.mul(tf.square(tf.sub(a, centered)), active)), n) as tf.Scalar;
}

export const POLICY_LOSSES = {
  ppo: { formula: 'max(−Aρ, −A·clip(ρ, 1−ε_low, 1+ε_high)), A<0: min(·, −A·c)', fn: ppo },
  gspo: { formula: 'max(−As, −A·clip(s)), s = exp(mean_t Δlogp) (stop-gradient form)', fn: gspo },
  cispo: { formula: '−sg(clip(ρ))·A·logp', fn: cispo },
  gpg: { formula: '−A·logp', fn: gpgLoss },
  geo_mean: { formula: '−Â·exp(mean_t sign-clipped Δ), mean over sequences (GMPO)', fn: geoMean },
  sapo: { formula: '−σ(τ(ρ−1))·4/τ·A', fn: sapo },
  clip_cov: { formula: 'ppo clip, plus detach ⌊r·N⌋ random tokens with cov(A, logp) in (lb, ub)', fn: clipCov },
  kl_cov: { formula: '−Aρ + coef·|Δ| on the top ⌊r·N⌋ tokens by cov(A, logp)', fn: klCov },
  vespo: { formula: '−sg(φ(w_seq))·A·logp, φ(w) = e^λ w^k e^{−λw}', fn: vespo },
  luspo: { formula: 'gspo loss × sequence length, mean over sequences', fn: luspo },
  r2vpo: { formula: '−ρA + (β/2)(ρ − 1)²', fn: r2vpo },
  rec: { formula: '−A·logp, tokens outside the one-sided clip masked', fn: rec },
  disco: { formula: 'mean_g[mean_neg s − mean_pos s] + β·max(0, KL − δ)², s = mean_t ρ', fn: disco },
  reg_grpo: { formula: 'mean_i (A_i − (ρ_i − mean_g ρ)/scale)²', fn: regGrpo },
} satisfies Record<string, { formula: string; fn: PolicyLossFn }>;

export type PolicyLossName = keyof typeof POLICY_LOSSES;
export const POLICY_LOSS_NAMES = Object.keys(POLICY_LOSSES) as PolicyLossName[];

/**
 * verl agg_loss (core_algos.py:1025-1081). token-mean: Σ m·l / Σ m; seq-mean-token-sum: mean over sequences
 * of Σ_t m·l; seq-mean-token-mean: mean over sequences of Σ_t m·l / n_tok; seq-mean-token-sum-norm (Dr.GRPO):
 * Σ m·l / normalizer (default T), not divided by the number of sequences. Fully masked sequences are left out
 * of the seq-* means; with no policy token at all the loss is 0 (verl would give 0/0). Per-sequence token counts
 * are clamped to ≥ 1 (TRL's form) where verl adds 1e-8: the two differ by < 1e-8 relative.
 */
export function aggregate(
  lossMat: tf.Tensor2D,
  mask: tf.Tensor2D,
  mode: Aggregation,
  normalizer: number | null = null,
  maskData?: number[][],
  emptySeqs: 'skip' | 'count' = 'skip',
): tf.Scalar {
  const m = maskData ?? (mask.arraySync() as number[][]);
  const masked = tf.mul(lossMat, mask);
  const tokPerSeq = m.map((row) => row.reduce((s, v) => s + v, 0));
  const nTok = tokPerSeq.reduce((s, v) => s + v, 0);
  // TRL's loss_type="grpo" takes .mean() over all B rows; verl leaves fully masked rows out.
  const nSeq = emptySeqs === 'count' ? tokPerSeq.length : tokPerSeq.filter((n) => n > 0).length;
  switch (mode) {
    case 'token-mean':
      return tf.div(tf.sum(masked), Math.max(1, nTok)) as tf.Scalar;
    case 'seq-mean-token-sum':
      return tf.div(tf.sum(masked), Math.max(1, nSeq)) as tf.Scalar;
    case 'seq-mean-token-mean': {
      const inv = tf.tensor2d(tokPerSeq.map((n) => [1 / Math.max(1, n)]));
      return tf.div(tf.sum(tf.mul(masked, inv)), Math.max(1, nSeq)) as tf.Scalar;
    }
    case 'seq-mean-token-sum-norm': {
      const c = normalizer ?? lossMat.shape[1];
      if (!(c > 0)) throw invalid(`aggNormalizer is ${c}: expected a positive number`);
      return tf.div(tf.sum(masked), c) as tf.Scalar;
    }
  }
}

/**
 * Per-token KL estimate of the policy from the reference, d = logp − refLogp (verl kl_penalty_forward,
 * core_algos.py:1867-1899): k1 = d; abs = |d|; k2 = ½d²; k3 = e^{−d} + d − 1 (low_var_kl), with verl's clamps
 * (−d to ±20, result to ±10) when `clamp`. TRL's per_token_kl (grpo_trainer.py:3071) is k3 without clamps.
 */
export function klPenalty(logp: tf.Tensor2D, refLogp: tf.Tensor2D, estimator: KlEstimator, clamp = true): tf.Tensor2D {
  if (estimator.endsWith('+')) {
    // verl kl_penalty with a '+' suffix: forward value of the base estimator, gradient of k2 (an unbiased KL
    // gradient): k2 − sg(k2) + sg(base).
    const base = klPenalty(logp, refLogp, estimator.slice(0, -1) as KlEstimator, clamp);
    const k2 = klPenalty(logp, refLogp, 'k2', clamp);
    return tf.add(tf.sub(k2, stopGradient(k2)), stopGradient(base)) as tf.Tensor2D;
  }
  const d = tf.sub(logp, refLogp);
  switch (estimator) {
    case 'k1':
      return d as tf.Tensor2D;
    case 'abs':
      return tf.abs(d) as tf.Tensor2D;
    case 'k2':
      return tf.mul(tf.square(d), 0.5) as tf.Tensor2D;
    case 'k3': {
      const negD = clamp ? tf.clipByValue(tf.neg(d), -20, 20) : tf.neg(d);
      const k = tf.sub(tf.sub(tf.exp(negD), negD), 1);
      return (clamp ? tf.clipByValue(k, -10, 10) : k) as tf.Tensor2D;
    }
    default:
      throw invalid(`unknown KL estimator "${estimator}" (known: ${KL_ESTIMATORS.join(', ')})`);
  }
}

/**
 * TRL get_high_entropy_mask (top_entropy_quantile): 1 on policy tokens whose entropy is ≥ the q-quantile of the
 * batch's policy-token entropies, else 0. q = 0.8 keeps the top 20%; q = 0 keeps every token.
 */
export function highEntropyMask(entropy: number[][], mask: number[][], q: number): number[][] {
  const vals: number[] = [];
  mask.forEach((row, b) => row.forEach((m, t) => m && vals.push(entropy[b][t])));
  if (vals.length === 0) return mask.map((row) => row.map(() => 0));
  const thr = quantile(vals, q);
  return mask.map((row, b) => row.map((m, t) => (m && entropy[b][t] >= thr ? 1 : 0)));
}

/**
 * TRL mask_truncated_completions: a completion cut off by the length limit leaves the loss mask (all zeros) but its
 * reward still counts in its group's statistics, so apply this to the mask after the advantages are computed.
 */
export function maskTruncated(mask: readonly (readonly number[])[], truncated: readonly boolean[]): number[][] {
  if (mask.length !== truncated.length) throw invalid(`mask has ${mask.length} rows but truncated has ${truncated.length}`);
  return mask.map((row, b) => (truncated[b] ? row.map(() => 0) : [...row]));
}

/**
 * LLDS guard against lazy likelihood displacement ("On GRPO Collapse in Search-R1: The Lazy Likelihood-Displacement
 * Death Spiral", 2025), core form: a penalty that is active only for a sequence whose likelihood fell
 * (Σ_t m·(logp − oldLogp) < 0) and only on its tokens whose log-prob fell: per token relu(oldLogp − logp).
 * scope 'positive' applies it to responses with A > 0 (keep correct answers from losing likelihood); 'all' to every
 * response. Returned per token, aggregated by the caller.
 */
export function lldsPenalty(logp: tf.Tensor2D, oldLogp: tf.Tensor2D, mask: number[][], advSeq: readonly number[], scope: 'positive' | 'all' = 'positive'): tf.Tensor2D {
  const lp = logp.arraySync();
  const old = oldLogp.arraySync();
  const gate = mask.map((row, b) => {
    if (scope === 'positive' && !(advSeq[b] > 0)) return [0];
    let s = 0;
    row.forEach((m, t) => (s += m * (lp[b][t] - old[b][t])));
    return [s < 0 ? 1 : 0];
  });
  return tf.mul(tf.relu(tf.sub(oldLogp, logp)), tf.tensor2d(gate)) as tf.Tensor2D;
}

/**
 * Weights of one micro-batch's policy-loss and auxiliary (KL, entropy) terms so that the micro-batch losses add up
 * to the whole batch's (verl's loss_scale_factor). The policy term follows the aggregation the loss uses (gspo
 * forces seq-mean-token-mean, luspo seq-mean-token-sum); KL and entropy follow the configured one. Shares are the
 * micro-batch's fraction of policy tokens and of sequences (active ones, or all with emptySeqs 'count').
 */
export function microBatchShares(
  loss: { name: string; aggregation?: Aggregation },
  tokenShare: number,
  seqShare: number,
): { pg: number; aux: number } {
  const one = (agg: Aggregation): number => (agg === 'token-mean' ? tokenShare : agg === 'seq-mean-token-sum-norm' ? (tokenShare > 0 ? 1 : 0) : seqShare);
  const forced: Aggregation | undefined = loss.name === 'gspo' ? 'seq-mean-token-mean' : loss.name === 'luspo' ? 'seq-mean-token-sum' : undefined;
  // Whole-batch scalar losses (geo_mean, disco, reg_grpo) are means over sequences or groups: weight by sequences.
  const scalarLoss = loss.name === 'geo_mean' || loss.name === 'disco' || loss.name === 'reg_grpo';
  const configured = loss.aggregation ?? DEFAULT_POLICY_LOSS_PARAMS.aggregation;
  return { pg: scalarLoss ? seqShare : one(forced ?? configured), aux: one(configured) };
}

/** Categorical entropy per position from logits [B,T,V]: logsumexp(z) − Σ softmax(z)·z. */
export function entropyFromLogits(logits: tf.Tensor3D): tf.Tensor2D {
  const lse = tf.logSumExp(logits, -1);
  const p = tf.softmax(logits, -1);
  return tf.sub(lse, tf.sum(tf.mul(p, logits), -1)) as tf.Tensor2D;
}

function sameShape(name: string, t: tf.Tensor, shape: readonly number[]): void {
  if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
    throw invalid(`${name} has shape [${t.shape.join(',')}], expected [${shape.join(',')}]`);
  }
}

function checkTensors(input: PolicyLossInput, needRef: boolean): void {
  const { logp } = input;
  if (logp.rank !== 2) throw invalid(`logp has shape [${logp.shape.join(',')}], expected [B,T]`);
  const [B, T] = logp.shape;
  sameShape('oldLogp', input.oldLogp, [B, T]);
  sameShape('mask', input.mask, [B, T]);
  if (input.advantages.rank === 1) sameShape('advantages', input.advantages, [B]);
  else sameShape('advantages', input.advantages, [B, T]);
  if (needRef && !input.refLogp) throw invalid('kl.coef > 0 needs refLogp (reference-policy log-probs)');
  if (input.refLogp) sameShape('refLogp', input.refLogp, [B, T]);
  if (input.entropy) sameShape('entropy', input.entropy, [B, T]);
  if (input.logits) {
    if (input.logits.rank !== 3 || input.logits.shape[0] !== B || input.logits.shape[1] !== T) {
      throw invalid(`logits has shape [${input.logits.shape.join(',')}], expected [${B},${T},V]`);
    }
  }
  const named: [string, tf.Tensor | undefined][] = [
    ['logp', logp],
    ['oldLogp', input.oldLogp],
    ['advantages', input.advantages],
    ['mask', input.mask],
    ['refLogp', input.refLogp],
    ['entropy', input.entropy],
    ['logits', input.logits],
  ];
  for (const [name, t] of named) {
    if (!t) continue;
    // One boolean crosses to JS on the normal path; the element-wise scan only runs to name the culprit.
    const bad = tf.tidy(() => tf.any(tf.logicalNot(tf.isFinite(t))).dataSync()[0]);
    if (bad) assertFiniteData(name, t.dataSync() as Float32Array);
  }
  const md = input.mask.dataSync();
  for (let i = 0; i < md.length; i++) if (md[i] !== 0 && md[i] !== 1) throw invalid(`mask contains ${md[i]}: expected 0 or 1`);
}

/**
 * The full actor loss: agg(policy loss) + kl.coef·agg(KL) − entropyCoef·agg(entropy), with the metrics
 * (verl verl/workers/actor/dp_actor.py:633-648). KL and entropy use the configured aggregation, as verl's actor
 * does, even when gspo forces its own.
 */
export function computePolicyLoss(
  input: PolicyLossInput,
  cfg: LossConfig,
  /** Micro-batch weights of the policy term and of the KL/entropy terms (microBatchShares); default 1 and 1. */
  scales: { pg: number; aux: number } = { pg: 1, aux: 1 },
): { loss: tf.Scalar; metrics: LossMetrics } {
  const entry = (POLICY_LOSSES as Record<string, { fn: PolicyLossFn } | undefined>)[cfg.loss.name];
  if (!entry) throw invalid(`unknown policy loss "${cfg.loss.name}" (known: ${POLICY_LOSS_NAMES.join(', ')})`);
  const p: PolicyLossParams = { ...DEFAULT_POLICY_LOSS_PARAMS, ...cfg.loss };
  if (p.dualClip !== null && !(p.dualClip > 1)) throw invalid(`dualClip is ${p.dualClip}: it must be > 1 (or null)`);
  if (p.delta !== null && !(p.delta > 1 + p.clipHigh)) throw invalid(`delta is ${p.delta}: it must be > 1 + clipHigh (or null)`);
  const useKl = cfg.kl.coef !== 0;
  checkTensors(input, useKl);
  const [B, T] = input.logp.shape;
  const maskData = input.mask.arraySync() as number[][];
  const adv = (input.advantages.rank === 1 ? tf.broadcastTo(tf.reshape(input.advantages, [B, 1]), [B, T]) : input.advantages) as tf.Tensor2D;
  const advRows = adv.arraySync();
  const advSeq = maskData.map((row, b) => {
    const t = row.indexOf(1);
    return advRows[b][t < 0 ? 0 : t];
  });
  const parts: LossParts = { logp: input.logp, oldLogp: input.oldLogp, adv, mask: input.mask, maskData, advSeq, groupIds: input.groupIds };
  const ent = input.entropy ?? (input.logits ? entropyFromLogits(input.logits) : undefined);

  const { losses, forceAggregation, scalar } = entry.fn(parts, p);
  let pgMat = losses;
  if (p.topEntropyQuantile !== null) {
    if (!ent) throw invalid('topEntropyQuantile needs the per-token entropy (or logits)');
    pgMat = tf.mul(pgMat, tf.tensor2d(highEntropyMask(ent.arraySync(), maskData, p.topEntropyQuantile))) as tf.Tensor2D;
  }
  const agg = (m: tf.Tensor2D, mode: Aggregation): tf.Scalar => aggregate(m, input.mask, mode, p.aggNormalizer, maskData, p.emptySeqs);
  const pg = scalar ?? agg(pgMat, forceAggregation ?? p.aggregation);
  let total: tf.Scalar = tf.mul(pg, scales.pg);
  let klTok: tf.Tensor2D | undefined;
  let klLoss: tf.Scalar | undefined;
  if (input.refLogp) {
    klTok = klPenalty(input.logp, input.refLogp, cfg.kl.estimator, cfg.kl.clamp);
    if (useKl) {
      klLoss = agg(klTok, p.aggregation);
      total = tf.add(total, tf.mul(klLoss, cfg.kl.coef * scales.aux));
    }
  }
  let entLoss: tf.Scalar | undefined;
  if (ent) {
    entLoss = agg(ent, p.aggregation);
    if (cfg.entropyCoef !== 0) total = tf.sub(total, tf.mul(entLoss, cfg.entropyCoef * scales.aux));
  }
  let lldsLoss: tf.Scalar | undefined;
  if (cfg.lldsCoef) {
    lldsLoss = agg(lldsPenalty(input.logp, input.oldLogp, maskData, advSeq), p.aggregation);
    total = tf.add(total, tf.mul(lldsLoss, cfg.lldsCoef * scales.aux));
  }

  const metrics = tokenMetrics(cfg.loss.name, input, maskData, p, ent, klTok);
  const num = (t: tf.Scalar | undefined): number => (t ? t.dataSync()[0] : 0);
  return {
    loss: total,
    metrics: { ...metrics, loss: num(total), pgLoss: num(pg), klLoss: num(klLoss), entropyLoss: num(entLoss), ...(lldsLoss ? { lldsLoss: num(lldsLoss) } : {}) },
  };
}

/** Losses with a PPO-style ratio clip whose clip fractions mean something (TRL's low/high split by the sign of A). */
const CLIPPED_LOSSES = new Set(['ppo', 'gspo', 'luspo', 'clip_cov', 'rec']);

/** Clip fractions, ratio, approx KL, entropy and KL means over policy tokens, in plain numbers (TRL grpo_trainer.py:3244-3245 for the low/high split). */
function tokenMetrics(
  name: string,
  input: PolicyLossInput,
  m: number[][],
  p: PolicyLossParams,
  ent: tf.Tensor2D | undefined,
  klTok: tf.Tensor2D | undefined,
): Omit<LossMetrics, 'loss' | 'pgLoss' | 'klLoss' | 'entropyLoss' | 'lldsLoss'> {
  const lp = input.logp.arraySync();
  const old = input.oldLogp.arraySync();
  const advRaw = input.advantages.arraySync();
  const A = (b: number, t: number): number => (Array.isArray(advRaw[b]) ? (advRaw[b] as number[])[t] : (advRaw[b] as number));
  const entD = ent?.arraySync();
  const klD = klTok?.arraySync();
  const clampD = (d: number): number => (p.logRatioClamp === null ? d : Math.min(p.logRatioClamp, Math.max(-p.logRatioClamp, d)));
  let n = 0, low = 0, high = 0, dual = 0, ratioSum = 0, kl1 = 0, entSum = 0, klSum = 0;
  let seqs = 0;
  lp.forEach((row, b) => {
    const tok = m[b].reduce((s, v) => s + v, 0);
    if (tok > 0) seqs++;
    let seqLogRatio = 0;
    if (name === 'gspo' || name === 'luspo') {
      for (let t = 0; t < row.length; t++) seqLogRatio += m[b][t] * (row[t] - old[b][t]);
      seqLogRatio = Math.min(p.seqLogRatioMax, seqLogRatio / Math.max(1, tok));
    }
    for (let t = 0; t < row.length; t++) {
      if (m[b][t] === 0) continue;
      n++;
      const seqRatio = name === 'gspo' || name === 'luspo';
      const d = seqRatio ? row[t] - old[b][t] : clampD(row[t] - old[b][t]);
      const rho = seqRatio ? Math.exp(seqLogRatio) : Math.exp(d);
      const a = A(b, t);
      if (name === 'cispo') {
        // verl's cispo pg_clipfrac: ratio ≠ its clipped value, whatever the sign of A.
        if (rho > 1 + p.clipHigh) high++;
        if (p.cispoClip === 'both' && rho < 1 - p.clipLow) low++;
      } else if (CLIPPED_LOSSES.has(name)) {
        if (a > 0 && rho > 1 + p.clipHigh) high++;
        if (a < 0 && rho < 1 - p.clipLow) low++;
        const clipped = Math.min(1 + p.clipHigh, Math.max(1 - p.clipLow, rho));
        if (name === 'ppo' && p.dualClip !== null && a < 0 && Math.max(rho, clipped) > p.dualClip) dual++;
      }
      ratioSum += rho;
      kl1 += -d;
      if (entD) entSum += entD[b][t];
      if (klD) klSum += klD[b][t];
    }
  });
  const avg = (x: number): number => (n > 0 ? x / n : 0);
  return {
    clipFracLow: avg(low),
    clipFracHigh: avg(high),
    clipFrac: avg(low + high),
    dualClipFrac: avg(dual),
    approxKl: avg(kl1),
    meanRatio: avg(ratioSum),
    ...(entD ? { entropy: avg(entSum) } : {}),
    ...(klD ? { kl: avg(klSum) } : {}),
    tokens: n,
    sequences: seqs,
  };
}
