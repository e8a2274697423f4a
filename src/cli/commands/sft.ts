import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { AgroError } from '../../errors.ts';
import { prepareOutDir } from '../out-path.ts';
import { LIMITS, numberArg, seedArg } from '../options.ts';
import { initBackend } from '../../model/backend.ts';
import type { BackendName } from '../../model/backend.ts';
import { renderChat } from '../../model/chat.ts';
import { loadCheckpoint, resolveCheckpointDir } from '../../model/checkpoint.ts';
import { PRESET_NAMES, resolveModelConfig, type PresetName } from '../../model/config.ts';
import { LlamaModel } from '../../model/llama.ts';
import type { WeightMap } from '../../model/llama.ts';
import { Tokenizer } from '../../model/tokenizer.ts';
import { AGENT_SPECIAL_TOKENS } from '../../agent/protocol.ts';
import { noExecution, rowDatabases, rowsToConversations } from '../../agent/cold-start/row-conversations.ts';
import { readRows } from '../../data/read-json.ts';
import { SqlEnvironment } from '../../agent/sql-env.ts';
import { readPromptContract } from '../../prompt/contract.ts';
import { addPromptOptions, envDepsFromCli, promptFromCli, type PromptCliOptions } from '../prompt-options.ts';
import { resolveTaskSource } from '../../agent/tasks.ts';
import { resolveSftConfig, runSft, sftConfigSchema } from '../../train/sft.ts';
import { stepBar } from '../progress.ts';
import { cleanRunCheckpoints, listCheckpoints, recordedSettings, resumeConfig } from '../../train/run-state.ts';
import { escapeControls } from '../../errors.ts';
import type { SftConfigInput } from '../../train/sft.ts';
import { printOut } from '../print.ts';

/**
 * `agro sft`: cold-start supervised fine-tuning of the built-in model on a dataset of BIRD-style
 * rows (rendered as single-turn agent samples with the SQL agent's own prompt) or ready chat
 * `messages` (multi-turn trajectories, used as they are).
 */

/** Where BIRD-style rows find their databases when no --db-root is given (a factory output names its own). */
const DEFAULT_DB_ROOT = 'data/databases';

interface SftCliOptions extends PromptCliOptions {
  data: string;
  out: string;
  init?: string;
  preset: PresetName;
  steps?: number;
  seed?: number;
  resume?: boolean;
  allowChanges?: boolean;
  dbRoot?: string;
  vocabSize: number;
  batchSize?: number;
  gradAccum?: number;
  maxBatchTokens?: number;
  lr?: number;
  maxSeqLen?: number;
  evalEvery?: number;
  patience?: number;
  checkpointEvery?: number;
  backend?: BackendName;
  json?: boolean;
}

export async function runSftCommand(o: SftCliOptions): Promise<void> {
  if (!(PRESET_NAMES as readonly string[]).includes(o.preset)) throw new AgroError('usage', `--preset must be ${PRESET_NAMES.join(', ')}; got "${o.preset}"`);
  const config: SftConfigInput = {};
  if (o.steps !== undefined) config.steps = o.steps;
  if (o.seed !== undefined) config.seed = o.seed;
  if (o.batchSize !== undefined) config.batchSize = o.batchSize;
  if (o.gradAccum !== undefined) config.gradAccum = o.gradAccum;
  if (o.maxBatchTokens !== undefined) config.maxBatchTokens = o.maxBatchTokens;
  if (o.lr !== undefined) config.lr = o.lr;
  if (o.maxSeqLen !== undefined) config.maxSeqLen = o.maxSeqLen;
  if (o.evalEvery !== undefined) config.evalEvery = o.evalEvery;
  if (o.patience !== undefined) config.patience = o.patience;
  if (o.checkpointEvery !== undefined) config.checkpointEvery = o.checkpointEvery;
  if (config.steps !== undefined && config.warmupSteps === undefined) config.warmupSteps = Math.min(10, Math.floor(config.steps / 10));
  // The whole configuration is checked before any work (reading data, training a tokenizer).
  resolveSftConfig(config);

  if (o.allowChanges && !o.resume) throw new AgroError('usage', '--allow-changes applies to --resume only');
  const log = (msg: string): void => { if (!o.json) process.stderr.write(`${escapeControls(msg)}\n`); };
  // A write killed mid-way (SIGKILL) leaves a temp folder that nothing else would remove.
  for (const line of cleanRunCheckpoints(o.out)) log(`checkpoints: ${line} (left by a write that was cut)`);
  // The prompt: what the starting checkpoint was trained with (resumed run, else --init), then the flags.
  const initDir = o.init ? resolveCheckpointDir(o.init) : undefined;
  const startDir = o.resume ? (listCheckpoints(o.out).at(-1)?.dir ?? initDir) : initDir;
  const startContract = startDir && existsSync(startDir) ? readPromptContract(startDir) : null;
  const env = new SqlEnvironment(noExecution, promptFromCli(startContract, o), envDepsFromCli(o));
  // A factory output (its folder, or its dataset.jsonl beside manifest.json) names its own database.
  const source = resolveTaskSource(o.data, { dbRoot: o.dbRoot, defaultDbRoot: DEFAULT_DB_ROOT });
  const rows = readRows(source.dataPath);
  // A server's schema, docs and values are read once per database before the prompts are made.
  await env.prepareAll(rowDatabases(rows, source.catalog));
  const conversations = rowsToConversations(rows, source.catalog, o.data, env);
  if (conversations.length === 0) throw new AgroError('invalid_input', `${o.data}: the dataset is empty`);
  prepareOutDir({ flag: '--out', path: o.out }, [{ flag: '--data', path: o.data }, ...(o.init ? [{ flag: '--init', path: o.init }] : [])]);
  const existing = listCheckpoints(o.out);
  if (existing.length && !o.resume) {
    throw new AgroError('usage', `${o.out} already has checkpoints (newest ${existing.at(-1)?.dir}); pass --resume to continue or choose another --out`);
  }
  // Flags left out on resume keep the run's values (runSft refuses the ones given that differ, unless --allow-changes).
  const runConfig = o.resume && existing.length ? resolveSftConfig(resumeConfig(recordedSettings(join(o.out, 'sft_config.json')), Object.keys(sftConfigSchema.shape), config)) : resolveSftConfig(config);
  await initBackend(o.backend);

  let model: LlamaModel;
  let tokenizer: Tokenizer;
  let resumeFrom: { trainerState: object; optimizerState?: WeightMap } | undefined;
  if (o.resume && existing.length) {
    const latest = existing[existing.length - 1];
    const ck = loadCheckpoint(latest.dir);
    model = ck.model;
    tokenizer = ck.tokenizer;
    if (!ck.trainerState) throw new AgroError('invalid_input', `${latest.dir} has no trainer_state.json to resume from`);
    resumeFrom = { trainerState: ck.trainerState, optimizerState: ck.optimizerState };
    log(`resuming from ${latest.dir}`);
  } else if (o.init) {
    const ck = loadCheckpoint(initDir!);
    model = ck.model;
    tokenizer = ck.tokenizer;
    log(`initialised from ${o.init}`);
  } else {
    const specials = [...AGENT_SPECIAL_TOKENS];
    tokenizer = Tokenizer.train(conversations.flatMap((c) => c.map((m) => m.content)), { vocabSize: o.vocabSize, specialTokens: specials });
    tokenizer.save(join(o.out, 'tokenizer.json'));
    model = new LlamaModel(resolveModelConfig({ preset: o.preset, vocabSize: tokenizer.vocabSize }), { seed: o.seed ?? 0 });
    log(`trained a ${tokenizer.vocabSize}-token tokenizer; new ${o.preset} model`);
  }
  const samples = conversations.map((c) => renderChat(tokenizer, c));
  const controller = new AbortController();
  const onSigint = (): void => controller.abort();
  process.once('SIGINT', onSigint);
  const startStep = resumeFrom ? Number((resumeFrom.trainerState as { step?: number }).step ?? 0) : 0;
  const bar = stepBar(!o.json, 'sft', runConfig.steps, { start: startStep, format: 'loss {loss} | {tps} tok/s' });
  try {
    const res = await runSft({
      outDir: o.out, model, tokenizer, samples, config, resumeFrom, prompt: { env: env.config, maxTurnTokens: startContract?.decoding?.maxTurnTokens }, allowChanges: o.allowChanges,
      signal: controller.signal,
      onStep: (m) => bar.update(m.step, { loss: m.loss.toFixed(3), tps: m.tokens_per_s }),
    });
    bar.stop();
    if (res.skippedTooLong) log(`skipped ${res.skippedTooLong} samples longer than the model's context (raise --max-seq-len or use --preset small)`);
    const summary = { steps: res.steps, ...(res.best ? { best_step: res.best.step } : {}), final_loss: res.finalLoss, heldout_loss: res.heldOutLoss, checkpoint: res.checkpoint, interrupted: res.interrupted, samples: samples.length, skipped_too_long: res.skippedTooLong };
    if (o.json) process.stdout.write(JSON.stringify(summary) + '\n');
    else {
      printOut(`${res.interrupted ? 'interrupted' : 'done'} after ${res.steps} steps: loss ${res.finalLoss?.toFixed(4) ?? '-'}, held-out ${res.heldOutLoss?.toFixed(4) ?? '-'}${res.best ? ` (best step ${res.best.step}${res.best.stoppedEarly ? ', stopped early' : ''})` : ''}\ncheckpoint: ${res.checkpoint}\n`);
      if (res.interrupted) printOut(`continue with: agro sft --data ${o.data} --out ${o.out} --resume\n`);
      else printOut(`next: agro train --data ${o.data} --init ${o.out} --out ${o.out}-grpo   (RL of this checkpoint; a file of your own also needs --db-root)\n`);
    }
  } finally {
    process.removeListener('SIGINT', onSigint);
    model.dispose();
  }
}

export function register(program: Command): void {
  const cmd = program
    .command('sft')
    .description('Cold-start supervised fine-tuning of the built-in model (loss on the agent\'s tokens only).')
    .requiredOption('--data <file>', 'dataset: .jsonl or .json rows {db_id, question, evidence?, SQL} or {messages: [...]}')
    .requiredOption('--out <dir>', 'run directory (metrics.jsonl, checkpoints/step-N)')
    .option('--init <checkpoint>', 'start from this checkpoint (its tokenizer and weights) instead of from scratch: a checkpoint, a run directory (its newest checkpoint) or base (the built-in base model)')
    .option('--preset <name>', `model size when training from scratch: ${PRESET_NAMES.join(', ')}`, 'small')
    .option('--steps <n>', 'optimizer steps', numberArg('--steps', { min: 1, max: LIMITS.steps }))
    .option('--seed <n>', 'seed for weights and data order', seedArg())
    .option('--resume', 'continue from the newest checkpoint in --out (with the same settings)')
    .option('--allow-changes', 'with --resume: continue with settings other than the run\'s (recorded in sft_config.json)')
    .option('--db-root <dir>', `databases as <dir>/<db_id>/<db_id>.sqlite (default ${DEFAULT_DB_ROOT}; a factory output, its folder or its dataset.jsonl, names its own)`)
    .option('--vocab-size <n>', 'tokenizer size when training from scratch', numberArg('--vocab-size', { min: 300, max: LIMITS.vocab }), 4096)
    .option('--batch-size <n>', 'sequences per micro-batch', numberArg('--batch-size', { min: 1, max: LIMITS.batch }))
    .option('--max-batch-tokens <n>', 'most padded tokens per forward pass; bigger batches run in several passes (default 1024)', numberArg('--max-batch-tokens', { min: 2, max: LIMITS.tokens }))
    .option('--grad-accum <n>', 'micro-batches per optimizer step', numberArg('--grad-accum', { min: 1, max: LIMITS.batch }))
    .option('--lr <x>', 'peak learning rate', numberArg('--lr', { integer: false, positive: true, max: 1 }))
    .option('--max-seq-len <n>', 'truncate samples to this many tokens', numberArg('--max-seq-len', { min: 2, max: LIMITS.tokens }))
    .option('--eval-every <n>', 'held-out loss every N steps (0: only at the end)', numberArg('--eval-every', { min: 0, max: LIMITS.every }))
    .option('--patience <n>', 'early stopping: stop after N held-out evaluations without a new lowest loss and keep the best step (checkpoints/best); 0: off', numberArg('--patience', { min: 0, max: LIMITS.every }))
    .option('--checkpoint-every <n>', 'checkpoint every N steps (0: only at the end)', numberArg('--checkpoint-every', { min: 0, max: LIMITS.every }))
    .option('--backend <name>', 'TensorFlow.js backend: wasm or cpu (default: $AGRO_BACKEND or wasm)')
    .option('--json', 'print a JSON summary and no progress bar');
  addPromptOptions(cmd).action((opts: SftCliOptions) => runSftCommand(opts));
}
