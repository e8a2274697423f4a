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

export const AGGREGATIONS = ['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'] as const;
export type Aggregation = (typeof AGGREGATIONS)[number];

export const KL_ESTIMATORS = ['k1', 'k2', 'k3', 'abs'] as const;
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
}

export interface KlParams {
  /** 0 turns the KL term off (no refLogp needed). */
  coef: number;
  estimator: KlEstimator;
  /** verl's k3 clamps (−d to ±20, the result to ±10); TRL has none. */
  clamp: boolean;
}

export interface LossConfig {
  loss: PolicyLossParams & { name: string };
  kl: KlParams;
  entropyCoef: number;
}

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
  tokens: number;
  sequences: number;
}

interface PerTokenLoss {
  /** [B,T] loss per token (masking is applied by the aggregation). */
  losses: tf.Tensor2D;
  /** Aggregation the loss insists on (gspo), overriding the config. */
  forceAggregation?: Aggregation;
}

type LossParts = { logp: tf.Tensor2D; oldLogp: tf.Tensor2D; adv: tf.Tensor2D; mask: tf.Tensor2D; maskData: number[][] };
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
  const pg1 = tf.mul(negA, ratio);
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

/** CISPO, verl compute_policy_loss_cispo (core_algos.py:1722-1779): L = −sg(clip(ρ, 1−ε_low, 1+ε_high))·A·logp. */
const cispo: PolicyLossFn = (x, p) => {
  const ratio = tf.exp(logRatio(x, p));
  const w = stopGradient(tf.clipByValue(ratio, 1 - p.clipLow, 1 + p.clipHigh));
  return { losses: tf.neg(tf.mul(tf.mul(w, x.adv), x.logp)) as tf.Tensor2D };
};

/** GPG, verl compute_policy_loss_gpg (core_algos.py:1415-1447): L = −A·logp (no ratio). */
const gpgLoss: PolicyLossFn = (x) => ({ losses: tf.neg(tf.mul(x.adv, x.logp)) as tf.Tensor2D });

export const POLICY_LOSSES = {
  ppo: { formula: 'max(−Aρ, −A·clip(ρ, 1−ε_low, 1+ε_high)), A<0: min(·, −A·c)', fn: ppo },
  gspo: { formula: 'max(−As, −A·clip(s)), s = exp(mean_t Δlogp) (stop-gradient form)', fn: gspo },
  cispo: { formula: '−sg(clip(ρ))·A·logp', fn: cispo },
  gpg: { formula: '−A·logp', fn: gpgLoss },
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
export function aggregate(lossMat: tf.Tensor2D, mask: tf.Tensor2D, mode: Aggregation, normalizer: number | null = null, maskData?: number[][]): tf.Scalar {
  const m = maskData ?? (mask.arraySync() as number[][]);
  const masked = tf.mul(lossMat, mask);
  const tokPerSeq = m.map((row) => row.reduce((s, v) => s + v, 0));
  const nTok = tokPerSeq.reduce((s, v) => s + v, 0);
  const nSeq = tokPerSeq.filter((n) => n > 0).length;
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
  }
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
export function computePolicyLoss(input: PolicyLossInput, cfg: LossConfig): { loss: tf.Scalar; metrics: LossMetrics } {
  const entry = (POLICY_LOSSES as Record<string, { fn: PolicyLossFn } | undefined>)[cfg.loss.name];
  if (!entry) throw invalid(`unknown policy loss "${cfg.loss.name}" (known: ${POLICY_LOSS_NAMES.join(', ')})`);
  const p = cfg.loss;
  if (p.dualClip !== null && !(p.dualClip > 1)) throw invalid(`dualClip is ${p.dualClip}: it must be > 1 (or null)`);
  const useKl = cfg.kl.coef !== 0;
  checkTensors(input, useKl);
  const [B, T] = input.logp.shape;
  const maskData = input.mask.arraySync() as number[][];
  const adv = (input.advantages.rank === 1 ? tf.broadcastTo(tf.reshape(input.advantages, [B, 1]), [B, T]) : input.advantages) as tf.Tensor2D;
  const parts: LossParts = { logp: input.logp, oldLogp: input.oldLogp, adv, mask: input.mask, maskData };

  const { losses, forceAggregation } = entry.fn(parts, p);
  const pg = aggregate(losses, input.mask, forceAggregation ?? p.aggregation, p.aggNormalizer, maskData);
  let total: tf.Scalar = pg;
  let klTok: tf.Tensor2D | undefined;
  let klLoss: tf.Scalar | undefined;
  if (input.refLogp) {
    klTok = klPenalty(input.logp, input.refLogp, cfg.kl.estimator, cfg.kl.clamp);
    if (useKl) {
      klLoss = aggregate(klTok, input.mask, p.aggregation, p.aggNormalizer, maskData);
      total = tf.add(total, tf.mul(klLoss, cfg.kl.coef));
    }
  }
  const ent = input.entropy ?? (input.logits ? entropyFromLogits(input.logits) : undefined);
  let entLoss: tf.Scalar | undefined;
  if (ent) {
    entLoss = aggregate(ent, input.mask, p.aggregation, p.aggNormalizer, maskData);
    if (cfg.entropyCoef !== 0) total = tf.sub(total, tf.mul(entLoss, cfg.entropyCoef));
  }

  const metrics = tokenMetrics(cfg.loss.name, input, maskData, p, ent, klTok);
  const scalar = (t: tf.Scalar | undefined): number => (t ? t.dataSync()[0] : 0);
  return {
    loss: total,
    metrics: { ...metrics, loss: scalar(total), pgLoss: scalar(pg), klLoss: scalar(klLoss), entropyLoss: scalar(entLoss) },
  };
}

/** Clip fractions, ratio, approx KL, entropy and KL means over policy tokens, in plain numbers (TRL grpo_trainer.py:3244-3245 for the low/high split). */
function tokenMetrics(
  name: string,
  input: PolicyLossInput,
  m: number[][],
  p: PolicyLossParams,
  ent: tf.Tensor2D | undefined,
  klTok: tf.Tensor2D | undefined,
): Omit<LossMetrics, 'loss' | 'pgLoss' | 'klLoss' | 'entropyLoss'> {
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
    if (name === 'gspo') {
      for (let t = 0; t < row.length; t++) seqLogRatio += m[b][t] * (row[t] - old[b][t]);
      seqLogRatio = Math.min(p.seqLogRatioMax, seqLogRatio / Math.max(1, tok));
    }
    for (let t = 0; t < row.length; t++) {
      if (m[b][t] === 0) continue;
      n++;
      const d = name === 'gspo' ? row[t] - old[b][t] : clampD(row[t] - old[b][t]);
      const rho = name === 'gspo' ? Math.exp(seqLogRatio) : Math.exp(d);
      const a = A(b, t);
      if (name !== 'gpg') {
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
