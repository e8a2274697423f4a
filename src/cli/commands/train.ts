import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { readText } from '../../data/read-json.ts';
import { readInputBytes } from '../../util/fs.ts';
import { createHash } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { AgroError, escapeControls } from '../../errors.ts';
import { prepareOutDir } from '../out-path.ts';
import { LIMITS, numberArg, seedArg } from '../options.ts';
import { initBackend, type BackendName } from '../../model/backend.ts';
import { loadCheckpoint, resolveCheckpointDir, type Checkpoint } from '../../model/checkpoint.ts';
import { LlamaModel } from '../../model/llama.ts';
import { ENGINE_NAMES, type RolloutEngine } from '../../model/engine.ts';
import { createEngine } from '../../model/engines.ts';
import { SqlEnvironment, type SqlTask } from '../../agent/sql-env.ts';
import { readPromptContract } from '../../prompt/contract.ts';
import { addPromptOptions, envDepsFromCli, printWarning, promptFromCli, type PromptCliOptions } from '../prompt-options.ts';
import { resolveTaskSource, tasksFromCatalog } from '../../agent/tasks.ts';
import { createExecutor } from '../../sql/executor.ts';
import type { SqlExecutor } from '../../sql/types.ts';
import { cleanRunCheckpoints, listCheckpoints, recordedSettings, resumeConfig } from '../../train/run-state.ts';
import { runGrpo } from '../../rl/trainer.ts';
import { runTrainingFreeGrpo } from '../../rl/training-free.ts';
import { LlmClient } from '../../llm/client.ts';
import type { StepRecord } from '../../rl/phases.ts';
import { resolveTrainConfig, trainConfigSchema, type TrainConfigInput } from '../../rl/train-config.ts';
import { stepBar } from '../progress.ts';
import { PRESET_NAMES } from '../../rl/algo-config.ts';
import type { Environment, TaskBase } from '../../agent/types.ts';
import { SearchEnvironment, type SearchTask } from '../../search/env.ts';
import { SearchCorpus } from '../../search/corpus.ts';
import type { SearchQuestion } from '../../search/synthesize.ts';
import { printOut } from '../print.ts';
import { anchorSamples, RL_ANCHOR } from '../../rl/anchor.ts';
import { rowDatabases, rowsToConversations } from '../../agent/cold-start/row-conversations.ts';
import { readRows } from '../../data/read-json.ts';

/**
 * `agro train`: group-relative RL of a checkpoint as a multi-turn SQL agent, on a dataset of BIRD-style
 * rows (e.g. `agro synth`'s dataset.jsonl), with rewards from execution on the original and variant databases.
 */

interface TrainCliOptions extends PromptCliOptions {
  task: string;
  data: string;
  init?: string;
  out: string;
  algo?: string;
  config?: string;
  dbRoot?: string;
  variants?: string;
  heldOut?: string;
  steps?: number;
  groupSize?: number;
  prompts?: number;
  lr?: number;
  seed?: number;
  resume?: boolean;
  allowChanges?: boolean;
  backend?: BackendName;
  engine?: string;
  engineThreads?: number;
  llmUrl?: string;
  llmModel?: string;
  json?: boolean;
  anchor?: string;
  anchorWeight?: number;
  anchorBatch?: number;
}

/** Where BIRD/Spider-style data finds its databases when no --db-root is given (a factory output names its own). */
const DEFAULT_DB_ROOT = 'data/databases';

/** Not a preset of the gradient trainer: the experience-library loop of rl/training-free.ts. */
const TRAINING_FREE = 'training_free_grpo';

/** Dataset rows as SQL agent tasks, with each database's variants (test-suite reward) when a variants dir is given. */
/** Questions of `agro synth-search` (its output folder, or questions.jsonl beside corpus.jsonl) as search tasks. */
export function loadSearchTasks(path: string): { corpusPath: string; train: SearchTask[]; heldOut: SearchTask[] } {
  const dir = existsSync(join(path, 'questions.jsonl')) ? path : dirname(path);
  const qPath = join(dir, 'questions.jsonl');
  const corpusPath = join(dir, 'corpus.jsonl');
  for (const f of [qPath, corpusPath]) if (!existsSync(f)) throw new AgroError('not_found', `${f} not found (give the folder written by agro synth-search)`);
  const rows = readText(qPath, 'questions').split('\n').flatMap((line, i) => {
    if (!line.trim()) return [];
    try {
      return [JSON.parse(line) as SearchQuestion];
    } catch (err) {
      throw new AgroError('invalid_input', `${qPath}:${i + 1}: not valid JSON: ${(err as Error).message}`);
    }
  });
  const toTask = (q: SearchQuestion): SearchTask & { difficulty: string } => ({
    id: q.id,
    question: q.question,
    answer: q.answer,
    aliases: q.aliases,
    entities: q.entities,
    difficulty: `${q.hops}-hop`,
  });
  return { corpusPath, train: rows.filter((q) => q.split !== 'heldout').map(toTask), heldOut: rows.filter((q) => q.split === 'heldout').map(toTask) };
}

function readConfigFile(path: string): TrainConfigInput {
  const text = readText(path, 'config');
  try {
    return JSON.parse(text) as TrainConfigInput;
  } catch (err) {
    throw new AgroError('invalid_input', `${path}: not valid JSON: ${(err as Error).message}`);
  }
}


/** The anchor's rows, read before anything heavy: BIRD-style rows (with the dataset's databases) or ready chat messages, as `agro sft` reads them. */
function readAnchorRows(path: string, o: TrainCliOptions): { rows: ReturnType<typeof readRows>; catalog: ReturnType<typeof resolveTaskSource>['catalog']; hash: string } {
  const src = resolveTaskSource(path, { dbRoot: o.dbRoot, defaultDbRoot: DEFAULT_DB_ROOT });
  const rows = readRows(src.dataPath);
  if (rows.length === 0) throw new AgroError('invalid_input', `--anchor ${path}: no rows`);
  // The content's hash goes into train_config.json: a resume with another file of as many samples is a change.
  return { rows, catalog: src.catalog, hash: `sha256:${createHash('sha256').update(readInputBytes(src.dataPath, 'anchor')).digest('hex')}` };
}

/** The anchor's conversations: a BIRD-style row opens with the policy's own prompt (the environment built from its contract), as in `agro sft`. */
async function anchorConversations(anchor: ReturnType<typeof readAnchorRows>, path: string, env: Environment<TaskBase>): Promise<ReturnType<typeof rowsToConversations>> {
  if (!(env instanceof SqlEnvironment)) return rowsToConversations(anchor.rows, anchor.catalog, path);
  await env.prepareAll(rowDatabases(anchor.rows, anchor.catalog));
  return rowsToConversations(anchor.rows, anchor.catalog, path, env);
}

/** Weight and batch: the flags, else on resume the run's (a flag left out keeps the run's value), else the defaults. */
function anchorSettings(o: TrainCliOptions, resuming: boolean): { coef: number; batch: number } {
  const recorded = resuming ? (recordedSettings(join(o.out, 'train_config.json')).anchor as { coef?: number; batch?: number } | undefined) : undefined;
  return { coef: o.anchorWeight ?? recorded?.coef ?? RL_ANCHOR.coef, batch: o.anchorBatch ?? recorded?.batch ?? RL_ANCHOR.batch };
}

export async function runTrainCommand(o: TrainCliOptions): Promise<void> {
  let config: TrainConfigInput = o.config ? readConfigFile(o.config) : {};
  if (o.algo) config.algo = o.algo;
  if (o.steps !== undefined) config.steps = o.steps;
  if (o.groupSize !== undefined) config.groupSize = o.groupSize;
  if (o.prompts !== undefined) config.promptsPerStep = o.prompts;
  if (o.lr !== undefined) config.lr = o.lr;
  if (o.seed !== undefined) config.seed = o.seed;
  const trainingFree = config.algo === TRAINING_FREE;
  if (trainingFree && !o.llmUrl) throw new AgroError('usage', `--algo ${TRAINING_FREE} needs --llm-url (an OpenAI-compatible endpoint that distils the experience library)`);
  // Training-free GRPO uses the grpo preset's rewards and the trainer's rollout settings; it has no loss.
  let { algo, train: trainCfg } = resolveTrainConfig(trainingFree ? { ...config, algo: 'grpo' } : config); // fail on a bad config before loading anything heavy
  const inputs = Object.entries({ '--data': o.data, '--init': o.init, '--held-out': o.heldOut, '--config': o.config, '--variants': o.variants })
    .filter((e): e is [string, string] => e[1] !== undefined)
    .map(([flag, path]) => ({ flag, path }));
  prepareOutDir({ flag: '--out', path: o.out }, inputs);

  if (o.task !== 'sql' && o.task !== 'search') throw new AgroError('usage', `--task must be sql or search, got "${o.task}"`);
  const engineName = o.engine ?? 'tfjs';
  if (!(ENGINE_NAMES as readonly string[]).includes(engineName)) throw new AgroError('usage', `--engine must be one of ${ENGINE_NAMES.join(', ')}, got "${engineName}"`);
  if (o.allowChanges && !o.resume) throw new AgroError('usage', '--allow-changes applies to --resume only');
  if ((o.anchorWeight !== undefined || o.anchorBatch !== undefined) && !o.anchor) throw new AgroError('usage', '--anchor-weight and --anchor-batch apply to --anchor only');
  if (o.anchor && trainingFree) throw new AgroError('usage', `--anchor mixes an SFT loss into weight updates; ${TRAINING_FREE} makes none`);
  const log = (msg: string): void => {
    if (!o.json) process.stderr.write(`${escapeControls(msg)}\n`);
  };
  // A write killed mid-way (SIGKILL) leaves a temp folder that nothing else would remove.
  for (const line of cleanRunCheckpoints(o.out)) log(`checkpoints: ${line} (left by a write that was cut)`);
  const existing = listCheckpoints(o.out);
  if (trainingFree && existsSync(join(o.out, 'state.json')) && !o.resume) {
    throw new AgroError('usage', `${o.out} already has a training-free run; pass --resume to continue or choose another --out`);
  }
  if (existing.length && !o.resume) {
    throw new AgroError('usage', `${o.out} already has checkpoints (newest ${existing.at(-1)?.dir}); pass --resume to continue or choose another --out`);
  }
  const resuming = Boolean(o.resume && existing.length && !trainingFree);
  if (resuming) {
    // Flags left out on resume keep the run's values (runGrpo refuses the ones given that differ, unless --allow-changes).
    const recorded = recordedSettings(join(o.out, 'train_config.json')).train as Record<string, unknown> | undefined;
    config = resumeConfig(recorded ?? {}, Object.keys(trainConfigSchema.shape), config) as TrainConfigInput;
    ({ algo, train: trainCfg } = resolveTrainConfig(config));
  }
  // Each task kind brings its questions, read before the checkpoint is loaded (a bad dataset costs nothing),
  // and its environment; the trainer only sees the Environment interface.
  let searchEnv: Environment<TaskBase & { difficulty?: string }> | undefined;
  let tasks: (TaskBase & { difficulty?: string })[];
  let heldOut: (TaskBase & { difficulty?: string })[] | undefined;
  if (o.task === 'search') {
    const loaded = loadSearchTasks(o.data);
    searchEnv = new SearchEnvironment(SearchCorpus.load(loaded.corpusPath));
    tasks = loaded.train;
    heldOut = o.heldOut ? loadSearchTasks(o.heldOut).heldOut : loaded.heldOut;
  } else {
    // A factory output (folder or its dataset.jsonl) names its database; other files use --db-root.
    const tasksOf = (data: string) => {
      const src = resolveTaskSource(data, { dbRoot: o.dbRoot, variants: o.variants, defaultDbRoot: DEFAULT_DB_ROOT });
      return tasksFromCatalog(src.dataPath, src.catalog);
    };
    tasks = tasksOf(o.data);
    heldOut = o.heldOut ? tasksOf(o.heldOut) : undefined;
  }
  // The anchor's rows are read (and checked) before anything heavy, like the dataset's.
  const anchorRows = o.anchor ? readAnchorRows(o.anchor, o) : undefined;
  // The starting policy (and KL reference) as the checkpoint folder it resolves to, recorded by runGrpo: a resume
  // keeps the run's when --init is left out, and one that names another is refused unless --allow-changes.
  const recordedInit = resuming ? recordedSettings(join(o.out, 'train_config.json')).init : undefined;
  const initDir = o.init !== undefined ? resolve(resolveCheckpointDir(o.init)) : typeof recordedInit === 'string' ? recordedInit : undefined;
  await initBackend(o.backend);

  let ck: Checkpoint;
  let ckDir: string;
  let resumeFrom: { trainerState: object; optimizerState?: Checkpoint['optimizerState'] } | undefined;
  if (resuming) {
    const dir = existing[existing.length - 1].dir;
    ckDir = dir;
    ck = loadCheckpoint(dir);
    if (!ck.trainerState) throw new AgroError('invalid_input', `${dir} has no trainer_state.json to resume from`);
    resumeFrom = { trainerState: ck.trainerState, optimizerState: ck.optimizerState };
    log(`resuming from ${dir}`);
  } else {
    if (!initDir) throw new AgroError('usage', '--init <checkpoint or run dir> is required (train a cold start with `agro sft` first)');
    ckDir = initDir;
    ck = loadCheckpoint(ckDir);
  }
  // The KL reference is the starting policy: the --init checkpoint (also when resuming).
  let reference: LlamaModel | undefined;
  if ((algo.kl.coef > 0 || algo.klInReward.enabled) && !trainingFree) {
    if (!initDir) throw new AgroError('usage', `algorithm "${trainCfg.algo}" measures a KL to the starting policy: --init is needed as the KL reference`);
    reference = loadCheckpoint(initDir).model;
  }

  let pool: SqlExecutor | undefined;
  let env: Environment<TaskBase & { difficulty?: string }>;
  if (searchEnv) env = searchEnv;
  else {
    pool = createExecutor();
    // The prompt the starting policy was trained with (its checkpoint's contract), then the flags.
    env = new SqlEnvironment(pool, promptFromCli(readPromptContract(ckDir), o), envDepsFromCli(o));
  }
  const controller = new AbortController();
  const onSigint = (): void => controller.abort();
  process.once('SIGINT', onSigint);
  let engine: RolloutEngine | undefined;
  const startStep = resumeFrom ? Number((resumeFrom.trainerState as { step?: number }).step ?? 0) : 0;
  const bar = stepBar(!o.json, trainCfg.algo, trainCfg.steps, { start: startStep, format: 'reward {reward} | acc {acc} | tool calls {calls} | {tps} tok/s' });
  try {
    engine = await createEngine(engineName, ck.model, { tokenizer: ck.tokenizer, threads: o.engineThreads });
    if (engineName !== 'tfjs') log(`rollouts on ${engine.name}`);
    if (trainingFree) {
      const llm = new LlmClient({ baseUrl: o.llmUrl!, model: o.llmModel ?? 'default' });
      const res = await runTrainingFreeGrpo({
        env,
        tasks,
        heldOut,
        model: ck.model,
        tokenizer: ck.tokenizer,
        engine,
        llm,
        cfg: trainCfg,
        rewards: algo.rewards,
        outDir: o.out,
        resume: o.resume,
        signal: controller.signal,
        onStep: (r) => bar.update(r.step, { reward: r.reward.toFixed(3), acc: r.accuracy.toFixed(2), calls: String(r.library_size), tps: '-' }),
      });
      bar.stop();
      const summary = { steps: res.steps, experiences: join(o.out, 'experiences.json'), library: res.library.length, interrupted: res.interrupted, eval: res.finalEval ?? null };
      if (o.json) process.stdout.write(JSON.stringify(summary) + '\n');
      else {
        printOut(`${res.interrupted ? 'interrupted' : 'done'} after ${res.steps} steps (no weight update)\nexperiences: ${summary.experiences} (${res.library.length})\nmetrics: ${join(o.out, 'metrics.jsonl')}\n`);
        if (res.finalEval) printOut(`held-out ${o.task === 'sql' ? 'execution accuracy' : 'exact match'} with the library: ${(100 * res.finalEval.accuracy).toFixed(1)}% of ${res.finalEval.n}\n`);
      }
      return;
    }
    // Accuracy 0 on every step means no rollout was ever rewarded as correct: GRPO had nothing to learn from.
    let everCorrect = false;
    const res = await runGrpo({
      engine,
      outDir: o.out,
      env,
      tasks,
      heldOut,
      model: ck.model,
      tokenizer: ck.tokenizer,
      reference,
      config,
      resumeFrom,
      ...(anchorRows ? { anchor: { samples: anchorSamples(await anchorConversations(anchorRows, o.anchor!, env), ck.tokenizer, ck.model.config.maxPositions, `--anchor ${o.anchor!}`), ...anchorSettings(o, resuming), hash: anchorRows.hash } } : {}),
      ...(initDir !== undefined ? { init: initDir } : {}),
      allowChanges: o.allowChanges,
      signal: controller.signal,
      onStep: (r: StepRecord) => {
        if (r.accuracy > 0) everCorrect = true;
        bar.update(r.step, { reward: r.reward.toFixed(3), acc: r.accuracy.toFixed(2), calls: r.tool_calls.toFixed(2), tps: r.tokens_per_s });
      },
    });
    bar.stop();
    if (!everCorrect && res.steps > startStep) {
      printWarning(`accuracy was 0.00 on every step: no rollout answered correctly, so RL had no signal to learn from; start from a checkpoint that answers some questions (agro sft --init base on this data), or use easier questions`);
    }
    const summary = { steps: res.steps, checkpoint: res.checkpoint, interrupted: res.interrupted, eval: res.finalEval ?? null };
    if (o.json) process.stdout.write(JSON.stringify(summary) + '\n');
    else {
      printOut(`${res.interrupted ? 'interrupted' : 'done'} after ${res.steps} steps\ncheckpoint: ${res.checkpoint}\nmetrics: ${join(o.out, 'metrics.jsonl')}\n`);
      if (res.finalEval) printOut(`held-out ${o.task === 'sql' ? 'execution accuracy' : 'exact match'}: ${(100 * res.finalEval.accuracy).toFixed(1)}% of ${res.finalEval.n} (tool calls per episode ${res.finalEval.toolCalls.toFixed(2)})\n`);
      if (res.interrupted) printOut(`continue with: agro train --task ${o.task} --data ${o.data} --out ${o.out} --resume${o.init ? ` --init ${o.init}` : ''}${o.anchor ? ` --anchor ${o.anchor}` : ''}\n`);
      else if (o.task === 'sql') printOut(`next: agro ask --policy ${o.out} --db ${(tasks[0] as Partial<SqlTask> | undefined)?.dbPath ?? '<database>'} "<your question>"   (or agro predict --policy ${o.out} --data <questions> --out <dir>)\n`);
    }
  } finally {
    process.removeListener('SIGINT', onSigint);
    await engine?.dispose();
    await pool?.close();
    ck.model.dispose();
    reference?.dispose();
  }
}

export function register(program: Command): void {
  const cmd = program
    .command('train')
    .description('Group-relative RL (GRPO family) of a checkpoint as a multi-turn agent: SQL (rewarded by execution) or search (E-GRPO).')
    .requiredOption('--data <file>', 'sql: BIRD-style .json/.jsonl rows {db_id, question, evidence?, SQL}, or an agro synth output (folder or dataset.jsonl); search: the folder of agro synth-search')
    .option('--task <kind>', 'sql or search', 'sql')
    .requiredOption('--out <dir>', 'run directory (metrics.jsonl, checkpoints/step-N, eval.json)')
    .option('--init <checkpoint>', 'starting policy (and KL reference): a checkpoint, a run directory (its newest checkpoint) or base (the built-in base model)')
    .option('--algo <name>', `algorithm preset: ${PRESET_NAMES.join(', ')}, or ${TRAINING_FREE} (no weight update; needs --llm-url)`)
    .option('--config <file>', 'JSON train config (TrainConfig fields; flags override it)')
    .option('--db-root <dir>', `databases as <dir>/<db_id>/<db_id>.sqlite (default ${DEFAULT_DB_ROOT}; a factory output, its folder or its dataset.jsonl, names its own)`)
    .option('--variants <dir>', 'variant databases as <dir>/<db_id>/*.sqlite (e.g. the variants/ of `agro synth`): the reward needs a match on each')
    .option('--held-out <file>', 'questions to evaluate on at the end (search: default the heldout split of --data)')
    .option('--steps <n>', 'RL steps', numberArg('--steps', { min: 1, max: LIMITS.steps }))
    .option('--group-size <n>', 'responses per prompt (G)', numberArg('--group-size', { min: 1, max: LIMITS.batch }))
    .option('--prompts <n>', 'prompts per step', numberArg('--prompts', { min: 1, max: LIMITS.batch }))
    .option('--lr <x>', 'learning rate', numberArg('--lr', { integer: false, positive: true, max: 1 }))
    .option('--seed <n>', 'seed', seedArg())
    .option('--resume', 'continue from the newest checkpoint in --out (with the same settings)')
    .option('--allow-changes', 'with --resume: continue with settings other than the run\'s (recorded in train_config.json)')
    .option('--backend <name>', 'TensorFlow.js backend: wasm or cpu (default: $AGRO_BACKEND or wasm)')
    .option('--engine <name>', `rollout sampler: ${ENGINE_NAMES.join(' or ')} (llama.cpp: a GGUF export of the policy, re-synced after each update)`)
    .option('--engine-threads <n>', 'llama.cpp engine: CPU threads (default 1)', numberArg('--engine-threads', { min: 1, max: LIMITS.threads }))
    .option('--llm-url <url>', `${TRAINING_FREE}: OpenAI-compatible base URL (e.g. http://127.0.0.1:8000/v1) of the LLM that distils experiences`)
    .option('--llm-model <name>', `${TRAINING_FREE}: model name sent to --llm-url (default "default")`)
    .option('--anchor <file>', 'SFT data whose loss joins every step\'s (InstructGPT\'s PPO-ptx: it keeps what SFT taught on questions RL never samples): what `agro sft --data` reads, e.g. a quickstart\'s cold_start.jsonl')
    .option('--anchor-weight <x>', `weight of the anchor's loss (default ${RL_ANCHOR.coef})`, numberArg('--anchor-weight', { integer: false, min: 0, max: 100 }))
    .option('--anchor-batch <n>', `anchor samples a step (default ${RL_ANCHOR.batch})`, numberArg('--anchor-batch', { min: 1, max: LIMITS.batch }))
    .option('--json', 'print a JSON summary and no progress');
  addPromptOptions(cmd).action((opts: TrainCliOptions) => runTrainCommand(opts));
}
