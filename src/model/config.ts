/**
 * Llama-family model configuration: one zod schema, the presets, and conversion to and from
 * Hugging Face `config.json` (LlamaForCausalLM / Qwen2ForCausalLM), so checkpoints load in HF tools.
 */
import { totalmem } from 'node:os';
import { z } from 'zod';
import { AgroError, parseWith } from '../errors.ts';

/** Most values in one tensor: typed arrays and the wasm backend's 32-bit memory end near 2^31 elements. */
const MAX_TENSOR_VALUES = 2 ** 31 - 1;

export interface ModelConfig {
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim?: number;
  maxPositions: number;
  ropeTheta: number;
  rmsNormEps: number;
  tieEmbeddings: boolean;
  /** Qwen2-style biases on the q/k/v projections. */
  attentionBias: boolean;
}

export const PRESET_NAMES = ['tiny', 'base', 'small'] as const;
export type PresetName = (typeof PRESET_NAMES)[number];
export const presetSchema = z.enum(PRESET_NAMES);

export const PRESETS: Record<PresetName, Omit<ModelConfig, 'vocabSize'>> = {
  tiny: {
    hiddenSize: 64, intermediateSize: 172, numLayers: 2, numHeads: 4, numKvHeads: 2,
    maxPositions: 512, ropeTheta: 10000, rmsNormEps: 1e-5, tieEmbeddings: true, attentionBias: false,
  },
  // agro's built-in base model (`agro pretrain`): ~1.3M parameters with a 4k vocabulary. Sized so that one
  // core of a 2-core machine trains it for ~4,000 steps of 16 episodes in about two hours (the engine does
  // ~0.13M params x tokens per ms there), and so that fine-tuning it keeps the quickstart within minutes.
  // Twice as wide and deep as `tiny`, which learns one database's sentences but little English.
  base: {
    hiddenSize: 128, intermediateSize: 344, numLayers: 4, numHeads: 4, numKvHeads: 2,
    maxPositions: 1024, ropeTheta: 10000, rmsNormEps: 1e-5, tieEmbeddings: true, attentionBias: false,
  },
  // ~8M parameters with a 4k vocabulary: trainable on a laptop CPU in the quickstart.
  small: {
    hiddenSize: 256, intermediateSize: 688, numLayers: 8, numHeads: 8, numKvHeads: 4,
    maxPositions: 1024, ropeTheta: 10000, rmsNormEps: 1e-5, tieEmbeddings: true, attentionBias: false,
  },
};

const posInt = z.number().int().positive();
const schema = z.object({
  preset: presetSchema.optional(),
  vocabSize: posInt,
  hiddenSize: posInt.optional(),
  intermediateSize: posInt.optional(),
  numLayers: posInt.optional(),
  numHeads: posInt.optional(),
  numKvHeads: posInt.optional(),
  headDim: posInt.optional(),
  maxPositions: posInt.optional(),
  ropeTheta: z.number().positive().optional(),
  rmsNormEps: z.number().positive().optional(),
  tieEmbeddings: z.boolean().optional(),
  attentionBias: z.boolean().optional(),
});

export function headDimOf(cfg: ModelConfig): number {
  return cfg.headDim ?? cfg.hiddenSize / cfg.numHeads;
}

/**
 * Validate a config. Accepts `{ preset: 'tiny', vocabSize, ...overrides }` or explicit numbers
 * (missing fields come from the `tiny` preset). Throws AgroError('invalid_input') on one line.
 */
export function resolveModelConfig(input: unknown): ModelConfig {
  const { preset, ...rest } = parseWith(schema, input, 'model config');
  const base = PRESETS[preset ?? 'tiny'];
  const defined = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
  const cfg: ModelConfig = { ...base, ...defined } as ModelConfig;
  checkShapes(cfg);
  return cfg;
}

function checkShapes(cfg: ModelConfig): void {
  const bad = (msg: string): never => {
    throw new AgroError('invalid_input', `model config: ${msg}`);
  };
  if (cfg.headDim === undefined && cfg.hiddenSize % cfg.numHeads !== 0)
    bad(`numHeads (${cfg.numHeads}) must divide hiddenSize (${cfg.hiddenSize})`);
  if (cfg.numKvHeads > cfg.numHeads) bad(`numKvHeads (${cfg.numKvHeads}) must not exceed numHeads (${cfg.numHeads})`);
  if (cfg.numHeads % cfg.numKvHeads !== 0)
    bad(`numKvHeads (${cfg.numKvHeads}) must divide numHeads (${cfg.numHeads})`);
  if (headDimOf(cfg) % 2 !== 0) bad(`head dimension (${headDimOf(cfg)}) must be even for rotary embeddings`);
  checkSize(cfg, bad);
}

/**
 * Sizes are checked against this machine before anything is allocated: a config.json with huge
 * dimensions is bad input (one line), not a crash in a typed-array constructor.
 */
function checkSize(cfg: ModelConfig, bad: (msg: string) => never): void {
  const hd = headDimOf(cfg);
  const tensors: Record<string, number> = {
    'embedding (vocabSize x hiddenSize)': cfg.vocabSize * cfg.hiddenSize,
    'MLP projection (hiddenSize x intermediateSize)': cfg.hiddenSize * cfg.intermediateSize,
    'attention projection (hiddenSize x numHeads x headDim)': cfg.hiddenSize * cfg.numHeads * hd,
    'rotary table (maxPositions x headDim)': cfg.maxPositions * hd,
  };
  for (const [name, n] of Object.entries(tensors)) {
    if (n > MAX_TENSOR_VALUES) bad(`the ${name} would hold ${n.toExponential(2)} values, more than one tensor can (${MAX_TENSOR_VALUES})`);
  }
  const bytes = parameterCount(cfg) * 4;
  if (bytes > totalmem()) {
    bad(`${parameterCount(cfg).toExponential(2)} parameters need ${(bytes / 2 ** 30).toFixed(1)} GiB as float32, more than this machine's ${(totalmem() / 2 ** 30).toFixed(1)} GiB of memory`);
  }
}

export function parameterCount(cfg: ModelConfig): number {
  const hd = headDimOf(cfg);
  const H = cfg.hiddenSize;
  const q = H * cfg.numHeads * hd;
  const kv = 2 * H * cfg.numKvHeads * hd;
  const o = cfg.numHeads * hd * H;
  const bias = cfg.attentionBias ? (cfg.numHeads + 2 * cfg.numKvHeads) * hd : 0;
  const mlp = 3 * H * cfg.intermediateSize;
  const layer = q + kv + o + bias + mlp + 2 * H;
  const emb = cfg.vocabSize * H;
  return cfg.numLayers * layer + emb + H + (cfg.tieEmbeddings ? 0 : emb);
}

export function toHfConfig(
  cfg: ModelConfig,
  extra: { bosTokenId: number; eosTokenId: number; padTokenId?: number },
): Record<string, unknown> {
  const qwen = cfg.attentionBias;
  return {
    architectures: [qwen ? 'Qwen2ForCausalLM' : 'LlamaForCausalLM'],
    model_type: qwen ? 'qwen2' : 'llama',
    vocab_size: cfg.vocabSize,
    hidden_size: cfg.hiddenSize,
    intermediate_size: cfg.intermediateSize,
    num_hidden_layers: cfg.numLayers,
    num_attention_heads: cfg.numHeads,
    num_key_value_heads: cfg.numKvHeads,
    head_dim: headDimOf(cfg),
    max_position_embeddings: cfg.maxPositions,
    rope_theta: cfg.ropeTheta,
    rms_norm_eps: cfg.rmsNormEps,
    tie_word_embeddings: cfg.tieEmbeddings,
    ...(qwen ? {} : { attention_bias: false, mlp_bias: false }),
    hidden_act: 'silu',
    torch_dtype: 'float32',
    bos_token_id: extra.bosTokenId,
    eos_token_id: extra.eosTokenId,
    ...(extra.padTokenId !== undefined ? { pad_token_id: extra.padTokenId } : {}),
  };
}

const hfSchema = z.object({
  architectures: z.array(z.string()).optional(),
  model_type: z.string().optional(),
  vocab_size: posInt,
  hidden_size: posInt,
  intermediate_size: posInt,
  num_hidden_layers: posInt,
  num_attention_heads: posInt,
  num_key_value_heads: posInt.optional(),
  head_dim: posInt.optional(),
  max_position_embeddings: posInt.optional(),
  rope_theta: z.number().positive().optional(),
  rms_norm_eps: z.number().positive().optional(),
  tie_word_embeddings: z.boolean().optional(),
  attention_bias: z.boolean().optional(),
  hidden_act: z.string().optional(),
  rope_scaling: z.unknown().optional(),
});

export function fromHfConfig(json: unknown): ModelConfig {
  const c = parseWith(hfSchema, json, 'config.json');
  const type = c.model_type ?? (c.architectures?.[0]?.startsWith('Qwen2') ? 'qwen2' : 'llama');
  if (type !== 'llama' && type !== 'qwen2')
    throw new AgroError('invalid_input', `config.json: unsupported architecture '${type}' (supported: llama, qwen2)`);
  if (c.hidden_act !== undefined && c.hidden_act !== 'silu')
    throw new AgroError('invalid_input', `config.json: unsupported hidden_act '${c.hidden_act}' (only silu)`);
  if (c.rope_scaling !== undefined && c.rope_scaling !== null)
    throw new AgroError('invalid_input', 'config.json: rope_scaling is not supported');
  return resolveModelConfig({
    vocabSize: c.vocab_size,
    hiddenSize: c.hidden_size,
    intermediateSize: c.intermediate_size,
    numLayers: c.num_hidden_layers,
    numHeads: c.num_attention_heads,
    numKvHeads: c.num_key_value_heads ?? c.num_attention_heads,
    headDim: c.head_dim,
    maxPositions: c.max_position_embeddings ?? 2048,
    ropeTheta: c.rope_theta ?? 10000,
    rmsNormEps: c.rms_norm_eps ?? 1e-6,
    tieEmbeddings: c.tie_word_embeddings ?? false,
    attentionBias: type === 'qwen2' ? true : (c.attention_bias ?? false),
  });
}
