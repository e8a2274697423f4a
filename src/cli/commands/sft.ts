import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { AgroError } from '../../errors.ts';
import { prepareOutDir } from '../out-path.ts';
import { readText } from '../../data/read-json.ts';
import { LIMITS, numberArg, seedArg } from '../options.ts';
import { tablesRead } from '../../sql/lexer.ts';
import { initBackend } from '../../model/backend.ts';
import type { BackendName } from '../../model/backend.ts';
import { chatMessageSchema, renderChat } from '../../model/chat.ts';
import type { ChatMessage } from '../../model/chat.ts';
import { loadCheckpoint, resolveCheckpointDir } from '../../model/checkpoint.ts';
import { PRESET_NAMES, resolveModelConfig, type PresetName } from '../../model/config.ts';
import { LlamaModel } from '../../model/llama.ts';
import type { WeightMap } from '../../model/llama.ts';
import { Tokenizer } from '../../model/tokenizer.ts';
import { formatAction, AGENT_SPECIAL_TOKENS } from '../../agent/protocol.ts';
import { SqlEnvironment } from '../../agent/sql-env.ts';
import { promptContractFiles, readPromptContract } from '../../agent/prompt-contract.ts';
import { addPromptOptions, envDepsFromCli, promptFromCli, type PromptCliOptions } from '../prompt-options.ts';
import type { ExecResult } from '../../sql/types.ts';
import { resolveDatabase } from '../../data/databases.ts';
import type { DatabaseCatalog } from '../../data/catalog.ts';
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

const sqlRow = z.object({
  db_id: z.string().min(1),
  question: z.string().min(1),
  evidence: z.string().nullish(),
  SQL: z.string().min(1).optional(),
  query: z.string().min(1).optional(),
  /** Optional reasoning to put in <think>; otherwise a short note naming the tables the SQL reads. */
  think: z.string().optional(),
});
const messagesRow = z.object({ messages: z.array(chatMessageSchema).min(1) });

/** Rows of a .jsonl file (one JSON object a line) or of a .json array (BIRD's dev.json). */
export function readRows(path: string): { line: number; value: unknown }[] {
  const text = readText(path, 'dataset');
  if (text.trimStart().startsWith('[')) {
    let arr: unknown;
    try {
      arr = JSON.parse(text);
    } catch (err) {
      throw new AgroError('invalid_input', `${path}: not valid JSON: ${(err as Error).message}`);
    }
    return (arr as unknown[]).map((value, i) => ({ line: i + 1, value }));
  }
  const rows: { line: number; value: unknown }[] = [];
  text.split('\n').forEach((raw, i) => {
    if (!raw.trim()) return;
    try {
      rows.push({ line: i + 1, value: JSON.parse(raw) });
    } catch (err) {
      throw new AgroError('invalid_input', `${path}:${i + 1}: not valid JSON: ${(err as Error).message}`);
    }
  });
  return rows;
}

/** The environment never executes anything while only building prompts. */
const noExecution = {
  execute: (): Promise<ExecResult> => Promise.reject(new AgroError('internal', 'sft builds prompts only; it runs no SQL')),
  close: async (): Promise<void> => {},
};

/** A db_id's database: under a db-root, or from a catalog. */
function dbPathResolver(databases: string | DatabaseCatalog): (dbId: string) => string {
  return (dbId) => (typeof databases === 'string' ? resolveDatabase(databases, dbId) : databases.resolve(dbId).path);
}

/** The distinct databases of the rows made from a question (rows of ready messages and malformed rows name none). */
export function rowDatabases(rows: { value: unknown }[], databases: string | DatabaseCatalog): string[] {
  const dbPathOf = dbPathResolver(databases);
  const ids = new Set<string>();
  for (const { value } of rows) {
    if (messagesRow.safeParse(value).success) continue;
    const r = sqlRow.safeParse(value);
    if (r.success) ids.add(r.data.db_id);
  }
  return [...ids].map(dbPathOf);
}

/**
 * Dataset rows to chat conversations: the SQL agent's opening + one answer turn, or the row's messages.
 * `databases` is a db-root (`<dir>/<db_id>/<db_id>.sqlite`) or a catalog (a factory output names its own).
 */
export function rowsToConversations(rows: { line: number; value: unknown }[], databases: string | DatabaseCatalog, label: string, env = new SqlEnvironment(noExecution)): ChatMessage[][] {
  const dbPathOf = dbPathResolver(databases);
  return rows.map(({ line, value }) => {
    const asMessages = messagesRow.safeParse(value);
    if (asMessages.success) return asMessages.data.messages;
    const r = sqlRow.safeParse(value);
    if (!r.success) {
      const issue = r.error.issues[0];
      throw new AgroError('invalid_input', `${label}:${line}: expected {db_id, question, evidence?, SQL} or {messages}: ${issue.path.join('.') || 'row'}: ${issue.message}`);
    }
    const sql = (r.data.SQL ?? r.data.query ?? '').trim();
    if (!sql) throw new AgroError('invalid_input', `${label}:${line}: row has neither SQL nor query`);
    const dbPath = dbPathOf(r.data.db_id);
    const opening = env.openingFor({ id: `${line}`, dbId: r.data.db_id, dbPath, question: r.data.question, evidence: r.data.evidence ?? undefined, goldSql: sql });
    const tables = tablesRead(sql);
    const think = r.data.think ?? (tables.length ? `The answer reads ${tables.join(', ')}.` : '');
    return [...opening, { role: 'assistant' as const, content: formatAction({ kind: 'answer', content: sql, think }) }];
  });
}

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
  const env = new SqlEnvironment(noExecution, promptFromCli(startDir && existsSync(startDir) ? readPromptContract(startDir) : null, o), envDepsFromCli(o));
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
      outDir: o.out, model, tokenizer, samples, config, resumeFrom, sideFiles: promptContractFiles(env.config), allowChanges: o.allowChanges,
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
