/**
 * An untrained agent checkpoint small enough for any test: a tokenizer trained on a few texts (with the agent's
 * special tokens) and the 'tiny' Llama preset's random weights. What the CLI, server and trainer tests run a
 * policy with where the plumbing is under test, not the answers.
 */
import { initBackend } from '../../src/model/backend.ts';
import { saveCheckpoint } from '../../src/model/checkpoint.ts';
import { resolveModelConfig } from '../../src/model/config.ts';
import { LlamaModel } from '../../src/model/llama.ts';
import { Tokenizer } from '../../src/model/tokenizer.ts';
import { AGENT_SPECIAL_TOKENS } from '../../src/agent/protocol.ts';

export interface TinyCheckpointOptions {
  /** Tokenizer size (default 400). */
  vocabSize?: number;
  /** The model's context (default: the tiny preset's). */
  maxPositions?: number;
  /** Weight seed (default 1). */
  seed?: number;
  /** The same weights saved again as a trainer leaves them, with its state (a run folder's checkpoints/step-N). */
  also?: { dir: string; trainerState: object }[];
}

export async function saveTinyCheckpoint(dir: string, texts: readonly string[], opts: TinyCheckpointOptions = {}): Promise<void> {
  await initBackend();
  const tokenizer = Tokenizer.train(texts, { vocabSize: opts.vocabSize ?? 400, specialTokens: AGENT_SPECIAL_TOKENS });
  const model = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: tokenizer.vocabSize, ...(opts.maxPositions ? { maxPositions: opts.maxPositions } : {}) }), { seed: opts.seed ?? 1 });
  try {
    saveCheckpoint(dir, { model, tokenizer });
    for (const a of opts.also ?? []) saveCheckpoint(a.dir, { model, tokenizer, trainerState: a.trainerState });
  } finally {
    model.dispose();
  }
}
