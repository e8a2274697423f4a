/**
 * Rollout engine on llama.cpp (node-llama-cpp's prebuilt CPU addon) running a GGUF export of the
 * policy. Token ids go in and out directly (no text round trip). Each step, llama.cpp decodes all
 * live rows in one batch (one sequence per row in one context). The next token is drawn either by
 * llama.cpp's sampler (where that is the same distribution as generate.ts's; seeded per row from
 * generate.ts's per-row rngs) or in JS with drawToken from the row's full logits, which
 * node-llama-cpp can only return as a sorted Map: that copy costs more than the decode itself.
 *
 * sync() exports the model's current weights to a GGUF in a temp dir and reloads it (there is no
 * way to write tensors into a loaded llama.cpp model from JS).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Llama, LlamaContext, LlamaContextSequence, LlamaModel as NativeModel, Token } from 'node-llama-cpp';
import { AgroError } from '../errors.ts';
import { checkSequences, type Sample, type SampleOptions } from './generate.ts';
import type { LlamaModel } from './llama.ts';
import type { Tokenizer } from './tokenizer.ts';
import type { ModelConfig } from './config.ts';
import { checkGgufCompatible, exportGguf } from './gguf.ts';
import { checkSampleRequest, logSoftmaxAt, RowSampler, type CheckedSampleOptions, type RolloutEngine } from './engine.ts';

let llamaPromise: Promise<Llama> | null = null;

/**
 * The native addon, loaded once; never builds or downloads anything. node-llama-cpp is imported here, not at
 * the top: it takes over a second to load, and most commands that reach this module never run a GGUF.
 */
export function nativeLlama(): Promise<Llama> {
  llamaPromise ??= import('node-llama-cpp').then(({ getLlama, LlamaLogLevel }) => getLlama({ gpu: false, build: 'never', skipDownload: true, progressLogs: false, logLevel: LlamaLogLevel.error })).catch((err: unknown) => {
    llamaPromise = null;
    throw new AgroError('internal', `llama.cpp: the node-llama-cpp prebuilt CPU binary did not load: ${err instanceof Error ? err.message : String(err)}`);
  });
  return llamaPromise;
}

export interface SyncStats {
  exportMs: number;
  loadMs: number;
  bytes: number;
}

export interface LlamaCppEngineOptions {
  tokenizer: Tokenizer;
  /** CPU threads for llama.cpp (default 1: small models decode fastest on one thread, and a busy machine makes spinning worker threads much slower). */
  threads?: number;
  /** Sequences (rows) per context, decoded as one batch (default 16); more rows run in chunks. */
  maxSequences?: number;
  /**
   * 'native' (default): llama.cpp draws the tokens itself where that is the same distribution as
   * drawToken's (greedy, or temperature 1 without top-k/top-p), seeded once per row from the per-row rngs; other
   * settings, and 'js', copy each row's full logits to JS and draw with drawToken (the TF.js engine's
   * exact rule and random stream, several times slower: the copy is the cost).
   */
  sampling?: 'native' | 'js';
  /** Native draws through node-llama-cpp's internal addon (default true, ~1.35x faster); false: its public API only. */
  useAddon?: boolean;
}

type GenerateNext = [Token, { generateNext: { logits: true } }];
const LOGITS: GenerateNext[1] = { generateNext: { logits: true } };

export class LlamaCppEngine implements RolloutEngine {
  readonly name = 'llama.cpp';
  /** Timings of the last sync (export + reload). */
  lastSync: SyncStats | null = null;
  private readonly tokenizer: Tokenizer;
  private readonly threads: number;
  private readonly maxSequences: number;
  private readonly sampling: 'native' | 'js';
  private readonly useAddon: boolean;
  private readonly dir: string;
  private version = 0;
  private loaded: { cfg: ModelConfig; path: string; model: NativeModel; context: LlamaContext; seqs: LlamaContextSequence[] } | null = null;

  constructor(opts: LlamaCppEngineOptions) {
    this.tokenizer = opts.tokenizer;
    this.threads = opts.threads ?? 1;
    this.maxSequences = opts.maxSequences ?? 16;
    this.sampling = opts.sampling ?? 'native';
    this.useAddon = opts.useAddon ?? true;
    if (!Number.isInteger(this.maxSequences) || this.maxSequences < 1)
      throw new AgroError('invalid_input', `engine llama.cpp: maxSequences must be a positive integer, got ${opts.maxSequences}`);
    if (!Number.isInteger(this.threads) || this.threads < 1)
      throw new AgroError('invalid_input', `engine llama.cpp: threads must be a positive integer, got ${opts.threads}`);
    this.dir = mkdtempSync(join(tmpdir(), 'agro-llamacpp-'));
  }

  async sync(model: LlamaModel): Promise<void> {
    const cfg = model.config;
    checkGgufCompatible(cfg);
    if (this.tokenizer.vocabSize > cfg.vocabSize)
      throw new AgroError('invalid_input', `engine llama.cpp: the tokenizer has ${this.tokenizer.vocabSize} tokens but the model only ${cfg.vocabSize}`);
    const llama = await nativeLlama();
    const t0 = performance.now();
    const path = join(this.dir, `policy-${this.version++}.gguf`);
    const { bytes } = exportGguf(model, this.tokenizer, path);
    const t1 = performance.now();
    await this.unload();
    try {
      const native = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
      const context = await native.createContext({
        contextSize: cfg.maxPositions,
        sequences: this.maxSequences,
        threads: this.threads,
        flashAttention: false,
        // f32 keys/values: the default f16 cache would make the logits drift from the trainer's.
        experimentalKvCacheKeyType: 'F32',
        experimentalKvCacheValueType: 'F32',
      });
      const seqs = Array.from({ length: this.maxSequences }, () => context.getSequence());
      this.loaded = { cfg, path, model: native, context, seqs };
    } catch (err) {
      rmSync(path, { force: true });
      throw new AgroError('invalid_input', `engine llama.cpp: could not load the exported policy: ${err instanceof Error ? err.message : String(err)}`);
    }
    this.lastSync = { exportMs: t1 - t0, loadMs: performance.now() - t1, bytes };
  }

  async sampleGroups(prompts: number[][], groupSize: number, options: SampleOptions): Promise<Sample[][]> {
    const L = this.loaded;
    if (!L) throw new AgroError('usage', 'engine llama.cpp: call sync(model) before sampling');
    const o = checkSampleRequest(prompts, groupSize, options, L.cfg.vocabSize, L.cfg.maxPositions);
    const rs = new RowSampler(o, prompts.length, groupSize);
    if (prompts.length === 0 || o.maxNewTokens === 0) return rs.out;
    const rows = Array.from({ length: prompts.length * groupSize }, (_, s) => s);
    for (let c = 0; c < rows.length; c += this.maxSequences) {
      const chunk = rows.slice(c, c + this.maxSequences);
      await this.decodeChunk(chunk.map((s) => prompts[Math.floor(s / groupSize)]), chunk, rs, o);
    }
    return rs.out;
  }

  /**
   * log p(seq[t] | seq[<t]) for t >= 1 under the loaded GGUF (generate.ts's sequenceLogProbs on
   * llama.cpp): every position's full logits come back, so this is for checks, not for speed.
   */
  async sequenceLogProbs(seqs: number[][]): Promise<number[][]> {
    const L = this.loaded;
    if (!L) throw new AgroError('usage', 'engine llama.cpp: call sync(model) before scoring');
    const V = L.cfg.vocabSize;
    checkSequences(seqs, V, L.cfg.maxPositions);
    const out: number[][] = seqs.map(() => []);
    for (let c = 0; c < seqs.length; c += this.maxSequences) {
      const idx = seqs.map((_, i) => i).slice(c, c + this.maxSequences).filter((i) => seqs[i].length >= 2);
      await Promise.all(
        idx.map(async (i, j) => {
          const seq = L.seqs[j];
          await seq.clearHistory();
          const s = seqs[i];
          const res = await seq.controlledEvaluate(s.slice(0, -1).map((t): GenerateNext => [t as Token, LOGITS]));
          out[i] = res.map((r, t) => {
            const m = r?.next.logits;
            if (!m || m.size !== V) throw new AgroError('internal', `engine llama.cpp: expected ${V} logits, got ${m?.size ?? 0}`);
            return logSoftmaxAt(toArray(m, V), s[t + 1]);
          });
        }),
      );
    }
    return out;
  }

  /** Prefill each row's prompt on its own sequence, then decode all live rows together until each stops. */
  private async decodeChunk(prompts: number[][], rows: number[], rs: RowSampler, o: CheckedSampleOptions): Promise<void> {
    const L = this.loaded!;
    const seqs = assignSequences(L.seqs, prompts);
    const V = L.cfg.vocabSize;
    await sharePrompts(seqs, prompts);
    const native = this.sampling === 'native' && !rs.filtered ? nativeSamplerFits(o, V) : null;
    if (native !== null) return this.decodeNative(seqs, prompts, rows, rs, native);
    // JS draws from full logits. Issued in the same tick, node-llama-cpp gathers the rows' tokens into one llama_decode.
    let logits = await Promise.all(rows.map((_, i) => prefill(seqs[i], prompts[i], V)));
    let live = rows.map((_, i) => i);
    while (live.length > 0) {
      const next: number[] = [];
      const tokens: number[] = [];
      live.forEach((i, j) => {
        const { token, more } = rs.step(rows[i], logits[j]);
        if (more) {
          next.push(i);
          tokens.push(token);
        }
      });
      live = next;
      if (live.length === 0) break;
      logits = await Promise.all(live.map((i, j) => fullLogits(seqs[i], [[tokens[j] as Token, LOGITS]], V)));
    }
  }

  /**
   * llama.cpp draws. node-llama-cpp's public evaluation path costs more JS per token than the decode
   * itself (llama.cpp decodes the bench model at ~3,200 tokens/s, the generator path runs at ~1,100),
   * so when its addon is reachable (node-llama-cpp 3.22) the rows decode through it directly: one
   * batch per step, one sampler per row kept across steps (seeded once from the row's rng). Tokens
   * evaluated this way are removed from the KV cache afterwards, so node-llama-cpp's record of each
   * sequence (the prompt) stays true.
   */
  private async decodeNative(seqs: LlamaContextSequence[], prompts: number[][], rows: number[], rs: RowSampler, mode: 'greedy' | 'plain'): Promise<void> {
    const L = this.loaded!;
    const addon = this.useAddon ? rawAddon(L.model, L.context, seqs[0]) : null;
    const config = (s: number): SamplerConfig => (mode === 'greedy' ? { temperature: 0 } : { temperature: 1, topK: 0, topP: 1, minP: 0, seed: rs.nativeSeed(s) });
    if (!addon) return decodeWithGenerators(seqs, prompts, rows, rs, config);
    // Everything but the last prompt token through the public API (prefix reuse, bookkeeping).
    await Promise.all(
      seqs.map(async (seq, i) => {
        const rest = await rewind(seq, prompts[i]);
        if (rest.length > 1) await seq.evaluateWithoutGeneratingNewTokens(rest.slice(0, -1));
      }),
    );
    const ids = seqs.map((q) => (q as unknown as { _sequenceId: number })._sequenceId);
    const samplers = rows.map((s) => {
      const sm = new addon.Sampler(addon.model);
      sm.applyConfig(config(s));
      return sm;
    });
    const pos = prompts.map((p) => p.length - 1);
    const tokens = prompts.map((p) => p[p.length - 1]);
    let live = rows.map((_, i) => i);
    try {
      while (live.length > 0) {
        addon.ctx.initBatch(live.length);
        const at = live.map((i) => addon.ctx.addToBatch(ids[i], pos[i], Uint32Array.of(tokens[i]), Uint32Array.of(0))[0]);
        await addon.ctx.decodeBatch();
        const res = await Promise.all(live.map((i, j) => addon.ctx.sampleToken(at[j], samplers[i], false, true)));
        const next: number[] = [];
        res.forEach(([tok, , confidence], j) => {
          const i = live[j];
          if (tok === -1 || confidence === undefined) throw new AgroError('internal', 'engine llama.cpp: the native sampler returned no token');
          pos[i]++;
          tokens[i] = tok;
          if (rs.record(rows[i], tok, Math.log(confidence))) next.push(i);
        });
        live = next;
      }
    } finally {
      for (const sm of samplers) sm.dispose();
      seqs.forEach((_, i) => addon.ctx.removeTokenCellsFromSequence(ids[i], prompts[i].length - 1, -1));
    }
  }

  private async unload(): Promise<void> {
    const L = this.loaded;
    this.loaded = null;
    if (!L) return;
    await L.context.dispose();
    await L.model.dispose();
    rmSync(L.path, { force: true });
  }

  async dispose(): Promise<void> {
    await this.unload();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * Give each prompt the free sequence whose cached tokens share the longest prefix with it, so that a
 * later turn of a multi-turn rollout only evaluates what was appended since the last call.
 */
function assignSequences(all: LlamaContextSequence[], prompts: number[][]): LlamaContextSequence[] {
  const free = new Set(all);
  return prompts.map((p) => {
    let best: LlamaContextSequence | null = null;
    let bestLen = -1;
    for (const s of free) {
      const n = sharedPrefix(s, p);
      if (n > bestLen) {
        best = s;
        bestLen = n;
      }
    }
    free.delete(best!);
    return best!;
  });
}

interface SamplerConfig {
  temperature: number;
  topK?: number;
  topP?: number;
  minP?: number;
  seed?: number;
}

/** The parts of node-llama-cpp's native addon (3.22, internal) that decodeNative drives directly. */
interface RawSampler {
  applyConfig(config: SamplerConfig): void;
  dispose(): void;
}
interface RawAddon {
  ctx: {
    initBatch(size: number): void;
    addToBatch(sequenceId: number, firstTokenSequenceIndex: number, tokens: Uint32Array, logitIndexes: Uint32Array): Uint32Array;
    decodeBatch(): Promise<void>;
    sampleToken(batchLogitIndex: number, sampler: RawSampler, probabilities: boolean, confidence: boolean): Promise<[number, unknown, number | undefined]>;
    removeTokenCellsFromSequence(sequenceId: number, startPos: number, endPos: number): boolean;
  };
  model: unknown;
  Sampler: new (model: unknown) => RawSampler;
}

/** The addon behind the public objects, or null when this node-llama-cpp version lays them out differently. */
function rawAddon(model: NativeModel, context: LlamaContext, seq: LlamaContextSequence): RawAddon | null {
  const ctx = (context as unknown as { _ctx?: RawAddon['ctx'] })._ctx;
  const addonModel = (model as unknown as { _model?: unknown })._model;
  const Sampler = (model as unknown as { _llama?: { _bindings?: { AddonSampler?: RawAddon['Sampler'] } } })._llama?._bindings?.AddonSampler;
  const ok =
    ctx && addonModel && typeof Sampler === 'function' && typeof (seq as unknown as { _sequenceId?: unknown })._sequenceId === 'number' &&
    ['initBatch', 'addToBatch', 'decodeBatch', 'sampleToken', 'removeTokenCellsFromSequence'].every((f) => typeof (ctx as unknown as Record<string, unknown>)[f] === 'function');
  return ok ? { ctx, model: addonModel, Sampler } : null;
}

/** The public-API fallback of decodeNative: one generator per row, the rows in lockstep so that each step is one batch. */
async function decodeWithGenerators(seqs: LlamaContextSequence[], prompts: number[][], rows: number[], rs: RowSampler, config: (s: number) => SamplerConfig): Promise<void> {
  const gens = await Promise.all(
    rows.map(async (s, i) => seqs[i].evaluateWithMetadata(await rewind(seqs[i], prompts[i]), { confidence: true }, { ...config(s), yieldEogToken: true })),
  );
  let live = rows.map((_, i) => i);
  try {
    while (live.length > 0) {
      const results = await Promise.all(live.map((i) => gens[i].next()));
      const next: number[] = [];
      results.forEach((r, j) => {
        const i = live[j];
        if (r.done) throw new AgroError('internal', 'engine llama.cpp: the native sampler stopped early');
        if (rs.record(rows[i], r.value.token, Math.log(r.value.confidence))) next.push(i);
      });
      live = next;
    }
  } finally {
    await Promise.all(gens.map((g) => g.return()));
  }
}

/** node-llama-cpp's internal KV copy between sequences of one context (3.22; absent -> no sharing). */
type CopyableSequence = LlamaContextSequence & { _copyStateFromOtherSequence?: (other: LlamaContextSequence, upToTokenIndex: number) => Promise<boolean> };

/** Cached tokens of seq that are a prefix of prompt. */
function sharedPrefix(seq: LlamaContextSequence, prompt: number[]): number {
  return seq.nextTokenIndex === 0 ? 0 : seq.compareContextTokens(prompt as Token[]).firstDifferentIndex;
}

/**
 * Rows with the same prompt (a GRPO group) evaluate it once: the first row's sequence evaluates all
 * but the last prompt token, and its KV cache is copied to the others (llama_memory_seq_cp), as
 * generate.ts repeats a prompt's cache for its G samples.
 */
async function sharePrompts(seqs: LlamaContextSequence[], prompts: number[][]): Promise<void> {
  const groups = new Map<number[], number[]>();
  prompts.forEach((p, i) => groups.set(p, [...(groups.get(p) ?? []), i]));
  const shared = [...groups].filter(([p, idx]) => idx.length > 1 && p.length > 1 && idx.some((i) => sharedPrefix(seqs[i], p) < p.length - 1));
  if (shared.length === 0 || typeof (seqs[0] as CopyableSequence)._copyStateFromOtherSequence !== 'function') return;
  await Promise.all(
    shared.map(async ([p, idx]) => {
      const lead = seqs[idx[0]];
      const keep = sharedPrefix(lead, p);
      if (keep < lead.nextTokenIndex) await lead.eraseContextTokenRanges([{ start: keep, end: lead.nextTokenIndex }]);
      if (keep < p.length - 1) await lead.evaluateWithoutGeneratingNewTokens(p.slice(keep, -1) as Token[]);
    }),
  );
  for (const [p, idx] of shared)
    for (const i of idx.slice(1)) {
      const seq = seqs[i] as CopyableSequence;
      if (sharedPrefix(seq, p) >= p.length - 1) continue;
      // On a failed copy the sequence's bookkeeping is unreliable: start it over (prefill evaluates the whole prompt).
      if (!(await seq._copyStateFromOtherSequence!(seqs[idx[0]], p.length - 1))) await seq.clearHistory();
    }
}

/** Drop the sequence's cached tokens after its shared prefix with the prompt (keeping at least the last prompt token to evaluate); the tokens left to evaluate. */
async function rewind(seq: LlamaContextSequence, prompt: number[]): Promise<Token[]> {
  // The last prompt token is always evaluated again: its logits are not kept from an earlier call.
  const keep = Math.min(prompt.length - 1, sharedPrefix(seq, prompt));
  if (keep < seq.nextTokenIndex) await seq.eraseContextTokenRanges([{ start: keep, end: seq.nextTokenIndex }]);
  return prompt.slice(keep) as Token[];
}

/** Evaluate the prompt's tokens after the part already in the sequence's cache; the full logits after its last token. */
async function prefill(seq: LlamaContextSequence, prompt: number[], V: number): Promise<Float32Array> {
  const rest: (Token | GenerateNext)[] = await rewind(seq, prompt);
  rest[rest.length - 1] = [rest[rest.length - 1] as Token, LOGITS];
  return fullLogits(seq, rest, V);
}

async function fullLogits(seq: LlamaContextSequence, items: (Token | GenerateNext)[], V: number): Promise<Float32Array> {
  const res = await seq.controlledEvaluate(items);
  const m = res[res.length - 1]?.next.logits;
  if (!m || m.size !== V) throw new AgroError('internal', `engine llama.cpp: expected ${V} logits, got ${m?.size ?? 0}`);
  return toArray(m, V);
}

function toArray(m: Map<Token, number>, V: number): Float32Array {
  const out = new Float32Array(V);
  for (const [tok, v] of m) out[tok] = v;
  return out;
}

/**
 * When llama.cpp's own sampler draws from exactly the distribution drawToken would: greedy, or plain
 * softmax at temperature 1 (its top-k/top-p come before the temperature, ours after). In both cases the
 * selected token's probability it reports is the log p at temperature 1 that Sample.logprobs needs.
 */
export function nativeSamplerFits(o: CheckedSampleOptions, vocabSize: number): 'greedy' | 'plain' | null {
  if (o.temperature === 0 || o.topK === 1) return 'greedy';
  if (o.temperature === 1 && (o.topK === 0 || o.topK >= vocabSize) && o.topP === 1) return 'plain';
  return null;
}
