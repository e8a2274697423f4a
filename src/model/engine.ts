/**
 * The sampler behind an interface, so that rollouts can run on another engine than the trainer's
 * (verl's split: a rollout engine that is synced with the trainer's weights after each update).
 *
 * - `tfjs`: generate.ts on the training model itself; sync is a no-op.
 * - `llama.cpp`: node-llama-cpp running a GGUF export of the policy (src/model/llamacpp-engine.ts),
 *   loaded lazily so that nothing else pays for the native addon.
 */
import { Rng } from '../util/rng.ts';
import { drawAllowed, logSoftmaxAt, rowRngs, sampleGroups, type TokenFilter, type CheckedSampleOptions, type Sample, type SampleOptions } from './generate.ts';
export { checkSampleRequest, logSoftmaxAt, type CheckedSampleOptions } from './generate.ts';
import type { LlamaModel } from './llama.ts';

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

/**
 * Per-row decoding state with generate.ts's rules: row s = p * G + g draws with rowRngs (`new Rng(seed).fork(s)`, or its prompt's seed),
 * logprobs are log softmax at temperature 1, a stop id ends the row (and is kept).
 */
export class RowSampler {
  readonly out: Sample[][];
  private readonly rngs: Rng[];
  private readonly stops: Set<number>;
  private readonly filters: (TokenFilter | undefined)[];
  constructor(
    private readonly o: CheckedSampleOptions,
    prompts: number,
    private readonly G: number,
  ) {
    this.out = Array.from({ length: prompts }, () =>
      Array.from({ length: G }, () => ({ tokens: [] as number[], logprobs: [] as number[], finish: 'length' as Sample['finish'] })),
    );
    this.rngs = rowRngs(o, prompts, G);
    this.stops = new Set(o.stopTokenIds);
    this.filters = Array.from({ length: prompts * G }, (_, r) => o.filter?.(Math.floor(r / G)));
  }
  /** Whether any row decodes under a filter (which needs full logits: no engine-side sampler). */
  get filtered(): boolean {
    return this.filters.some((f) => f !== undefined);
  }
  /** Draw row s's next token from its full logits (generate.ts's drawAllowed); `more` is false once the row has stopped or is full. */
  step(s: number, logits: Float32Array): { token: number; more: boolean } {
    const tok = drawAllowed(logits, this.o, this.rngs[s], this.filters[s]);
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
