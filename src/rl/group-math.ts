/**
 * Group-level hooks of the recent group-relative variants: pure functions over a step's groups that the trainer
 * phases (collect → score → select → advantages → update) can call: token weights (GTPO), step- and turn-level
 * credit (SALT, IGPO, M-GRPO), rewards that look at the whole group (group similarity), and samplers (MMR1's
 * variance-aware sampling, DPPO's unbiased pruning, DaGRPO's anchors, Scaf-GRPO's hints, Reg-GRPO's
 * difficulty-aware augmentation). Each states its paper and what of the paper is left out.
 */
import { Rng } from '../util/rng.ts';
import { HINT_TIERS } from '../agent/hints.ts';
import { assertFiniteArray, assertSameLength, invalid } from './validate.ts';
import { groupIndices, mean, std } from './advantages.ts';

// ---------------------------------------------------------------- GTPO

/**
 * GTPO ("GTPO: Trajectory-Based Policy Optimization in Large Language Models", 2025): conflict tokens are tokens
 * that appear at the same position in completions of the same group with rewards of opposite sign. Their
 * negative updates are skipped (weight 0 in negative completions) and their positive updates amplified
 * (weight posBoost in positive completions); every other token keeps weight 1. Rows are the policy tokens.
 */
export function gtpoTokenWeights(
  tokens: readonly (readonly number[])[],
  advantages: readonly number[],
  groupIds: readonly (string | number)[],
  posBoost = 2,
): number[][] {
  assertSameLength('tokens', tokens.length, 'advantages', advantages.length);
  assertSameLength('tokens', tokens.length, 'groupIds', groupIds.length);
  const w = tokens.map((row) => row.map(() => 1));
  for (const idx of groupIndices(groupIds)) {
    const pos = idx.filter((i) => advantages[i] > 0);
    const neg = idx.filter((i) => advantages[i] < 0);
    const at = (set: number[]) => {
      const m = new Map<number, Set<number>>();
      for (const i of set) tokens[i].forEach((tok, t) => (m.get(t) ?? m.set(t, new Set()).get(t)!).add(tok));
      return m;
    };
    const posAt = at(pos);
    const negAt = at(neg);
    for (const i of neg) tokens[i].forEach((tok, t) => posAt.get(t)?.has(tok) && (w[i][t] = 0));
    for (const i of pos) tokens[i].forEach((tok, t) => negAt.get(t)?.has(tok) && (w[i][t] = posBoost));
  }
  return w;
}

/**
 * GTPO's entropy filter: completions whose mean token entropy exceeds the threshold are left out of the update
 * (false). The paper derives the threshold (a fraction of ln |V|); here the caller gives it.
 */
export function gtpoEntropyFilter(meanEntropy: readonly number[], threshold: number): boolean[] {
  assertFiniteArray('meanEntropy', meanEntropy);
  return meanEntropy.map((h) => h <= threshold);
}

// ---------------------------------------------------------------- SALT

/**
 * SALT ("Step-level Advantage Assignment for Long-horizon Agents via Trajectory Graph", 2025), core form: the
 * group's trajectories are merged into a graph where the same step after the same history is one node; a step's
 * advantage is the mean outcome advantage of the trajectories through its node, so steps shared by good and bad
 * trajectories get diluted credit and the steps where they diverge keep theirs. Steps are compared as exact
 * strings (the paper also merges equivalent states).
 */
export function saltStepAdvantages(
  steps: readonly (readonly string[])[],
  trajAdvantages: readonly number[],
  groupIds: readonly (string | number)[],
): number[][] {
  assertSameLength('steps', steps.length, 'trajAdvantages', trajAdvantages.length);
  assertSameLength('steps', steps.length, 'groupIds', groupIds.length);
  const out = steps.map((row) => row.map(() => 0));
  for (const idx of groupIndices(groupIds)) {
    const nodes = new Map<string, number[]>();
    const keyOf = (i: number, t: number) => JSON.stringify(steps[i].slice(0, t + 1));
    for (const i of idx) steps[i].forEach((_, t) => (nodes.get(keyOf(i, t)) ?? nodes.set(keyOf(i, t), []).get(keyOf(i, t))!).push(i));
    for (const i of idx) steps[i].forEach((_, t) => (out[i][t] = mean(nodes.get(keyOf(i, t))!.map((j) => trajAdvantages[j]))));
  }
  return out;
}

// ---------------------------------------------------------------- IGPO

/**
 * IGPO ("Information Gain-based Policy Optimization", 2025): turn t's reward is the information gain
 * p_t − p_{t−1}, with p_t the policy's probability of the gold answer given the episode up to turn t (p_0 before
 * the first turn; the caller computes them with a teacher-forced pass); the last turn gets the outcome reward.
 * Turn rewards are normalized over all turns of the group, then each turn's advantage is the discounted sum of
 * the normalized rewards from that turn on.
 */
export function igpoTurnAdvantages(
  goldProbs: readonly (readonly number[])[],
  outcomes: readonly number[],
  groupIds: readonly (string | number)[],
  gamma = 1,
  eps = 1e-6,
): number[][] {
  assertSameLength('goldProbs', goldProbs.length, 'outcomes', outcomes.length);
  assertSameLength('goldProbs', goldProbs.length, 'groupIds', groupIds.length);
  const rewards = goldProbs.map((p, i) => {
    if (p.length < 2) throw invalid(`goldProbs[${i}] needs p_0 and one value per turn, got ${p.length}`);
    const r = p.slice(1).map((x, t) => x - p[t]);
    r[r.length - 1] = outcomes[i];
    return r;
  });
  const out = rewards.map((r) => r.map(() => 0));
  for (const idx of groupIndices(groupIds)) {
    const all = idx.flatMap((i) => rewards[i]);
    const mu = mean(all);
    const sigma = std(all, 'sample');
    for (const i of idx) {
      const z = rewards[i].map((x) => (x - mu) / (sigma + eps));
      let g = 0;
      for (let t = z.length - 1; t >= 0; t--) out[i][t] = g = z[t] + gamma * g;
    }
  }
  return out;
}

// ---------------------------------------------------------------- M-GRPO

/**
 * M-GRPO ("Multi-Agent Deep Research: Training Multi-Agent Systems with M-GRPO", 2025), core form: the main
 * agent's rollouts are normalized within their prompt group; each rollout's sub-agent invocations (a varying
 * number) are aligned to a fixed `slots` per rollout (the first ones kept, missing ones filled by duplicating
 * random existing ones), inherit the rollout's reward, and are normalized within all sub-invocations of the
 * prompt. Returns the main advantages and, per rollout, the advantage and source index of each slot (−1: the
 * rollout had no sub-agent call). The decoupled two-server training is an infrastructure concern left out.
 */
export function mgrpoAdvantages(
  rewards: readonly number[],
  subCounts: readonly number[],
  groupIds: readonly (string | number)[],
  slots: number,
  seed = 0,
  eps = 1e-6,
): { main: number[]; sub: { advantage: number; source: number }[][] } {
  assertSameLength('rewards', rewards.length, 'subCounts', subCounts.length);
  assertSameLength('rewards', rewards.length, 'groupIds', groupIds.length);
  const rng = new Rng(seed);
  const main = new Array<number>(rewards.length).fill(0);
  const sub: { advantage: number; source: number }[][] = rewards.map(() => []);
  for (const idx of groupIndices(groupIds)) {
    const rs = idx.map((i) => rewards[i]);
    const mu = mean(rs);
    const sigma = std(rs, 'sample');
    for (const i of idx) main[i] = (rewards[i] - mu) / (sigma + eps);
    // Aligned sub-invocations inherit the rollout reward; their statistics are the group's sub-invocations'.
    const aligned = idx.map((i) => {
      const n = subCounts[i];
      if (n === 0) return [] as number[];
      const kept = Array.from({ length: Math.min(n, slots) }, (_, k) => k);
      while (kept.length < slots) kept.push(rng.int(n));
      return kept;
    });
    const subRewards = idx.flatMap((i, k) => aligned[k].map(() => rewards[i]));
    const smu = subRewards.length ? mean(subRewards) : 0;
    const ssig = std(subRewards, 'sample');
    idx.forEach((i, k) => {
      sub[i] = aligned[k].length ? aligned[k].map((source) => ({ source, advantage: (rewards[i] - smu) / (ssig + eps) })) : Array.from({ length: slots }, () => ({ source: -1, advantage: 0 }));
    });
  }
  return { main, sub };
}

// ---------------------------------------------------------------- group similarity rewards

/** Jaccard similarity of the word sets of two texts (1 for two empty texts). */
export function jaccard(a: string, b: string): number {
  const A = new Set(a.toLowerCase().split(/\W+/).filter(Boolean));
  const B = new Set(b.toLowerCase().split(/\W+/).filter(Boolean));
  if (A.size === 0 && B.size === 0) return 1;
  let inter = 0;
  for (const x of A) if (B.has(x)) inter++;
  return inter / (A.size + B.size - inter);
}

/**
 * PS-GRPO's group similarity reward ("Improving Consistency in Retrieval-Augmented Systems with Group Similarity
 * Rewards", 2025): each output's reward is its mean similarity to the outputs of the other members of its set
 * (rollouts for paraphrases of one query share a set id), rewarding answers that stay the same across
 * paraphrases. Similarity here is word-set Jaccard; the paper's scorer and its sampled approximation are left out.
 */
export function groupSimilarityRewards(outputs: readonly string[], setIds: readonly (string | number)[], sim: (a: string, b: string) => number = jaccard): number[] {
  assertSameLength('outputs', outputs.length, 'setIds', setIds.length);
  const out = new Array<number>(outputs.length).fill(0);
  for (const idx of groupIndices(setIds)) {
    if (idx.length < 2) continue;
    for (const i of idx) out[i] = mean(idx.filter((j) => j !== i).map((j) => sim(outputs[i], outputs[j])));
  }
  return out;
}

// ---------------------------------------------------------------- samplers

/** A prompt's pass count: correct answers out of samples (a group's, or a pass-rate filter's before training). */
export interface PassRecord {
  correct: number;
  samples: number;
}

/** What the active-pool sampler remembers of a prompt: its latest pass count, and visits skipped since. */
export interface PoolRecord extends PassRecord {
  skipped: number;
}

/**
 * The active-pool sampler's decision on a visit of a prompt: roll it out when it was never seen or its latest group
 * had a learning signal (0 < correct < samples); a prompt whose latest group was unanimous is skipped, except on
 * every `recheck`-th visit, since the policy may since have learned it (or unlearned it). Returns the record after the visit.
 */
export function activePoolVisit(rec: PoolRecord | undefined, recheck: number): { train: boolean; rec: PoolRecord | undefined } {
  if (!Number.isInteger(recheck) || recheck < 1) throw invalid(`recheck must be an integer >= 1, got ${recheck}`);
  if (!rec || (rec.correct > 0 && rec.correct < rec.samples)) return { train: true, rec };
  if (rec.skipped + 1 >= recheck) return { train: true, rec: { ...rec, skipped: 0 } };
  return { train: false, rec: { ...rec, skipped: rec.skipped + 1 } };
}

/**
 * MMR1's variance-aware sampling ("MMR1: Enhancing Multimodal Reasoning with Variance-Aware Sampling", 2025):
 * Variance Promotion Score VPS = α·OVS + β·TDS, OVS = p(1 − p) the outcome variance of the prompt's pass rate p,
 * TDS the trajectory diversity (here: distinct answers / rollouts, the caller's choice of measure).
 */
export function variancePromotionScores(passRates: readonly number[], diversity: readonly number[], alpha = 1, beta = 1): number[] {
  assertSameLength('passRates', passRates.length, 'diversity', diversity.length);
  return passRates.map((p, i) => {
    if (p < 0 || p > 1) throw invalid(`passRates[${i}] is ${p}: expected a rate in [0, 1]`);
    return alpha * p * (1 - p) + beta * diversity[i];
  });
}

/**
 * Draw n distinct prompts: a share `mix` of them with probability ∝ VPS (without replacement), the rest uniformly
 * from the remaining ones (MMR1 mixes VPS-weighted and random sampling so no prompt starves).
 */
export function varianceAwareSample(scores: readonly number[], n: number, rng: Rng, mix = 0.5): number[] {
  if (n > scores.length) throw invalid(`cannot draw ${n} prompts from ${scores.length}`);
  const left = scores.map((_, i) => i);
  const out: number[] = [];
  const weighted = Math.round(n * mix);
  for (let k = 0; k < n; k++) {
    let pick: number;
    const total = left.reduce((s, i) => s + Math.max(0, scores[i]), 0);
    if (k < weighted && total > 0) {
      let u = rng.next() * total;
      pick = left.find((i) => (u -= Math.max(0, scores[i])) < 0) ?? left[left.length - 1];
    } else pick = left[rng.int(left.length)];
    out.push(pick);
    left.splice(left.indexOf(pick), 1);
  }
  return out;
}

/**
 * DPPO's unbiased dynamic pruning ("Unbiased Dynamic Pruning for Efficient Group-Based Policy Optimization", 2026),
 * core form: each completion is kept with probability p_i = clamp(|A_i| / max |A|, pMin, 1), so low-signal ones
 * are pruned most, and a kept one is reweighted by 1/p_i, so E[weight·1{kept}] = 1 and the gradient stays
 * unbiased. Returns the kept indices and their weights (multiply the advantages). Dense prompt packing is left out.
 */
export function dppoPrune(advantages: readonly number[], rng: Rng, pMin = 0.2): { keep: number[]; weights: number[] } {
  assertFiniteArray('advantages', advantages);
  if (!(pMin > 0 && pMin <= 1)) throw invalid(`pMin must be in (0, 1], got ${pMin}`);
  const amax = Math.max(0, ...advantages.map(Math.abs));
  const keep: number[] = [];
  const weights: number[] = [];
  advantages.forEach((a, i) => {
    const p = amax > 0 ? Math.min(1, Math.max(pMin, Math.abs(a) / amax)) : 1;
    if (rng.next() < p) {
      keep.push(i);
      weights.push(1 / p);
    }
  });
  return { keep, weights };
}

/**
 * DaGRPO's off-policy data augmentation, the selection part: groups with no response reaching `threshold` (hard
 * prompts with no valid positive) get an anchor, a high-quality off-policy response (for SQL: the gold query as an
 * answer turn) appended with reward `anchorReward`. Returns the extended rewards/group ids and which entries are
 * anchors; the caller tokenizes the anchors and trains them with the rest.
 */
export function withAnchors(
  rewards: readonly number[],
  groupIds: readonly (string | number)[],
  threshold = 1,
  anchorReward = 1,
): { rewards: number[]; groupIds: (string | number)[]; isAnchor: boolean[]; anchoredGroups: (string | number)[] } {
  assertSameLength('rewards', rewards.length, 'groupIds', groupIds.length);
  const out = { rewards: [...rewards], groupIds: [...groupIds], isAnchor: rewards.map(() => false), anchoredGroups: [] as (string | number)[] };
  for (const idx of groupIndices(groupIds)) {
    if (idx.some((i) => rewards[i] >= threshold)) continue;
    out.rewards.push(anchorReward);
    out.groupIds.push(groupIds[idx[0]]);
    out.isAnchor.push(true);
    out.anchoredGroups.push(groupIds[idx[0]]);
  }
  return out;
}

/** The SQL agent's hint tiers (agent/hints.ts); any environment's `withHint` levels follow the same order. */
export const SCAF_TIERS = HINT_TIERS;
export type ScafTier = (typeof SCAF_TIERS)[number];

/**
 * Scaf-GRPO ("Scaffolded Group Relative Policy Optimization", 2025): after a guidance-exemption period, a prompt
 * whose whole group got reward 0 is retried with an in-prompt hint, from abstract to concrete; the next tier is
 * used only while the previous one still leaves the group at zero. Returns the tier to use next (null: no hint).
 */
export function scafNextTier(groupRewards: readonly number[], step: number, exemptSteps: number, current: ScafTier | null): ScafTier | null {
  if (step < exemptSteps || groupRewards.some((r) => r > 0)) return current;
  const k = current === null ? 0 : SCAF_TIERS.indexOf(current) + 1;
  return k < SCAF_TIERS.length ? SCAF_TIERS[k] : current;
}

/**
 * Reg-GRPO's difficulty-aware augmentation (DeepVideo-R1, 2025), decision part: a prompt every rollout solves is
 * made harder, one no rollout solves is made easier (e.g. a Scaf-style hint), the rest kept, so groups keep reward
 * variance. The transformation itself is task-specific and left to the caller.
 */
export function difficultyAction(groupRewards: readonly number[], solved = 1): 'harder' | 'easier' | 'keep' {
  if (groupRewards.length === 0) throw invalid('difficultyAction needs at least one reward');
  if (groupRewards.every((r) => r >= solved)) return 'harder';
  if (groupRewards.every((r) => r <= 0)) return 'easier';
  return 'keep';
}
