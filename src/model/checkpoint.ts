import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { AgroError } from '../errors.ts';
import { writeJsonAtomic, ensureDir, readJsonFile } from '../util/fs.ts';
import { fromHfConfig, toHfConfig } from './config.ts';
import { LlamaModel } from './llama.ts';
import type { WeightMap } from './llama.ts';
import { readSafetensors, writeSafetensors, type WriteDtype } from './safetensors.ts';
import { Tokenizer } from './tokenizer.ts';
import { resolveModelPath } from './builtin.ts';
import { generationConfig, HF_SIDE_FILES, tokenizerConfig } from './hf-files.ts';

/**
 * A checkpoint is a directory in the Hugging Face layout, loadable by `transformers`:
 *   config.json            LlamaForCausalLM / Qwen2ForCausalLM config
 *   model.safetensors      F32 weights under HF names
 *   tokenizer.json         HF tokenizer
 *   tokenizer_config.json  special tokens and the chat template (Jinja), when the tokenizer has agro's chat tokens
 *   generation_config.json generation stops at <|end|> or <|eos|> (same condition)
 *   trainer_state.json     optional: step, RNG state, data order... (resume)
 *   optimizer.safetensors  optional: optimizer moments (resume)
 * The tokenizer may have fewer ids than the model's embedding (rows past it are simply never
 * used, as with HF models padded to a multiple of 64); more ids than rows is an error.
 */
export interface Checkpoint {
  model: LlamaModel;
  tokenizer: Tokenizer;
  trainerState?: object;
  optimizerState?: WeightMap;
  /**
   * JSON files written beside the weights, inside the same atomic swap (file name → content): what a layer
   * above the model keeps with it, such as the agent's prompt contract. The model layer does not read them.
   */
  sideFiles?: Readonly<Record<string, unknown>>;
}

export interface SaveOptions {
  /** The weights' dtype: F32 (default; training resumes from it exactly) or F16 (a model to ship). */
  dtype?: WriteDtype;
}

const FILES = { config: 'config.json', weights: 'model.safetensors', tokenizer: 'tokenizer.json', trainer: 'trainer_state.json', optimizer: 'optimizer.safetensors' };

function specialId(tk: Tokenizer, names: string[]): number | undefined {
  for (const n of names) if (tk.hasToken(n)) return tk.tokenId(n);
  return undefined;
}

/** Write the whole checkpoint into a sibling temp dir, then swap it in: readers never see half of one. */
export function saveCheckpoint(dir: string, ck: Checkpoint, opts: SaveOptions = {}): void {
  if (ck.tokenizer.vocabSize > ck.model.config.vocabSize) {
    throw new AgroError('invalid_input', `cannot save checkpoint: tokenizer has ${ck.tokenizer.vocabSize} ids but the model embedding has ${ck.model.config.vocabSize} rows`);
  }
  const parent = dirname(dir);
  ensureDir(parent);
  const stamp = `${process.pid}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  const tmp = join(parent, `.${basename(dir)}.tmp-${stamp}`);
  mkdirSync(tmp);
  try {
    const bos = specialId(ck.tokenizer, ['<|bos|>', '<|begin_of_text|>', '<s>']) ?? 0;
    const eos = specialId(ck.tokenizer, ['<|eos|>', '<|end_of_text|>', '</s>', '<|endoftext|>']) ?? bos;
    const pad = specialId(ck.tokenizer, ['<|pad|>']);
    writeJsonAtomic(join(tmp, FILES.config), toHfConfig(ck.model.config, { bosTokenId: bos, eosTokenId: eos, padTokenId: pad }));
    writeSafetensors(join(tmp, FILES.weights), ck.model.exportWeights(), { format: 'pt' }, opts.dtype ?? 'F32');
    ck.tokenizer.save(join(tmp, FILES.tokenizer));
    const tkCfg = tokenizerConfig(ck.tokenizer, ck.model.config);
    const genCfg = generationConfig(ck.tokenizer);
    if (tkCfg) writeJsonAtomic(join(tmp, HF_SIDE_FILES.tokenizerConfig), tkCfg);
    if (genCfg) writeJsonAtomic(join(tmp, HF_SIDE_FILES.generationConfig), genCfg);
    if (ck.trainerState !== undefined) writeJsonAtomic(join(tmp, FILES.trainer), ck.trainerState);
    if (ck.optimizerState !== undefined) writeSafetensors(join(tmp, FILES.optimizer), ck.optimizerState);
    for (const [name, content] of Object.entries(ck.sideFiles ?? {})) {
      if (basename(name) !== name || Object.values(FILES).includes(name)) throw new AgroError('internal', `checkpoint side file name not allowed: ${name}`);
      writeJsonAtomic(join(tmp, name), content);
    }
    if (existsSync(dir)) {
      const old = join(parent, `.${basename(dir)}.old-${stamp}`);
      renameSync(dir, old);
      renameSync(tmp, dir);
      rmSync(old, { recursive: true, force: true });
    } else {
      renameSync(tmp, dir);
    }
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

/** saveCheckpoint's temp names: `.<name>.tmp-<pid>-<ms>-<n>` (being written) and `.<name>.old-<pid>-<ms>-<n>` (being replaced). */
const TEMP_NAME = /^\.(.+)\.(tmp|old)-(\d+)-\d+-\d+$/;

function isAlive(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * What a saveCheckpoint killed mid-write (SIGKILL, power loss) leaves in `parent`: a half-written
 * `.step-N.tmp-…` folder is removed; an `.old-…` folder whose checkpoint is missing was cut between the
 * two renames of the swap and is the last whole copy, so it is put back. Folders of a process still
 * running are left alone. Returns what it did, one entry per folder.
 */
export function cleanStaleCheckpointTemps(parent: string): string[] {
  if (!existsSync(parent)) return [];
  const done: string[] = [];
  for (const name of readdirSync(parent)) {
    const m = TEMP_NAME.exec(name);
    if (!m || isAlive(Number(m[3]))) continue;
    const path = join(parent, name);
    const target = join(parent, m[1]);
    if (m[2] === 'old' && !existsSync(target)) {
      renameSync(path, target);
      done.push(`restored ${target} from ${name}`);
    } else {
      rmSync(path, { recursive: true, force: true });
      done.push(`removed ${path}`);
    }
  }
  return done;
}

/** Load a checkpoint directory (ours or a Hugging Face Llama/Qwen2 one with F32/F16/BF16 weights). */
export function loadCheckpoint(dir: string): Checkpoint {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new AgroError('not_found', `checkpoint directory not found: ${dir}`);
  for (const f of [FILES.config, FILES.weights, FILES.tokenizer]) {
    if (!existsSync(join(dir, f))) throw new AgroError('not_found', `checkpoint ${dir} is missing ${f}`);
  }
  const config = fromHfConfig(readJsonFile(join(dir, FILES.config), 'checkpoint config'));
  const tokenizer = Tokenizer.load(join(dir, FILES.tokenizer));
  if (tokenizer.vocabSize > config.vocabSize) {
    throw new AgroError('invalid_input', `checkpoint ${dir}: tokenizer has ${tokenizer.vocabSize} ids but the model embedding has only ${config.vocabSize} rows`);
  }
  const { tensors } = readSafetensors(join(dir, FILES.weights));
  // A tied model saved by HF may still carry lm_head.weight; an untied one must have it.
  if (config.tieEmbeddings) tensors.delete('lm_head.weight');
  const model = new LlamaModel(config);
  try {
    model.importWeights(tensors);
  } catch (err) {
    model.dispose();
    if (err instanceof AgroError) throw new AgroError(err.kind, `checkpoint ${dir}: ${err.message}`);
    throw err;
  }
  const ck: Checkpoint = { model, tokenizer };
  if (existsSync(join(dir, FILES.trainer))) {
    const s = readJsonFile(join(dir, FILES.trainer), 'trainer state');
    if (typeof s !== 'object' || s === null || Array.isArray(s)) throw new AgroError('invalid_input', `${join(dir, FILES.trainer)} is not a JSON object`);
    ck.trainerState = s;
  }
  if (existsSync(join(dir, FILES.optimizer))) ck.optimizerState = readSafetensors(join(dir, FILES.optimizer)).tensors;
  return ck;
}

/** Checkpoints of a run directory, newest last: checkpoints/step-N (those a trainer wrote whole: with trainer_state.json). */
export function listCheckpoints(outDir: string): { step: number; dir: string }[] {
  const root = join(outDir, 'checkpoints');
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .map((n) => /^step-(\d+)$/.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ step: Number(m[1]), dir: join(root, m[0]) }))
    .filter((c) => existsSync(join(c.dir, 'trainer_state.json')))
    .sort((a, b) => a.step - b.step);
}

/**
 * The checkpoint a path names: a checkpoint folder (config.json) as it is, a run directory its newest
 * checkpoints/step-N, a built-in name (`base`) its folder. The one rule for `train --init`, `sft --init` and the
 * `--policy` of ask, predict and serve.
 */
export function resolveCheckpointDir(spec: string): string {
  const path = resolveModelPath(spec);
  if (existsSync(join(path, 'config.json'))) return path;
  const cks = listCheckpoints(path);
  if (cks.length) return cks[cks.length - 1].dir;
  throw new AgroError('not_found', `no checkpoint at ${path} (expected config.json + model.safetensors, or a run directory with checkpoints/step-N)`);
}
