/**
 * Advantage estimators: one registry, selected by name in the algorithm config.
 * Every estimator takes one scalar outcome reward per response plus the id of the prompt group it belongs
 * to, and returns one advantage per response (token-level estimators also return per-token rows).
 * Plain numbers in and out: nothing here needs gradients.
 *
 * Sources (read for these formulas; line numbers from the snapshots named in shared/reference/grpo-formulas.md):
 *   verl  = volcengine/verl b178a3cd, verl/trainer/ppo/core_algos.py
 *   trl   = huggingface/trl f2cd5771, trl/trainer/grpo_trainer.py
 */
import { assertFiniteArray, assertFiniteMatrix, assertNonEmpty, assertSameLength, invalid } from './validate.ts';

export type StdKind = 'sample' | 'population';

export interface AdvantageParams {
  /** Added to the std before dividing. verl: 1e-6 (core_algos.py:271); TRL: 1e-4 (grpo_trainer.py:2707). */
  eps: number;
  /** 'sample' = Bessel-corrected (N−1), what both torch.std (verl) and nanstd (TRL) compute. */
  std: StdKind;
  /** Which std divides: the group's (GRPO), the whole batch's (TRL scale_rewards="batch") or none (Dr.GRPO). */
  scale: 'group' | 'batch' | 'none';
  /**
   * A group with a single response. 'identity': verl's rule (μ=0, σ=1, core_algos.py:316-318), so the
   * advantage is r/(1+eps) for grpo and r for rloo. 'zero': TRL's/rloo_vectorized's outcome, advantage 0.
   */
  singleton: 'identity' | 'zero';
  /** Discount for reinforce_pp returns (verl config.gamma). */
  gamma: number;
  /** E-GRPO: reward of a wrong but well-formed answer is alpha × its (normalized) entity-match rate. */
  alpha: number;
  /** E-GRPO: divide each entity-match rate by the group's largest ('group_max') or use it as is ('none'). */
  entityNorm: 'group_max' | 'none';
}

export const DEFAULT_ADVANTAGE_PARAMS: AdvantageParams = {
  eps: 1e-6,
  std: 'sample',
  scale: 'group',
  singleton: 'identity',
  gamma: 1,
  alpha: 0.5,
  entityNorm: 'group_max',
};

export interface EgrpoSignals {
  correct: readonly boolean[];
  formatOk: readonly boolean[];
  /** Fraction of the gold entities found in the response, in [0, 1]. */
  entityRate: readonly number[];
}

export interface AdvantageInput {
  /** One outcome reward per response. */
  rewards: readonly number[];
  /** Prompt id of each response; responses with the same id form a group (verl's `index`). */
  groupIds: readonly (string | number)[];
  /** Policy tokens per response: the token weights of reinforce_pp(_baseline) whitening and opo's baseline. */
  lengths?: readonly number[];
  /** [B][K] reward components for gdpo (kept separately by the reward combiner). */
  components?: readonly (readonly number[])[];
  /** [K] weights for gdpo's weighted sum (default all 1). */
  componentWeights?: readonly number[];
  /** egrpo only: the signals it shapes its rewards from. */
  egrpo?: EgrpoSignals;
}

export interface AdvantageResult {
  /** One advantage per response, to be broadcast over its policy tokens. */
  advantages: number[];
  /** Per-token advantages (rows of lengths[i]) for estimators whose advantage varies along the response. */
  tokenAdvantages?: number[][];
  /** The rewards the estimator actually normalized, when it reshapes them (egrpo). */
  shapedRewards?: number[];
}

export type AdvantageFn = (input: AdvantageInput, p: AdvantageParams) => AdvantageResult;

// ---- small statistics helpers ----

export function mean(xs: readonly number[]): number {
  let s = 0;
  for (const x of xs) s += x;
  return s / xs.length;
}

/** Standard deviation; 'sample' divides by N−1 (0 for N = 1, where torch.std would give NaN). */
export function std(xs: readonly number[], kind: StdKind): number {
  const n = xs.length;
  if (n === 0) return 0;
  const mu = mean(xs);
  let ss = 0;
  for (const x of xs) ss += (x - mu) * (x - mu);
  const denom = kind === 'sample' ? n - 1 : n;
  return denom > 0 ? Math.sqrt(ss / denom) : 0;
}

/** Response indices of each group, groups in order of first appearance. */
export function groupIndices(groupIds: readonly (string | number)[]): number[][] {
  const byId = new Map<string | number, number[]>();
  groupIds.forEach((id, i) => {
    const g = byId.get(id);
    if (g) g.push(i);
    else byId.set(id, [i]);
  });
  return [...byId.values()];
}

function checkInput(input: AdvantageInput): void {
  assertNonEmpty('rewards', input.rewards.length);
  assertFiniteArray('rewards', input.rewards);
  assertSameLength('rewards', input.rewards.length, 'groupIds', input.groupIds.length);
  if (input.lengths) {
    assertSameLength('rewards', input.rewards.length, 'lengths', input.lengths.length);
    assertFiniteArray('lengths', input.lengths);
    input.lengths.forEach((l, i) => {
      if (l < 0 || !Number.isInteger(l)) throw invalid(`lengths[${i}] is ${l}: expected a non-negative integer`);
    });
  }
}

// ---- estimators ----

/**
 * GRPO, verl compute_grpo_outcome_advantage (core_algos.py:267-330): A = (r − μ_g)/(σ_g + eps), σ with N−1.
 * scale 'batch' follows TRL scale_rewards="batch" (grpo_trainer.py:2694-2697): σ over the whole batch.
 * scale 'none' is Dr.GRPO (verl norm_adv_by_std_in_grpo=False; TRL scale_rewards="none"): A = r − μ_g.
 */
export function grpoFromRewards(rewards: readonly number[], groupIds: readonly (string | number)[], p: AdvantageParams): number[] {
  const out = new Array<number>(rewards.length).fill(0);
  const batchStd = std(rewards, p.std);
  for (const idx of groupIndices(groupIds)) {
    const rs = idx.map((i) => rewards[i]);
    if (idx.length === 1 && p.singleton === 'zero') {
      out[idx[0]] = 0;
      continue;
    }
    const [mu, sigma] = idx.length === 1 ? [0, 1] : [mean(rs), p.scale === 'batch' ? batchStd : std(rs, p.std)];
    for (const i of idx) out[i] = p.scale === 'none' ? rewards[i] - mu : (rewards[i] - mu) / (sigma + p.eps);
  }
  return out;
}

const grpo: AdvantageFn = (input, p) => ({ advantages: grpoFromRewards(input.rewards, input.groupIds, p) });

/** Dr.GRPO (arXiv 2503.20783): no std division; verl grpo with norm_adv_by_std_in_grpo=False. */
const drGrpo: AdvantageFn = (input, p) => ({
  advantages: grpoFromRewards(input.rewards, input.groupIds, { ...p, scale: 'none' }),
});

/**
 * RLOO, verl compute_rloo_outcome_advantage (core_algos.py:477-525): A = n/(n−1)·(r − μ_g)
 * = r − mean of the other n−1 rewards. A group of one keeps A = r (singleton 'zero': rloo_vectorized's 0, line 751).
 */
const rloo: AdvantageFn = (input, p) => {
  const r = input.rewards;
  const out = new Array<number>(r.length).fill(0);
  for (const idx of groupIndices(input.groupIds)) {
    const n = idx.length;
    if (n === 1) {
      out[idx[0]] = p.singleton === 'zero' ? 0 : r[idx[0]];
      continue;
    }
    const mu = mean(idx.map((i) => r[i]));
    for (const i of idx) out[i] = (n / (n - 1)) * (r[i] - mu);
  }
  return { advantages: out };
};

/** OPO, verl compute_opo_outcome_advantage (core_algos.py:529-579): b = Σ L_j r_j / Σ L_j, A = r − b; groups of one: b = 0. */
const opo: AdvantageFn = (input) => {
  const r = input.rewards;
  const L = input.lengths;
  if (!L) throw invalid('opo needs lengths (policy tokens per response) for its length-weighted baseline');
  const out = new Array<number>(r.length).fill(0);
  for (const idx of groupIndices(input.groupIds)) {
    let b = 0;
    if (idx.length > 1) {
      const lsum = idx.reduce((s, i) => s + L[i], 0);
      b = lsum > 0 ? idx.reduce((s, i) => s + L[i] * r[i], 0) / lsum : 0;
    }
    for (const i of idx) out[i] = r[i] - b;
  }
  return { advantages: out };
};

/** GPG, verl compute_gpg_outcome_advantage (core_algos.py:658-717): α = B / max(1, #nonzero r), A = α(r − μ_g). */
const gpg: AdvantageFn = (input) => {
  const r = input.rewards;
  const nonzero = r.filter((x) => x !== 0).length;
  const alpha = r.length / Math.max(1, nonzero);
  const out = new Array<number>(r.length).fill(0);
  for (const idx of groupIndices(input.groupIds)) {
    const mu = idx.length === 1 ? 0 : mean(idx.map((i) => r[i]));
    for (const i of idx) out[i] = alpha * (r[i] - mu);
  }
  return { advantages: out };
};

/**
 * verl masked_whiten (verl/utils/torch_functional.py:304-339) over token rows: token-weighted mean,
 * Bessel-corrected token-weighted variance, (x − mean)/sqrt(var + 1e-8).
 */
function whitenRows(rows: number[][]): number[][] {
  let n = 0;
  let s = 0;
  for (const row of rows) {
    n += row.length;
    for (const x of row) s += x;
  }
  if (n < 2) throw invalid(`whitening needs at least 2 policy tokens in the batch, got ${n}`);
  const mu = s / n;
  let ss = 0;
  for (const row of rows) for (const x of row) ss += (x - mu) * (x - mu);
  const variance = (ss / n) * (n / (n - 1));
  const inv = 1 / Math.sqrt(variance + 1e-8);
  return rows.map((row) => row.map((x) => (x - mu) * inv));
}

function tokenLengths(input: AdvantageInput): readonly number[] {
  return input.lengths ?? input.rewards.map(() => 1);
}

/**
 * REINFORCE++-baseline, verl core_algos.py:425-473: x = r − μ_g (μ = 0 for a group of one), broadcast over
 * the response's tokens, then whitened over every policy token of the batch (longer responses weigh more).
 * Without lengths every response counts as one token.
 */
const reinforcePpBaseline: AdvantageFn = (input) => {
  const r = input.rewards;
  const L = tokenLengths(input);
  const centered = new Array<number>(r.length).fill(0);
  for (const idx of groupIndices(input.groupIds)) {
    const mu = idx.length === 1 ? 0 : mean(idx.map((i) => r[i]));
    for (const i of idx) centered[i] = r[i] - mu;
  }
  const rows = whitenRows(centered.map((x, i) => new Array<number>(L[i]).fill(x)));
  return { advantages: rows.map((row) => (row.length ? row[0] : 0)), tokenAdvantages: rows };
};

/**
 * REINFORCE++, verl core_algos.py:583-618: the outcome reward sits on the last policy token, returns
 * G_t = r_t + γ G_{t+1} (so G_t = γ^(L−1−t) r), whitened over all policy tokens of the batch. No group baseline.
 * `advantages` holds each response's first-token value; use `tokenAdvantages` when gamma < 1.
 */
const reinforcePp: AdvantageFn = (input, p) => {
  const L = tokenLengths(input);
  const returns = input.rewards.map((r, i) => Array.from({ length: L[i] }, (_, t) => r * p.gamma ** (L[i] - 1 - t)));
  const rows = whitenRows(returns);
  return { advantages: rows.map((row) => (row.length ? row[0] : 0)), tokenAdvantages: rows };
};

/**
 * GDPO (NVlabs/GDPO; TRL multi_objective_aggregation="normalize_then_sum", grpo_trainer.py:2710-2719):
 * A_k = (r_k − μ_g,k)/(σ_g,k + eps) per component, S = Σ w_k A_k, A = (S − mean_batch S)/(std_batch S + eps).
 * A group of one has σ = 0 and A_k = 0, as in TRL.
 */
const gdpo: AdvantageFn = (input, p) => {
  const comps = input.components;
  if (!comps) throw invalid('gdpo needs the per-component rewards (components [B][K])');
  assertSameLength('rewards', input.rewards.length, 'components', comps.length);
  assertFiniteMatrix('components', comps);
  const K = comps[0]?.length ?? 0;
  if (K === 0) throw invalid('gdpo needs at least one reward component');
  comps.forEach((row, i) => {
    if (row.length !== K) throw invalid(`components[${i}] has ${row.length} values, expected ${K}`);
  });
  const w = input.componentWeights ?? new Array<number>(K).fill(1);
  if (w.length !== K) throw invalid(`componentWeights has ${w.length} values, expected ${K}`);
  assertFiniteArray('componentWeights', w);
  const S = new Array<number>(comps.length).fill(0);
  for (const idx of groupIndices(input.groupIds)) {
    for (let k = 0; k < K; k++) {
      const xs = idx.map((i) => comps[i][k]);
      const mu = mean(xs);
      const sigma = std(xs, p.std);
      for (const i of idx) S[i] += w[k] * ((comps[i][k] - mu) / (sigma + p.eps));
    }
  }
  const mu = mean(S);
  const sigma = std(S, p.std);
  return { advantages: S.map((s) => (s - mu) / (sigma + p.eps)) };
};

/**
 * E-GRPO (arXiv 2510.24694; no code released): reward 1 if correct, alpha·γ̂ if wrong but well formed,
 * 0 on a format error; γ̂ = γ / max γ over the group's well-formed responses (entityNorm 'group_max';
 * 0 when that max is 0) or γ itself ('none'). The shaped rewards then go through grpo.
 */
export function egrpoShape(signals: EgrpoSignals, groupIds: readonly (string | number)[], p: Pick<AdvantageParams, 'alpha' | 'entityNorm'>): number[] {
  const n = groupIds.length;
  assertSameLength('groupIds', n, 'egrpo.correct', signals.correct.length);
  assertSameLength('groupIds', n, 'egrpo.formatOk', signals.formatOk.length);
  assertSameLength('groupIds', n, 'egrpo.entityRate', signals.entityRate.length);
  assertFiniteArray('egrpo.entityRate', signals.entityRate);
  signals.entityRate.forEach((g, i) => {
    if (g < 0 || g > 1) throw invalid(`egrpo.entityRate[${i}] is ${g}: expected a rate in [0, 1]`);
  });
  const out = new Array<number>(n).fill(0);
  for (const idx of groupIndices(groupIds)) {
    const wellFormed = idx.filter((i) => signals.formatOk[i]);
    const gmax = Math.max(0, ...wellFormed.map((i) => signals.entityRate[i]));
    for (const i of idx) {
      if (!signals.formatOk[i]) out[i] = 0;
      else if (signals.correct[i]) out[i] = 1;
      else {
        const g = signals.entityRate[i];
        const gHat = p.entityNorm === 'none' ? g : gmax > 0 ? g / gmax : 0;
        out[i] = p.alpha * gHat;
      }
    }
  }
  return out;
}

const egrpo: AdvantageFn = (input, p) => {
  if (!input.egrpo) throw invalid('egrpo needs the egrpo signals (correct, formatOk, entityRate per response)');
  const shaped = egrpoShape(input.egrpo, input.groupIds, p);
  return { advantages: grpoFromRewards(shaped, input.groupIds, p), shapedRewards: shaped };
};

export const ADVANTAGE_ESTIMATORS = {
  grpo: { formula: 'A = (r − mean_g)/(std_g + eps)', fn: grpo },
  dr_grpo: { formula: 'A = r − mean_g', fn: drGrpo },
  rloo: { formula: 'A = n/(n−1)·(r − mean_g)', fn: rloo },
  reinforce_pp: { formula: 'A_t = whiten_batch(γ^(L−1−t)·r)', fn: reinforcePp },
  reinforce_pp_baseline: { formula: 'A = whiten_batch(r − mean_g)', fn: reinforcePpBaseline },
  gdpo: { formula: 'A = whiten_batch(Σ_k w_k (r_k − mean_g,k)/(std_g,k + eps))', fn: gdpo },
  egrpo: { formula: 'r = 1 | α·γ/max_g γ | 0 (format), then grpo', fn: egrpo },
  opo: { formula: 'A = r − Σ L_j r_j / Σ L_j', fn: opo },
  gpg: { formula: 'A = B/#nonzero(r) · (r − mean_g)', fn: gpg },
} satisfies Record<string, { formula: string; fn: AdvantageFn }>;

export type AdvantageName = keyof typeof ADVANTAGE_ESTIMATORS;
export const ADVANTAGE_NAMES = Object.keys(ADVANTAGE_ESTIMATORS) as AdvantageName[];

/** Run the named estimator; params default to verl's (eps 1e-6, sample std). */
export function computeAdvantages(name: string, input: AdvantageInput, params: Partial<AdvantageParams> = {}): AdvantageResult {
  const est = (ADVANTAGE_ESTIMATORS as Record<string, { fn: AdvantageFn } | undefined>)[name];
  if (!est) throw invalid(`unknown advantage estimator "${name}" (known: ${ADVANTAGE_NAMES.join(', ')})`);
  checkInput(input);
  const p = { ...DEFAULT_ADVANTAGE_PARAMS, ...params };
  if (!(p.eps >= 0) || !Number.isFinite(p.eps)) throw invalid(`eps is ${p.eps}: expected a finite number ≥ 0`);
  return est.fn(input, p);
}

export interface DynamicSamplingResult {
  /** Response indices to train on (groups with reward spread), in input order. */
  keep: number[];
  keptGroups: number;
  /** Groups whose rewards were all equal: the caller samples this many more prompts to refill the batch. */
  droppedGroups: number;
  droppedGroupIds: (string | number)[];
}

/**
 * DAPO dynamic sampling (verl-recipe dapo: keep a group when std(reward) > 0): groups whose responses all got the
 * same reward carry no gradient under group normalization, so they are dropped and counted.
 */
export function dynamicSamplingFilter(rewards: readonly number[], groupIds: readonly (string | number)[]): DynamicSamplingResult {
  assertFiniteArray('rewards', rewards);
  assertSameLength('rewards', rewards.length, 'groupIds', groupIds.length);
  const keep: number[] = [];
  const droppedGroupIds: (string | number)[] = [];
  let keptGroups = 0;
  for (const idx of groupIndices(groupIds)) {
    const first = rewards[idx[0]];
    if (idx.some((i) => rewards[i] !== first)) {
      keptGroups++;
      keep.push(...idx);
    } else droppedGroupIds.push(groupIds[idx[0]]);
  }
  keep.sort((a, b) => a - b);
  return { keep, keptGroups, droppedGroups: droppedGroupIds.length, droppedGroupIds };
}
