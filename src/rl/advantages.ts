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
  /** Discount for reinforce_pp and gae returns (verl config.gamma). */
  gamma: number;
  /** GAE's λ (verl config.lam). */
  lambda: number;
  /**
   * reinforce_pp in a multi-turn episode (responseMasks given). 'policy': discount over the policy tokens only,
   * so earlier turns get γ^k·r (agro's default). 'mask': verl's loop (core_algos.py compute_reinforce_plus_plus_
   * outcome_advantage), which resets the running return at every masked (observation) token, so every turn
   * before the last observation gets 0.
   */
  returnReset: 'policy' | 'mask';
  /** E-GRPO: reward of a wrong but well-formed answer is alpha × its (normalized) entity-match rate. */
  alpha: number;
  /**
   * E-GRPO's γ̂: γ divided by the largest γ of the group's G rollouts ('group_max', the paper's "normalized
   * within the group"), by the largest among the well-formed ones only ('group_max_well_formed'), or used as is.
   */
  entityNorm: 'group_max' | 'group_max_well_formed' | 'none';
  /** SEED-GRPO: A·(1 − seedAlpha·SE/SE_max). */
  seedAlpha: number;
  /** DaGRPO: pairs whose fine-grained scores differ by less than this are masked out of the pairwise advantage. */
  distinctThreshold: number;
  /** Polychromic objective: the set size n of the sets a response is scored in. */
  setSize: number;
  /** RAFT: a response counts as accepted when its reward is ≥ this. */
  acceptThreshold: number;
}

export const DEFAULT_ADVANTAGE_PARAMS: AdvantageParams = {
  eps: 1e-6,
  std: 'sample',
  scale: 'group',
  singleton: 'identity',
  gamma: 1,
  lambda: 1,
  returnReset: 'policy',
  alpha: 0.5,
  entityNorm: 'group_max',
  seedAlpha: 1,
  distinctThreshold: 0.1,
  setSize: 2,
  acceptThreshold: 1,
};

export interface EgrpoSignals {
  correct: readonly boolean[];
  formatOk: readonly boolean[];
  /** Fraction of the gold entities found in the response, in [0, 1]. */
  entityRate: readonly number[];
  /**
   * Other reward components (weighted, e.g. format or tool efficiency) added to the shaped reward before the
   * group normalization, so E-GRPO composes with the rest of the reward list. Absent: the paper's reward alone.
   */
  extra?: readonly number[];
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
  /**
   * reinforce_pp with returnReset 'mask': each response's token mask from its first generated token to its last
   * (1 = policy token, 0 = observation). Its number of 1s must equal lengths[i].
   */
  responseMasks?: readonly (readonly number[])[];
  /**
   * Per-policy-token rewards added to the outcome reward (which sits on the last policy token), e.g. REINFORCE++'s
   * −β·KL in the reward (see kl-reward.ts). Rows of lengths[i]. Used by reinforce_pp, remax and gae.
   */
  tokenRewards?: readonly (readonly number[])[];
  /** remax: the reward of the greedy rollout for the same prompt, one per response. */
  baselines?: readonly number[];
  /** gae: value estimates per policy token (rows of lengths[i]), from a critic the caller runs. */
  values?: readonly (readonly number[])[];
  /** seed_grpo / polychromic: the semantic cluster of each response (equal ids = same meaning, e.g. same result). */
  clusters?: readonly (string | number)[];
  /** dagrpo: fine-grained score per response for the distinctiveness test (default: the rewards). */
  scores?: readonly number[];
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

/** Token rewards of response i over its policy tokens: the given rows (checked) or zeros, plus the outcome on the last token. */
function policyTokenRewards(input: AdvantageInput, i: number, L: number): number[] {
  const extra = input.tokenRewards?.[i];
  if (extra && extra.length !== L) throw invalid(`tokenRewards[${i}] has ${extra.length} values, expected ${L} (policy tokens)`);
  const row = extra ? [...extra] : new Array<number>(L).fill(0);
  if (L > 0) row[L - 1] += input.rewards[i];
  return row;
}

/** Discounted returns-to-go G_t = r_t + γ G_{t+1} of one row. */
function returnsToGo(row: readonly number[], gamma: number): number[] {
  const out = new Array<number>(row.length).fill(0);
  let g = 0;
  for (let t = row.length - 1; t >= 0; t--) out[t] = g = row[t] + gamma * g;
  return out;
}

/**
 * verl's reinforce_plus_plus loop over a response row with observation tokens: running = r_t + γ·running,
 * G_t = running, then running *= mask_t, so a masked token passes its return on to nobody. Returns G at the
 * policy tokens only. The outcome sits on the last policy token; token rewards (policy tokens) go with them.
 */
export function verlMaskedReturns(mask: readonly number[], policyRewards: readonly number[], gamma: number): number[] {
  const full = new Array<number>(mask.length).fill(0);
  let k = 0;
  mask.forEach((m, t) => {
    if (m === 1) full[t] = policyRewards[k++];
  });
  if (k !== policyRewards.length) throw invalid(`a response mask has ${k} policy tokens but ${policyRewards.length} rewards`);
  const G: number[] = [];
  let running = 0;
  for (let t = mask.length - 1; t >= 0; t--) {
    running = full[t] + gamma * running;
    if (mask[t] === 1) G.push(running);
    running *= mask[t];
  }
  return G.reverse();
}

/**
 * REINFORCE++, verl core_algos.py:583-618: the outcome reward sits on the last policy token (plus any token rewards,
 * e.g. −β·KL), returns G_t = r_t + γ G_{t+1}, whitened over all policy tokens of the batch. No group baseline.
 * returnReset 'policy' discounts over policy tokens (agro); 'mask' is verl's reset at observation tokens.
 * `advantages` holds each response's first-token value; use `tokenAdvantages` when gamma < 1.
 */
const reinforcePp: AdvantageFn = (input, p) => {
  const L = tokenLengths(input);
  const returns = input.rewards.map((_, i) => {
    const row = policyTokenRewards(input, i, L[i]);
    if (p.returnReset === 'policy') return returnsToGo(row, p.gamma);
    const mask = input.responseMasks?.[i];
    if (!mask) throw invalid('reinforce_pp with returnReset "mask" needs responseMasks');
    return verlMaskedReturns(mask, row, p.gamma);
  });
  const rows = whitenRows(returns);
  return { advantages: rows.map((row) => (row.length ? row[0] : 0)), tokenAdvantages: rows };
};

/**
 * ReMax (arXiv 2310.10505), verl compute_remax_outcome_advantage: A_t = G_t − b with G the (undiscounted)
 * returns-to-go of the token rewards and b the reward of the greedy response to the same prompt. No whitening.
 */
const remax: AdvantageFn = (input) => {
  const b = input.baselines;
  if (!b) throw invalid('remax needs baselines (the greedy rollout reward for each response)');
  assertSameLength('rewards', input.rewards.length, 'baselines', b.length);
  assertFiniteArray('baselines', b);
  const L = tokenLengths(input);
  const rows = input.rewards.map((_, i) => returnsToGo(policyTokenRewards(input, i, L[i]), 1).map((g) => g - b[i]));
  return { advantages: rows.map((row, i) => (row.length ? row[0] : input.rewards[i] - b[i])), tokenAdvantages: rows };
};

/**
 * Pass@k GRPO (arXiv 2503.19595), verl compute_grpo_passk_outcome_advantage: only the group's best response gets
 * r_max − r_2nd, divided by (σ_g + eps) unless scale is 'none'; every other response gets 0. Ties go to the first.
 */
const grpoPassk: AdvantageFn = (input, p) => {
  const r = input.rewards;
  const out = new Array<number>(r.length).fill(0);
  for (const idx of groupIndices(input.groupIds)) {
    if (idx.length < 2) throw invalid(`grpo_passk needs at least 2 responses per group, got ${idx.length}`);
    const sorted = [...idx].sort((a, b) => r[b] - r[a] || a - b);
    let a = r[sorted[0]] - r[sorted[1]];
    if (p.scale !== 'none') a /= std(idx.map((i) => r[i]), p.std) + p.eps;
    out[sorted[0]] = a;
  }
  return { advantages: out };
};

/**
 * GAE (Schulman et al. 2015), verl compute_gae_advantage_return over the policy tokens: δ_t = r_t + γV_{t+1} − V_t,
 * A_t = δ_t + γλA_{t+1}, returns = A + V, then A whitened over the batch's tokens. agro's model has no value head:
 * the caller brings V (`values`), e.g. from a separate critic; without a critic this estimator cannot run.
 */
const gae: AdvantageFn = (input, p) => {
  const V = input.values;
  if (!V) throw invalid('gae needs values (per-token value estimates from a critic; agro has no built-in value head)');
  assertSameLength('rewards', input.rewards.length, 'values', V.length);
  const L = tokenLengths(input);
  const adv = input.rewards.map((_, i) => {
    const v = V[i];
    if (v.length !== L[i]) throw invalid(`values[${i}] has ${v.length} values, expected ${L[i]}`);
    assertFiniteArray(`values[${i}]`, v);
    const rw = policyTokenRewards(input, i, L[i]);
    const a = new Array<number>(L[i]).fill(0);
    let next = 0;
    let lastGae = 0;
    for (let t = L[i] - 1; t >= 0; t--) {
      const delta = rw[t] + p.gamma * next - v[t];
      a[t] = lastGae = delta + p.gamma * p.lambda * lastGae;
      next = v[t];
    }
    return a;
  });
  const rows = whitenRows(adv);
  return { advantages: rows.map((row) => (row.length ? row[0] : 0)), tokenAdvantages: rows };
};


/** Σ_k w_k (r_k − μ_g,k)/(σ_g,k + ε): each reward component normalized within its group, then weighted (GDPO, MO-GRPO). */
function weightedComponentAdvantages(comps: readonly (readonly number[])[], groupIds: readonly (number | string)[], w: readonly number[], p: AdvantageParams): number[] {
  const K = comps[0]?.length ?? 0;
  const S = new Array<number>(comps.length).fill(0);
  for (const idx of groupIndices(groupIds)) {
    for (let k = 0; k < K; k++) {
      const xs = idx.map((i) => comps[i][k]);
      const mu = mean(xs);
      const sigma = std(xs, p.std);
      for (const i of idx) S[i] += w[k] * ((comps[i][k] - mu) / (sigma + p.eps));
    }
  }
  return S;
}
/** The per-reward-component scores an estimator over components needs ([B][K], finite, one row per rollout), and K. */
function componentRewards(input: AdvantageInput, name: string): { comps: readonly (readonly number[])[]; K: number } {
  const comps = input.components;
  if (!comps) throw invalid(`${name} needs the per-component rewards (components [B][K])`);
  assertSameLength('rewards', input.rewards.length, 'components', comps.length);
  assertFiniteMatrix('components', comps);
  return { comps, K: comps[0]?.length ?? 0 };
}

/**
 * GDPO (NVlabs/GDPO; TRL multi_objective_aggregation="normalize_then_sum", grpo_trainer.py:2710-2719):
 * A_k = (r_k − μ_g,k)/(σ_g,k + eps) per component, S = Σ w_k A_k, A = (S − mean_batch S)/(std_batch S + eps).
 * A group of one has σ = 0 and A_k = 0, as in TRL. With a single reward component NVlabs' TRL fork falls back to
 * GRPO (`apply_gdpo and len(reward_weights) > 1`), and so does this: grpo over the weighted total.
 */
const gdpo: AdvantageFn = (input, p) => {
  const { comps, K } = componentRewards(input, 'gdpo');
  if (K === 0) throw invalid('gdpo needs at least one reward component');
  if (K === 1) return { advantages: grpoFromRewards(input.rewards, input.groupIds, p) };
  comps.forEach((row, i) => {
    if (row.length !== K) throw invalid(`components[${i}] has ${row.length} values, expected ${K}`);
  });
  const w = input.componentWeights ?? new Array<number>(K).fill(1);
  if (w.length !== K) throw invalid(`componentWeights has ${w.length} values, expected ${K}`);
  assertFiniteArray('componentWeights', w);
  const S = weightedComponentAdvantages(comps, input.groupIds, w, p);
  const mu = mean(S);
  const sigma = std(S, p.std);
  return { advantages: S.map((s) => (s - mu) / (sigma + p.eps)) };
};

/**
 * E-GRPO (arXiv 2510.24694; no code released): reward 1 if correct, alpha·γ̂ if wrong but well formed,
 * 0 on an error (format or length); γ̂ = γ / max γ over the group's G rollouts (entityNorm 'group_max', 0 when
 * that max is 0), over its well-formed rollouts only ('group_max_well_formed'), or γ itself ('none').
 * `extra` (other weighted reward components) is added afterwards; the sum then goes through grpo.
 */
export function egrpoShape(signals: EgrpoSignals, groupIds: readonly (string | number)[], p: Pick<AdvantageParams, 'alpha' | 'entityNorm'>): number[] {
  const n = groupIds.length;
  assertSameLength('groupIds', n, 'egrpo.correct', signals.correct.length);
  assertSameLength('groupIds', n, 'egrpo.formatOk', signals.formatOk.length);
  assertSameLength('groupIds', n, 'egrpo.entityRate', signals.entityRate.length);
  assertFiniteArray('egrpo.entityRate', signals.entityRate);
  if (signals.extra) {
    assertSameLength('groupIds', n, 'egrpo.extra', signals.extra.length);
    assertFiniteArray('egrpo.extra', signals.extra);
  }
  signals.entityRate.forEach((g, i) => {
    if (g < 0 || g > 1) throw invalid(`egrpo.entityRate[${i}] is ${g}: expected a rate in [0, 1]`);
  });
  const out = new Array<number>(n).fill(0);
  for (const idx of groupIndices(groupIds)) {
    const pool = p.entityNorm === 'group_max_well_formed' ? idx.filter((i) => signals.formatOk[i]) : idx;
    const gmax = Math.max(0, ...pool.map((i) => signals.entityRate[i]));
    for (const i of idx) {
      if (!signals.formatOk[i]) out[i] = 0;
      else if (signals.correct[i]) out[i] = 1;
      else {
        const g = signals.entityRate[i];
        const gHat = p.entityNorm === 'none' ? g : gmax > 0 ? g / gmax : 0;
        out[i] = p.alpha * gHat;
      }
      out[i] += signals.extra?.[i] ?? 0;
    }
  }
  return out;
}

const egrpo: AdvantageFn = (input, p) => {
  if (!input.egrpo) throw invalid('egrpo needs the egrpo signals (correct, formatOk, entityRate per response)');
  const shaped = egrpoShape(input.egrpo, input.groupIds, p);
  return { advantages: grpoFromRewards(shaped, input.groupIds, p), shapedRewards: shaped };
};

// ---- variants from the recent literature (smallest faithful forms; what is left out is said at each) ----

function needClusters(input: AdvantageInput, who: string): readonly (string | number)[] {
  const c = input.clusters;
  if (!c) throw invalid(`${who} needs clusters (a semantic-equivalence id per response)`);
  assertSameLength('rewards', input.rewards.length, 'clusters', c.length);
  return c;
}

/** Monte-Carlo semantic entropy of one group: −Σ_c p_c ln p_c with p_c = n_c / G over the meaning clusters. */
export function semanticEntropy(clusters: readonly (string | number)[]): number {
  const counts = new Map<string | number, number>();
  for (const c of clusters) counts.set(c, (counts.get(c) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) {
    const q = n / clusters.length;
    h -= q * Math.log(q);
  }
  return h;
}

/**
 * SEED-GRPO ("Semantic Entropy Enhanced GRPO for Uncertainty-Aware Policy Optimization", 2025): the grpo advantage scaled by the prompt's certainty,
 * A' = A·(1 − α·SE/SE_max), SE the semantic entropy of the group's answers and SE_max = ln G (all distinct).
 * Clusters come from the caller (for SQL: equal execution results); the paper clusters with an entailment model.
 */
const seedGrpo: AdvantageFn = (input, p) => {
  const c = needClusters(input, 'seed_grpo');
  const base = grpoFromRewards(input.rewards, input.groupIds, p);
  for (const idx of groupIndices(input.groupIds)) {
    const seMax = Math.log(idx.length);
    const scale = seMax > 0 ? 1 - p.seedAlpha * (semanticEntropy(idx.map((i) => c[i])) / seMax) : 1;
    for (const i of idx) base[i] *= scale;
  }
  return { advantages: base };
};

/**
 * DaGRPO's sequence-level gradient rectification ("DaGRPO: Rectifying Gradient Conflict in Reasoning via
 * Distinctiveness-Aware GRPO", 2025): GRPO's advantage is a sum over pairs,
 * A_i = Σ_j (r_i − r_j) / (G·σ_g); pairs whose fine-grained scores differ by less than `distinctThreshold` are
 * masked, A_i = Σ_{j: |s_i − s_j| ≥ τ} (r_i − r_j) / (G·(σ_g + eps)). The off-policy anchors are a sampler hook
 * (`dagrpoAnchorGroups` in group-math.ts).
 */
const dagrpo: AdvantageFn = (input, p) => {
  const r = input.rewards;
  const s = input.scores ?? r;
  assertSameLength('rewards', r.length, 'scores', s.length);
  assertFiniteArray('scores', s);
  const out = new Array<number>(r.length).fill(0);
  for (const idx of groupIndices(input.groupIds)) {
    const sigma = std(idx.map((i) => r[i]), p.std);
    const denom = idx.length * (p.scale === 'none' ? 1 : sigma + p.eps);
    for (const i of idx) {
      let sum = 0;
      for (const j of idx) if (j !== i && Math.abs(s[i] - s[j]) >= p.distinctThreshold) sum += r[i] - r[j];
      out[i] = sum / denom;
    }
  }
  return { advantages: out };
};

/**
 * Multi-objective GRPO. "Optimizing Safe and Aligned Language Generation: A Multi-Objective GRPO Approach" (2025)
 * combines the aspect scores by a weighted sum before GRPO: that is plain `grpo` over several rewards. mo_grpo adds
 * what keeps one objective from dominating by scale: each component normalized by its own group statistics before
 * the weighted sum, the sum then through grpo (gdpo instead whitens the sum over the batch).
 */
const moGrpo: AdvantageFn = (input, p) => {
  const { comps, K } = componentRewards(input, 'mo_grpo');
  const w = input.componentWeights ?? new Array<number>(K).fill(1);
  const S = weightedComponentAdvantages(comps, input.groupIds, w, p);
  return { advantages: grpoFromRewards(S, input.groupIds, p), shapedRewards: S };
};

/**
 * RAFT / rejection-sampling fine-tuning (arXiv 2304.06767, revisited in 2504.11343): accepted responses
 * (reward ≥ acceptThreshold) get A = 1, the rest 0; with the gpg loss (−A·logp) this is SFT on the accepted ones.
 */
const raft: AdvantageFn = (input, p) => ({ advantages: input.rewards.map((r) => (r >= p.acceptThreshold ? 1 : 0)) });

/**
 * Reinforce-Rej (arXiv 2504.11343): A = r − μ_g with no std division, on groups that are neither all correct nor
 * all wrong; those groups get 0 here, and the preset's dynamic sampling (no refill) drops them from the batch.
 */
const reinforceRej: AdvantageFn = (input, p) => {
  const r = input.rewards;
  const out = grpoFromRewards(r, input.groupIds, { ...p, scale: 'none' });
  for (const idx of groupIndices(input.groupIds)) if (idx.every((i) => r[i] === r[idx[0]])) for (const i of idx) out[i] = 0;
  return { advantages: out };
};

/**
 * P3O's pairwise relative feedback (arXiv 2310.00212), on-policy core: the pairwise gradient
 * Σ_{i<j} ½(r_i − r_j)∇(log π(y_i) − log π(y_j)) over a group's pairs, averaged, gives response i the weight
 * A_i = Σ_j (r_i − r_j) / (2·(G−1)). The preset pairs it with the trajectory-level ratio (gspo); P3O's joint
 * clipping of the pair ratio is not reproduced.
 */
const p3o: AdvantageFn = (input) => {
  const r = input.rewards;
  const out = new Array<number>(r.length).fill(0);
  for (const idx of groupIndices(input.groupIds)) {
    if (idx.length < 2) continue;
    for (const i of idx) out[i] = idx.reduce((s, j) => s + (r[i] - r[j]), 0) / (2 * (idx.length - 1));
  }
  return { advantages: out };
};

function* subsetsWith(idx: readonly number[], must: number, k: number): Generator<number[]> {
  const others = idx.filter((i) => i !== must);
  const pick: number[] = [];
  function* rec(start: number): Generator<number[]> {
    if (pick.length === k - 1) {
      yield [must, ...pick];
      return;
    }
    for (let a = start; a < others.length; a++) {
      pick.push(others[a]);
      yield* rec(a + 1);
      pick.pop();
    }
  }
  yield* rec(0);
}

/**
 * Polychromic objective ("Polychromic Objectives for Reinforcement Learning", 2025): a set of n responses scores f(set) = mean reward × diversity, with
 * diversity = distinct meaning clusters / n. Response i's advantage is the mean f over the n-sets of its group
 * that contain it minus the mean f over all n-sets of the group (every set enumerated; groups ≤ 16). The paper's
 * vine sampling (rollouts from shared intermediate states) is left out.
 */
const polychromic: AdvantageFn = (input, p) => {
  const c = needClusters(input, 'polychromic');
  const r = input.rewards;
  const n = p.setSize;
  const out = new Array<number>(r.length).fill(0);
  const f = (set: readonly number[]): number => (set.reduce((s, i) => s + r[i], 0) / set.length) * (new Set(set.map((i) => c[i])).size / set.length);
  for (const idx of groupIndices(input.groupIds)) {
    if (idx.length < n) throw invalid(`polychromic: a group has ${idx.length} responses, fewer than setSize ${n}`);
    if (idx.length > 16) throw invalid(`polychromic enumerates every set: groups of at most 16 responses, got ${idx.length}`);
    const per = idx.map((i) => {
      let sum = 0;
      let cnt = 0;
      for (const set of subsetsWith(idx, i, n)) {
        sum += f(set);
        cnt++;
      }
      return { sum, cnt };
    });
    // Each n-set is counted once per member, so the mean over all sets is Σ sums / Σ counts.
    const all = per.reduce((s, x) => s + x.sum, 0) / per.reduce((s, x) => s + x.cnt, 0);
    idx.forEach((i, k) => (out[i] = per[k].sum / per[k].cnt - all));
  }
  return { advantages: out };
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
  remax: { formula: 'A_t = G_t − r(greedy)', fn: remax },
  grpo_passk: { formula: 'best of group: (r_max − r_2nd)/(std_g + eps); others 0', fn: grpoPassk },
  gae: { formula: 'A_t = Σ_l (γλ)^l δ_{t+l}, δ_t = r_t + γV_{t+1} − V_t; whitened (caller gives V)', fn: gae },
  seed_grpo: { formula: 'grpo × (1 − α·SE/ln G)', fn: seedGrpo },
  dagrpo: { formula: 'Σ_{j:|s_i−s_j|≥τ} (r_i − r_j) / (G·(std_g + eps))', fn: dagrpo },
  mo_grpo: { formula: 'grpo of Σ_k w_k (r_k − mean_g,k)/(std_g,k + eps)', fn: moGrpo },
  raft: { formula: 'A = 1 if r ≥ threshold else 0', fn: raft },
  reinforce_rej: { formula: 'A = r − mean_g; 0 for all-equal groups', fn: reinforceRej },
  p3o: { formula: 'A = Σ_j (r_i − r_j) / (2(G−1))', fn: p3o },
  polychromic: { formula: 'mean f(S ∋ i) − mean f(S), f = mean r × #clusters/n', fn: polychromic },
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
 * DAPO dynamic sampling (verl-recipe dapo: keep a group when std(reward) > 0 or it has one response): groups whose
 * responses all got the same reward carry no gradient under group normalization, so they are dropped and counted.
 */
export function dynamicSamplingFilter(
  rewards: readonly number[],
  groupIds: readonly (string | number)[],
  opts: { singleton?: 'keep' | 'drop' } = {},
): DynamicSamplingResult {
  // verl's recipe keeps a group of one response (`std > 0 or len == 1`); 'drop' treats it as zero-signal.
  const singleton = opts.singleton ?? 'keep';
  assertFiniteArray('rewards', rewards);
  assertSameLength('rewards', rewards.length, 'groupIds', groupIds.length);
  const keep: number[] = [];
  const droppedGroupIds: (string | number)[] = [];
  let keptGroups = 0;
  for (const idx of groupIndices(groupIds)) {
    const first = rewards[idx[0]];
    if (idx.some((i) => rewards[i] !== first) || (idx.length === 1 && singleton === 'keep')) {
      keptGroups++;
      keep.push(...idx);
    } else droppedGroupIds.push(groupIds[idx[0]]);
  }
  keep.sort((a, b) => a - b);
  return { keep, keptGroups, droppedGroups: droppedGroupIds.length, droppedGroupIds };
}
