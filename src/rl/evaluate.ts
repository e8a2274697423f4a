/** Greedy evaluation of a policy on held-out tasks of any environment (execution accuracy for the SQL agent). */
import type { Environment, EpisodeContext, TaskBase } from '../agent/types.ts';
import type { LlamaModel } from '../model/llama.ts';
import type { RolloutEngine } from '../model/engine.ts';
import type { Tokenizer } from '../model/tokenizer.ts';
import { parseAction, ACTION_KINDS } from '../agent/protocol.ts';
import { normalizeSql } from '../sql/features.ts';
import { rollout, type Trajectory } from './rollout.ts';
import { passAtK } from '../util/pass-at-k.ts';

export interface PolicyEval {
  accuracy: number;
  n: number;
  byDifficulty: Record<string, { n: number; correct: number }>;
  toolCalls: number;
  /** Fraction of episodes that used at least one tool call. */
  toolUse: number;
  /** The final answer of each task, in task order ('' when the episode ended without one): an `agro eval --pred` file. */
  predictions: string[];
  /**
   * What the tool did for the answer: episodes that ran a query before answering, those whose final answer
   * differs from the first query they ran, and among those the ones where the first query would have been
   * wrong and the answer is right (fixed) or the other way round (broke), scored by the same environment.
   */
  toolEffect: { checked: number; changed: number; fixed: number; broke: number };
  /** How the episodes ended (answer, turn_limit, invalid_action, token_budget). */
  endReasons: Record<string, number>;
  /** The answer path's accuracy on the same questions (candidates from the policy and a memory, ranked), where it ran. */
  chosen?: number;
}

/** The first query an episode ran with its tool, if any. */
function firstToolQuery(t: Trajectory): string | undefined {
  for (const m of t.messages) {
    if (m.role !== 'assistant') continue;
    const a = parseAction(m.content, ACTION_KINDS);
    if (a.kind === 'sql' || a.kind === 'search') return a.content;
  }
  return undefined;
}

export type GreedyOptions = { maxTurnTokens: number; maxResponseTokens: number; seed?: number; batch?: number; engine?: RolloutEngine };

/**
 * Greedy single-sample episodes (temperature 0, one per task, `batch` tasks a rollout), each with what the
 * environment says of it; `afterBatch` runs after each rollout (a bench samples its memory there).
 */
export async function greedyEpisodes<T extends TaskBase>(
  env: Environment<T>,
  tasks: readonly T[],
  model: LlamaModel,
  tokenizer: Tokenizer,
  opts: GreedyOptions,
  afterBatch?: () => void,
): Promise<{ task: T; traj: Trajectory; ctx: EpisodeContext }[]> {
  const out: { task: T; traj: Trajectory; ctx: EpisodeContext }[] = [];
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
    for (const t of trajs) out.push({ task: chunk[t.group], traj: t, ctx: await env.rewardContext(chunk[t.group], t) });
    afterBatch?.();
  }
  return out;
}

/** Greedy single-sample episodes on held-out tasks: execution accuracy (or the env's notion of correct), by difficulty. */
export async function evaluatePolicy<T extends TaskBase & { difficulty?: string }>(
  env: Environment<T>,
  tasks: readonly T[],
  model: LlamaModel,
  tokenizer: Tokenizer,
  opts: GreedyOptions,
): Promise<PolicyEval> {
  const byDifficulty: PolicyEval['byDifficulty'] = {};
  const predictions: string[] = [];
  let correct = 0;
  let calls = 0;
  let used = 0;
  const toolEffect = { checked: 0, changed: 0, fixed: 0, broke: 0 };
  const endReasons: Record<string, number> = {};
  for (const { task, traj: t, ctx } of await greedyEpisodes(env, tasks, model, tokenizer, opts)) {
    predictions.push(t.answer ?? '');
    const d = task.difficulty ?? 'all';
    byDifficulty[d] ??= { n: 0, correct: 0 };
    byDifficulty[d].n++;
    if (ctx.correct) {
      correct++;
      byDifficulty[d].correct++;
    }
    calls += t.toolCalls;
    if (t.toolCalls > 0) used++;
    endReasons[t.endReason] = (endReasons[t.endReason] ?? 0) + 1;
    const first = firstToolQuery(t);
    if (first !== undefined && t.answer !== undefined) {
      toolEffect.checked++;
      if (normalizeSql(first) !== normalizeSql(t.answer)) {
        toolEffect.changed++;
        const firstRight = (await env.rewardContext(task, { ...t, answer: first })).correct;
        if (!firstRight && ctx.correct) toolEffect.fixed++;
        if (firstRight && !ctx.correct) toolEffect.broke++;
      }
    }
  }
  const n = tasks.length;
  return { accuracy: n ? correct / n : 0, n, byDifficulty, toolCalls: n ? calls / n : 0, toolUse: n ? used / n : 0, predictions, toolEffect, endReasons };
}

export interface PassRates {
  /** Correct samples per task, in task order. */
  correct: number[];
  samples: number;
  /** Mean pass@k over the tasks for each k asked. */
  passAt: Record<number, number>;
}

export type PassRateOptions = { samples: number; ks?: readonly number[]; temperature?: number; maxTurnTokens: number; maxResponseTokens: number; seed?: number; batch?: number; engine?: RolloutEngine; constrain?: boolean };

/**
 * Where each of samplePassRates' rollout batches starts in the task list. A batch's seed is seed + its start,
 * so a batch gives the same samples wherever it runs (this process or a helper: pipeline/pass-rate-helper.ts).
 */
export function passRateBatches(tasks: number, opts: Pick<PassRateOptions, 'samples' | 'batch'>): number[] {
  const size = passRateBatchSize(opts);
  return Array.from({ length: Math.ceil(tasks / size) }, (_, b) => b * size);
}

function passRateBatchSize(opts: Pick<PassRateOptions, 'samples' | 'batch'>): number {
  return opts.batch ?? Math.max(1, Math.floor(16 / opts.samples));
}

/** Correct samples per task of the batches starting at `starts` (passRateBatches), in the order of `starts`. */
export async function sampleBatches<T extends TaskBase>(
  env: Environment<T>,
  tasks: readonly T[],
  model: LlamaModel,
  tokenizer: Tokenizer,
  opts: PassRateOptions,
  starts: readonly number[],
): Promise<number[][]> {
  const size = passRateBatchSize(opts);
  const out: number[][] = [];
  for (const i of starts) {
    const chunk = tasks.slice(i, i + size);
    const trajs = await rollout(env, chunk, model, tokenizer, {
      groupSize: opts.samples,
      maxTurnTokens: opts.maxTurnTokens,
      maxResponseTokens: opts.maxResponseTokens,
      temperature: opts.temperature ?? 1,
      topP: 1,
      seed: (opts.seed ?? 0) + i,
      engine: opts.engine,
      constrain: opts.constrain,
    });
    const counts = chunk.map(() => 0);
    for (const t of trajs) if ((await env.rewardContext(chunk[t.group], t)).correct) counts[t.group]++;
    out.push(counts);
  }
  return out;
}

/** PassRates from each task's correct samples. */
export function passRatesOf(correct: number[], opts: Pick<PassRateOptions, 'samples' | 'ks'>): PassRates {
  const ks = (opts.ks ?? [1, opts.samples]).filter((k) => k <= opts.samples);
  const passAt = Object.fromEntries(ks.map((k) => [k, correct.length ? correct.reduce((a, c) => a + passAtK(opts.samples, c, k), 0) / correct.length : 0]));
  return { correct, samples: opts.samples, passAt };
}

/**
 * `samples` sampled episodes per task at the given temperature: how often the policy gets each task right.
 * RL can only convert what sampling already finds, so pass@k before training is its headroom, and a task
 * with 0 < correct < samples is one whose group carries a learning signal.
 */
export async function samplePassRates<T extends TaskBase>(
  env: Environment<T>,
  tasks: readonly T[],
  model: LlamaModel,
  tokenizer: Tokenizer,
  opts: PassRateOptions,
): Promise<PassRates> {
  const counts = await sampleBatches(env, tasks, model, tokenizer, opts, passRateBatches(tasks.length, opts));
  return passRatesOf(counts.flat(), opts);
}
