/**
 * `npm run e2e:trl [-- --init DIR --data FILE ...]`: TRL's GRPOTrainer trains an agro checkpoint on an
 * agro-exported dataset with agro's rewards served by the environment server, then checks, completion by
 * completion, that TRL's own record of each reward is what agro's server returned, and that the server's
 * execution part is what `agro eval` says of the same SQL. Not part of npm test: it needs Python packages.
 * Prints SKIP lines and exits 0 when it cannot run here.
 *
 * Flags (env fallbacks in brackets):
 *   --init DIR          an agro checkpoint [AGRO_E2E_CHECKPOINT]; default `agro sft --preset tiny` on data/dev.json.
 *                       Given one, the run must show signal: some completion matched gold, and some group's
 *                       rewards differ (else GRPO has nothing to learn from and the agreement check is empty).
 *   --data FILE         BIRD/Spider questions to export and train on (default data/dev.json)
 *   --db-root DIR       their databases (default data/databases)
 *   --schema-chars N    the prompt's schema budget: the one the checkpoint was trained with (default: its prompt contract, else the environment's)
 *   --steps N [AGRO_E2E_STEPS, 3]  --group G [AGRO_E2E_GROUP, 8]  --prompts P (per step, 1)  --len L [AGRO_E2E_LEN, 96]
 *   --multiturn         agro's multi-turn episodes through the server's sessions (agro_trl.agro_rollout_func): also checks,
 *                       episode by episode, that every token the environment wrote (<|tool|>, the observation,
 *                       <|end|><|assistant|>) is masked out of the loss and every other completion token is not
 *   --env               TRL's own tool loop instead: GRPOTrainer(environment_factory=AgroEnv) (integrations/python/agro_env.py),
 *                       execute_sql answered in the server's sessions, the reward the environment's get_reward; checks each
 *                       episode's reward against agro's own scoring of the same turns in this process (not the server)
 *   --turn-tokens N (64, with --multiturn: --len is then the episode's budget)
 *   --temperature T (1.0)  --venv DIR [AGRO_E2E_VENV] (a venv with trl; default runs/e2e-trl/venv, created from the local index)
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { serveEnv } from '../src/server/env.ts';
import { catalogFromDbRoot } from '../src/data/catalog.ts';
import { parseAction, SQL_AGENT_ACTIONS } from '../src/agent/protocol.ts';
import { listCheckpoints } from '../src/train/run-state.ts';
import { Tokenizer } from '../src/model/tokenizer.ts';
import { CHAT_TOKENS } from '../src/model/chat.ts';
import { checkpointPrompt, PROMPT_FIELDS, type PromptContract } from '../src/prompt/contract.ts';
import { SqlEnvironment, sqlEnvConfigSchema } from '../src/agent/sql-env.ts';
import { SqlPool } from '../src/sql/pool.ts';
import { scoreItems, type RewardItem } from '../src/server/env-reward.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RUN = join(ROOT, 'runs/e2e-trl');
const BIN = join(ROOT, 'bin/agro.js');

function fail(why: string): never {
  console.error(`FAIL e2e:trl: ${why}`);
  process.exit(1);
}

const { values: argv } = (() => {
  try {
    return parseArgs({
      args: process.argv.slice(2),
      options: {
        init: { type: 'string' },
        data: { type: 'string' },
        'db-root': { type: 'string' },
        'schema-chars': { type: 'string' },
        steps: { type: 'string' },
        group: { type: 'string' },
        prompts: { type: 'string' },
        len: { type: 'string' },
        temperature: { type: 'string' },
        venv: { type: 'string' },
        multiturn: { type: 'boolean' },
        env: { type: 'boolean' },
        'turn-tokens': { type: 'string' },
      },
    });
  } catch (e) {
    fail((e as Error).message);
  }
})();
const num = (flagValue: string | undefined, envName: string | null, dflt: number): number => {
  const raw = flagValue ?? (envName ? process.env[envName] : undefined);
  const v = raw === undefined ? dflt : Number(raw);
  if (!Number.isFinite(v) || v <= 0) fail(`${raw} is not a positive number`);
  return v;
};
const STEPS = num(argv.steps, 'AGRO_E2E_STEPS', 3);
const GROUP = num(argv.group, 'AGRO_E2E_GROUP', 8);
const PROMPTS = num(argv.prompts, null, 1);
const LEN = num(argv.len, 'AGRO_E2E_LEN', 96);
const TEMPERATURE = num(argv.temperature, null, 1);
/** Asked on the command line; else the checkpoint's contract (as predict reads it). */
const SCHEMA_CHARS_ASKED = argv['schema-chars'] !== undefined ? num(argv['schema-chars'], null, 0) : undefined;
const MULTI = argv.multiturn === true;
const ENV = argv.env === true;
if (MULTI && ENV) fail('give --multiturn (agro_rollout_func) or --env (environment_factory), not both');
const TURN_TOKENS = num(argv['turn-tokens'], null, 64);
const INIT = argv.init ?? process.env.AGRO_E2E_CHECKPOINT;
const DATA = resolve(argv.data ?? join(ROOT, 'data/dev.json'));
const DB_ROOT = resolve(argv['db-root'] ?? join(ROOT, 'data/databases'));
const REWARDS = [
  { name: 'execution', weight: 1 },
  { name: 'format', weight: 0.25 },
  { name: 'sql_overlap', weight: 0.25 },
];

const PYARROW_CHECK = `
import sys, pyarrow.parquet as pq
t = pq.read_table(sys.argv[1])
s = t.schema
assert str(s.field("prompt").type) == "list<element: struct<role: string not null, content: string not null> not null>", s.field("prompt").type
assert s.field("reward_model").type.get_field_index("ground_truth") >= 0
row = t.slice(0, 1).to_pylist()[0]
kw = row["extra_info"]["tools_kwargs"]["run_sql"]["create_kwargs"]
assert kw["db_id"] == row["extra_info"]["db_id"], kw
assert row["prompt"][0]["role"] == "system" and row["data_source"] == "agro_sql"
print(f"{t.num_rows} rows, columns {t.column_names}")
`;

function skip(why: string): never {
  console.log(`SKIP e2e:trl: ${why}`);
  process.exit(0);
}
function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}) {
  return spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, ...opts.env }, timeout: opts.timeoutMs ?? 30 * 60_000, maxBuffer: 256 * 1024 * 1024 });
}
/** Async, unlike run(): the environment server lives in this process and must keep answering meanwhile. */
function runAsync(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ status: number | null; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-20_000);
    });
    child.on('close', (status) => res({ status, stderr }));
  });
}
function agro(...args: string[]): string {
  const r = run(process.execPath, [BIN, ...args]);
  if (r.status !== 0) fail(`agro ${args[0]} exited ${r.status}: ${r.stderr.trim().split('\n').at(-1)}`);
  return r.stdout;
}

/** A venv with trl: the given one, or a new one under runs/ filled from the local package index. */
function pythonWithTrl(): string {
  const venv = resolve(argv.venv ?? process.env.AGRO_E2E_VENV ?? join(RUN, 'venv'));
  const py = join(venv, 'bin/python');
  const has = (): boolean => existsSync(py) && run(py, ['-c', 'import trl, datasets, torch']).status === 0;
  if (has()) return py;
  if (run('python3', ['--version']).status !== 0) skip('no python3 on PATH');
  console.log(`e2e:trl: creating ${venv} and installing trl from the local package index (about a minute) ...`);
  if (!existsSync(py) && run('python3', ['-m', 'venv', venv]).status !== 0) skip(`python3 -m venv ${venv} failed (is python3-venv installed?)`);
  // --retries 0: an index that cannot be reached fails at once instead of backing off for minutes.
  const pip = run(py, ['-m', 'pip', 'install', '--retries', '0', '--timeout', '10', 'trl', 'pyarrow'], { timeoutMs: 15 * 60_000 });
  if (pip.status !== 0 || !has()) skip(`pip install trl failed: ${(pip.stderr || pip.stdout).trim().split('\n').at(-1)}`);
  return py;
}

function checkpoint(): string {
  if (INIT) {
    if (!existsSync(join(INIT, 'config.json')) || !existsSync(join(INIT, 'model.safetensors'))) fail(`${INIT} is not an agro checkpoint (config.json, model.safetensors)`);
    return resolve(INIT);
  }
  const out = join(RUN, 'sft');
  if (!listCheckpoints(out).length) {
    console.log('e2e:trl: training a tiny agro checkpoint (agro sft --preset tiny, 30 steps on data/dev.json) ...');
    agro('sft', '--preset', 'tiny', '--data', join(ROOT, 'data/dev.json'), '--db-root', DB_ROOT, '--steps', '30', '--out', out, '--json');
  }
  return listCheckpoints(out).at(-1)!.dir;
}

interface LoggedReward {
  step: number | null;
  db_id: string;
  gold_sql: string;
  completion?: string;
  turns?: string[];
  tool_calls?: number;
  /** The environment path's episode log: the question, and what each execute_sql call returned. */
  question?: string;
  evidence?: string;
  observations?: string[];
  total: number;
  pred_sql: string;
  correct: boolean;
  parts: Record<string, { value: number; reason: string }>;
}
interface TrlResult {
  step_seconds: number[];
  log_history: Record<string, number>[];
  rows: number;
  rows_dropped: number;
  /** TRL's own record (log_completions): every completion and the reward it used, in batch order. */
  completions: { step: number; completion: string; reward: number; advantage: number }[];
  versions: Record<string, string>;
}

async function main(): Promise<void> {
  mkdirSync(RUN, { recursive: true });
  const py = pythonWithTrl();
  const ck = checkpoint();
  const dataDir = join(RUN, 'data');
  // The prompt must be the one the checkpoint was trained on: its prompt contract when it has one
  // (a --schema-chars given on top wins, with agro's warning), else the budget given or the environment's.
  const hasContract = existsSync(join(ck, 'prompt_contract.json'));
  const prompt = checkpointPrompt(ck, { schemaChars: SCHEMA_CHARS_ASKED });
  const promptArgs = [...(hasContract ? ['--prompt-from', ck] : []), ...(!hasContract || SCHEMA_CHARS_ASKED !== undefined ? ['--schema-chars', String(prompt.schemaChars)] : [])];
  agro('export', '--format', 'trl', '--data', DATA, '--db-root', DB_ROOT, '--out', dataDir, '--val', '0', ...promptArgs);
  // The verl export as pyarrow (what verl's RLHFDataset uses underneath) reads it: nested types intact.
  const verlDir = join(RUN, 'verl');
  agro('export', '--format', 'verl', '--data', DATA, '--db-root', DB_ROOT, '--out', verlDir, '--val', '0.1', ...promptArgs);
  const check = run(py, ['-c', PYARROW_CHECK, join(verlDir, 'train.parquet')]);
  if (check.status !== 0) fail(`pyarrow could not read the verl export as verl expects: ${check.stderr.trim().split('\n').at(-1)}`);
  console.log(`e2e:trl: verl parquet read by pyarrow: ${check.stdout.trim()}`);
  const out = join(RUN, 'out');
  const logPath = join(out, 'rewards.jsonl');
  mkdirSync(out, { recursive: true });
  writeFileSync(logPath, '');
  // Multi-turn episodes run in the server's sessions: turns and observations as the checkpoint's contract says.
  const srv = await serveEnv({ catalog: catalogFromDbRoot(DB_ROOT), env: checkpointPrompt(ck) });
  console.log(`e2e:trl: environment server at ${srv.url}; GRPOTrainer ${STEPS} steps, ${PROMPTS} prompt(s) × group ${GROUP}, ${LEN} completion tokens, T ${TEMPERATURE}, on ${ck}`);
  let trl;
  try {
    const rolloutLog = join(out, 'rollouts.jsonl');
    writeFileSync(rolloutLog, '');
    const multi = MULTI ? { multiturn: true, max_turn_tokens: TURN_TOKENS, max_response_tokens: LEN, rollout_log: rolloutLog } : {};
    // The environment path: TRL's tool loop bounded by the contract's turns (the server's episodes end there too).
    const envPath = ENV ? { environment: true, max_turns: sqlEnvConfigSchema.parse(contract ? Object.fromEntries(PROMPT_FIELDS.map((f) => [f, contract[f]])) : {}).maxTurns } : {};
    const cfg = { checkpoint: ck, train: join(dataDir, 'train.jsonl'), out, steps: STEPS, group: GROUP, prompts_per_step: PROMPTS, max_completion: LEN, temperature: TEMPERATURE, rewards: REWARDS, seed: 0, ...multi, ...envPath };
    trl = await runAsync(py, [join(ROOT, 'scripts/e2e_trl.py'), JSON.stringify(cfg)], { AGRO_URL: srv.url, TOKENIZERS_PARALLELISM: 'false' });
  } finally {
    await srv.close();
  }
  if (trl.status !== 0) fail(`GRPOTrainer run exited ${trl.status}: ${trl.stderr.trim().split('\n').slice(-3).join(' | ')}`);
  const result = JSON.parse(readFileSync(join(out, 'trl_result.json'), 'utf8')) as TrlResult;
  const logged = readFileSync(logPath, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as LoggedReward);
  const B = STEPS * PROMPTS * GROUP;
  if (logged.length !== B) fail(`expected ${B} scored completions, the server's reward log has ${logged.length}`);

  // 1. Each total is the weighted sum of its parts.
  for (const l of logged) {
    const sum = REWARDS.reduce((a, r) => a + r.weight * l.parts[r.name].value, 0);
    if (Math.abs(sum - l.total) > 1e-12) fail(`total ${l.total} is not the weighted sum ${sum} of its parts`);
  }
  // 2. TRL's own record, completion by completion: the same text, and the reward it trained on is the
  //    server's total (TRL holds rewards as float32).
  if (result.completions.length !== B) fail(`TRL logged ${result.completions.length} completions, expected ${B}`);
  result.completions.forEach((t, i) => {
    // Multi-turn: TRL's text is the whole completion, observations included; the server scored its turns.
    if (!MULTI && !ENV && t.completion !== logged[i].completion) fail(`completion ${i}: TRL logged ${JSON.stringify(t.completion.slice(0, 80))}, the server scored ${JSON.stringify((logged[i].completion ?? "").slice(0, 80))}`);
    if (Math.abs(t.reward - logged[i].total) > 1e-6) fail(`completion ${i}: TRL's reward ${t.reward}, agro's server returned ${logged[i].total}`);
  });
  // 3. What TRL logged per step is the mean of what agro returned for that step's completions.
  const rewardKey = `rewards/${ENV ? 'AgroEnv' : 'agro'}/mean`;
  const steps = result.log_history.filter((h) => rewardKey in h);
  if (steps.length !== STEPS) fail(`TRL logged ${steps.length} reward means for ${STEPS} steps`);
  const per = PROMPTS * GROUP;
  const means = steps.map((_, s) => logged.slice(s * per, (s + 1) * per).reduce((a, l) => a + l.total, 0) / per);
  steps.forEach((h, i) => {
    if (Math.abs(h[rewardKey] - means[i]) > 1e-6) fail(`step ${i + 1}: TRL logged reward mean ${h[rewardKey]}, agro's rewards average ${means[i]}`);
  });
  // 4. Question by question, the execution part is what `agro eval` says of the completion's answer, which
  //    agro's own protocol parser finds (and the server reports as the SQL it executed).
  const answers = logged.map((l) => {
    const a = parseAction(l.turns ? l.turns[l.turns.length - 1] : (l.completion ?? ''), SQL_AGENT_ACTIONS);
    return a.kind === 'answer' ? a.content : null;
  });
  logged.forEach((l, i) => {
    if (answers[i] === null && l.parts.execution.value !== 0) fail(`completion ${i} has no answer but execution reward ${l.parts.execution.value}`);
    if (answers[i] !== null && l.pred_sql !== answers[i]) fail(`completion ${i}: the server executed ${JSON.stringify(l.pred_sql)}, the answer is ${JSON.stringify(answers[i])}`);
  });
  const answered = logged.flatMap((l, i) => (answers[i] === null ? [] : [i]));
  const outcomes = new Map<number, string>();
  if (answered.length > 0) {
    const evalData = join(out, 'eval-data.json');
    const evalPred = join(out, 'eval-pred.json');
    writeFileSync(evalData, JSON.stringify(answered.map((i) => ({ db_id: logged[i].db_id, question: `completion ${i}`, SQL: logged[i].gold_sql }))));
    writeFileSync(evalPred, JSON.stringify(answered.map((i) => answers[i])));
    const report = JSON.parse(agro('eval', '--data', evalData, '--pred', evalPred, '--db-root', DB_ROOT, '--json')) as { questions: { outcome: string }[] };
    if (report.questions.length !== answered.length) fail(`agro eval reported ${report.questions.length} questions for ${answered.length} answers`);
    report.questions.forEach((q, k) => {
      const i = answered[k];
      outcomes.set(i, q.outcome);
      const reward = logged[i].parts.execution.value;
      if ((q.outcome === 'match') !== (reward === 1) || (reward !== 0 && reward !== 1)) fail(`completion ${i}: agro eval says ${q.outcome}, the server's execution reward is ${reward}`);
    });
  }
  const evalMatches = [...outcomes.values()].filter((o) => o === 'match').length;

  const episodes = MULTI ? checkEpisodes(ck, join(out, 'rollouts.jsonl'), logged) : null;
  const envEpisodes = ENV ? await checkEnvEpisodes(contract, logged) : null;

  // Per GRPO group (TRL repeats each prompt `group` times in a row): the signal GRPO learns from.
  const groups = Array.from({ length: B / GROUP }, (_, g) => {
    const ls = logged.slice(g * GROUP, (g + 1) * GROUP);
    if (ls.some((l) => l.gold_sql !== ls[0].gold_sql)) fail(`group ${g} mixes questions: TRL's batch is not in groups of ${GROUP}`);
    const totals = ls.map((l) => l.total);
    const outcomeCounts: Record<string, number> = {};
    ls.forEach((_, k) => {
      const o = outcomes.get(g * GROUP + k) ?? 'no_answer';
      outcomeCounts[o] = (outcomeCounts[o] ?? 0) + 1;
    });
    return {
      step: Math.floor(g / PROMPTS) + 1,
      gold: ls[0].gold_sql.slice(0, 60),
      correct: ls.filter((l) => l.parts.execution.value === 1).length,
      outcomes: Object.entries(outcomeCounts).map(([k, v]) => `${k} ${v}`).join(', '),
      min: Math.min(...totals),
      max: Math.max(...totals),
      mean: Math.round((totals.reduce((a, b) => a + b, 0) / GROUP) * 1000) / 1000,
    };
  });
  console.log('\nper GRPO group: completions whose answer matched gold (agro eval), and the spread of agro\'s rewards:');
  console.table(groups);
  const varying = groups.filter((g) => g.max > g.min).length;
  const summary = {
    date: new Date().toISOString(),
    checkpoint: ck,
    data: DATA,
    schemaChars: prompt.schemaChars,
    steps: STEPS,
    promptsPerStep: PROMPTS,
    group: GROUP,
    maxCompletion: LEN,
    temperature: TEMPERATURE,
    rows: result.rows,
    rowsDropped: result.rows_dropped,
    completionsScored: logged.length,
    withAnswer: answered.length,
    evalMatches,
    nonZeroRewards: logged.filter((l) => l.total !== 0).length,
    groupsWithVaryingRewards: varying,
    groupsWithSomeCorrect: groups.filter((g) => g.correct > 0).length,
    wellFormed: logged.filter((l) => l.parts.format.value === 1).length,
    meanRewardPerStep: means,
    stepSeconds: result.step_seconds,
    versions: result.versions,
    ...(episodes ? { episodes } : {}),
    ...(envEpisodes ? { path: 'environment_factory', envEpisodes } : { path: MULTI ? 'rollout_func' : 'single-turn' }),
    load: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
  };
  writeFileSync(join(RUN, 'result.json'), JSON.stringify(summary, null, 2) + '\n');
  console.log(JSON.stringify(summary, null, 2));
  // A trained checkpoint must give GRPO something to learn from, and the agreement check something to agree on.
  if (INIT && evalMatches === 0) fail(`no completion of ${ck} matched gold: the agreement check compared zeros only (is --schema-chars the one it was trained with?)`);
  if (INIT && varying === 0) fail(`no group's rewards differ: GRPO's advantages are all zero`);
  console.log(
    `PASS e2e:trl: ${logged.length} rewards TRL trained on equal agro's server, completion by completion; ${answered.length} completions answered, ` +
      `${evalMatches} matched gold per agro eval and got execution 1, the other answers 0; ${varying} of ${groups.length} groups have differing rewards`,
  );
}

/**
 * The environment path, episode by episode, against agro's own environment in this process (not the server):
 * every observation TRL's tool loop showed the policy is what agro's episode gives for the same <sql> turn, and the
 * reward of the episode's turns, scored by agro's reward code here, is the one the environment's get_reward gave.
 */
async function checkEnvEpisodes(contract: PromptContract | null, logged: LoggedReward[]): Promise<{ episodes: number; toolCalls: number; withToolCall: number; observationsReplayed: number; turnsAgroWouldRefuse: number; rewardsRescored: number }> {
  const catalog = catalogFromDbRoot(DB_ROOT);
  const pool = new SqlPool({ size: 2 });
  const env = new SqlEnvironment(pool, contract ? Object.fromEntries(PROMPT_FIELDS.map((f) => [f, contract[f]])) : {});
  let replayed = 0;
  let divergent = 0;
  try {
    const tasks = logged.map((l, i) => {
      if (l.question === undefined) fail(`episode ${i}: the episode log has no question`);
      const db = catalog.resolve(l.db_id);
      return { id: String(i), dbId: l.db_id, dbPath: db.path, question: l.question, evidence: l.evidence || undefined, goldSql: l.gold_sql, variantPaths: db.variants };
    });
    for (const [i, l] of logged.entries()) {
      const turns = l.turns ?? [l.completion ?? ''];
      const sqlTurns = turns.filter((t) => /<sql>[\s\S]*<\/sql>\s*$/.test(t));
      if ((l.observations ?? []).length !== l.tool_calls || sqlTurns.length !== l.tool_calls) fail(`episode ${i}: ${l.tool_calls} tool calls, ${sqlTurns.length} <sql> turns, ${(l.observations ?? []).length} observations`);
      // agro's episode replayed with the policy's own turns: each <sql> turn's observation must be the one TRL's
      // tool loop showed (turns agro's protocol would have refused, e.g. no <think> first, TRL still runs: counted).
      const ep = await env.start(tasks[i]);
      for (const [k, t] of sqlTurns.entries()) {
        const r = await ep.step(t);
        if (r.done) {
          divergent++;
          break;
        }
        if ((r.observation ?? '') !== l.observations![k]) fail(`episode ${i}, call ${k}: TRL's tool loop showed ${JSON.stringify(l.observations![k].slice(0, 80))}, agro's episode gives ${JSON.stringify((r.observation ?? '').slice(0, 80))}`);
        replayed++;
      }
    }
    const items: RewardItem[] = logged.map((l) => ({ db_id: l.db_id, gold_sql: l.gold_sql, tool_calls: l.tool_calls ?? 0, ...(l.turns ? { turns: l.turns } : { completion: l.completion ?? '' }) }));
    const scored = await scoreItems(env, (_, i) => tasks[i], items, REWARDS);
    scored.results.forEach((r, i) => {
      if (r.total !== logged[i].total) fail(`episode ${i}: get_reward gave ${logged[i].total}, agro's reward of the same turns is ${r.total}`);
      for (const [name, v] of Object.entries(r.parts)) if (v.value !== logged[i].parts[name]?.value) fail(`episode ${i}: ${name} ${logged[i].parts[name]?.value} from the environment, ${v.value} from agro`);
    });
  } finally {
    await pool.close();
  }
  const toolCalls = logged.reduce((a, l) => a + (l.tool_calls ?? 0), 0);
  console.log(`e2e:trl: environment_factory: ${logged.length} episodes re-scored by agro here, equal; ${replayed} tool observations replayed in agro's episodes, equal (${divergent} episodes with a <sql> turn agro's protocol refuses)`);
  return { episodes: logged.length, toolCalls, withToolCall: logged.filter((l) => (l.tool_calls ?? 0) > 0).length, observationsReplayed: replayed, turnsAgroWouldRefuse: divergent, rewardsRescored: logged.length };
}

interface LoggedEpisode {
  step: number | null;
  db_id: string;
  prompt_ids: number[];
  completion_ids: number[];
  env_mask: number[];
  turns: string[];
  observations: string[];
  tool_calls: number;
  end_reason: string;
}

/**
 * Multi-turn: each episode's layout, token by token, with agro's tokenizer: the completion is policy runs
 * (mask 1) and environment replies (mask 0), and each reply is exactly <|tool|> + the observation the server
 * sent + <|end|><|assistant|>, so no observation token carries loss and every policy token does.
 */
function checkEpisodes(ck: string, path: string, logged: LoggedReward[]): { episodes: number; toolCalls: number; withToolCall: number; observationTokens: number; policyTokens: number; endReasons: Record<string, number> } {
  const tk = Tokenizer.load(join(ck, 'tokenizer.json'));
  const [tool, end, asst] = [CHAT_TOKENS.tool, CHAT_TOKENS.end, CHAT_TOKENS.assistant].map((t) => tk.tokenId(t));
  const eps = readFileSync(path, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as LoggedEpisode);
  if (eps.length !== logged.length) fail(`${eps.length} episodes logged by the rollout_func, ${logged.length} rewards`);
  let observationTokens = 0;
  let policyTokens = 0;
  const endReasons: Record<string, number> = {};
  eps.forEach((e, i) => {
    if (e.completion_ids.length !== e.env_mask.length) fail(`episode ${i}: ${e.completion_ids.length} ids, ${e.env_mask.length} mask entries`);
    if (JSON.stringify(e.turns) !== JSON.stringify(logged[i].turns ?? [logged[i].completion])) fail(`episode ${i}: the server scored other turns than the episode played`);
    if (logged[i].tool_calls !== e.tool_calls) fail(`episode ${i}: ${e.tool_calls} tool calls played, ${logged[i].tool_calls} scored`);
    let k = 0;
    let t = 0;
    while (t < e.completion_ids.length) {
      if (e.env_mask[t] === 1) {
        policyTokens++;
        t++;
        continue;
      }
      const want = [tool, ...tk.encode(e.observations[k] ?? ''), end, asst];
      const got = e.completion_ids.slice(t, t + want.length);
      if (k >= e.observations.length || JSON.stringify(got) !== JSON.stringify(want)) fail(`episode ${i}: the masked span at token ${t} is not <|tool|> + observation ${k} + <|end|><|assistant|>`);
      if (e.env_mask.slice(t, t + want.length).some((m) => m !== 0)) fail(`episode ${i}: an observation token carries loss`);
      observationTokens += want.length;
      t += want.length;
      k++;
    }
    // An episode cut by the token budget right after a tool call ends without that reply (agro drops a trailing reply too).
    const dropped = e.end_reason === 'token_budget' && k === e.observations.length - 1 ? 1 : 0;
    if (k + dropped !== e.observations.length || e.observations.length !== e.tool_calls) fail(`episode ${i}: ${k} masked replies for ${e.observations.length} observations and ${e.tool_calls} tool calls`);
    endReasons[e.end_reason] = (endReasons[e.end_reason] ?? 0) + 1;
  });
  const toolCalls = eps.reduce((a, e) => a + e.tool_calls, 0);
  console.log(`e2e:trl: ${eps.length} episodes laid out as agro train lays them: ${policyTokens} policy tokens trained, ${observationTokens} environment tokens masked; ${toolCalls} tool calls`);
  return { episodes: eps.length, toolCalls, withToolCall: eps.filter((e) => e.tool_calls > 0).length, observationTokens, policyTokens, endReasons };
}

await main();
