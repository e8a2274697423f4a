/**
 * The RL anchor (InstructGPT's PPO-ptx): SFT samples whose loss, × a weight, joins every GRPO step's
 * (phases.ts Anchor), so that RL keeps what SFT taught on the questions it never samples.
 */
import { AgroError } from '../errors.ts';
import { renderChat, type ChatMessage } from '../model/chat.ts';
import type { Tokenizer } from '../model/tokenizer.ts';
import { prepareSamples, type SftSample } from '../train/sft.ts';

/**
 * The anchor measured from a checkpoint (weight 1, 4 samples a step; docs/training.md#rl-from-the-base-model):
 * the quickstart's recipe and `agro train --anchor`'s defaults.
 */
export const RL_ANCHOR = { coef: 1, batch: 4 } as const;

/** Conversations as anchor samples: those longer than the model's positions are left out; none left is invalid input. */
export function anchorSamples(conversations: readonly ChatMessage[][], tokenizer: Tokenizer, maxPositions: number, label: string): SftSample[] {
  const { kept, tooLong } = prepareSamples(conversations.map((c) => renderChat(tokenizer, c)), maxPositions, label);
  if (kept.length === 0) throw new AgroError('invalid_input', `${label}: no sample fits the model's ${maxPositions} positions${tooLong ? ` (${tooLong} too long)` : ''}`);
  return kept;
}
