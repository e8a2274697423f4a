import type { Command } from 'commander';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AgroError } from '../../errors.ts';
import { initBackend, type BackendName } from '../../model/backend.ts';
import { loadCheckpoint, type Checkpoint } from '../../model/checkpoint.ts';
import { LlamaModel } from '../../model/llama.ts';
import { SqlEnvironment, type SqlTask } from '../../agent/sql-env.ts';
import { readDataset } from '../../eval/read-dataset.ts';
import { resolveDatabases, suiteVariants } from '../../eval/databases.ts';
import { SqlPool } from '../../sql/pool.ts';
import { listCheckpoints } from '../../rl/sft.ts';
import { resolveTrainConfig, runGrpo, type TrainConfigInput, type StepRecord } from '../../rl/trainer.ts';
import { PRESET_NAMES } from '../../rl/config.ts';

/**
 * `agro train`: group-relative RL of a checkpoint as a multi-turn SQL agent, on a dataset of BIRD-style
 * rows (e.g. `agro synth`'s dataset.jsonl), with rewards from execution on the original and variant databases.
 */

interface TrainCliOptions {
  data: string;
  init?: string;
  out: string;
  algo?: string;
  config?: string;
  dbRoot: string;
  variants?: string;
  heldOut?: string;
  steps?: number;
  groupSize?: number;
  prompts?: number;
  lr?: number;
  seed?: number;
  resume?: boolean;
  backend?: BackendName;
  json?: boolean;
}

/** A checkpoint directory, or a run directory whose newest checkpoint is used. */
export function resolveCheckpointDir(path: string): string {
  if (existsSync(join(path, 'config.json'))) return path;
  const cks = listCheckpoints(path);
  if (cks.length) return cks[cks.length - 1].dir;
  throw new AgroError('not_found', `no checkpoint at ${path} (expected config.json + model.safetensors, or a run directory with checkpoints/step-N)`);
}

/** Dataset rows as SQL agent tasks, with each database's variants (test-suite reward) when a variants dir is given. */
export function loadSqlTasks(dataPath: string, dbRoot: string, variantsDir?: string): SqlTask[] {
  const ds = readDataset(dataPath);
  const dbs = resolveDatabases(dbRoot, ds.items.map((it) => it.dbId));
  return ds.items.map((it) => ({
    id: String(it.questionId ?? it.index),
    dbId: it.dbId,
    dbPath: dbs.get(it.dbId) as string,
    question: it.question,
    evidence: it.evidence,
    goldSql: it.gold,
    difficulty: it.difficulty,
    variantPaths: variantsDir ? suiteVariants(variantsDir, it.dbId) : [],
  }));
}

function readConfigFile(path: string): TrainConfigInput {
  if (!existsSync(path)) throw new AgroError('not_found', `config file not found: ${path}`);
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as TrainConfigInput;
  } catch (err) {
    throw new AgroError('invalid_input', `${path}: not valid JSON: ${(err as Error).message}`);
  }
}

function num(flag: string, min: number, integer: boolean): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) {
      throw new AgroError('usage', `${flag} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got "${v}"`);
    }
    return n;
  };
}

export async function runTrainCommand(o: TrainCliOptions): Promise<void> {
  const config: TrainConfigInput = o.config ? readConfigFile(o.config) : {};
  if (o.algo) config.algo = o.algo;
  if (o.steps !== undefined) config.steps = o.steps;
  if (o.groupSize !== undefined) config.groupSize = o.groupSize;
  if (o.prompts !== undefined) config.promptsPerStep = o.prompts;
  if (o.lr !== undefined) config.lr = o.lr;
  if (o.seed !== undefined) config.seed = o.seed;
  const { algo } = resolveTrainConfig(config); // fail on a bad config before loading anything heavy

  const tasks = loadSqlTasks(o.data, o.dbRoot, o.variants);
  const heldOut = o.heldOut ? loadSqlTasks(o.heldOut, o.dbRoot, o.variants) : undefined;
  const existing = listCheckpoints(o.out);
  if (existing.length && !o.resume) {
    throw new AgroError('usage', `${o.out} already has checkpoints (newest ${existing.at(-1)?.dir}); pass --resume to continue or choose another --out`);
  }
  const log = (msg: string): void => {
    if (!o.json) process.stderr.write(`${msg}\n`);
  };
  await initBackend(o.backend);

  let ck: Checkpoint;
  let resumeFrom: { trainerState: object; optimizerState?: Checkpoint['optimizerState'] } | undefined;
  if (o.resume && existing.length) {
    const dir = existing[existing.length - 1].dir;
    ck = loadCheckpoint(dir);
    if (!ck.trainerState) throw new AgroError('invalid_input', `${dir} has no trainer_state.json to resume from`);
    resumeFrom = { trainerState: ck.trainerState, optimizerState: ck.optimizerState };
    log(`resuming from ${dir}`);
  } else {
    if (!o.init) throw new AgroError('usage', '--init <checkpoint or run dir> is required (train a cold start with `agro sft` first)');
    ck = loadCheckpoint(resolveCheckpointDir(o.init));
  }
  // The KL reference is the starting policy: the --init checkpoint (also when resuming).
  let reference: LlamaModel | undefined;
  if (algo.kl.coef > 0) {
    if (!o.init) throw new AgroError('usage', `algorithm has kl.coef ${algo.kl.coef}: --init is needed as the KL reference, also with --resume`);
    reference = loadCheckpoint(resolveCheckpointDir(o.init)).model;
  }

  const pool = new SqlPool();
  const env = new SqlEnvironment(pool);
  const controller = new AbortController();
  const onSigint = (): void => controller.abort();
  process.once('SIGINT', onSigint);
  try {
    const res = await runGrpo({
      outDir: o.out,
      env,
      tasks,
      heldOut,
      model: ck.model,
      tokenizer: ck.tokenizer,
      reference,
      config,
      resumeFrom,
      progress: Boolean(process.stderr.isTTY) && !o.json,
      signal: controller.signal,
      onStep: o.json || process.stderr.isTTY ? undefined : (r: StepRecord) => log(`step ${r.step}: reward ${r.reward.toFixed(3)} acc ${r.accuracy.toFixed(2)} tool calls ${r.tool_calls.toFixed(2)}`),
    });
    const summary = { steps: res.steps, checkpoint: res.checkpoint, interrupted: res.interrupted, eval: res.finalEval ?? null };
    if (o.json) process.stdout.write(JSON.stringify(summary) + '\n');
    else {
      process.stdout.write(`${res.interrupted ? 'interrupted' : 'done'} after ${res.steps} steps\ncheckpoint: ${res.checkpoint}\nmetrics: ${join(o.out, 'metrics.jsonl')}\n`);
      if (res.finalEval) process.stdout.write(`held-out execution accuracy: ${(100 * res.finalEval.accuracy).toFixed(1)}% of ${res.finalEval.n} (tool calls per episode ${res.finalEval.toolCalls.toFixed(2)})\n`);
      if (res.interrupted) process.stdout.write(`continue with: agro train --data ${o.data} --out ${o.out} --resume${o.init ? ` --init ${o.init}` : ''}\n`);
    }
  } finally {
    process.removeListener('SIGINT', onSigint);
    await pool.close();
    ck.model.dispose();
    reference?.dispose();
  }
}

export function register(program: Command): void {
  program
    .command('train')
    .description('Group-relative RL (GRPO family) of a checkpoint as a multi-turn SQL agent, rewarded by execution.')
    .requiredOption('--data <file>', 'training questions: BIRD-style .json/.jsonl rows {db_id, question, evidence?, SQL}')
    .requiredOption('--out <dir>', 'run directory (metrics.jsonl, checkpoints/step-N, eval.json)')
    .option('--init <checkpoint>', 'starting policy (and KL reference): a checkpoint or a run directory (its newest checkpoint)')
    .option('--algo <name>', `algorithm preset: ${PRESET_NAMES.join(', ')}`)
    .option('--config <file>', 'JSON train config (TrainConfig fields; flags override it)')
    .option('--db-root <dir>', 'databases as <dir>/<db_id>/<db_id>.sqlite', 'data/databases')
    .option('--variants <dir>', 'variant databases as <dir>/<db_id>/*.sqlite (e.g. the variants/ of `agro synth`): the reward needs a match on each')
    .option('--held-out <file>', 'questions to evaluate on at the end (and every evalEvery steps)')
    .option('--steps <n>', 'RL steps', num('--steps', 1, true))
    .option('--group-size <n>', 'responses per prompt (G)', num('--group-size', 1, true))
    .option('--prompts <n>', 'prompts per step', num('--prompts', 1, true))
    .option('--lr <x>', 'learning rate', num('--lr', 0, false))
    .option('--seed <n>', 'seed', num('--seed', 0, true))
    .option('--resume', 'continue from the newest checkpoint in --out')
    .option('--backend <name>', 'TensorFlow.js backend: wasm or cpu (default: $AGRO_BACKEND or wasm)')
    .option('--json', 'print a JSON summary and no progress')
    .action((opts: TrainCliOptions) => runTrainCommand(opts));
}
