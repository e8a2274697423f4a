/** The search agent's rewards (registered with the others in rl/rewards.ts): answer exact match and E-GRPO's entity match. */
import type { RewardContext, RewardValue } from '../agent/types.ts';
import { need } from '../agent/reward-inputs.ts';
import { entityMatchRate, exactMatch } from './match.ts';

/**
 * E-GRPO's entity match rate γ (arXiv 2510.24694): the fraction of ground-truth entities the agent mentioned
 * in its reasoning (`ctx.reasoning`; the final answer when no reasoning is given), word-bounded, aliases allowed.
 */
export function entityMatchReward(ctx: RewardContext): RewardValue {
  const ents = need(ctx.goldEntities, 'goldEntities', 'entity_match').map((e) => (typeof e === 'string' ? { name: e } : e));
  const text = ctx.reasoning ?? need(ctx.answer, 'answer or reasoning', 'entity_match');
  if (ents.length === 0) return { value: 0, reason: 'no gold entities' };
  const { rate, matched } = entityMatchRate(text, ents);
  return { value: rate, reason: `${matched.length}/${ents.length} entities found` };
}

/** Search-R1's exact match: normalized answer equals a normalized gold answer or alias. */
export function exactMatchReward(ctx: RewardContext): RewardValue {
  const golds = need(ctx.goldAnswers, 'goldAnswers', 'exact_match');
  const hit = exactMatch(need(ctx.answer, 'answer', 'exact_match'), golds);
  return { value: hit ? 1 : 0, reason: hit ? 'exact match' : 'no exact match' };
}
