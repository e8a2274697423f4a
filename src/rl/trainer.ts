/**
 * The group-relative RL loop (GRPO and its family) for any Environment:
 *   rollout G episodes per task → rewards from the registry → advantages by name → policy loss by name
 *   → AdamW, several epochs over the rollout batch with the old log-probs kept, micro-batched.
 * Checkpoints hold the weights, the optimizer moments and the trainer state (step, data position, RNG),
 * so a resumed run continues exactly. Metrics go to metrics.jsonl, one line per step.
 */
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import cliProgress from 'cli-progress';
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import { Rng } from '../util/rng.ts';
import { writeJsonAtomic, ensureDir } from '../util/fs.ts';
import type { Environment, EpisodeContext, TaskBase } from '../agent/types.ts';
import type { LlamaModel } from '../model/llama.ts';
import type { RolloutEngine } from '../model/engine.ts';
import type { Tokenizer } from '../model/tokenizer.ts';
import { saveCheckpoint } from '../model/checkpoint.ts';
import { sequenceLogProbs } from '../model/generate.ts';
import { resolveAlgo, advantageParams, lossConfig, type AlgoConfig } from './config.ts';
import { computeAdvantages, dynamicSamplingFilter } from './advantages.ts';
import { computePolicyLoss, stopGradient, type LossMetrics } from './losses.ts';
import { otcOptimalCalls, prepareRewards, scoreEpisode, type ScoredEpisode } from './rewards.ts';
import { AdamW, accumulateGrads, clipByGlobalNorm, lrAt, optimizerFields } from '../train/optim.ts';
import { rollout, type Trajectory } from './rollout.ts';
import { listCheckpoints, restoreTrainerState, truncateMetrics } from '../train/run-state.ts';

/** Every GRPO-trainer default lives here; the algorithm itself (advantage, loss, rewards) is an AlgoConfig preset. */
export const trainConfigSchema = z.strictObject({
  algo: z.string().default('grpo'),
  /** Deep-merged over the preset (e.g. { loss: { clipHigh: 0.28 } }). */
  algoOverrides: z.record(z.string(), z.unknown()).default({}),
  steps: z.number().int().positive().default(50),
  /** Tasks (prompts) per step; each is rolled out groupSize times. */
  promptsPerStep: z.number().int().positive().default(4),
  groupSize: z.number().int().min(1).default(4),
  /** Optimization epochs over each rollout batch (the old log-probs are recomputed once and kept). */
  ppoEpochs: z.number().int().positive().default(1),
  /** Sequences per forward/backward pass; bounds memory. */
  microBatch: z.number().int().positive().default(8),
  /** Most padded tokens (rows × length) in one forward/backward pass; bounds memory (wasm has a few GB at most). */
  maxBatchTokens: z.number().int().min(2).default(2048),
  ...optimizerFields({ lr: 2e-4, minLrRatio: 1, warmupSteps: 0, weightDecay: 0, beta1: 0.9, beta2: 0.99 }),
  maxTurnTokens: z.number().int().positive().default(96),
  maxResponseTokens: z.number().int().positive().default(320),
  temperature: z.number().min(0).default(1),
  topP: z.number().gt(0).max(1).default(1),
  /** Order of tasks: shuffled each epoch, or simple → moderate → challenging within each epoch. */
  curriculum: z.enum(['shuffle', 'easy_first']).default('shuffle'),
  checkpointEvery: z.number().int().min(0).default(10),
  /** Held-out evaluation every N steps (and at the end); 0 = only at the end. */
  evalEvery: z.number().int().min(0).default(0),
  /** Consecutive steps with a non-finite loss before the run stops (after a checkpoint). */
  maxBadSteps: z.number().int().min(1).default(3),
  seed: z.number().int().min(0).default(0),
});
export type TrainConfig = z.infer<typeof trainConfigSchema>;
export type TrainConfigInput = z.input<typeof trainConfigSchema>;

export function resolveTrainConfig(input: unknown): { train: TrainConfig; algo: AlgoConfig } {
  const r = trainConfigSchema.safeParse(input ?? {});
  if (!r.success) {
    const i = r.error.issues[0];
    throw new AgroError('invalid_input', `train config: ${i.path.join('.') || 'config'}: ${i.message}`);
  }
  const train = r.data;
  if (train.maxTurnTokens > train.maxResponseTokens) {
    throw new AgroError('invalid_input', `train config: maxTurnTokens (${train.maxTurnTokens}) exceeds maxResponseTokens (${train.maxResponseTokens})`);
  }
  return { train, algo: resolveAlgo(train.algo, train.algoOverrides) };
}

export interface GrpoTrainerState {
  step: number;
  epoch: number;
  /** Index of the next task in the current epoch's order. */
  pos: number;
  /** RNG state at the start of the current epoch (regenerates its task order). */
  epochRngState: number;
  badSteps: number;
}

const stateSchema = z.object({
  step: z.number().int().min(0),
  epoch: z.number().int().min(0),
  pos: z.number().int().min(0),
  epochRngState: z.number().int().min(0),
  badSteps: z.number().int().min(0),
  kind: z.literal('grpo'),
});

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
  skipped: boolean;
  time_rollout_s: number;
  time_reward_s: number;
  time_update_s: number;
  /** Pushing the updated weights to the rollout engine (only with an engine other than TF.js). */
  time_sync_s?: number;
  tokens_per_s: number;
  eval_accuracy?: number;
}

export interface PolicyEval {
  accuracy: number;
  n: number;
  byDifficulty: Record<string, { n: number; correct: number }>;
  toolCalls: number;
  /** Fraction of episodes that used at least one tool call. */
  toolUse: number;
  /** The final answer of each task, in task order ('' when the episode ended without one): an `agro eval --pred` file. */
  predictions: string[];
}

export interface TrainRunOptions<T extends TaskBase & { difficulty?: string }> {
  outDir: string;
  env: Environment<T>;
  tasks: readonly T[];
  heldOut?: readonly T[];
  model: LlamaModel;
  tokenizer: Tokenizer;
  /** Frozen reference policy for the KL term (needed when the algorithm's kl.coef > 0). */
  reference?: LlamaModel;
  config?: TrainConfigInput;
  resumeFrom?: { trainerState: object; optimizerState?: Map<string, { shape: number[]; data: Float32Array }> };
  progress?: boolean;
  onStep?: (r: StepRecord) => void;
  /** Stop after this step as if interrupted (a checkpoint is written first). */
  stopAfter?: number;
  /** Rollout sampler (e.g. llama.cpp); synced to `model` at the start and after each update. Default: TF.js on `model`. */
  engine?: RolloutEngine;
  signal?: AbortSignal;
}

export interface TrainResult {
  steps: number;
  checkpoint: string;
  interrupted: boolean;
  finalEval?: PolicyEval;
}

const mean = (xs: readonly number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
const std = (xs: readonly number[]): number => {
  const m = mean(xs);
  return Math.sqrt(mean(xs.map((x) => (x - m) ** 2)));
};

const DIFFICULTY_RANK: Record<string, number> = { simple: 0, easy: 0, moderate: 1, medium: 1, challenging: 2, hard: 2, extra: 3 };

/** Task order for one epoch (consumes rng). */
export function epochOrder(tasks: readonly { difficulty?: string }[], rng: Rng, curriculum: TrainConfig['curriculum']): number[] {
  const order = rng.shuffle(tasks.map((_, i) => i));
  if (curriculum === 'easy_first') {
    const rank = (i: number): number => DIFFICULTY_RANK[tasks[i].difficulty ?? ''] ?? 1;
    order.sort((a, b) => rank(a) - rank(b));
  }
  return order;
}

/** Greedy single-sample episodes on held-out tasks: execution accuracy (or the env's notion of correct), by difficulty. */
export async function evaluatePolicy<T extends TaskBase & { difficulty?: string }>(
  env: Environment<T>,
  tasks: readonly T[],
  model: LlamaModel,
  tokenizer: Tokenizer,
  opts: { maxTurnTokens: number; maxResponseTokens: number; seed?: number; batch?: number; engine?: RolloutEngine },
): Promise<PolicyEval> {
  const byDifficulty: PolicyEval['byDifficulty'] = {};
  const predictions: string[] = [];
  let correct = 0;
  let calls = 0;
  let used = 0;
  const batch = opts.batch ?? 8;
  for (let i = 0; i < tasks.length; i += batch) {
    const chunk = tasks.slice(i, i + batch);
    const trajs = await rollout(env, chunk, model, tokenizer, {
      groupSize: 1,
      maxTurnTokens: opts.maxTurnTokens,
      maxResponseTokens: opts.maxResponseTokens,
      temperature: 0,
      topP: 1,
      seed: opts.seed ?? 0,
      engine: opts.engine,
    });
    for (const t of trajs) {
      const task = chunk[t.group];
      predictions.push(t.answer ?? '');
      const ctx = await env.rewardContext(task, t);
      const d = task.difficulty ?? 'all';
      byDifficulty[d] ??= { n: 0, correct: 0 };
      byDifficulty[d].n++;
      if (ctx.correct) {
        correct++;
        byDifficulty[d].correct++;
      }
      calls += t.toolCalls;
      if (t.toolCalls > 0) used++;
    }
  }
  const n = tasks.length;
  return { accuracy: n ? correct / n : 0, n, byDifficulty, toolCalls: n ? calls / n : 0, toolUse: n ? used / n : 0, predictions };
}


interface Scored {
  traj: Trajectory;
  ctx: EpisodeContext;
  score: ScoredEpisode;
}

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

export async function runGrpo<T extends TaskBase & { difficulty?: string }>(opts: TrainRunOptions<T>): Promise<TrainResult> {
  const { train: cfg, algo } = resolveTrainConfig(opts.config ?? {});
  const { model, tokenizer, env } = opts;
  if (opts.tasks.length === 0) throw new AgroError('invalid_input', 'train: no training tasks');
  if (algo.kl.coef > 0 && !opts.reference) {
    throw new AgroError('invalid_input', `train: algorithm "${cfg.algo}" has kl.coef ${algo.kl.coef} but no reference model was given`);
  }
  const rewards = prepareRewards(algo.rewards);
  const lossCfg = lossConfig(algo);
  const padId = tokenizer.hasToken('<|pad|>') ? tokenizer.tokenId('<|pad|>') : 0;

  let state: GrpoTrainerState = { step: 0, epoch: 0, pos: 0, epochRngState: new Rng(cfg.seed).state, badSteps: 0 };
  const params = model.trainableVariables();
  const opt = new AdamW(params, { beta1: cfg.beta1, beta2: cfg.beta2, eps: cfg.eps, weightDecay: cfg.weightDecay });
  if (opts.resumeFrom) state = restoreTrainerState(stateSchema, opts.resumeFrom, opt, 'a GRPO');

  ensureDir(opts.outDir);
  const metricsPath = join(opts.outDir, 'metrics.jsonl');
  truncateMetrics(metricsPath, state.step);
  writeJsonAtomic(join(opts.outDir, 'train_config.json'), { train: cfg, algo, model: model.config, tasks: opts.tasks.length, heldOut: opts.heldOut?.length ?? 0 });

  let epochRng = Rng.fromState(state.epochRngState);
  let order = epochOrder(opts.tasks, epochRng, cfg.curriculum);
  const nextTasks = (n: number): T[] => {
    const out: T[] = [];
    while (out.length < n) {
      if (state.pos >= order.length) {
        state.epoch++;
        state.pos = 0;
        state.epochRngState = epochRng.state;
        epochRng = Rng.fromState(state.epochRngState);
        order = epochOrder(opts.tasks, epochRng, cfg.curriculum);
      }
      out.push(opts.tasks[order[state.pos++]]);
    }
    return out;
  };

  let lastCk = -1;
  const checkpoint = (): string => {
    const dir = join(opts.outDir, 'checkpoints', `step-${state.step}`);
    if (lastCk !== state.step) {
      saveCheckpoint(dir, { model, tokenizer, trainerState: { ...state, kind: 'grpo' }, optimizerState: opt.exportState() });
      lastCk = state.step;
    }
    return dir;
  };
  const engine = opts.engine;
  await engine?.sync(model);
  const evalOpts = { maxTurnTokens: cfg.maxTurnTokens, maxResponseTokens: cfg.maxResponseTokens, seed: cfg.seed, engine };

  const bar = opts.progress
    ? new cliProgress.SingleBar(
        { format: `${cfg.algo} |{bar}| {value}/{total} | reward {reward} | acc {acc} | {tps} tok/s | eta {eta_formatted}`, hideCursor: true, stream: process.stderr },
        cliProgress.Presets.shades_classic,
      )
    : null;
  bar?.start(cfg.steps, state.step, { reward: '-', acc: '-', tps: '-' });

  let interrupted = false;
  let finalEval: PolicyEval | undefined;
  try {
    while (state.step < cfg.steps) {
      if (opts.signal?.aborted) {
        interrupted = true;
        break;
      }
      const seed = (cfg.seed * 7919 + state.step * 104729) >>> 0;

      // ---- rollouts (+ DAPO dynamic sampling refills) ----
      const t0 = performance.now();
      let rewardSec = 0;
      const kept: Scored[][] = [];
      let dropped = 0;
      const rounds = algo.dynamicSampling.enabled ? algo.dynamicSampling.maxRounds + 1 : 1;
      let lastRound: Scored[][] = [];
      for (let round = 0; round < rounds && kept.length < cfg.promptsPerStep; round++) {
        const tasks = nextTasks(cfg.promptsPerStep - kept.length);
        const trajs = await rollout(env, tasks, model, tokenizer, {
          groupSize: cfg.groupSize,
          maxTurnTokens: cfg.maxTurnTokens,
          maxResponseTokens: cfg.maxResponseTokens,
          temperature: cfg.temperature,
          topP: cfg.topP,
          seed: seed + round,
          engine,
        });
        const r0 = performance.now();
        const ctxs = await Promise.all(trajs.map((t) => env.rewardContext(tasks[t.group], t)));
        // OTC needs the group's fewest tool calls among correct answers, computed once per group.
        const optimal = tasks.map((_, g) => otcOptimalCalls(trajs.flatMap((t, i) => (t.group === g ? [{ toolCalls: t.toolCalls, correct: ctxs[i].correct }] : []))));
        const groups: Scored[][] = tasks.map(() => []);
        trajs.forEach((t, i) => {
          const ctx = { ...ctxs[i], optimalToolCalls: optimal[t.group] };
          const score = scoreEpisode(ctx, rewards, env.rewardDeps?.(tasks[t.group]) ?? {});
          groups[t.group].push({ traj: t, ctx, score });
        });
        rewardSec += (performance.now() - r0) / 1000;
        lastRound = groups;
        if (!algo.dynamicSampling.enabled) {
          kept.push(...groups);
          break;
        }
        const flat = groups.flat();
        const f = dynamicSamplingFilter(
          flat.map((s) => s.score.total),
          flat.map((s) => s.traj.group),
        );
        const keepGroups = new Set(f.keep.map((i) => flat[i].traj.group));
        dropped += f.droppedGroups;
        for (const [gi, g] of groups.entries()) if (keepGroups.has(gi)) kept.push(g);
      }
      // Nothing with signal at all: train on the last round anyway (advantages are 0; the step still logs).
      const batchGroups = (kept.length ? kept : lastRound).slice(0, cfg.promptsPerStep);
      const batch = batchGroups.flat();
      const rolloutSec = (performance.now() - t0) / 1000 - rewardSec;

      // ---- advantages ----
      const totals = batch.map((s) => s.score.total);
      const groupIds = batchGroups.flatMap((g, gi) => g.map(() => gi));
      const adv = computeAdvantages(
        algo.advantage.name,
        {
          rewards: totals,
          groupIds,
          lengths: batch.map((s) => Math.max(1, s.traj.mask.reduce((a, b) => a + b, 0))),
          components: batch.map((s) => s.score.vector),
          componentWeights: rewards.map((r) => r.weight),
          egrpo: {
            correct: batch.map((s) => s.ctx.correct),
            formatOk: batch.map((s) => s.ctx.formatOk ?? (s.score.parts.format ? s.score.parts.format.value === 1 : true)),
            entityRate: batch.map((s) => s.ctx.entityRate ?? s.score.parts.entity_match?.value ?? 0),
          },
        },
        advantageParams(algo),
      );

      // ---- update ----
      const u0 = performance.now();
      const trajs = batch.map((s) => s.traj);
      const seqs = trajs.map((t) => t.ids);
      const oldLp = cfg.ppoEpochs > 1 ? await sequenceLogProbs(model, seqs) : null;
      const refLp = algo.kl.coef > 0 && opts.reference ? await sequenceLogProbs(opts.reference, seqs) : null;
      const rows = trajs.map((t, b) => seqRow(t, adv.tokenAdvantages ? adv.tokenAdvantages[b] : adv.advantages[b], oldLp?.[b] ?? null, refLp?.[b] ?? null));
      const micro = planMicroBatches(rows.map((r) => r.ids.length), cfg.microBatch, cfg.maxBatchTokens);
      const policyTokens = rows.reduce((a, r) => a + r.policyTokens, 0);
      const activeSeqs = rows.filter((r) => r.policyTokens > 0).length;
      // Dr.GRPO's constant normalizer must not change with each micro-batch's padded length.
      const stepLossCfg =
        lossCfg.loss.aggregation === 'seq-mean-token-sum-norm' && lossCfg.loss.aggNormalizer === null
          ? { ...lossCfg, loss: { ...lossCfg.loss, aggNormalizer: Math.max(...rows.map((r) => r.ids.length)) } }
          : lossCfg;
      const lossMetrics: LossMetrics[] = [];
      let gradNorm = 0;
      let lossSum = 0;
      let bad = false;
      let updated = false;
      let badReason = 'non-finite loss or gradient';
      for (let epoch = 0; epoch < cfg.ppoEpochs && !bad; epoch++) {
        let summed: tf.Tensor[] | null = null;
        for (const idx of micro) {
          const mbRows = idx.map((i) => rows[i]);
          const mbTokens = mbRows.reduce((a, r) => a + r.policyTokens, 0);
          const mbSeqs = mbRows.filter((r) => r.policyTokens > 0).length;
          // Scale each micro-batch's mean so that the sum equals the loss of the whole batch.
          const share = microBatchShare(lossCfg.loss.name === 'gspo' ? 'seq-mean-token-mean' : lossCfg.loss.aggregation, mbTokens / Math.max(1, policyTokens), mbSeqs / Math.max(1, activeSeqs));
          if (share === 0) continue;
          const t = padBatch(mbRows, padId);
          let metrics: LossMetrics | undefined;
          let computed: { value: tf.Scalar; grads: tf.NamedTensorMap };
          try {
            computed = tf.variableGrads(() => {
              const { logp, entropy } = model.tokenLogProbs(t.ids, t.targets, { withEntropy: true });
              const out = computePolicyLoss(
                { logp, oldLogp: t.old ?? stopGradient(logp), advantages: t.adv, mask: t.mask, refLogp: t.ref ?? undefined, entropy },
                stepLossCfg,
              );
              metrics = out.metrics;
              return tf.mul(out.loss, share) as tf.Scalar;
            }, params);
          } catch (err) {
            // The loss refuses non-finite log-probs (a diverged policy): skip this update, as for a NaN loss.
            if (!(err instanceof AgroError && /NaN|Inf/.test(err.message))) throw err;
            for (const x of Object.values(t)) x?.dispose();
            badReason = err.message;
            bad = true;
            break;
          }
          const { value, grads } = computed;
          const v = value.dataSync()[0];
          value.dispose();
          for (const x of Object.values(t)) x?.dispose();
          if (metrics) lossMetrics.push(metrics);
          const g = params.map((p) => grads[p.name]);
          if (!Number.isFinite(v) || g.some((x) => x === undefined)) {
            bad = true;
            g.forEach((x) => x?.dispose());
            break;
          }
          lossSum += v;
          summed = accumulateGrads(summed, g);
        }
        if (bad || summed === null) {
          summed?.forEach((x) => x.dispose());
          break;
        }
        const raw: tf.Tensor[] = summed;
        const { grads: clipped, norm } = clipByGlobalNorm(raw, cfg.clipNorm);
        gradNorm = norm;
        if (!Number.isFinite(norm)) {
          bad = true;
        } else {
          opt.apply(clipped, lrAt(state.step + 1, { lr: cfg.lr, minLrRatio: cfg.minLrRatio, warmupSteps: cfg.warmupSteps, steps: cfg.steps }));
          updated = true;
        }
        if (clipped !== raw) clipped.forEach((x) => x.dispose());
        raw.forEach((x) => x.dispose());
      }
      const updateSec = (performance.now() - u0) / 1000;
      const s0 = performance.now();
      if (engine && updated) await engine.sync(model);
      const syncSec = (performance.now() - s0) / 1000;
      state.badSteps = bad ? state.badSteps + 1 : 0;
      state.step++;

      const compNames = rewards.map((r) => r.label);
      const lm = (k: keyof LossMetrics): number => mean(lossMetrics.map((m) => Number(m[k] ?? 0)));
      const rec: StepRecord = {
        step: state.step,
        lr: lrAt(state.step, { lr: cfg.lr, minLrRatio: cfg.minLrRatio, warmupSteps: cfg.warmupSteps, steps: cfg.steps }),
        reward: mean(totals),
        reward_std: std(totals),
        rewards: Object.fromEntries(compNames.map((n, k) => [n, mean(batch.map((s) => s.score.vector[k]))])),
        accuracy: mean(batch.map((s) => (s.ctx.correct ? 1 : 0))),
        groups: batchGroups.length,
        dropped_groups: dropped,
        response_tokens: mean(trajs.map((t) => t.policyTokens)),
        turns: mean(trajs.map((t) => t.messages.filter((m) => m.role === 'assistant').length)),
        tool_calls: mean(trajs.map((t) => t.toolCalls)),
        truncated: mean(trajs.map((t) => (t.truncated ? 1 : 0))),
        loss: lossSum / Math.max(1, cfg.ppoEpochs),
        pg_loss: lm('pgLoss'),
        kl: lm('kl'),
        entropy: lm('entropy'),
        clip_frac_low: lm('clipFracLow'),
        clip_frac_high: lm('clipFracHigh'),
        approx_kl: lm('approxKl'),
        ratio: lm('meanRatio'),
        grad_norm: gradNorm,
        skipped: bad,
        time_rollout_s: round3(rolloutSec),
        time_reward_s: round3(rewardSec),
        time_update_s: round3(updateSec),
        ...(engine && engine.name !== 'tfjs' ? { time_sync_s: round3(syncSec) } : {}),
        tokens_per_s: Math.round(trajs.reduce((a, t) => a + t.policyTokens, 0) / Math.max(1e-9, rolloutSec)),
      };
      if (opts.heldOut?.length && cfg.evalEvery > 0 && state.step % cfg.evalEvery === 0 && state.step < cfg.steps) {
        rec.eval_accuracy = (await evaluatePolicy(env, opts.heldOut, model, tokenizer, evalOpts)).accuracy;
      }
      appendFileSync(metricsPath, JSON.stringify(rec) + '\n');
      opts.onStep?.(rec);
      bar?.update(state.step, { reward: rec.reward.toFixed(3), acc: rec.accuracy.toFixed(2), tps: rec.tokens_per_s });

      if (state.badSteps >= cfg.maxBadSteps) {
        checkpoint();
        throw new AgroError('internal', `train: ${state.badSteps} steps in a row had a non-finite loss or gradient (${badReason}); stopped at step ${state.step} (weights of the last good update are in ${join(opts.outDir, 'checkpoints', `step-${state.step}`)})`);
      }
      if (cfg.checkpointEvery > 0 && state.step % cfg.checkpointEvery === 0) checkpoint();
      if (opts.stopAfter !== undefined && state.step >= opts.stopAfter && state.step < cfg.steps) {
        interrupted = true;
        break;
      }
      await new Promise<void>((r) => setImmediate(r));
    }
  } finally {
    bar?.stop();
  }
  const dir = checkpoint();
  if (!interrupted && opts.heldOut?.length) {
    finalEval = await evaluatePolicy(env, opts.heldOut, model, tokenizer, evalOpts);
    writeJsonAtomic(join(opts.outDir, 'eval.json'), finalEval);
  }
  opt.dispose();
  return { steps: state.step, checkpoint: dir, interrupted, finalEval };
}

/**
 * Weight of one micro-batch's loss so that the micro-batch losses add up to the loss of the whole batch
 * (verl's loss_scale_factor): token-mean by its share of tokens, seq-mean-* by its share of sequences;
 * Dr.GRPO's constant normalizer already sums, so each micro-batch counts fully.
 */
export function microBatchShare(aggregation: string, tokenShare: number, seqShare: number): number {
  if (aggregation === 'token-mean') return tokenShare;
  if (aggregation === 'seq-mean-token-sum-norm') return tokenShare > 0 ? 1 : 0;
  return seqShare;
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** The newest resumable GRPO checkpoint of a run directory, if any. */
export function latestCheckpoint(outDir: string): string | null {
  const all = listCheckpoints(outDir);
  return all.length ? all[all.length - 1].dir : null;
}
