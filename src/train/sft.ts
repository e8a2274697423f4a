/**
 * Supervised fine-tuning (the cold start): next-token loss on the assistant tokens of chat-rendered
 * samples only (the mask from renderChat), AdamW with decoupled weight decay, linear warmup then
 * cosine decay, global-norm gradient clipping, gradient accumulation, held-out loss, checkpoints
 * and exact resume.
 *
 * Batching is length bucketing, not packing: each epoch shuffles the samples, cuts the order into
 * pools of 16 batches, sorts every pool by length, cuts it into batches and shuffles the batches.
 * Sequences in a batch are right-padded; with causal attention padding after a sequence never
 * reaches its real tokens, and padded targets are masked out of the loss. No attention can cross
 * sample boundaries because every row holds one sample.
 *
 * Resume is exact: a checkpoint stores weights, AdamW moments, the step, and the data position (the
 * RNG state at the start of the current epoch plus the index of the next batch), so the batches
 * after a resume are the ones an uninterrupted run would have drawn.
 */
import * as tf from '@tensorflow/tfjs-core';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { AgroError, parseWith } from '../errors.ts';
import { Rng } from '../util/rng.ts';
import { writeJsonAtomic, ensureDir } from '../util/fs.ts';
import { checkResumeSettings, cleanRunCheckpoints, recordedSettings, restoreTrainerState, resumeConfig, truncateMetrics } from './run-state.ts';
import { AdamW, accumulateGrads, clipByGlobalNorm, lrAt, optimizerFields } from './optim.ts';
import type { LlamaModel, WeightMap } from '../model/llama.ts';
import type { Tokenizer } from '../model/tokenizer.ts';
import { loadCheckpoint, saveCheckpoint } from '../model/checkpoint.ts';
import { promptContractFiles, TURN_TOKENS } from '../prompt/contract.ts';
import type { SqlEnvConfig } from '../agent/sql-env.ts';

// ---------------------------------------------------------------- config

/** Every SFT default lives here. */
export const sftConfigSchema = z.object({
  steps: z.number().int().positive().default(200),
  /** Sequences per micro-batch. */
  batchSize: z.number().int().positive().default(8),
  /**
   * Most padded tokens (rows x length) in one forward/backward pass: a batch over it runs as several
   * passes whose gradients add up to the same step, which bounds memory (wasm has a few GB at most).
   */
  maxBatchTokens: z.number().int().min(2).default(1024),
  /** Micro-batches per optimizer step. */
  gradAccum: z.number().int().positive().default(1),
  ...optimizerFields({ lr: 1e-3, minLrRatio: 0.1, warmupSteps: 10, weightDecay: 0.01, beta1: 0.9, beta2: 0.95 }),
  /** Longer samples are skipped; default and cap: the model's maxPositions. */
  maxSeqLen: z.number().int().min(2).optional(),
  /** Fraction of the samples held out for evaluation (at least one when there are two or more). */
  heldOutFraction: z.number().min(0).lt(1).default(0.05),
  /** Held-out loss every N steps (and at the end); 0 = only at the end. */
  evalEvery: z.number().int().min(0).default(50),
  /**
   * Early stopping: end the run after this many held-out evaluations without a new lowest loss, and
   * leave the model at its best step (its weights are checkpointed as checkpoints/best). 0 = off: the
   * run takes every step. A small model fitted for a fixed budget memorizes its data (training loss
   * 0.000) and leaves RL no questions it is unsure of; the held-out loss says when to stop.
   */
  patience: z.number().int().min(0).default(0),
  /** Checkpoint every N steps (and always at the end); 0 = only at the end. */
  checkpointEvery: z.number().int().min(0).default(100),
  seed: z.number().int().min(0).default(0),
});
export type SftConfig = z.infer<typeof sftConfigSchema>;
export type SftConfigInput = z.input<typeof sftConfigSchema>;

export function resolveSftConfig(input: unknown): SftConfig {
  const c = parseWith(sftConfigSchema.strict(), input ?? {}, 'sft config');
  if (c.warmupSteps > c.steps) throw new AgroError('invalid_input', `sft config: warmupSteps (${c.warmupSteps}) exceeds steps (${c.steps})`);
  if (c.patience > 0 && c.evalEvery === 0) throw new AgroError('invalid_input', 'sft config: patience needs evalEvery > 0 (early stopping watches the held-out loss)');
  return c;
}

// ---------------------------------------------------------------- data

export interface SftSample { ids: number[]; mask: number[] }

/** Split off the held-out samples deterministically for a seed. */
export function splitHeldOut<T>(samples: T[], fraction: number, seed: number): { train: T[]; heldOut: T[] } {
  const order = new Rng(seed ^ 0x5eed).shuffle(samples.map((_, i) => i));
  const k = samples.length >= 2 && fraction > 0 ? Math.max(1, Math.floor(samples.length * fraction)) : 0;
  const held = new Set(order.slice(0, k));
  return { train: samples.filter((_, i) => !held.has(i)), heldOut: samples.filter((_, i) => held.has(i)) };
}

const POOL_BATCHES = 16;

/** One epoch of batches (lists of sample indices), length-bucketed; consumes rng. */
export function epochBatches(lengths: number[], batchSize: number, rng: Rng): number[][] {
  const order = rng.shuffle(lengths.map((_, i) => i));
  const batches: number[][] = [];
  const pool = batchSize * POOL_BATCHES;
  for (let s = 0; s < order.length; s += pool) {
    const chunk = order.slice(s, s + pool).sort((a, b) => lengths[a] - lengths[b] || a - b);
    for (let i = 0; i < chunk.length; i += batchSize) batches.push(chunk.slice(i, i + batchSize));
  }
  return rng.shuffle(batches);
}

/** tokens: trained (masked-in) targets; real: non-padding positions processed. */
interface Batch { ids: tf.Tensor2D; targets: tf.Tensor2D; mask: tf.Tensor2D; tokens: number; real: number }

/** Right-padded inputs/targets/mask for samples (next-token shift: inputs t, targets t+1, mask of t+1). */
export function makeBatch(samples: SftSample[], padId: number): Batch {
  const T = Math.max(...samples.map((s) => s.ids.length)) - 1;
  const B = samples.length;
  const ids = new Int32Array(B * T).fill(padId);
  const tg = new Int32Array(B * T).fill(padId);
  const mk = new Float32Array(B * T);
  let tokens = 0;
  let real = 0;
  samples.forEach((s, b) => {
    real += s.ids.length - 1;
    for (let t = 0; t + 1 < s.ids.length; t++) {
      ids[b * T + t] = s.ids[t];
      tg[b * T + t] = s.ids[t + 1];
      mk[b * T + t] = s.mask[t + 1];
      tokens += s.mask[t + 1];
    }
  });
  return { ids: tf.tensor2d(ids, [B, T], 'int32'), targets: tf.tensor2d(tg, [B, T], 'int32'), mask: tf.tensor2d(mk, [B, T]), tokens, real };
}

/** Cut a batch into consecutive runs whose padded size (rows x longest) stays within maxTokens (one row at least). */
export function splitByTokens(samples: SftSample[], maxTokens: number): SftSample[][] {
  const out: SftSample[][] = [];
  let cur: SftSample[] = [];
  let longest = 0;
  for (const s of samples) {
    const len = Math.max(longest, s.ids.length - 1);
    if (cur.length && (cur.length + 1) * len > maxTokens) {
      out.push(cur);
      cur = [];
      longest = 0;
    }
    cur.push(s);
    longest = Math.max(longest, s.ids.length - 1);
  }
  if (cur.length) out.push(cur);
  return out;
}

/** SFT's loss on a batch before its token mean: the summed next-token loss over the masked (answer) tokens. */
export function summedNll(model: LlamaModel, b: Batch): tf.Scalar {
  return tf.neg(tf.sum(tf.mul(model.tokenLogProbs(b.ids, b.targets).logp, b.mask))) as tf.Scalar;
}

export function disposeBatch(b: Batch): void {
  b.ids.dispose(); b.targets.dispose(); b.mask.dispose();
}

/**
 * Keep the samples that fit in maxLen tokens and have something to learn. Long samples are skipped,
 * not truncated: cutting the end would drop exactly the answer the sample is there to teach.
 */
export function prepareSamples(samples: SftSample[], maxLen: number, what: string): { kept: SftSample[]; tooLong: number } {
  const kept: SftSample[] = [];
  let tooLong = 0;
  for (const [i, s] of samples.entries()) {
    if (s.ids.length !== s.mask.length) throw new AgroError('invalid_input', `${what} sample ${i}: ids and mask lengths differ (${s.ids.length} vs ${s.mask.length})`);
    if (s.ids.length > maxLen) { tooLong++; continue; }
    if (s.ids.length >= 2 && s.mask.slice(1).some((m) => m > 0)) kept.push(s);
  }
  return { kept, tooLong };
}

// ---------------------------------------------------------------- training loop

export interface SftTrainerState {
  step: number;
  epoch: number;
  /** Index of the next batch in the current epoch. */
  batchPos: number;
  /** Rng state at the start of the current epoch (regenerates its batch order). */
  epochRngState: number;
  tokensSeen: number;
  lastHeldOutLoss: number | null;
  /** Lowest held-out loss so far, its step, and evaluations since (early stopping). */
  bestHeldOutLoss: number | null;
  bestStep: number;
  evalsSinceBest: number;
  /** Early stopping ended the run: a resume has nothing left to do. */
  stoppedEarly: boolean;
}

export interface StepMetrics {
  step: number;
  loss: number;
  lr: number;
  grad_norm: number;
  /** Target tokens in the loss (assistant tokens). */
  tokens: number;
  /** All non-padding tokens processed per second (forward + backward). */
  tokens_per_s: number;
  heldout_loss?: number;
  elapsed_s: number;
}

export interface SftRunOptions {
  outDir: string;
  model: LlamaModel;
  tokenizer: Tokenizer;
  samples: SftSample[];
  /** Given held-out samples; by default a fraction of `samples` is held out. */
  heldOut?: SftSample[];
  config?: SftConfigInput;
  /** Continue from a checkpoint made by this trainer (model weights must already be loaded). */
  resumeFrom?: { trainerState: object; optimizerState?: WeightMap };
  onStep?: (m: StepMetrics) => void;
  /** Stop after this step as if interrupted (a checkpoint is written first). */
  stopAfter?: number;
  /** Abort (e.g. on SIGINT): checkpoint the current step and return. */
  signal?: AbortSignal;
  /**
   * The SQL environment the samples' prompts were rendered with: every checkpoint of the run carries it whole as
   * its prompt contract, with the tokens per turn the policy is to run at (default TURN_TOKENS).
   */
  prompt?: { env: SqlEnvConfig; maxTurnTokens?: number; memory?: readonly string[] };
  /** On resume, accept settings other than the run's (recorded in sft_config.json); otherwise they are refused. */
  allowChanges?: boolean;
}

export interface SftResult {
  steps: number;
  finalLoss: number | null;
  heldOutLoss: number | null;
  /** The checkpoint to use: the last step, or with early stopping the step of lowest held-out loss. */
  checkpoint: string;
  /** With early stopping: the step whose weights the model holds now, and its held-out loss. */
  best?: { step: number; heldOutLoss: number; stoppedEarly: boolean };
  interrupted: boolean;
  /** Samples skipped for being longer than maxSeqLen / maxPositions. */
  skippedTooLong: number;
}

const trainerStateSchema = z.object({
  /** Written as 'sft' so a GRPO trainer state is refused here (and the other way round). */
  kind: z.literal('sft').optional(),
  step: z.number().int().min(0),
  epoch: z.number().int().min(0),
  batchPos: z.number().int().min(0),
  epochRngState: z.number().int().min(0),
  tokensSeen: z.number().min(0),
  lastHeldOutLoss: z.number().nullable(),
  bestHeldOutLoss: z.number().nullable().default(null),
  bestStep: z.number().int().min(0).default(0),
  evalsSinceBest: z.number().int().min(0).default(0),
  stoppedEarly: z.boolean().default(false),
});

export async function runSft(opts: SftRunOptions): Promise<SftResult> {
  const configPath = join(opts.outDir, 'sft_config.json');
  // A resume keeps the run's settings; those given now override them (and are checked against them below).
  const cfg = resolveSftConfig(opts.resumeFrom ? resumeConfig(recordedSettings(configPath), Object.keys(sftConfigSchema.shape), opts.config) : (opts.config ?? {}));
  const { model, tokenizer } = opts;
  if (tokenizer.vocabSize > model.config.vocabSize) {
    throw new AgroError('invalid_input', `tokenizer has ${tokenizer.vocabSize} ids but the model embedding has ${model.config.vocabSize} rows`);
  }
  const maxLen = Math.min(cfg.maxSeqLen ?? model.config.maxPositions, model.config.maxPositions);
  let train: SftSample[];
  let heldOut: SftSample[];
  const prepared = prepareSamples(opts.samples, maxLen, 'training');
  let tooLong = prepared.tooLong;
  if (opts.heldOut) {
    train = prepared.kept;
    const h = prepareSamples(opts.heldOut, maxLen, 'held-out');
    heldOut = h.kept;
    tooLong += h.tooLong;
  } else {
    ({ train, heldOut } = splitHeldOut(prepared.kept, cfg.heldOutFraction, cfg.seed));
  }
  if (train.length === 0) {
    const why = tooLong ? ` (${tooLong} samples are longer than ${maxLen} tokens: raise maxSeqLen or use a model with more positions)` : ' (empty dataset?)';
    throw new AgroError('invalid_input', `sft: no training samples with assistant tokens to learn from${why}`);
  }
  for (const s of [...train, ...heldOut]) for (const id of s.ids) {
    if (!(id >= 0 && id < model.config.vocabSize)) throw new AgroError('invalid_input', `sft: token id ${id} is outside the model vocabulary (${model.config.vocabSize})`);
  }
  const padId = tokenizer.hasToken('<|pad|>') ? tokenizer.tokenId('<|pad|>') : 0;
  const lengths = train.map((s) => s.ids.length);

  if (cfg.patience > 0 && heldOut.length === 0) throw new AgroError('invalid_input', 'sft: early stopping (patience) needs held-out samples');
  let state: SftTrainerState = { step: 0, epoch: 0, batchPos: 0, epochRngState: new Rng(cfg.seed).state, tokensSeen: 0, lastHeldOutLoss: null, bestHeldOutLoss: null, bestStep: 0, evalsSinceBest: 0, stoppedEarly: false };
  const params = model.trainableVariables();
  const opt = new AdamW(params, cfg);
  if (opts.resumeFrom) state = restoreTrainerState(trainerStateSchema, opts.resumeFrom, opt, 'an SFT');
  // The settings a resume compares: the config and the data it trains on (not the model, which the checkpoint fixes).
  const settings = { ...cfg, trainSamples: train.length, heldOutSamples: heldOut.length };
  const resumeChanges = opts.resumeFrom ? checkResumeSettings(configPath, settings, { step: state.step, allowChanges: opts.allowChanges, flag: '--allow-changes' }) : [];

  ensureDir(opts.outDir);
  // What a killed checkpoint write left (the CLI cleans before it lists checkpoints; other callers get it here).
  cleanRunCheckpoints(opts.outDir);
  const metricsPath = join(opts.outDir, 'metrics.jsonl');
  truncateMetrics(metricsPath, state.step);
  writeJsonAtomic(configPath, { ...settings, model: model.config, skippedTooLong: tooLong, ...(resumeChanges.length ? { resumeChanges } : {}) });

  let epochRng = Rng.fromState(state.epochRngState);
  let batches = epochBatches(lengths, cfg.batchSize, epochRng);
  const nextBatch = (): SftSample[] => {
    if (state.batchPos >= batches.length) {
      state.epoch += 1;
      state.batchPos = 0;
      state.epochRngState = epochRng.state;
      epochRng = Rng.fromState(state.epochRngState);
      batches = epochBatches(lengths, cfg.batchSize, epochRng);
    }
    return batches[state.batchPos++].map((i) => train[i]);
  };

  const t0 = performance.now();
  let lastLoss: number | null = null;
  let lastCkStep = -1;
  let interrupted = false;
  const sideFiles = opts.prompt ? promptContractFiles(opts.prompt.env, { maxTurnTokens: opts.prompt.maxTurnTokens ?? TURN_TOKENS }, opts.prompt.memory) : undefined;
  const checkpoint = (): string => {
    const dir = join(opts.outDir, 'checkpoints', `step-${state.step}`);
    if (lastCkStep === state.step) return dir;
    saveCheckpoint(dir, { model, tokenizer, trainerState: { ...state, kind: 'sft' }, optimizerState: opt.exportState(), sideFiles });
    lastCkStep = state.step;
    return dir;
  };
  // The best weights so far, on disk so that a resumed run still ends on them.
  const bestDir = join(opts.outDir, 'checkpoints', 'best');
  const saveBest = (): void => saveCheckpoint(bestDir, { model, tokenizer, trainerState: { ...state, kind: 'sft' }, sideFiles });

  while (state.step < cfg.steps && !state.stoppedEarly) {
      if (opts.signal?.aborted) { interrupted = true; break; }
      const stepStart = performance.now();
      const micro = Array.from({ length: cfg.gradAccum }, () => nextBatch());
      const built = micro.flatMap((m) => splitByTokens(m, cfg.maxBatchTokens)).map((m) => makeBatch(m, padId));
      // Token-mean over the whole optimizer step, so accumulation equals one big batch.
      const totalTokens = built.reduce((a, b) => a + b.tokens, 0);
      const realTokens = built.reduce((a, b) => a + b.real, 0);
      let summed: tf.Tensor[] | null = null;
      let lossSum = 0;
      for (const b of built) {
        const { value, grads } = tf.variableGrads(() => tf.div(summedNll(model, b), Math.max(1, totalTokens)) as tf.Scalar, params);
        lossSum += value.dataSync()[0];
        value.dispose();
        const g = params.map((p) => grads[p.name]);
        summed = accumulateGrads(summed, g);
        disposeBatch(b);
      }
      const raw = summed as tf.Tensor[];
      const { grads: clipped, norm } = clipByGlobalNorm(raw, cfg.clipNorm);
      const lr = lrAt(state.step + 1, cfg);
      opt.apply(clipped, lr);
      if (clipped !== raw) clipped.forEach((x) => x.dispose());
      raw.forEach((x) => x.dispose());
      state.step += 1;
      state.tokensSeen += totalTokens;
      lastLoss = lossSum;
      const sec = (performance.now() - stepStart) / 1000;
      const m: StepMetrics = { step: state.step, loss: lossSum, lr, grad_norm: norm, tokens: totalTokens, tokens_per_s: Math.round(realTokens / Math.max(sec, 1e-9)), elapsed_s: Math.round((performance.now() - t0) / 10) / 100 };
      if (heldOut.length && ((cfg.evalEvery > 0 && state.step % cfg.evalEvery === 0) || state.step === cfg.steps)) {
        m.heldout_loss = evaluateLoss(model, heldOut, cfg.batchSize, padId);
        state.lastHeldOutLoss = m.heldout_loss;
        if (cfg.patience > 0) {
          if (state.bestHeldOutLoss === null || m.heldout_loss < state.bestHeldOutLoss) {
            state.bestHeldOutLoss = m.heldout_loss;
            state.bestStep = state.step;
            state.evalsSinceBest = 0;
            saveBest();
          } else if (++state.evalsSinceBest >= cfg.patience) state.stoppedEarly = true;
        }
      }
      appendFileSync(metricsPath, JSON.stringify(m) + '\n');
      opts.onStep?.(m);
      if (cfg.checkpointEvery > 0 && state.step % cfg.checkpointEvery === 0) checkpoint();
      if (opts.stopAfter !== undefined && state.step >= opts.stopAfter && state.step < cfg.steps) { interrupted = true; break; }
      // Let a SIGINT handler run between steps.
      await new Promise<void>((r) => setImmediate(r));
  }
  let dir = checkpoint();
  opt.dispose();
  if (cfg.patience > 0 && !interrupted && state.bestHeldOutLoss !== null) {
    if (state.bestStep !== state.step) model.importWeights(loadWeights(bestDir));
    dir = bestDir;
    const best = { step: state.bestStep, heldOutLoss: state.bestHeldOutLoss, stoppedEarly: state.stoppedEarly };
    return { steps: state.step, finalLoss: lastLoss, heldOutLoss: state.bestHeldOutLoss, checkpoint: dir, best, interrupted, skippedTooLong: tooLong };
  }
  return { steps: state.step, finalLoss: lastLoss, heldOutLoss: state.lastHeldOutLoss, checkpoint: dir, interrupted, skippedTooLong: tooLong };
}

function loadWeights(dir: string): WeightMap {
  const ck = loadCheckpoint(dir);
  const w = ck.model.exportWeights();
  ck.model.dispose();
  return w;
}

/** Mean next-token loss over the masked tokens of samples (no gradients). */
export function evaluateLoss(model: LlamaModel, samples: SftSample[], batchSize: number, padId: number): number {
  const order = samples.map((_, i) => i).sort((a, b) => samples[a].ids.length - samples[b].ids.length || a - b);
  let sum = 0;
  let n = 0;
  for (let i = 0; i < order.length; i += batchSize) {
    const b = makeBatch(order.slice(i, i + batchSize).map((j) => samples[j]), padId);
    sum += tf.tidy(() => summedNll(model, b).dataSync()[0]);
    n += b.tokens;
    disposeBatch(b);
  }
  return n ? sum / n : NaN;
}

