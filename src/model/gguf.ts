/**
 * GGUF v3 writer (llama.cpp's model file format) and the export of the built-in policy as a
 * llama.cpp `llama` model with its byte-level BPE tokenizer, so that a native engine can sample
 * from it.
 *
 * Layout (all little-endian): magic "GGUF", version u32, tensor count u64, metadata count u64,
 * metadata key/values, tensor infos (name, dims innermost first, type, offset), padding to the
 * alignment, then the tensor data, each tensor starting at a multiple of the alignment.
 */
import type { LlamaModel, WeightMap } from './llama.ts';
import type { Tokenizer } from './tokenizer.ts';
import { headDimOf } from './config.ts';
import type { ModelConfig } from './config.ts';
import { AgroError } from '../errors.ts';
import { writeFileAtomic } from '../util/fs.ts';
import { CHAT_TEMPLATE_JINJA, CHAT_TOKENS, hasChatTokens } from './chat.ts';

export const GGUF_ALIGNMENT = 32;

/** GGUF metadata value types (gguf.h). */
const T = { u8: 0, i8: 1, u16: 2, i16: 3, u32: 4, i32: 5, f32: 6, bool: 7, string: 8, array: 9, u64: 10, i64: 11, f64: 12 } as const;

export type GgufScalar =
  | { type: 'u32' | 'i32' | 'f32' | 'f64'; value: number }
  | { type: 'u64' | 'i64'; value: bigint }
  | { type: 'bool'; value: boolean }
  | { type: 'string'; value: string };
export type GgufValue = GgufScalar | { type: 'array'; itemType: 'u32' | 'i32' | 'f32'; values: readonly number[] } | { type: 'array'; itemType: 'string'; values: readonly string[] };

export interface GgufTensor {
  name: string;
  /** Row-major shape, outermost first (numpy / HF order); GGUF stores it reversed. */
  shape: readonly number[];
  data: Float32Array;
}

const GGML_TYPE_F32 = 0;
const utf8 = new TextEncoder();

/** Growable little-endian byte sink. */
class Sink {
  private buf = new Uint8Array(1 << 16);
  private view = new DataView(this.buf.buffer);
  length = 0;

  private reserve(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < this.length + n) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
  u32(x: number): void {
    this.reserve(4);
    this.view.setUint32(this.length, x, true);
    this.length += 4;
  }
  i32(x: number): void {
    this.reserve(4);
    this.view.setInt32(this.length, x, true);
    this.length += 4;
  }
  u64(x: number | bigint): void {
    this.reserve(8);
    this.view.setBigUint64(this.length, BigInt(x), true);
    this.length += 8;
  }
  i64(x: bigint): void {
    this.reserve(8);
    this.view.setBigInt64(this.length, x, true);
    this.length += 8;
  }
  f32(x: number): void {
    this.reserve(4);
    this.view.setFloat32(this.length, x, true);
    this.length += 4;
  }
  f64(x: number): void {
    this.reserve(8);
    this.view.setFloat64(this.length, x, true);
    this.length += 8;
  }
  bytes(b: Uint8Array): void {
    this.reserve(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }
  str(s: string): void {
    const b = utf8.encode(s);
    this.u64(b.length);
    this.bytes(b);
  }
  padTo(align: number): void {
    const n = (align - (this.length % align)) % align;
    this.reserve(n);
    this.buf.fill(0, this.length, this.length + n);
    this.length += n;
  }
  result(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }
}

function writeScalar(s: Sink, v: GgufScalar): void {
  switch (v.type) {
    case 'u32': return s.u32(v.value);
    case 'i32': return s.i32(v.value);
    case 'f32': return s.f32(v.value);
    case 'f64': return s.f64(v.value);
    case 'u64': return s.u64(v.value);
    case 'i64': return s.i64(v.value);
    case 'bool': return s.bytes(Uint8Array.of(v.value ? 1 : 0));
    case 'string': return s.str(v.value);
  }
}

/** Serialize a GGUF v3 file: metadata in the given order, then tensors (f32) in the given order. */
export function encodeGguf(metadata: readonly (readonly [string, GgufValue])[], tensors: readonly GgufTensor[], alignment = GGUF_ALIGNMENT): Uint8Array {
  const s = new Sink();
  s.bytes(utf8.encode('GGUF'));
  s.u32(3);
  s.u64(tensors.length);
  s.u64(metadata.length);
  for (const [key, v] of metadata) {
    s.str(key);
    s.u32(T[v.type]);
    if (v.type !== 'array') {
      writeScalar(s, v);
      continue;
    }
    s.u32(T[v.itemType]);
    s.u64(v.values.length);
    if (v.itemType === 'string') for (const x of v.values) s.str(x);
    else for (const x of v.values as readonly number[]) writeScalar(s, { type: v.itemType, value: x });
  }
  let offset = 0;
  const offsets: number[] = [];
  for (const t of tensors) {
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (n !== t.data.length) throw new AgroError('internal', `gguf: tensor ${t.name} has ${t.data.length} values for shape [${t.shape}]`);
    s.str(t.name);
    s.u32(t.shape.length);
    for (let i = t.shape.length - 1; i >= 0; i--) s.u64(t.shape[i]);
    s.u32(GGML_TYPE_F32);
    s.u64(offset);
    offsets.push(offset);
    offset += Math.ceil((n * 4) / alignment) * alignment;
  }
  s.padTo(alignment);
  const dataStart = s.length;
  for (const [i, t] of tensors.entries()) {
    while (s.length < dataStart + offsets[i]) s.bytes(Uint8Array.of(0));
    // Float32Array bytes are little-endian on every platform Node supports.
    s.bytes(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  }
  s.padTo(alignment);
  return s.result();
}

/**
 * HF rotate_half pairs dimension i with i + hd/2; llama.cpp's `llama` rope pairs 2i with 2i+1.
 * Reorder the output rows of q/k within each head so (i, i + hd/2) land on (2i, 2i+1), as
 * convert_hf_to_gguf.py does. `rowLen` is 1 for biases.
 */
export function permuteRope(data: Float32Array, heads: number, headDim: number, rowLen: number): Float32Array {
  const out = new Float32Array(data.length);
  const half = headDim / 2;
  for (let h = 0; h < heads; h++)
    for (let j = 0; j < 2; j++)
      for (let i = 0; i < half; i++) {
        const src = (h * headDim + j * half + i) * rowLen;
        const dst = (h * headDim + 2 * i + j) * rowLen;
        out.set(data.subarray(src, src + rowLen), dst);
      }
  return out;
}

/** llama.cpp token types (llama_token_type). */
const TOKEN_NORMAL = 1;
const TOKEN_CONTROL = 3;
const TOKEN_USER_DEFINED = 4;
const TOKEN_UNUSED = 5;

function tokenizerMetadata(tokenizer: Tokenizer, vocabSize: number): [string, GgufValue][] {
  const json = tokenizer.toJSON() as {
    added_tokens: { id: number; content: string; special: boolean }[];
    model: { vocab: Record<string, number>; merges: string[] };
  };
  if (tokenizer.vocabSize > vocabSize)
    throw new AgroError('invalid_input', `gguf export: the tokenizer has ${tokenizer.vocabSize} tokens but the model only ${vocabSize}`);
  const tokens: string[] = new Array(vocabSize);
  const types: number[] = new Array(vocabSize).fill(TOKEN_UNUSED);
  for (const [tok, id] of Object.entries(json.model.vocab)) {
    tokens[id] = tok;
    types[id] = TOKEN_NORMAL;
  }
  for (const a of json.added_tokens) {
    tokens[a.id] = a.content;
    // Added tokens that are not control tokens (the protocol tags) are USER_DEFINED, as convert_hf_to_gguf.py
    // writes them: llama.cpp keeps them atomic when tokenizing and prints them when detokenizing.
    types[a.id] = a.special ? TOKEN_CONTROL : TOKEN_USER_DEFINED;
  }
  // Ids no token uses (model rows beyond the tokenizer): llama.cpp needs a unique string for each.
  for (let i = 0; i < vocabSize; i++) if (tokens[i] === undefined) tokens[i] = `[PAD${i}]`;
  const md: [string, GgufValue][] = [
    ['tokenizer.ggml.model', { type: 'string', value: 'gpt2' }],
    // Our pre-tokenizer is Llama 3's split regex followed by ByteLevel, which is what llama.cpp calls "llama-bpe".
    ['tokenizer.ggml.pre', { type: 'string', value: 'llama-bpe' }],
    ['tokenizer.ggml.tokens', { type: 'array', itemType: 'string', values: tokens }],
    ['tokenizer.ggml.token_type', { type: 'array', itemType: 'i32', values: types }],
    ['tokenizer.ggml.merges', { type: 'array', itemType: 'string', values: json.model.merges }],
    ['tokenizer.ggml.add_bos_token', { type: 'bool', value: false }],
    ['tokenizer.ggml.add_eos_token', { type: 'bool', value: false }],
  ];
  const special = (key: string, tok: string): void => {
    if (tokenizer.hasToken(tok)) md.push([key, { type: 'u32', value: tokenizer.tokenId(tok) }]);
  };
  special('tokenizer.ggml.bos_token_id', CHAT_TOKENS.bos);
  // llama.cpp ends generation at its end-of-generation set: eos, eot, and control tokens it recognizes by
  // name (`<|end|>` is one). It warns when eos is outside that set and `<|eos|>` is no name it knows, so
  // eos is `<|end|>`, the token every reply ends with; `<|eos|>` stays a control token.
  special('tokenizer.ggml.eos_token_id', tokenizer.hasToken(CHAT_TOKENS.end) ? CHAT_TOKENS.end : CHAT_TOKENS.eos);
  special('tokenizer.ggml.padding_token_id', CHAT_TOKENS.pad);
  special('tokenizer.ggml.eot_token_id', CHAT_TOKENS.end);
  if (hasChatTokens(tokenizer)) md.push(['tokenizer.chat_template', { type: 'string', value: CHAT_TEMPLATE_JINJA }]);
  return md;
}

/** Refuse configs the llama.cpp `llama` graph would run differently from ours. */
export function checkGgufCompatible(cfg: ModelConfig): void {
  const hd = headDimOf(cfg);
  // llama.cpp sizes the q bias (and the attention output) as n_embd; a wider q would not load.
  if (cfg.attentionBias && hd * cfg.numHeads !== cfg.hiddenSize)
    throw new AgroError('invalid_input', `gguf export: q/k/v biases need numHeads x headDim (${cfg.numHeads} x ${hd}) = hiddenSize (${cfg.hiddenSize}) in llama.cpp`);
}

/** The GGUF metadata and tensors of a model (HF weights from exportWeights()). */
export function ggufContents(cfg: ModelConfig, weights: WeightMap, tokenizer: Tokenizer): { metadata: [string, GgufValue][]; tensors: GgufTensor[] } {
  checkGgufCompatible(cfg);
  const hd = headDimOf(cfg);
  const u32 = (value: number): GgufValue => ({ type: 'u32', value });
  const f32 = (value: number): GgufValue => ({ type: 'f32', value });
  const metadata: [string, GgufValue][] = [
    ['general.architecture', { type: 'string', value: 'llama' }],
    ['general.name', { type: 'string', value: 'agro-policy' }],
    ['general.file_type', u32(0)], // ALL_F32
    ['general.alignment', u32(GGUF_ALIGNMENT)],
    ['llama.vocab_size', u32(cfg.vocabSize)],
    ['llama.context_length', u32(cfg.maxPositions)],
    ['llama.embedding_length', u32(cfg.hiddenSize)],
    ['llama.block_count', u32(cfg.numLayers)],
    ['llama.feed_forward_length', u32(cfg.intermediateSize)],
    ['llama.attention.head_count', u32(cfg.numHeads)],
    ['llama.attention.head_count_kv', u32(cfg.numKvHeads)],
    ['llama.attention.key_length', u32(hd)],
    ['llama.attention.value_length', u32(hd)],
    ['llama.rope.dimension_count', u32(hd)],
    ['llama.rope.freq_base', f32(cfg.ropeTheta)],
    ['llama.attention.layer_norm_rms_epsilon', f32(cfg.rmsNormEps)],
    ...tokenizerMetadata(tokenizer, cfg.vocabSize),
  ];
  const get = (name: string): { shape: number[]; data: Float32Array } => {
    const w = weights.get(name);
    if (!w) throw new AgroError('internal', `gguf export: missing weight ${name}`);
    return w;
  };
  const tensors: GgufTensor[] = [];
  const put = (name: string, hf: string, transform?: (d: Float32Array, shape: number[]) => Float32Array): void => {
    const w = get(hf);
    tensors.push({ name, shape: w.shape, data: transform ? transform(w.data, w.shape) : w.data });
  };
  const rowLen = (shape: number[]): number => (shape.length > 1 ? shape[1] : 1);
  put('token_embd.weight', 'model.embed_tokens.weight');
  for (let i = 0; i < cfg.numLayers; i++) {
    const p = `model.layers.${i}`;
    const b = `blk.${i}`;
    put(`${b}.attn_norm.weight`, `${p}.input_layernorm.weight`);
    put(`${b}.attn_q.weight`, `${p}.self_attn.q_proj.weight`, (d, s) => permuteRope(d, cfg.numHeads, hd, rowLen(s)));
    put(`${b}.attn_k.weight`, `${p}.self_attn.k_proj.weight`, (d, s) => permuteRope(d, cfg.numKvHeads, hd, rowLen(s)));
    put(`${b}.attn_v.weight`, `${p}.self_attn.v_proj.weight`);
    if (cfg.attentionBias) {
      put(`${b}.attn_q.bias`, `${p}.self_attn.q_proj.bias`, (d) => permuteRope(d, cfg.numHeads, hd, 1));
      put(`${b}.attn_k.bias`, `${p}.self_attn.k_proj.bias`, (d) => permuteRope(d, cfg.numKvHeads, hd, 1));
      put(`${b}.attn_v.bias`, `${p}.self_attn.v_proj.bias`);
    }
    put(`${b}.attn_output.weight`, `${p}.self_attn.o_proj.weight`);
    put(`${b}.ffn_norm.weight`, `${p}.post_attention_layernorm.weight`);
    put(`${b}.ffn_gate.weight`, `${p}.mlp.gate_proj.weight`);
    put(`${b}.ffn_up.weight`, `${p}.mlp.up_proj.weight`);
    put(`${b}.ffn_down.weight`, `${p}.mlp.down_proj.weight`);
  }
  put('output_norm.weight', 'model.norm.weight');
  // Tied embeddings: llama.cpp falls back to token_embd when output.weight is absent.
  if (!cfg.tieEmbeddings) put('output.weight', 'lm_head.weight');
  return { metadata, tensors };
}

/** Write the model (current weights) and its tokenizer as an f32 GGUF file for llama.cpp, atomically. */
export function exportGguf(model: LlamaModel, tokenizer: Tokenizer, path: string): { bytes: number } {
  const { metadata, tensors } = ggufContents(model.config, model.exportWeights(), tokenizer);
  const bytes = encodeGguf(metadata, tensors);
  writeFileAtomic(path, bytes);
  return { bytes: bytes.length };
}
