/**
 * The group-relative RL loop (GRPO and its family) for any Environment. Each step is the phases of
 * phases.ts in order — collect → score → select (DAPO refills) → log-probs → advantages → update → record —
 * with the algorithm's hooks (trainer-hooks.ts: prompt sampler, group rewrites, advantage inputs and reshaping) at
 * their seams; this file only orchestrates them: the task order, checkpoints, held-out evaluation, metrics.jsonl.
 * Checkpoints hold the weights, the optimizer moments and the trainer state (step, data position, RNG),
 * so a resumed run continues exactly.
 */
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import { Rng } from '../util/rng.ts';
import { writeJsonAtomic, ensureDir } from '../util/fs.ts';
import type { TaskBase } from '../agent/types.ts';
import type { LlamaModel } from '../model/llama.ts';
import type { RolloutEngine } from '../model/engine.ts';
import type { Tokenizer } from '../model/tokenizer.ts';
import { saveCheckpoint } from '../model/checkpoint.ts';
import { AdamW, lrAt } from '../train/optim.ts';
import { checkResumeSettings, cleanRunCheckpoints, listCheckpoints, recordedSettings, restoreTrainerState, resumeConfig, truncateMetrics } from '../train/run-state.ts';
import type { Environment } from '../agent/types.ts';
import { SqlEnvironment } from '../agent/sql-env.ts';
import { promptContractFiles } from '../prompt/contract.ts';
import { lossConfig } from './algo-config.ts';
import { prepareRewards } from './rewards.ts';
import { advantages, collect, logProbs, record, responseAdvantages, score, select, signalRewards, update, zeroSignalGroups, type AdvantageExtras, type Anchor, type StepContext, type StepRecord } from './phases.ts';
import type { SftSample } from '../train/sft.ts';
import type { AdvantageResult } from './advantages.ts';
import { activeHooks, type Batch, type TrainerHook } from './trainer-hooks.ts';
import type { PassRecord } from './group-math.ts';
import { evaluatePolicy, type PolicyEval } from './evaluate.ts';
import { resolveTrainConfig, trainConfigSchema, type TrainConfig, type TrainConfigInput } from './train-config.ts';

export interface GrpoTrainerState {
  step: number;
  epoch: number;
  /** Index of the next task in the current epoch's order. */
  pos: number;
  /** RNG state at the start of the current epoch (regenerates its task order). */
  epochRngState: number;
  badSteps: number;
  hooks: Record<string, unknown>;
}

const stateSchema = z.object({
  step: z.number().int().min(0),
  epoch: z.number().int().min(0),
  pos: z.number().int().min(0),
  epochRngState: z.number().int().min(0),
  badSteps: z.number().int().min(0),
  /** Each stateful hook's state by name (the MMR1 statistics, the adaptive KL β...). */
  hooks: z.record(z.string(), z.unknown()).default({}),
  kind: z.literal('grpo'),
});

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
  onStep?: (r: StepRecord) => void;
  /** Pass counts sampled before training, by task id (the active-pool sampler starts from them). */
  passRates?: ReadonlyMap<string, PassRecord>;
  /** Stop after this step as if interrupted (a checkpoint is written first). */
  stopAfter?: number;
  /** Rollout sampler (e.g. llama.cpp); synced to `model` at the start and after each update. Default: TF.js on `model`. */
  engine?: RolloutEngine;
  signal?: AbortSignal;
  /** On resume, accept settings other than the run's (recorded in train_config.json); otherwise they are refused. */
  allowChanges?: boolean;
  /** SFT samples whose loss, × coef, joins every step's (`batch` of them a step, in a seeded order; phases.ts Anchor); `hash` names their file's content. */
  anchor?: { samples: readonly SftSample[]; coef: number; batch: number; hash?: string };
  /** The starting policy and KL reference as a checkpoint folder: recorded, and a resume from another one is a change. */
  init?: string;
  /** Memory files the checkpoints' prompt contract names (the answer path's; relative to each checkpoint folder, or absolute). */
  memory?: readonly string[];
}

export interface TrainResult {
  steps: number;
  checkpoint: string;
  interrupted: boolean;
  finalEval?: PolicyEval;
}

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

/**
 * One step's batch: prompts (the run's order or a sampler hook), rollouts, scores (hooks may add or replace
 * responses), and DAPO's dynamic sampling refilling dropped groups. Each response's `group` is its group's place in the batch.
 */
async function collectBatch<T extends TaskBase>(c: StepContext<T>, hooks: readonly TrainerHook<T>[], nextTasks: (n: number) => T[], seed: number, step: number) {
  const t0 = performance.now();
  let rewardSec = 0;
  const kept: Batch<T> = { tasks: [], groups: [] };
  let last: Batch<T> = kept;
  const sampled = { dropped: 0, groups: 0, zeroSignal: 0 };
  const sampler = hooks.find((h) => h.sample);
  const rounds = c.algo.dynamicSampling.enabled ? c.algo.dynamicSampling.maxRounds + 1 : 1;
  for (let round = 0; round < rounds && kept.tasks.length < c.cfg.promptsPerStep; round++) {
    const want = c.cfg.promptsPerStep - kept.tasks.length;
    const tasks = sampler ? sampler.sample!(want, nextTasks) : nextTasks(want);
    const trajs = await collect(c, tasks, seed + round);
    const r0 = performance.now();
    last = { tasks, groups: await score(c, tasks, trajs) };
    for (const h of hooks) if (h.scored) last = await h.scored(c, last, step);
    rewardSec += (performance.now() - r0) / 1000;
    sampled.groups += last.groups.length;
    const signal = signalRewards(c, last.groups);
    sampled.zeroSignal += zeroSignalGroups(last.groups, signal);
    const s = select(c.algo, last.groups, signal);
    kept.tasks.push(...s.kept.map((i) => last.tasks[i]));
    kept.groups.push(...s.keep);
    sampled.dropped += s.dropped;
  }
  // Nothing with signal at all: train on the last round anyway (advantages are 0; the step still logs).
  const from = kept.tasks.length ? kept : last;
  const n = Math.min(from.tasks.length, c.cfg.promptsPerStep);
  const batch: Batch<T> = { tasks: from.tasks.slice(0, n), groups: from.groups.slice(0, n).map((g, gi) => g.map((s) => ({ ...s, traj: { ...s.traj, group: gi } }))) };
  return { batch, sampled, rewardSec, rolloutSec: (performance.now() - t0) / 1000 - rewardSec };
}

/** The advantages that train and the responses they belong to: the estimator with the hooks' inputs, then the hooks' reshaping. */
async function trainingPlan<T extends TaskBase>(c: StepContext<T>, hooks: readonly TrainerHook<T>[], batch: Batch<T>, step: number) {
  const all = batch.groups.flat().map((s) => s.traj);
  const lp = await logProbs(c, all);
  let extras: AdvantageExtras = {};
  for (const h of hooks) if (h.advantageInputs) extras = { ...extras, ...(await h.advantageInputs(c, batch, lp)) };
  let adv = advantages(c, batch.groups, extras);
  let keep = all.map((_, i) => i);
  for (const h of hooks) {
    if (!h.advantages) continue;
    const r = await h.advantages(c, batch, adv, step);
    adv = r.result;
    keep = r.keep ?? keep;
  }
  const pick = <X>(xs: readonly X[] | null | undefined): X[] | null => (xs ? keep.map((i) => xs[i]) : null);
  const trainAdv: AdvantageResult = { advantages: pick(adv.advantages)!, ...(adv.tokenAdvantages ? { tokenAdvantages: pick(adv.tokenAdvantages)! } : {}) };
  return { trajs: pick(all)!, adv: trainAdv, lp: { old: pick(lp.old), ref: pick(lp.ref) } };
}

export async function runGrpo<T extends TaskBase & { difficulty?: string }>(opts: TrainRunOptions<T>): Promise<TrainResult> {
  const configPath = join(opts.outDir, 'train_config.json');
  // A resume keeps the run's settings; those given now override them (and are checked against them below).
  const recorded = opts.resumeFrom ? (recordedSettings(configPath).train as Record<string, unknown> | undefined) : undefined;
  const { train: cfg, algo } = resolveTrainConfig(opts.resumeFrom ? resumeConfig(recorded ?? {}, Object.keys(trainConfigSchema.shape), opts.config) : (opts.config ?? {}));
  const { model, tokenizer, env, engine } = opts;
  if (opts.tasks.length === 0) throw new AgroError('invalid_input', 'train: no training tasks');
  if (algo.kl.coef > 0 && !opts.reference) throw new AgroError('invalid_input', `train: algorithm "${cfg.algo}" has kl.coef ${algo.kl.coef} but no reference model was given`);
  if (algo.klInReward.enabled && !opts.reference) throw new AgroError('invalid_input', `train: algorithm "${cfg.algo}" puts the KL in the reward but no reference model was given`);
  if (algo.advantage.name === 'gae') throw new AgroError('invalid_input', 'train: gae needs a critic (per-token values) and the built-in model has no value head; use reinforce_pp or remax');
  const params = model.trainableVariables();
  const padId = tokenizer.hasToken('<|pad|>') ? tokenizer.tokenId('<|pad|>') : 0;
  const c: StepContext<T> = { cfg, algo, env, model, tokenizer, reference: opts.reference, engine, rewards: prepareRewards(algo.rewards), lossCfg: lossConfig(algo), params, padId };
  const opt = new AdamW(params, { beta1: cfg.beta1, beta2: cfg.beta2, eps: cfg.eps, weightDecay: cfg.weightDecay });
  let state: GrpoTrainerState = { step: 0, epoch: 0, pos: 0, epochRngState: new Rng(cfg.seed).state, badSteps: 0, hooks: {} };
  if (opts.resumeFrom) state = restoreTrainerState(stateSchema, opts.resumeFrom, opt, 'a GRPO');
  // The settings a resume compares: the config, the algorithm and the task counts (not the model, which the checkpoint fixes).
  // The anchor too: a resume without it (or with another weight) would silently train another objective.
  // So are the starting policy (the KL reference) and the anchor's content: another file of as many samples is another objective.
  const anchor = opts.anchor && opts.anchor.coef > 0 && opts.anchor.samples.length ? { coef: opts.anchor.coef, batch: opts.anchor.batch, samples: opts.anchor.samples.length, ...(opts.anchor.hash ? { hash: opts.anchor.hash } : {}) } : undefined;
  const settings = { train: cfg, algo, tasks: opts.tasks.length, heldOut: opts.heldOut?.length ?? 0, anchor, ...(opts.init !== undefined ? { init: opts.init } : {}) };
  const resumeChanges = opts.resumeFrom ? checkResumeSettings(configPath, settings, { step: state.step, allowChanges: opts.allowChanges, flag: '--allow-changes' }) : [];
  const hooks = activeHooks(c, opts.tasks, { passRates: opts.passRates });
  for (const h of hooks) if (h.restore && state.hooks[h.name] !== undefined) h.restore(state.hooks[h.name]);

  ensureDir(opts.outDir);
  // What a killed checkpoint write left (the CLI cleans before it lists checkpoints; other callers get it here).
  cleanRunCheckpoints(opts.outDir);
  const metricsPath = join(opts.outDir, 'metrics.jsonl');
  truncateMetrics(metricsPath, state.step);
  writeJsonAtomic(configPath, { ...settings, model: model.config, ...(resumeChanges.length ? { resumeChanges } : {}) });
  const nextTasks = taskStream(opts.tasks, state, cfg.curriculum);
  // An SQL agent's checkpoints carry its whole prompt contract: the environment's prompt and the turns it sampled.
  const sideFiles = env instanceof SqlEnvironment ? promptContractFiles(env.config, { maxTurnTokens: cfg.maxTurnTokens }, opts.memory) : undefined;
  const checkpoint = checkpointer(opts.outDir, (dir) => saveCheckpoint(dir, { model, tokenizer, trainerState: { ...state, hooks: Object.fromEntries(hooks.flatMap((h) => (h.state ? [[h.name, h.state()]] : []))), kind: 'grpo' }, optimizerState: opt.exportState(), sideFiles }));
  const evaluate = () => evaluatePolicy(env, opts.heldOut ?? [], model, tokenizer, { maxTurnTokens: cfg.maxTurnTokens, maxResponseTokens: cfg.maxResponseTokens, seed: cfg.seed, engine });
  const schedule = { lr: cfg.lr, minLrRatio: cfg.minLrRatio, warmupSteps: cfg.warmupSteps, steps: cfg.steps };
  const anchorAt = anchorStream(opts.anchor, cfg.seed);
  await engine?.sync(model);

  let interrupted = false;
  while (state.step < cfg.steps) {
    if (opts.signal?.aborted) { interrupted = true; break; }
    const { batch, sampled, rewardSec, rolloutSec } = await collectBatch(c, hooks, nextTasks, (cfg.seed * 7919 + state.step * 104729) >>> 0, state.step);
    const u0 = performance.now();
    const plan = await trainingPlan(c, hooks, batch, state.step);
    const upd = await update(c, opt, plan.trajs, plan.adv, plan.lp, lrAt(state.step + 1, schedule), anchorAt(state.step));
    const updateSec = (performance.now() - u0) / 1000;
    const s0 = performance.now();
    if (engine && upd.updated) await engine.sync(model);
    const syncSec = engine && engine.name !== 'tfjs' ? (performance.now() - s0) / 1000 : undefined;
    state.badSteps = upd.bad ? state.badSteps + 1 : 0;
    state.step++;
    const rec = record(c, state.step, lrAt(state.step, schedule), batch.groups, sampled, upd, { rolloutSec, rewardSec, updateSec, syncSec }, {
      taskIds: batch.tasks.map((t) => t.id),
      trainedAdvantages: responseAdvantages(plan.adv),
      hooks: Object.assign({}, ...hooks.map((h) => h.metrics())),
    });
    if (opts.heldOut?.length && cfg.evalEvery > 0 && state.step % cfg.evalEvery === 0 && state.step < cfg.steps) rec.eval_accuracy = (await evaluate()).accuracy;
    appendFileSync(metricsPath, JSON.stringify(rec) + '\n');
    opts.onStep?.(rec);
    if (state.badSteps >= cfg.maxBadSteps) {
      const dir = checkpoint(state.step);
      throw new AgroError('internal', `train: ${state.badSteps} steps in a row had a non-finite loss or gradient (${upd.badReason}); stopped at step ${state.step} (weights of the last good update are in ${dir})`);
    }
    if (cfg.checkpointEvery > 0 && state.step % cfg.checkpointEvery === 0) checkpoint(state.step);
    if (opts.stopAfter !== undefined && state.step >= opts.stopAfter && state.step < cfg.steps) { interrupted = true; break; }
    await new Promise<void>((r) => setImmediate(r));
  }
  const dir = checkpoint(state.step);
  let finalEval: PolicyEval | undefined;
  if (!interrupted && opts.heldOut?.length) {
    finalEval = await evaluate();
    writeJsonAtomic(join(opts.outDir, 'eval.json'), finalEval);
  }
  opt.dispose();
  return { steps: state.step, checkpoint: dir, interrupted, finalEval };
}

/** Each step's anchor samples: consecutive slices of one seeded order, so a resumed run draws the same ones. */
function anchorStream(anchor: TrainRunOptions<TaskBase>['anchor'], seed: number): (step: number) => Anchor | undefined {
  if (!anchor || anchor.coef <= 0 || anchor.samples.length === 0) return () => undefined;
  const order = new Rng(seed + 104723).shuffle(anchor.samples.map((_, i) => i));
  const n = Math.min(anchor.batch, order.length);
  return (step) => ({ coef: anchor.coef, samples: Array.from({ length: n }, (_, j) => anchor.samples[order[(step * n + j) % order.length]]) });
}

/** The next n tasks of the run's order (epochs reshuffled from the saved RNG state), advancing `state`. */
function taskStream<T extends { difficulty?: string }>(tasks: readonly T[], state: GrpoTrainerState, curriculum: TrainConfig['curriculum']): (n: number) => T[] {
  let epochRng = Rng.fromState(state.epochRngState);
  let order = epochOrder(tasks, epochRng, curriculum);
  return (n) => {
    const out: T[] = [];
    while (out.length < n) {
      if (state.pos >= order.length) {
        state.epoch++;
        state.pos = 0;
        state.epochRngState = epochRng.state;
        epochRng = Rng.fromState(state.epochRngState);
        order = epochOrder(tasks, epochRng, curriculum);
      }
      out.push(tasks[order[state.pos++]]);
    }
    return out;
  };
}

/** checkpoints/step-N of a run, written at most once per step. */
function checkpointer(outDir: string, save: (dir: string) => void): (step: number) => string {
  let last = -1;
  return (step) => {
    const dir = join(outDir, 'checkpoints', `step-${step}`);
    if (last !== step) {
      save(dir);
      last = step;
    }
    return dir;
  };
}

/** The newest resumable GRPO checkpoint of a run directory, if any. */
export function latestCheckpoint(outDir: string): string | null {
  const all = listCheckpoints(outDir);
  return all.length ? all[all.length - 1].dir : null;
}
