/**
 * The sampler behind an interface, so that rollouts can run on another engine than the trainer's
 * (verl's split: a rollout engine that is synced with the trainer's weights after each update).
 *
 * - `tfjs`: generate.ts on the training model itself; sync is a no-op.
 * - `llama.cpp`: node-llama-cpp running a GGUF export of the policy (src/model/llamacpp-engine.ts),
 *   loaded lazily so that nothing else pays for the native addon.
 */
import { AgroError } from '../errors.ts';
import { Rng } from '../util/rng.ts';
import { drawToken, sampleGroups, type Sample, type SampleOptions } from './generate.ts';
import type { LlamaModel } from './llama.ts';
import type { Tokenizer } from './tokenizer.ts';

export interface RolloutEngine {
  readonly name: string;
  /** G samples per prompt, token ids in and out, with generate.ts's semantics (seeded per-row rngs, logprobs at temperature 1). */
  sampleGroups(prompts: number[][], groupSize: number, options: SampleOptions): Promise<Sample[][]>;
  /** Make the engine sample from the model's current weights. */
  sync(model: LlamaModel): Promise<void>;
  dispose(): Promise<void>;
}

export const ENGINE_NAMES = ['tfjs', 'llama.cpp'] as const;
export type EngineName = (typeof ENGINE_NAMES)[number];

/** The built-in TF.js sampler on the training model itself: nothing to sync, no second copy of the weights. */
export class TfjsEngine implements RolloutEngine {
  readonly name = 'tfjs';
  private model: LlamaModel;
  constructor(model: LlamaModel) {
    this.model = model;
  }
  sampleGroups(prompts: number[][], groupSize: number, options: SampleOptions): Promise<Sample[][]> {
    return sampleGroups(this.model, prompts, groupSize, options);
  }
  sync(model: LlamaModel): Promise<void> {
    this.model = model;
    return Promise.resolve();
  }
  dispose(): Promise<void> {
    return Promise.resolve();
  }
}

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

// ---- shared sampling rules, for engines that draw tokens in JS from full logits ----

export interface CheckedSampleOptions {
  maxNewTokens: number;
  temperature: number;
  topP: number;
  topK: number;
  stopTokenIds: number[];
  seed: number;
}

/** The same validation and defaults as generate.ts (one-line AgroErrors). */
export function checkSampleRequest(prompts: number[][], groupSize: number, o: SampleOptions, vocabSize: number, maxPositions: number): CheckedSampleOptions {
  const bad = (m: string): never => {
    throw new AgroError('invalid_input', `sampling: ${m}`);
  };
  if (!Number.isInteger(o.maxNewTokens) || o.maxNewTokens < 0) bad(`maxNewTokens must be a non-negative integer, got ${o.maxNewTokens}`);
  const temperature = o.temperature ?? 1;
  if (!(temperature >= 0) || !Number.isFinite(temperature)) bad(`temperature must be >= 0, got ${o.temperature}`);
  const topP = o.topP ?? 1;
  if (!(topP > 0 && topP <= 1)) bad(`topP must be in (0, 1], got ${o.topP}`);
  const topK = o.topK ?? 0;
  if (!Number.isInteger(topK) || topK < 0) bad(`topK must be a non-negative integer, got ${o.topK}`);
  if (!Number.isInteger(groupSize) || groupSize < 1) bad(`groupSize must be a positive integer, got ${groupSize}`);
  prompts.forEach((p, i) => {
    if (p.length === 0) bad(`prompt ${i} is empty`);
    for (const t of p)
      if (!Number.isInteger(t) || t < 0 || t >= vocabSize) bad(`prompt ${i}: token id ${t} is outside the vocabulary [0, ${vocabSize})`);
    if (p.length + o.maxNewTokens > maxPositions)
      bad(`prompt ${i} (${p.length} tokens) + maxNewTokens ${o.maxNewTokens} exceeds maxPositions ${maxPositions}`);
  });
  return { maxNewTokens: o.maxNewTokens, temperature, topP, topK, stopTokenIds: o.stopTokenIds ?? [], seed: o.seed ?? 0 };
}

export function logSoftmaxAt(logits: Float32Array, tok: number): number {
  let m = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i] > m) m = logits[i];
  let s = 0;
  for (let i = 0; i < logits.length; i++) s += Math.exp(logits[i] - m);
  return logits[tok] - m - Math.log(s);
}

/**
 * Per-row decoding state with generate.ts's rules: row s = p * G + g draws with `new Rng(seed).fork(s)`,
 * logprobs are log softmax at temperature 1, a stop id ends the row (and is kept).
 */
export class RowSampler {
  readonly out: Sample[][];
  private readonly rngs: Rng[];
  private readonly stops: Set<number>;
  constructor(
    private readonly o: CheckedSampleOptions,
    prompts: number,
    private readonly G: number,
  ) {
    this.out = Array.from({ length: prompts }, () =>
      Array.from({ length: G }, () => ({ tokens: [] as number[], logprobs: [] as number[], finish: 'length' as Sample['finish'] })),
    );
    const base = new Rng(o.seed);
    this.rngs = Array.from({ length: prompts * G }, (_, r) => base.fork(r));
    this.stops = new Set(o.stopTokenIds);
  }
  /** Draw row s's next token from its full logits (generate.ts's drawToken); `more` is false once the row has stopped or is full. */
  step(s: number, logits: Float32Array): { token: number; more: boolean } {
    const tok = drawToken(logits, this.o, this.rngs[s]);
    return { token: tok, more: this.record(s, tok, logSoftmaxAt(logits, tok)) };
  }
  /** A seed for an engine that draws row s's tokens itself (its own sampler, seeded from the row's rng). */
  nativeSeed(s: number): number {
    return this.rngs[s].int(2 ** 31);
  }
  /** Append a token drawn elsewhere; returns whether the row goes on. */
  record(s: number, tok: number, logprob: number): boolean {
    const smp = this.out[Math.floor(s / this.G)][s % this.G];
    smp.tokens.push(tok);
    smp.logprobs.push(logprob);
    if (this.stops.has(tok)) {
      smp.finish = 'stop';
      return false;
    }
    return smp.tokens.length < this.o.maxNewTokens;
  }
}
