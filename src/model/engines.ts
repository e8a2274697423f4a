/** A rollout engine by name: the one place that knows every engine (engine.ts holds only their contract). */
import { AgroError } from '../errors.ts';
import { ENGINE_NAMES, TfjsEngine, type RolloutEngine } from './engine.ts';
import type { LlamaModel } from './llama.ts';
import type { Tokenizer } from './tokenizer.ts';

export interface EngineOptions {
  /** llama.cpp: needed for the GGUF's vocabulary. */
  tokenizer?: Tokenizer;
  /** llama.cpp: CPU threads (default 1). */
  threads?: number;
  /** llama.cpp: who draws the tokens (see LlamaCppEngineOptions.sampling). */
  sampling?: 'native' | 'js';
  /** llama.cpp: rows decoded together in one context (default 16); more rows run in chunks. */
  maxSequences?: number;
}

/** An engine by name, synced to `model`. */
export async function createEngine(name: string, model: LlamaModel, opts: EngineOptions = {}): Promise<RolloutEngine> {
  if (name === 'tfjs') return new TfjsEngine(model);
  if (name === 'llama.cpp') {
    if (!opts.tokenizer) throw new AgroError('usage', 'engine llama.cpp: a tokenizer is required for the GGUF export');
    // Loaded on demand: node-llama-cpp costs start-up time that a TF.js run should not pay.
    const { LlamaCppEngine } = await import('./llamacpp-engine.ts');
    const engine = new LlamaCppEngine({ tokenizer: opts.tokenizer, threads: opts.threads, maxSequences: opts.maxSequences, sampling: opts.sampling });
    try {
      await engine.sync(model);
    } catch (err) {
      await engine.dispose();
      throw err;
    }
    return engine;
  }
  throw new AgroError('usage', `unknown engine '${name}' (expected one of: ${ENGINE_NAMES.join(', ')})`);
}
