/**
 * Batched generation with a KV cache, shared-prefix group sampling, and batched log-prob
 * recomputation. Tensor work stays in TF.js; only the [rows, V] logits of each step come back to
 * JS, where the seeded sampler (src/util/rng.ts) draws the next tokens.
 */
import * as tf from '@tensorflow/tfjs-core';
import { AgroError } from '../errors.ts';
import { Rng } from '../util/rng.ts';
import type { KvCache, LlamaModel } from './llama.ts';
import { NativeDecodeSession, nativeDecodeActive, packPanelsNative, type DecodeLayerTensors } from './native.ts';

export interface SampleOptions {
  maxNewTokens: number;
  /** 0 = greedy. Default 1. */
  temperature?: number;
  /** Nucleus mass in (0, 1]. Default 1 (off). */
  topP?: number;
  /** Keep the k most likely tokens; 0 = off (default). */
  topK?: number;
  /** Generation stops after one of these is produced (it is included in `tokens`). */
  stopTokenIds?: number[];
  seed?: number;
  /**
   * One seed per prompt, in place of `seed`: prompt p's rows draw with `new Rng(promptSeeds[p]).fork(g)`,
   * so what a prompt gets does not depend on the prompts batched with it (a policy batching concurrent
   * requests stays reproducible).
   */
  promptSeeds?: number[];
  /**
   * Constrained decoding: prompt p's rows draw only tokens their filter allows (each row gets its own
   * filter, fed every token it draws). Undefined for a prompt = unconstrained.
   */
  filter?: (prompt: number) => TokenFilter | undefined;
}

/**
 * What a row may draw next. The model layer knows no grammar: the caller's filter does (the SQL
 * agent's is src/agent/decoding/sql-names.ts). A rejected draw is redrawn from the rest of the distribution.
 */
export interface TokenFilter {
  allows(token: number): boolean;
  /** The row drew `token` (allowed or, when nothing near the top was, the model's own choice). */
  push(token: number): void;
}

export interface Sample {
  tokens: number[];
  /** log p(token | prefix) under the model itself (temperature 1, no top-k/top-p), as needed for importance ratios. */
  logprobs: number[];
  finish: 'stop' | 'length';
}

function checkTokens(seq: number[], vocabSize: number, what: string): void {
  for (const t of seq)
    if (!Number.isInteger(t) || t < 0 || t >= vocabSize)
      throw new AgroError('invalid_input', `${what}: token id ${t} is outside the vocabulary [0, ${vocabSize})`);
}

/** Token sequences to score (log-prob recomputation), checked for any engine: ids in range, lengths in context. */
export function checkSequences(seqs: number[][], vocabSize: number, maxPositions: number): void {
  seqs.forEach((s, i) => {
    checkTokens(s, vocabSize, `sequence ${i}`);
    if (s.length > maxPositions)
      throw new AgroError('invalid_input', `sequence ${i} has ${s.length} tokens, more than maxPositions ${maxPositions}`);
  });
}

export interface CheckedSampleOptions {
  maxNewTokens: number;
  temperature: number;
  topP: number;
  topK: number;
  stopTokenIds: number[];
  seed: number;
  promptSeeds?: number[];
  filter?: SampleOptions['filter'];
}

/** Validation and defaults of a sampling request, shared by every engine (one-line AgroErrors). */
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
    checkTokens(p, vocabSize, `sampling: prompt ${i}`);
    if (p.length + o.maxNewTokens > maxPositions)
      bad(`prompt ${i} (${p.length} tokens) + maxNewTokens ${o.maxNewTokens} exceeds maxPositions ${maxPositions}`);
  });
  if (o.promptSeeds && (o.promptSeeds.length !== prompts.length || !o.promptSeeds.every((x) => Number.isInteger(x) && x >= 0)))
    bad(`promptSeeds must hold one non-negative integer per prompt (${prompts.length})`);
  return {
    maxNewTokens: o.maxNewTokens, temperature, topP, topK, stopTokenIds: o.stopTokenIds ?? [], seed: o.seed ?? 0,
    ...(o.promptSeeds ? { promptSeeds: o.promptSeeds } : {}),
    ...(o.filter ? { filter: o.filter } : {}),
  };
}

/** Each sample row's rng: row s = p * G + g forks `seed` at s, or prompt p's own seed at g. */
export function rowRngs(o: CheckedSampleOptions, P: number, G: number): Rng[] {
  const base = new Rng(o.seed);
  return Array.from({ length: P * G }, (_, s) => (o.promptSeeds ? new Rng(o.promptSeeds[Math.floor(s / G)]).fork(s % G) : base.fork(s)));
}

/** log softmax(logits)[tok] at temperature 1: the logprob every engine reports. */
export function logSoftmaxAt(logits: Float32Array, tok: number): number {
  let m = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i] > m) m = logits[i];
  let s = 0;
  for (let i = 0; i < logits.length; i++) s += Math.exp(logits[i] - m);
  return logits[tok] - m - Math.log(s);
}

/** Draw one token from a logits row; returns the token. Pure apart from the rng draw. */
export function drawToken(
  logits: Float32Array,
  opts: { temperature: number; topP: number; topK: number },
  rng: Rng,
): number {
  const V = logits.length;
  let best = 0;
  for (let i = 1; i < V; i++) if (logits[i] > logits[best]) best = i;
  if (opts.temperature === 0 || opts.topK === 1) return best;
  const inv = 1 / opts.temperature;
  const maxL = logits[best];
  let cand: number[] | null = null;
  if ((opts.topK > 0 && opts.topK < V) || opts.topP < 1) {
    cand = Array.from({ length: V }, (_, i) => i).sort((a, b) => logits[b] - logits[a] || a - b);
    if (opts.topK > 0 && opts.topK < V) cand.length = opts.topK;
  }
  const ids = cand ?? null;
  const n = ids ? ids.length : V;
  const w = new Float64Array(n);
  let total = 0;
  for (let j = 0; j < n; j++) {
    const i = ids ? ids[j] : j;
    w[j] = Math.exp((logits[i] - maxL) * inv);
    total += w[j];
  }
  let keep = n;
  if (opts.topP < 1) {
    // Smallest prefix (in descending order) whose mass reaches topP.
    let acc = 0;
    for (let j = 0; j < n; j++) {
      acc += w[j] / total;
      if (acc >= opts.topP) {
        keep = j + 1;
        break;
      }
    }
    total = 0;
    for (let j = 0; j < keep; j++) total += w[j];
  }
  let u = rng.next() * total;
  for (let j = 0; j < keep; j++) {
    u -= w[j];
    if (u < 0) return ids ? ids[j] : j;
  }
  return ids ? ids[keep - 1] : keep - 1;
}

/** How many of the model's top choices a refused draw is redrawn from (when any of them is allowed). */
const FILTER_CANDIDATES = 256;

/**
 * drawToken under a filter. When the first draw is refused, the row draws again (the same rng, so the
 * draws stay seeded) from the allowed tokens among the model's top FILTER_CANDIDATES, renormalized under
 * the same temperature, top-k and top-p; greedy takes the best allowed. Where none of those is allowed,
 * the best allowed token of the whole vocabulary is taken (a word's next letter is always a token, so a
 * filter that accepts the prefix it is in always allows something); only where nothing at all is
 * allowed does the first draw stand.
 */
export function drawAllowed(
  logits: Float32Array,
  opts: { temperature: number; topP: number; topK: number },
  rng: Rng,
  filter: TokenFilter | undefined,
): number {
  let tok = drawToken(logits, opts, rng);
  if (filter && !filter.allows(tok)) {
    const first = tok;
    const greedy = opts.temperature === 0 || opts.topK === 1;
    const order = Array.from({ length: logits.length }, (_, i) => i).sort((a, b) => logits[b] - logits[a] || a - b);
    const allowed: number[] = [];
    for (let i = 0; i < order.length; i++) {
      if ((i >= FILTER_CANDIDATES || greedy) && allowed.length > 0) break;
      if (order[i] !== first && filter.allows(order[i])) allowed.push(order[i]);
    }
    if (allowed.length === 1 || (greedy && allowed.length > 0)) tok = allowed[0];
    else if (allowed.length > 1) {
      const masked = new Float32Array(logits.length).fill(-Infinity);
      for (const t of allowed) masked[t] = logits[t];
      tok = drawToken(masked, opts, rng);
    }
  }
  filter?.push(tok);
  return tok;
}

function disposeCache(c: KvCache): void {
  for (const t of c.k) t.dispose();
  for (const t of c.v) t.dispose();
}

/** Repeat each prompt's cache rows `g` times: [P*nkv, L, hd] -> [P*g*nkv, L, hd]. */
function expandCache(c: KvCache, P: number, g: number): KvCache {
  const rep = (t: tf.Tensor3D): tf.Tensor3D =>
    tf.tidy(() => {
      const [rows, L, hd] = t.shape;
      const nkv = rows / P;
      return tf.reshape(tf.tile(tf.reshape(t, [P, 1, nkv, L, hd]), [1, g, 1, 1, 1]), [P * g * nkv, L, hd]) as tf.Tensor3D;
    });
  return { k: c.k.map(rep), v: c.v.map(rep) };
}

/** Keep cache rows `rows` (indices into the current row order). */
function selectRows(c: KvCache, R: number, rows: number[]): KvCache {
  const idx = tf.tensor1d(rows, 'int32');
  const pick = (t: tf.Tensor3D): tf.Tensor3D =>
    tf.tidy(() => {
      const [all, L, hd] = t.shape;
      const nkv = all / R;
      return tf.reshape(tf.gather(tf.reshape(t, [R, nkv, L, hd]), idx), [rows.length * nkv, L, hd]) as tf.Tensor3D;
    });
  const out = { k: c.k.map(pick), v: c.v.map(pick) };
  idx.dispose();
  return out;
}

/**
 * G samples for each prompt. All prompts are prefilled together (left-padded, masked); each
 * prompt's KV cache is computed once and repeated for its G samples, which then decode as one
 * batch. Rows that finish are dropped from the batch.
 */
export async function sampleGroups(
  model: LlamaModel,
  prompts: number[][],
  groupSize: number,
  options: SampleOptions,
): Promise<Sample[][]> {
  const cfg = model.config;
  const o = checkSampleRequest(prompts, groupSize, options, cfg.vocabSize, cfg.maxPositions);
  if (prompts.length === 0) return [];
  const stops = new Set(o.stopTokenIds);
  const P = prompts.length;
  const G = groupSize;
  const out: Sample[][] = prompts.map(() =>
    Array.from({ length: G }, () => ({ tokens: [] as number[], logprobs: [] as number[], finish: 'length' as Sample['finish'] })),
  );
  if (o.maxNewTokens === 0) return out;

  const Lp = Math.max(...prompts.map((p) => p.length));
  const pad = prompts.map((p) => Lp - p.length);
  const V = cfg.vocabSize;
  const rngs = rowRngs(o, P, G);
  const filters = Array.from({ length: P * G }, (_, r) => o.filter?.(Math.floor(r / G)));

  // Prefill: left-padded prompts at their real positions; forwardHidden hides the padding (padLeft).
  const idsD = new Int32Array(P * Lp);
  const posD = new Int32Array(P * Lp);
  for (let p = 0; p < P; p++)
    for (let i = 0; i < Lp; i++) {
      idsD[p * Lp + i] = i >= pad[p] ? prompts[p][i - pad[p]] : 0;
      posD[p * Lp + i] = Math.max(0, i - pad[p]);
    }
  let cache: KvCache;
  let logitsD: Float32Array;
  const head = model.inferenceHead();
  try {
    const ids = tf.tensor2d(idsD, [P, Lp], 'int32');
    const pos = tf.tensor2d(posD, [P, Lp], 'int32');
    const res = tf.tidy(() => {
      const r = model.forwardHidden(ids, { positions: pos, padLeft: pad, wantCache: true, noGrad: true });
      const last = tf.reshape(tf.slice(tf.reshape(r.hidden, [P, Lp, -1]), [0, Lp - 1, 0], [P, 1, -1]), [P, -1]) as tf.Tensor2D;
      return { logits: model.logits(last, head), k: r.cache!.k, v: r.cache!.v };
    });
    ids.dispose();
    pos.dispose();
    const promptCache = { k: res.k, v: res.v };
    logitsD = (await res.logits.data()) as Float32Array;
    res.logits.dispose();
    cache = G > 1 ? expandCache(promptCache, P, G) : promptCache;
    if (G > 1) disposeCache(promptCache);
  } catch (e) {
    head.dispose();
    throw e;
  }
  // Row r of the batch is sample rows[r] = p * G + g; prompt logits are shared by the group.
  let rows = Array.from({ length: P * G }, (_, r) => r);
  const drawJs = (logitsOf: (r: number) => Float32Array): Drawn => {
    const tokens = new Int32Array(rows.length);
    const logprobs = new Float64Array(rows.length);
    rows.forEach((s, r) => {
      const lg = logitsOf(r);
      tokens[r] = drawAllowed(lg, o, rngs[s], filters[s]);
      logprobs[r] = logSoftmaxAt(lg, tokens[r]);
    });
    return { tokens, logprobs };
  };
  // Without top-k and top-p the native step draws the tokens itself (only tokens and log-probs come
  // back, not [rows, V] logits); drawToken's top-k 1 is greedy and draws no uniform.
  // A filter needs the logits back to redraw from.
  const plain = o.topP === 1 && (o.topK === 0 || o.topK === 1 || o.topK >= V) && filters.every((f) => f === undefined);
  const temperature = o.topK === 1 ? 0 : o.temperature;
  const prefillLogits = logitsD;
  let drawn = drawJs((r) => {
    const p = Math.floor(rows[r] / G);
    return prefillLogits.subarray(p * V, (p + 1) * V);
  });
  const ctx: DecodeContext = { model, head, prompts, pad, G, Lp, maxNewTokens: o.maxNewTokens };
  let decoder: Decoder | undefined;
  try {
    decoder = nativeDecodeActive() ? new NativeDecoder(ctx, cache) : new TfjsDecoder(ctx, cache);
    for (let step = 0; ; step++) {
      const next: number[] = [];
      const alive: number[] = [];
      rows.forEach((s, r) => {
        const tok = drawn.tokens[r];
        const smp = out[Math.floor(s / G)][s % G];
        smp.tokens.push(tok);
        smp.logprobs.push(drawn.logprobs[r]);
        if (stops.has(tok)) smp.finish = 'stop';
        else if (step + 1 < o.maxNewTokens) {
          alive.push(r);
          next.push(tok);
        }
      });
      if (alive.length === 0) break;
      const kept = alive.length < rows.length ? alive : undefined;
      if (kept) rows = alive.map((r) => rows[r]);
      if (plain && decoder.stepSample) {
        const u = new Float64Array(rows.length);
        if (temperature > 0) rows.forEach((s, i) => (u[i] = rngs[s].next()));
        drawn = await decoder.stepSample(rows, next, step, temperature, u);
      } else {
        const d = await decoder.step(kept, rows, next, step);
        drawn = drawJs((r) => d.subarray(r * V, (r + 1) * V));
      }
    }
  } finally {
    if (decoder) decoder.dispose();
    else disposeCache(cache);
    head.dispose();
  }
  return out;
}

/** The tokens drawn for the rows of a step and their log-probs (temperature 1). */
interface Drawn {
  tokens: Int32Array;
  logprobs: Float64Array;
}

interface DecodeContext {
  model: LlamaModel;
  /** The output projection [H, V]. */
  head: tf.Tensor2D;
  prompts: number[][];
  /** Left padding of each prompt in the prefill batch. */
  pad: number[];
  G: number;
  /** Padded prompt length: the first decoding step fills cache slot Lp. */
  Lp: number;
  maxNewTokens: number;
}

/** Decoding steps after the prefill; owns the KV cache it is given. */
interface Decoder {
  /**
   * Logits [rows.length, V] for feeding `next[i]` to sample rows[i] (s = p * G + g) at decoding step
   * `step`; `kept` lists the previous step's batch positions still decoding when some finished.
   */
  step(kept: number[] | undefined, rows: number[], next: number[], step: number): Promise<Float32Array>;
  /** The same step, then each row's next token drawn at `temperature` with uniform u[i] (no top-k or top-p). */
  stepSample?(rows: number[], next: number[], step: number, temperature: number, u: Float64Array): Promise<Drawn>;
  dispose(): void;
}

/** Steps as TF.js ops (any backend): the cache grows by a concat per step and is compacted when rows finish. */
class TfjsDecoder implements Decoder {
  constructor(
    private readonly c: DecodeContext,
    private cache: KvCache,
  ) {}

  async step(kept: number[] | undefined, rows: number[], next: number[], step: number): Promise<Float32Array> {
    const { model, head, prompts, pad, G } = this.c;
    if (kept) {
      const sel = selectRows(this.cache, this.cache.k[0].shape[0] / model.config.numKvHeads, kept);
      disposeCache(this.cache);
      this.cache = sel;
    }
    const R = rows.length;
    const posStep = new Int32Array(R);
    const padStep = rows.map((s) => pad[Math.floor(s / G)]);
    rows.forEach((s, r) => (posStep[r] = prompts[Math.floor(s / G)].length + step));
    const ids = tf.tensor2d(Int32Array.from(next), [R, 1], 'int32');
    const pos = tf.tensor2d(posStep, [R, 1], 'int32');
    const prev = this.cache;
    const res = tf.tidy(() => {
      const r = model.forwardHidden(ids, { positions: pos, padLeft: padStep, cache: prev, noGrad: true });
      return { logits: model.logits(r.hidden, head), k: r.cache!.k, v: r.cache!.v };
    });
    ids.dispose();
    pos.dispose();
    disposeCache(prev);
    this.cache = { k: res.k, v: res.v };
    const d = (await res.logits.data()) as Float32Array;
    res.logits.dispose();
    return d;
  }

  dispose(): void {
    disposeCache(this.cache);
  }
}

/**
 * Steps as one native kernel call each (native/decode.cc): the cache is allocated once for every
 * sample row at its final length, written in place, and finished rows are simply not decoded.
 */
class NativeDecoder implements Decoder {
  private readonly cache: KvCache;
  private readonly cap: number;
  /** The weight matrices and the head packed once for all steps. */
  private readonly packed: { head: tf.Tensor; layers: Pick<DecodeLayerTensors, 'wqkv' | 'wo' | 'wgu' | 'wdown'>[] };
  private readonly session: NativeDecodeSession;

  /** `prefill`: the prompts' caches [P * G * nkv, Lp, hd] (already repeated per sample), taken over. */
  constructor(
    private readonly c: DecodeContext,
    prefill: KvCache,
  ) {
    // Slots Lp .. Lp + maxNewTokens - 2 receive the decoded tokens (the last token is never fed back).
    this.cap = c.Lp + Math.max(1, c.maxNewTokens - 1);
    const grow = (t: tf.Tensor3D): tf.Tensor3D => tf.tidy(() => tf.pad(t, [[0, 0], [0, this.cap - c.Lp], [0, 0]]));
    this.cache = { k: prefill.k.map(grow), v: prefill.v.map(grow) };
    disposeCache(prefill);
    const w = c.model.decodeWeights();
    const pack = (t: tf.Tensor): tf.Tensor => packPanelsNative(t as tf.Tensor2D);
    this.packed = {
      head: pack(c.head),
      layers: w.layers.map((l) => ({ wqkv: pack(l.wqkv), wo: pack(l.wo), wgu: pack(l.wgu), wdown: pack(l.wdown) })),
    };
    this.session = new NativeDecodeSession(c.prompts.length * c.G, c.model.config.vocabSize);
  }

  async step(_kept: number[] | undefined, rows: number[], next: number[], step: number): Promise<Float32Array> {
    this.decode(rows, next, step);
    return this.session.logitsData();
  }

  async stepSample(rows: number[], next: number[], step: number, temperature: number, u: Float64Array): Promise<Drawn> {
    this.decode(rows, next, step);
    return this.session.sample(temperature, u);
  }

  /** One step feeding next[i] to sample rows[i]; the logits stay in the session. */
  private decode(rows: number[], next: number[], step: number): void {
    const { model, prompts, pad, G, Lp } = this.c;
    const cfg = model.config;
    const w = model.decodeWeights();
    this.session.step({
      layers: w.layers.map((l, i) => ({ ...l, ...this.packed.layers[i], kCache: this.cache.k[i], vCache: this.cache.v[i] })),
      embed: w.embed, norm: w.norm, head: this.packed.head, cos: w.cos, sin: w.sin,
      intermediate: cfg.intermediateSize, heads: cfg.numHeads, kvHeads: cfg.numKvHeads, headDim: model.headDim, eps: cfg.rmsNormEps,
      cacheRows: this.cache.k[0].shape[0] / cfg.numKvHeads, cap: this.cap, t: Lp + step,
      ids: Int32Array.from(next),
      rows: Int32Array.from(rows),
      positions: Int32Array.from(rows, (s) => prompts[Math.floor(s / G)].length + step),
      pads: Int32Array.from(rows, (s) => pad[Math.floor(s / G)]),
    });
  }

  dispose(): void {
    disposeCache(this.cache);
    this.session.dispose();
    tf.dispose([this.packed.head, ...this.packed.layers.flatMap((l) => [l.wqkv, l.wo, l.wgu, l.wdown])]);
  }
}

/**
 * Per-token log-probs of seq[t] given seq[<t] for t >= 1 (so length-1 numbers per sequence), in
 * right-padded batches; no gradient.
 */
export async function sequenceLogProbs(
  model: LlamaModel,
  seqs: number[][],
  opts: { batchSize?: number; temperature?: number } = {},
): Promise<number[][]> {
  const cfg = model.config;
  checkSequences(seqs, cfg.vocabSize, cfg.maxPositions);
  const out: number[][] = seqs.map(() => []);
  const order = seqs.map((_, i) => i).filter((i) => seqs[i].length >= 2);
  // Similar lengths together waste less padding.
  order.sort((a, b) => seqs[a].length - seqs[b].length);
  const bs = opts.batchSize ?? 16;
  for (let start = 0; start < order.length; start += bs) {
    const chunk = order.slice(start, start + bs);
    const T = Math.max(...chunk.map((i) => seqs[i].length)) - 1;
    const idsD = new Int32Array(chunk.length * T);
    const tgD = new Int32Array(chunk.length * T);
    chunk.forEach((i, b) => {
      const s = seqs[i];
      for (let t = 0; t < s.length - 1; t++) {
        idsD[b * T + t] = s[t];
        tgD[b * T + t] = s[t + 1];
      }
    });
    const ids = tf.tensor2d(idsD, [chunk.length, T], 'int32');
    const tg = tf.tensor2d(tgD, [chunk.length, T], 'int32');
    const lp = tf.tidy(() => model.tokenLogProbs(ids, tg, { temperature: opts.temperature }).logp);
    const d = (await lp.data()) as Float32Array;
    ids.dispose();
    tg.dispose();
    lp.dispose();
    chunk.forEach((i, b) => {
      out[i] = Array.from(d.subarray(b * T, b * T + seqs[i].length - 1));
    });
  }
  return out;
}
