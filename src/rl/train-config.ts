/** The GRPO-family trainer's configuration: every default in one schema (the algorithm itself is an AlgoConfig preset). */
import { z } from 'zod';
import { AgroError, parseWith } from '../errors.ts';
import { optimizerFields } from '../train/optim.ts';
import { resolveAlgo, type AlgoConfig } from './algo-config.ts';
import { TURN_TOKENS } from '../prompt/contract.ts';

/** New tokens per episode (all turns of the agent together): the budget rollouts and evaluation share. */
export const RESPONSE_TOKENS = 320;

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
  /** New tokens per turn; every checkpoint's prompt contract records it (decoding), so predict and ask sample alike. */
  maxTurnTokens: z.number().int().positive().default(TURN_TOKENS),
  maxResponseTokens: z.number().int().positive().default(RESPONSE_TOKENS),
  temperature: z.number().min(0).default(1),
  topP: z.number().gt(0).max(1).default(1),
  /** Rollouts decode as `agro predict` does by default: SQL held to SQL's words and the database's names (rollout.ts). */
  constrain: z.boolean().default(false),
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
  const train = parseWith(trainConfigSchema, input ?? {}, 'train config');
  if (train.maxTurnTokens > train.maxResponseTokens) {
    throw new AgroError('invalid_input', `train config: maxTurnTokens (${train.maxTurnTokens}) exceeds maxResponseTokens (${train.maxResponseTokens})`);
  }
  return { train, algo: resolveAlgo(train.algo, train.algoOverrides) };
}
