/**
 * The phases of one group-relative RL step, each a function the trainer (trainer.ts) calls in order; the
 * variants that change more than an advantage or a loss plug in between them through trainer-hooks.ts:
 *
 *   collect  → G episodes per task from the policy (the rollout engine, multi-turn, with the environment)
 *   score    → the reward registry on each finished episode, grouped by task
 *   select   → which groups train (DAPO's dynamic sampling drops the zero-signal ones)
 *   logProbs → the old policy's and the reference's log-probs of the batch (once, before any update)
 *   advantages → the advantage estimator by name, over the selected groups
 *   update   → ppoEpochs passes of the policy loss by name over micro-batches, then AdamW
 *   record   → the metrics line of the step
 */
import * as tf from '@tensorflow/tfjs-core';
import { AgroError } from '../errors.ts';
import type { Environment, EpisodeContext, TaskBase } from '../agent/types.ts';
import type { LlamaModel } from '../model/llama.ts';
import type { RolloutEngine } from '../model/engine.ts';
import type { Tokenizer } from '../model/tokenizer.ts';
import { sequenceLogProbs } from '../model/generate.ts';
import { accumulateGrads, clipByGlobalNorm, type AdamW } from '../train/optim.ts';
import { disposeBatch, makeBatch, summedNll, type SftSample } from '../train/sft.ts';
import { advantageParams, type AlgoConfig, type lossConfig } from './algo-config.ts';
import { computeAdvantages, dynamicSamplingFilter, egrpoShape, mean, std, type AdvantageInput, type AdvantageResult, type EgrpoSignals } from './advantages.ts';
import { computePolicyLoss, microBatchShares, stopGradient, type LossMetrics } from './losses.ts';
import { otcOptimalCalls, scoreEpisode, type prepareRewards, type ScoredEpisode } from './rewards.ts';
import { rollout, type Trajectory } from './rollout.ts';
import { gtpoTokenWeights } from './group-math.ts';
import type { TrainConfig } from './train-config.ts';

/** What every phase of a step may read: the run's fixed parts. */
export interface StepContext<T extends TaskBase> {
  cfg: TrainConfig;
  algo: AlgoConfig;
  env: Environment<T>;
  model: LlamaModel;
  tokenizer: Tokenizer;
  reference?: LlamaModel;
  engine?: RolloutEngine;
  rewards: ReturnType<typeof prepareRewards>;
  lossCfg: ReturnType<typeof lossConfig>;
  params: tf.Variable[];
  padId: number;
}

export interface Scored {
  traj: Trajectory;
  ctx: EpisodeContext;
  score: ScoredEpisode;
}

// ---------------------------------------------------------------- collect + score

/** G episodes per task (`traj.group` = the task's index), sampled from the policy or its rollout engine. */
export function collect<T extends TaskBase>(c: Pick<StepContext<T>, 'env' | 'model' | 'tokenizer' | 'cfg' | 'engine'>, tasks: readonly T[], seed: number): Promise<Trajectory[]> {
  return rollout(c.env, tasks, c.model, c.tokenizer, {
    groupSize: c.cfg.groupSize,
    maxTurnTokens: c.cfg.maxTurnTokens,
    maxResponseTokens: c.cfg.maxResponseTokens,
    temperature: c.cfg.temperature,
    topP: c.cfg.topP,
    seed,
    engine: c.engine,
    constrain: c.cfg.constrain,
  });
}

/** Each finished episode scored by the reward registry, grouped by task. */
export async function score<T extends TaskBase>(c: Pick<StepContext<T>, 'env' | 'rewards'>, tasks: readonly T[], trajs: readonly Trajectory[]): Promise<Scored[][]> {
  const ctxs = await Promise.all(trajs.map((t) => c.env.rewardContext(tasks[t.group], t)));
  // OTC needs the group's fewest tool calls among correct answers, computed once per group.
  const optimal = tasks.map((_, g) => otcOptimalCalls(trajs.flatMap((t, i) => (t.group === g ? [{ toolCalls: t.toolCalls, correct: ctxs[i].correct }] : []))));
  const groups: Scored[][] = tasks.map(() => []);
  trajs.forEach((t, i) => {
    const ctx = { ...ctxs[i], optimalToolCalls: optimal[t.group] };
    groups[t.group].push({ traj: t, ctx, score: scoreEpisode(ctx, c.rewards, c.env.rewardDeps?.(tasks[t.group]) ?? {}) });
  });
  return groups;
}

/** Each group's total rewards. */
const totals = (groups: readonly Scored[][]): number[][] => groups.map((g) => g.map((s) => s.score.total));

/** Each group's rewards as the estimator sees them: its total reward, or E-GRPO's shaped reward (wrong answers ranked by γ). */
export function signalRewards(c: { algo: AlgoConfig; rewards: ReturnType<typeof prepareRewards> }, groups: readonly Scored[][]): number[][] {
  if (c.algo.advantage.name !== 'egrpo') return totals(groups);
  const batch = groups.flat();
  const shaped = egrpoShape(egrpoSignals(c, batch), groups.flatMap((g, gi) => g.map(() => gi)), c.algo.advantage);
  let k = 0;
  return groups.map((g) => g.map(() => shaped[k++]));
}

/** Groups whose rewards are all equal: every group-relative advantage is 0 there, so they teach nothing. */
export function zeroSignalGroups(groups: readonly Scored[][], rewards: readonly (readonly number[])[] = totals(groups)): number {
  return rewards.filter((r) => r.length > 0 && r.every((x) => x === r[0])).length;
}

/**
 * DAPO's dynamic sampling when the algorithm enables it (groups whose rewards all agree carry no signal); else
 * every group. `kept`: their indices. `rewards`: per group, as the estimator sees them (signalRewards).
 */
export function select(algo: AlgoConfig, groups: Scored[][], rewards: readonly (readonly number[])[] = totals(groups)): { keep: Scored[][]; kept: number[]; dropped: number } {
  if (!algo.dynamicSampling.enabled) return { keep: groups, kept: groups.map((_, i) => i), dropped: 0 };
  const flat = groups.flat();
  const f = dynamicSamplingFilter(
    rewards.flat(),
    flat.map((s) => s.traj.group),
    { singleton: algo.dynamicSampling.singleton },
  );
  const keepGroups = new Set(f.keep.map((i) => flat[i].traj.group));
  const kept = groups.flatMap((_, gi) => (keepGroups.has(gi) ? [gi] : []));
  return { keep: kept.map((gi) => groups[gi]), kept, dropped: f.droppedGroups };
}

// ---------------------------------------------------------------- log-probs

/**
 * The temperature the loss reads the policy at: the rollouts' own, so that the ratio and the gradient are those of
 * the distribution the episodes were drawn from (TRL and verl divide the logits by it too). Greedy rollouts
 * (temperature 0) are scored at 1.
 */
export const scoringTemperature = (rollout: number): number => (rollout > 0 ? rollout : 1);

/**
 * The batch's per-token log-probs under the policy before the update (needed for several PPO epochs and for KL in
 * the reward) and under the reference (whenever there is one: the KL to it is logged even at coefficient 0).
 */
export async function logProbs<T extends TaskBase>(c: Pick<StepContext<T>, 'cfg' | 'algo' | 'model' | 'reference'>, trajs: readonly Trajectory[]): Promise<{ old: number[][] | null; ref: number[][] | null }> {
  const seqs = trajs.map((t) => t.ids);
  const opts = { temperature: scoringTemperature(c.cfg.temperature) };
  return {
    old: c.cfg.ppoEpochs > 1 || c.algo.klInReward.enabled ? await sequenceLogProbs(c.model, seqs, opts) : null,
    ref: c.reference ? await sequenceLogProbs(c.reference, seqs, opts) : null,
  };
}

// ---------------------------------------------------------------- advantages

/** What hooks add to the estimator's input: per-token rewards, baselines, or a shift of each sequence reward. */
export type AdvantageExtras = Pick<AdvantageInput, 'tokenRewards' | 'baselines' | 'values'> & { rewardShift?: readonly number[] };

/** The algorithm's advantage estimator over the step's groups (group ids from the batch layout). */
export function advantages(c: { algo: AlgoConfig; rewards: ReturnType<typeof prepareRewards> }, groups: readonly Scored[][], extras: AdvantageExtras = {}): AdvantageResult {
  const result = estimate(c, groups, extras);
  if (!c.algo.gtpo.enabled) return result;
  // GTPO: per-token weights on the policy tokens (conflict tokens across opposite-sign responses of a group).
  const batch = groups.flat();
  const policyTokens = batch.map((s) => s.traj.ids.filter((_, t) => s.traj.mask[t] === 1));
  const w = gtpoTokenWeights(policyTokens, result.advantages, groups.flatMap((g, gi) => g.map(() => gi)), c.algo.gtpo.posBoost);
  return { ...result, tokenAdvantages: w.map((row, b) => row.map((x, t) => x * (result.tokenAdvantages ? result.tokenAdvantages[b][t] : result.advantages[b]))) };
}

function estimate(c: { algo: AlgoConfig; rewards: ReturnType<typeof prepareRewards> }, groups: readonly Scored[][], extras: AdvantageExtras): AdvantageResult {
  const batch = groups.flat();
  const { rewardShift, ...inputs } = extras;
  return computeAdvantages(
    c.algo.advantage.name,
    {
      rewards: batch.map((s, i) => s.score.total + (rewardShift?.[i] ?? 0)),
      groupIds: groups.flatMap((g, gi) => g.map(() => gi)),
      lengths: batch.map((s) => Math.max(1, s.traj.mask.reduce((a, b) => a + b, 0))),
      components: batch.map((s) => s.score.vector),
      componentWeights: c.rewards.map((r) => r.weight),
      egrpo: egrpoSignals(c, batch),
      // The response region of each episode (first to last policy token), for reinforce_pp's verl-style reset.
      responseMasks: batch.map((s) => responseRegion(s.traj.mask)),
      // Meaning clusters for seed_grpo / polychromic: episodes with the same final answer (or none) agree.
      clusters: batch.map((s) => (s.traj.answer ?? '').trim().replace(/\s+/g, ' ').toLowerCase()),
      ...inputs,
    },
    advantageParams(c.algo),
  );
}

/** What E-GRPO shapes its rewards from, for each response of the batch. */
function egrpoSignals(c: { algo: AlgoConfig; rewards: ReturnType<typeof prepareRewards> }, batch: readonly Scored[]): EgrpoSignals {
  // E-GRPO composed with the rest of the reward list: every weighted component but the ones E-GRPO replaces.
  const shapedBy = new Set(['exact_match', 'execution', 'entity_match', 'sql_overlap']);
  const others = (s: Scored): number => c.rewards.reduce((a, r, k) => a + (shapedBy.has(r.label) ? 0 : r.weight * s.score.vector[k]), 0);
  return {
    correct: batch.map((s) => s.ctx.correct),
    formatOk: batch.map((s) => s.ctx.formatOk ?? (s.score.parts.format ? s.score.parts.format.value === 1 : true)),
    // γ: the search agent's entity match, or for SQL the overlap of tables, columns and literals with the gold.
    entityRate: batch.map((s) => s.ctx.entityRate ?? s.score.parts.entity_match?.value ?? s.score.parts.sql_overlap?.value ?? 0),
    ...(c.algo.advantage.egrpoCompose === 'add_others' ? { extra: batch.map(others) } : {}),
  };
}

/** The mask from the first to the last policy token (prompt before and padding after cut off). */
export function responseRegion(mask: readonly number[]): number[] {
  const first = mask.indexOf(1);
  if (first < 0) return [];
  return mask.slice(first, mask.lastIndexOf(1) + 1);
}

/**
 * seq-mean-token-sum-norm's constant for one step (Dr.GRPO): 'step_longest' = longest prompt+response row,
 * 'padded_response' = longest response (verl's loss_mask.shape[-1]), 'max_completion' = B·maxResponseTokens (TRL).
 */
export function drGrpoNormalizer(
  mode: 'step_longest' | 'padded_response' | 'max_completion',
  seqLengths: readonly number[],
  responseLengths: readonly number[],
  maxResponseTokens: number,
): number {
  if (mode === 'step_longest') return Math.max(1, ...seqLengths);
  if (mode === 'padded_response') return Math.max(1, ...responseLengths);
  return Math.max(1, seqLengths.length * maxResponseTokens);
}

// ---------------------------------------------------------------- update

/** One trajectory as next-token training rows: inputs ids[t], targets ids[t+1], mask/advantage/old/ref of t+1. */
interface SeqRow {
  ids: Int32Array;
  targets: Int32Array;
  mask: Float32Array;
  adv: Float32Array;
  old: Float32Array | null;
  ref: Float32Array | null;
  policyTokens: number;
}

function seqRow(tr: Trajectory, adv: number | readonly number[], old: readonly number[] | null, ref: readonly number[] | null): SeqRow {
  const n = tr.ids.length - 1;
  const row: SeqRow = {
    ids: Int32Array.from(tr.ids.slice(0, n)),
    targets: Int32Array.from(tr.ids.slice(1)),
    mask: Float32Array.from(tr.mask.slice(1)),
    adv: new Float32Array(n),
    // sequenceLogProbs gives log p(seq[t] | seq[<t]) for t >= 1: entry t-1 belongs to target t, as here.
    old: old ? Float32Array.from(old.slice(0, n)) : null,
    ref: ref ? Float32Array.from(ref.slice(0, n)) : null,
    policyTokens: 0,
  };
  let k = 0;
  for (let t = 0; t < n; t++) {
    if (row.mask[t] !== 1) continue;
    row.adv[t] = typeof adv === 'number' ? adv : adv[k];
    k++;
  }
  row.policyTokens = k;
  return row;
}

/**
 * Micro-batches of sequence indices: similar lengths together, at most `maxSeqs` sequences and
 * `maxTokens` padded tokens each (a single longer sequence still gets its own micro-batch).
 */
export function planMicroBatches(lengths: readonly number[], maxSeqs: number, maxTokens: number): number[][] {
  const order = lengths.map((_, i) => i).sort((a, b) => lengths[a] - lengths[b] || a - b);
  const out: number[][] = [];
  let cur: number[] = [];
  for (const i of order) {
    const longest = Math.max(lengths[i], ...cur.map((j) => lengths[j]));
    if (cur.length > 0 && (cur.length + 1 > maxSeqs || (cur.length + 1) * longest > maxTokens)) {
      out.push(cur);
      cur = [];
    }
    cur.push(i);
  }
  if (cur.length) out.push(cur);
  return out;
}

/** Right-padded [B,T] tensors of a micro-batch. */
function padBatch(rows: readonly SeqRow[], padId: number) {
  const T = Math.max(...rows.map((r) => r.ids.length));
  const B = rows.length;
  const ids = new Int32Array(B * T).fill(padId);
  const targets = new Int32Array(B * T).fill(padId);
  const mask = new Float32Array(B * T);
  const adv = new Float32Array(B * T);
  const old = rows[0].old ? new Float32Array(B * T) : null;
  const ref = rows[0].ref ? new Float32Array(B * T) : null;
  rows.forEach((r, b) => {
    ids.set(r.ids, b * T);
    targets.set(r.targets, b * T);
    mask.set(r.mask, b * T);
    adv.set(r.adv, b * T);
    if (old && r.old) old.set(r.old, b * T);
    if (ref && r.ref) ref.set(r.ref, b * T);
  });
  const t2 = (a: Float32Array | Int32Array, dtype: 'int32' | 'float32') => tf.tensor2d(a, [B, T], dtype);
  return {
    ids: t2(ids, 'int32'),
    targets: t2(targets, 'int32'),
    mask: t2(mask, 'float32'),
    adv: t2(adv, 'float32'),
    old: old ? t2(old, 'float32') : null,
    ref: ref ? t2(ref, 'float32') : null,
  };
}

export interface UpdateResult {
  /** Sum of the micro-batch losses, averaged over the epochs. */
  loss: number;
  /** The anchor's SFT loss (mean over its answer tokens), when one was mixed in. */
  anchorLoss?: number;
  lossMetrics: LossMetrics[];
  gradNorm: number;
  /** A non-finite loss or gradient: the update was skipped, and why. */
  bad: boolean;
  badReason: string;
  /** At least one optimizer step was applied. */
  updated: boolean;
}

/**
 * ppoEpochs passes over the batch (old log-probs recomputed once and kept), each summing the gradients of
 * micro-batches whose losses add up to the whole batch's, clipping, and one AdamW step at learning rate `lr`.
 */
export async function update<T extends TaskBase>(
  c: StepContext<T>,
  opt: AdamW,
  trajs: readonly Trajectory[],
  adv: AdvantageResult,
  lp: { old: number[][] | null; ref: number[][] | null },
  lr: number,
  anchor?: Anchor,
): Promise<UpdateResult> {
  const { cfg, model } = c;
  // One epoch needs no stored old log-probs: the ratio is exp(logp − sg(logp)) = 1 with the gradient of logp.
  const oldLp = cfg.ppoEpochs > 1 ? lp.old : null;
  const refLp = lp.ref;
  // TRL mask_truncated_completions: after the advantages (their rewards still counted in the group statistics).
  const trained = c.algo.maskTruncated ? trajs.map((t) => (t.truncated ? { ...t, mask: t.mask.map(() => 0) } : t)) : trajs;
  const rows = trained.map((t, b) => seqRow(t, adv.tokenAdvantages ? adv.tokenAdvantages[b] : adv.advantages[b], oldLp?.[b] ?? null, refLp?.[b] ?? null));
  const micro = planMicroBatches(rows.map((r) => r.ids.length), cfg.microBatch, cfg.maxBatchTokens);
  const policyTokens = rows.reduce((a, r) => a + r.policyTokens, 0);
  // TRL's grpo normalizer counts fully masked rows; verl leaves them out.
  const activeSeqs = c.lossCfg.loss.emptySeqs === 'count' ? rows.length : rows.filter((r) => r.policyTokens > 0).length;
  const groupIds = trajs.map((t) => t.group);
  // Dr.GRPO's constant normalizer must not change with each micro-batch's padded length.
  const lossCfg =
    c.lossCfg.loss.aggregation === 'seq-mean-token-sum-norm' && c.lossCfg.loss.aggNormalizer === null
      ? {
          ...c.lossCfg,
          loss: {
            ...c.lossCfg.loss,
            aggNormalizer: drGrpoNormalizer(
              c.lossCfg.loss.aggNormalizerMode,
              rows.map((r) => r.ids.length),
              trajs.map((t) => responseRegion(t.mask).length),
              cfg.maxResponseTokens,
            ),
          },
        }
      : c.lossCfg;
  const out: UpdateResult = { loss: 0, lossMetrics: [], gradNorm: 0, bad: false, badReason: 'non-finite loss or gradient', updated: false };
  for (let epoch = 0; epoch < cfg.ppoEpochs && !out.bad; epoch++) {
    let summed: tf.Tensor[] | null = null;
    for (const idx of micro) {
      const mbRows = idx.map((i) => rows[i]);
      const mbTokens = mbRows.reduce((a, r) => a + r.policyTokens, 0);
      const mbSeqs = c.lossCfg.loss.emptySeqs === 'count' ? mbRows.length : mbRows.filter((r) => r.policyTokens > 0).length;
      // Scale each micro-batch's terms so that their sum equals the loss of the whole batch: the policy term by the
      // aggregation its loss uses, KL and entropy by the configured one (they differ for gspo and luspo).
      const share = microBatchShares(lossCfg.loss, mbTokens / Math.max(1, policyTokens), mbSeqs / Math.max(1, activeSeqs));
      if (share.pg === 0 && share.aux === 0) continue;
      const t = padBatch(mbRows, c.padId);
      let metrics: LossMetrics | undefined;
      let computed: { value: tf.Scalar; grads: tf.NamedTensorMap };
      try {
        computed = tf.variableGrads(() => {
          const { logp, entropy } = model.tokenLogProbs(t.ids, t.targets, { withEntropy: true, temperature: scoringTemperature(cfg.temperature) });
          const r = computePolicyLoss(
            { logp, oldLogp: t.old ?? stopGradient(logp), advantages: t.adv, mask: t.mask, refLogp: t.ref ?? undefined, entropy, groupIds: idx.map((i) => groupIds[i]) },
            lossCfg,
            share,
          );
          metrics = r.metrics;
          return r.loss;
        }, c.params);
      } catch (err) {
        // The loss refuses non-finite log-probs (a diverged policy): skip this update, as for a NaN loss.
        if (!(err instanceof AgroError && /NaN|Inf/.test(err.message))) throw err;
        for (const x of Object.values(t)) x?.dispose();
        out.badReason = err.message;
        out.bad = true;
        break;
      }
      const { value, grads } = computed;
      const v = value.dataSync()[0];
      value.dispose();
      for (const x of Object.values(t)) x?.dispose();
      if (metrics) out.lossMetrics.push(metrics);
      const g = c.params.map((p) => grads[p.name]);
      if (!Number.isFinite(v) || g.some((x) => x === undefined)) {
        out.bad = true;
        g.forEach((x) => x?.dispose());
        break;
      }
      out.loss += v;
      summed = accumulateGrads(summed, g);
    }
    if (out.bad || summed === null) {
      summed?.forEach((x) => x.dispose());
      break;
    }
    if (anchor && epoch === 0) summed = anchorGrads(c, anchor, summed, out);
    const raw: tf.Tensor[] = summed;
    const { grads: clipped, norm } = clipByGlobalNorm(raw, cfg.clipNorm);
    out.gradNorm = norm;
    if (!Number.isFinite(norm)) out.bad = true;
    else {
      opt.apply(clipped, lr);
      out.updated = true;
    }
    if (clipped !== raw) clipped.forEach((x) => x.dispose());
    raw.forEach((x) => x.dispose());
  }
  out.loss /= Math.max(1, cfg.ppoEpochs);
  return out;
}

/**
 * SFT samples whose loss is added to an RL step (InstructGPT's PPO-ptx): RL moves the answers to questions it
 * never samples too, and the cold-start data holds them where SFT left them.
 */
export interface Anchor {
  samples: SftSample[];
  coef: number;
}

/** `summed` plus the gradient of coef × the anchor samples' mean next-token loss over their policy tokens. */
function anchorGrads<T extends TaskBase>(c: StepContext<T>, anchor: Anchor, summed: tf.Tensor[], out: UpdateResult): tf.Tensor[] {
  const b = makeBatch(anchor.samples, c.padId);
  try {
    const { value, grads } = tf.variableGrads(
      () => tf.mul(summedNll(c.model, b), anchor.coef / Math.max(1, b.tokens)) as tf.Scalar,
      c.params,
    );
    out.anchorLoss = value.dataSync()[0] / anchor.coef;
    value.dispose();
    return accumulateGrads(summed, c.params.map((p) => grads[p.name]));
  } finally {
    disposeBatch(b);
  }
}

// ---------------------------------------------------------------- record

export interface StepRecord {
  step: number;
  lr: number;
  reward: number;
  reward_std: number;
  /** Mean of each reward component (unweighted). */
  rewards: Record<string, number>;
  accuracy: number;
  groups: number;
  dropped_groups: number;
  /** Share of the groups sampled this step (refills included) whose rewards were all equal: no learning signal. */
  zero_signal: number;
  response_tokens: number;
  turns: number;
  tool_calls: number;
  truncated: number;
  loss: number;
  pg_loss: number;
  kl: number;
  entropy: number;
  clip_frac_low: number;
  clip_frac_high: number;
  approx_kl: number;
  ratio: number;
  grad_norm: number;
  /** The anchor's SFT loss this step (TrainRunOptions.anchor). */
  anchor_loss?: number;
  skipped: boolean;
  time_rollout_s: number;
  time_reward_s: number;
  time_update_s: number;
  /** Pushing the updated weights to the rollout engine (only with an engine other than TF.js). */
  time_sync_s?: number;
  tokens_per_s: number;
  /** Ids of the tasks whose groups trained this step, in batch order. */
  task_ids: string[];
  /** Responses in the update (after any pruning) and the mean and mean |·| of their advantages (per response: its tokens' mean). */
  trained: number;
  adv_mean: number;
  adv_abs_mean: number;
  /** Figures of the active trainer hooks (trainer-hooks.ts), e.g. kl_reward_beta, remax_baseline, dppo_kept. */
  hooks?: Record<string, number>;
  eval_accuracy?: number;
}

/** What the trainer knows about a step beyond the groups: the tasks, the advantages that trained, the hooks' figures. */
export interface StepExtras {
  taskIds: string[];
  /** Per trained response: its advantage (the mean of its token advantages when they vary). */
  trainedAdvantages: number[];
  hooks: Record<string, number>;
}

/** Per response, the mean of its token advantages when the estimator gives rows, else its advantage. */
export function responseAdvantages(adv: AdvantageResult): number[] {
  return adv.advantages.map((a, b) => {
    const row = adv.tokenAdvantages?.[b];
    return row && row.length ? mean(row) : a;
  });
}

export interface StepTimes {
  rolloutSec: number;
  rewardSec: number;
  updateSec: number;
  /** Only with a rollout engine other than TF.js. */
  syncSec?: number;
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000;

/** The metrics line of a step from what the other phases returned. */
export function record(
  c: { rewards: ReturnType<typeof prepareRewards> },
  step: number,
  lr: number,
  groups: readonly Scored[][],
  sampled: { dropped: number; groups: number; zeroSignal: number },
  u: UpdateResult,
  times: StepTimes,
  extras: StepExtras,
): StepRecord {
  const batch = groups.flat();
  const trajs = batch.map((s) => s.traj);
  const totals = batch.map((s) => s.score.total);
  const lm = (k: keyof LossMetrics): number => mean(u.lossMetrics.map((m) => Number(m[k] ?? 0)));
  return {
    step,
    lr,
    reward: mean(totals),
    // The same Bessel-corrected std that GRPO's advantages divide by (and verl logs).
    reward_std: std(totals, 'sample'),
    rewards: Object.fromEntries(c.rewards.map((r, k) => [r.label, mean(batch.map((s) => s.score.vector[k]))])),
    accuracy: mean(batch.map((s) => (s.ctx.correct ? 1 : 0))),
    groups: groups.length,
    dropped_groups: sampled.dropped,
    zero_signal: sampled.groups ? sampled.zeroSignal / sampled.groups : 0,
    response_tokens: mean(trajs.map((t) => t.policyTokens)),
    turns: mean(trajs.map((t) => t.messages.filter((m) => m.role === 'assistant').length)),
    tool_calls: mean(trajs.map((t) => t.toolCalls)),
    truncated: mean(trajs.map((t) => (t.truncated ? 1 : 0))),
    loss: u.loss,
    pg_loss: lm('pgLoss'),
    kl: lm('kl'),
    entropy: lm('entropy'),
    clip_frac_low: lm('clipFracLow'),
    clip_frac_high: lm('clipFracHigh'),
    approx_kl: lm('approxKl'),
    ratio: lm('meanRatio'),
    grad_norm: u.gradNorm,
    ...(u.anchorLoss !== undefined ? { anchor_loss: u.anchorLoss } : {}),
    skipped: u.bad,
    time_rollout_s: round3(times.rolloutSec),
    time_reward_s: round3(times.rewardSec),
    time_update_s: round3(times.updateSec),
    ...(times.syncSec !== undefined ? { time_sync_s: round3(times.syncSec) } : {}),
    tokens_per_s: Math.round(trajs.reduce((a, t) => a + t.policyTokens, 0) / Math.max(1e-9, times.rolloutSec)),
    task_ids: extras.taskIds,
    trained: extras.trainedAdvantages.length,
    adv_mean: extras.trainedAdvantages.length ? mean(extras.trainedAdvantages) : 0,
    adv_abs_mean: extras.trainedAdvantages.length ? mean(extras.trainedAdvantages.map(Math.abs)) : 0,
    ...(Object.keys(extras.hooks).length ? { hooks: extras.hooks } : {}),
  };
}
