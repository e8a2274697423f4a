/**
 * Scoring outside completions with agro's own reward path: a completion (or a list of turns, or a
 * bare SQL answer) becomes the Transcript agro's SQL environment would have produced, the environment
 * executes the answer and the gold query on the database and its variants (test-suite reward), and
 * the reward registry scores it, exactly as in `agro train`.
 */
import { z } from 'zod';
import { parseAction, SQL_AGENT_ACTIONS } from '../agent/protocol.ts';
import type { SqlEnvironment, SqlTask } from '../agent/sql-env.ts';
import type { EpisodeContext, Transcript } from '../agent/types.ts';
import { otcOptimalCalls, prepareRewards, scoreEpisode, type RewardSpec } from '../rl/rewards.ts';
import type { RewardValue } from '../agent/types.ts';

export const rewardSpecSchema = z.strictObject({
  name: z.string().min(1),
  weight: z.number().finite().default(1),
  params: z.record(z.string(), z.unknown()).optional(),
  label: z.string().min(1).optional(),
});

export const DEFAULT_REWARDS: RewardSpec[] = [{ name: 'execution', weight: 1 }];

export const rewardItemSchema = z
  .strictObject({
    db_id: z.string().min(1),
    gold_sql: z.string().min(1),
    /** One assistant turn in agro's protocol (<think>…</think><answer>SQL</answer>). */
    completion: z.string().optional(),
    /** Every assistant turn of a multi-turn episode; the last one should hold the answer. */
    turns: z.array(z.string()).min(1).optional(),
    /** A bare SQL answer (no protocol: the format reward cannot score it). */
    sql: z.string().optional(),
    tool_calls: z.number().int().min(0).optional(),
    completion_tokens: z.number().int().min(0).optional(),
    /** Items with the same group are one GRPO group (OTC's fewest correct tool calls). */
    group: z.union([z.string(), z.number()]).optional(),
  })
  .refine((it) => [it.completion, it.turns, it.sql].filter((x) => x !== undefined).length === 1, {
    message: 'give exactly one of completion, turns or sql',
  });
export type RewardItem = z.infer<typeof rewardItemSchema>;

export interface ItemResult {
  total: number;
  parts: Record<string, RewardValue>;
  correct: boolean;
  /** The SQL that was executed as the answer ('' when the completion gave none). */
  pred_sql: string;
}

/** The Transcript agro's environment would have recorded for this completion. */
export function transcriptOf(item: RewardItem): Transcript {
  if (item.sql !== undefined) {
    return { messages: [], toolCalls: item.tool_calls ?? 0, endReason: 'answer', answer: item.sql, policyTokens: item.completion_tokens ?? 0, truncated: false };
  }
  const turns = item.turns ?? [item.completion as string];
  const actions = turns.map((t) => parseAction(t, SQL_AGENT_ACTIONS));
  const last = actions[actions.length - 1];
  const toolCalls = item.tool_calls ?? actions.filter((a) => a.kind === 'sql').length;
  const base = { messages: turns.map((content) => ({ role: 'assistant' as const, content })), toolCalls, policyTokens: item.completion_tokens ?? 0, truncated: false };
  if (last.kind === 'answer') return { ...base, endReason: 'answer', answer: last.content };
  return { ...base, endReason: last.kind === 'invalid' ? 'invalid_action' : 'turn_limit' };
}

/** Score a batch: execution runs concurrently (bounded by the SQL pool), rewards are pure. */
export async function scoreItems(
  env: SqlEnvironment,
  taskOf: (item: RewardItem, index: number) => SqlTask,
  items: readonly RewardItem[],
  specs: readonly RewardSpec[],
): Promise<{ labels: string[]; weights: number[]; results: ItemResult[] }> {
  const rewards = prepareRewards(specs);
  const tasks = items.map(taskOf);
  const ctxs: EpisodeContext[] = await Promise.all(
    items.map(async (it, i) => {
      const t = transcriptOf(it);
      const ctx = await env.rewardContext(tasks[i], t);
      // Absent facts stay absent, so a reward that needs them says so instead of scoring a default.
      if (it.sql !== undefined) {
        ctx.turns = undefined;
      }
      if (it.completion_tokens === undefined) ctx.completionTokens = undefined;
      return ctx;
    }),
  );
  const groups = new Map<string, number | null>();
  for (const key of new Set(items.flatMap((it) => (it.group === undefined ? [] : [String(it.group)])))) {
    groups.set(key, otcOptimalCalls(items.flatMap((it, i) => (String(it.group) === key ? [{ toolCalls: ctxs[i].toolCalls ?? 0, correct: ctxs[i].correct }] : []))));
  }
  const results = items.map((it, i) => {
    const ctx = it.group === undefined ? ctxs[i] : { ...ctxs[i], optimalToolCalls: groups.get(String(it.group)) ?? null };
    const s = scoreEpisode(ctx, rewards, env.rewardDeps(tasks[i]));
    return { total: s.total, parts: s.parts, correct: ctxs[i].correct, pred_sql: ctxs[i].predSql ?? '' };
  });
  return { labels: rewards.map((r) => r.label), weights: rewards.map((r) => r.weight), results };
}
