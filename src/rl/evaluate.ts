/** Greedy evaluation of a policy on held-out tasks of any environment (execution accuracy for the SQL agent). */
import type { Environment, TaskBase } from '../agent/types.ts';
import type { LlamaModel } from '../model/llama.ts';
import type { RolloutEngine } from '../model/engine.ts';
import type { Tokenizer } from '../model/tokenizer.ts';
import { rollout } from './rollout.ts';

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
