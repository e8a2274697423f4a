/**
 * `npm run e2e:trl`: TRL's GRPOTrainer trains agro's own tiny checkpoint on an agro-exported dataset with
 * agro's rewards served by the environment server, then checks that every reward TRL logged is what
 * agro says of the same completion (`agro eval` for execution; the weighted parts for the total; the
 * per-step means TRL logged). Not part of npm test: it needs Python packages. Prints SKIP lines and
 * exits 0 when it cannot run here.
 *
 * Env: AGRO_E2E_VENV (a venv with trl; default runs/e2e-trl/venv, created with pip from the local index),
 * AGRO_E2E_CHECKPOINT (default: `agro sft --preset tiny` on data/dev.json), AGRO_E2E_STEPS (3),
 * AGRO_E2E_GROUP (8), AGRO_E2E_LEN (96).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveEnv } from '../src/server/env.ts';
import { catalogFromDbRoot } from '../src/data/catalog.ts';
import { parseAction, SQL_AGENT_ACTIONS } from '../src/agent/protocol.ts';
import { listCheckpoints } from '../src/train/run-state.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RUN = join(ROOT, 'runs/e2e-trl');
const BIN = join(ROOT, 'bin/agro.js');
const DB_ROOT = join(ROOT, 'data/databases');
const num = (name: string, dflt: number): number => (process.env[name] ? Number(process.env[name]) : dflt);
const STEPS = num('AGRO_E2E_STEPS', 3);
const GROUP = num('AGRO_E2E_GROUP', 8);
const LEN = num('AGRO_E2E_LEN', 96);
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
function fail(why: string): never {
  console.error(`FAIL e2e:trl: ${why}`);
  process.exit(1);
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
  const venv = resolve(process.env.AGRO_E2E_VENV ?? join(RUN, 'venv'));
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
  if (process.env.AGRO_E2E_CHECKPOINT) return resolve(process.env.AGRO_E2E_CHECKPOINT);
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
  completion: string;
  total: number;
  pred_sql: string;
  correct: boolean;
  parts: Record<string, { value: number; reason: string }>;
}

async function main(): Promise<void> {
  mkdirSync(RUN, { recursive: true });
  const py = pythonWithTrl();
  const ck = checkpoint();
  const dataDir = join(RUN, 'data');
  // The tiny model has 512 positions: a short schema keeps prompt + completion inside them.
  agro('export', '--format', 'trl', '--data', join(ROOT, 'data/dev.json'), '--db-root', DB_ROOT, '--out', dataDir, '--val', '0', '--schema-chars', '300');
  // The verl export as pyarrow (what verl's RLHFDataset uses underneath) reads it: nested types intact.
  const verlDir = join(RUN, 'verl');
  agro('export', '--format', 'verl', '--data', join(ROOT, 'data/dev.json'), '--db-root', DB_ROOT, '--out', verlDir, '--val', '0.1');
  const check = run(py, ['-c', PYARROW_CHECK, join(verlDir, 'train.parquet')]);
  if (check.status !== 0) fail(`pyarrow could not read the verl export as verl expects: ${check.stderr.trim().split('\n').at(-1)}`);
  console.log(`e2e:trl: verl parquet read by pyarrow: ${check.stdout.trim()}`);
  const out = join(RUN, 'out');
  const logPath = join(out, 'rewards.jsonl');
  mkdirSync(out, { recursive: true });
  writeFileSync(logPath, '');
  const srv = await serveEnv({ catalog: catalogFromDbRoot(DB_ROOT) });
  console.log(`e2e:trl: environment server at ${srv.url}; GRPOTrainer ${STEPS} steps, group ${GROUP}, ${LEN} completion tokens, on ${ck}`);
  let trl;
  try {
    const cfg = { checkpoint: ck, train: join(dataDir, 'train.jsonl'), out, steps: STEPS, group: GROUP, max_completion: LEN, rewards: REWARDS, seed: 0 };
    trl = await runAsync(py, [join(ROOT, 'scripts/e2e_trl.py'), JSON.stringify(cfg)], { AGRO_URL: srv.url, TOKENIZERS_PARALLELISM: 'false' });
  } finally {
    await srv.close();
  }
  if (trl.status !== 0) fail(`GRPOTrainer run exited ${trl.status}: ${trl.stderr.trim().split('\n').slice(-3).join(' | ')}`);
  const result = JSON.parse(readFileSync(join(out, 'trl_result.json'), 'utf8')) as { step_seconds: number[]; log_history: Record<string, number>[]; rows: number; rows_dropped: number };
  const logged = readFileSync(logPath, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as LoggedReward);
  if (logged.length !== STEPS * GROUP) fail(`expected ${STEPS * GROUP} scored completions, the reward log has ${logged.length}`);

  // 1. Each total is the weighted sum of its parts.
  for (const l of logged) {
    const sum = REWARDS.reduce((a, r) => a + r.weight * l.parts[r.name].value, 0);
    if (Math.abs(sum - l.total) > 1e-12) fail(`total ${l.total} is not the weighted sum ${sum} of its parts`);
  }
  // 2. What TRL logged per step is the mean of what agro returned for that step's completions.
  const steps = result.log_history.filter((h) => 'rewards/agro/mean' in h);
  if (steps.length !== STEPS) fail(`TRL logged ${steps.length} reward means for ${STEPS} steps`);
  const byStep = new Map<number, number[]>();
  for (const l of logged) byStep.set(l.step ?? -1, [...(byStep.get(l.step ?? -1) ?? []), l.total]);
  const means = [...byStep.entries()].sort((a, b) => a[0] - b[0]).map(([, v]) => v.reduce((a, b) => a + b, 0) / v.length);
  steps.forEach((h, i) => {
    if (Math.abs(h['rewards/agro/mean'] - means[i]) > 1e-6) fail(`step ${i + 1}: TRL logged reward mean ${h['rewards/agro/mean']}, agro's rewards average ${means[i]}`);
  });
  // 3. The execution part is what `agro eval` says of the completion's answer (agro's own protocol parser finds it).
  const answered = logged.flatMap((l, i) => {
    const a = parseAction(l.completion, SQL_AGENT_ACTIONS);
    return a.kind === 'answer' ? [{ i, sql: a.content }] : [];
  });
  for (const l of logged) {
    const a = parseAction(l.completion, SQL_AGENT_ACTIONS);
    if (a.kind !== 'answer' && l.parts.execution.value !== 0) fail(`a completion without an answer got execution reward ${l.parts.execution.value}`);
  }
  let evalMatches = 0;
  if (answered.length > 0) {
    const evalData = join(out, 'eval-data.json');
    const evalPred = join(out, 'eval-pred.json');
    writeFileSync(evalData, JSON.stringify(answered.map(({ i }) => ({ db_id: logged[i].db_id, question: '', SQL: logged[i].gold_sql }))));
    writeFileSync(evalPred, JSON.stringify(answered.map(({ sql }) => sql)));
    const report = JSON.parse(agro('eval', '--data', evalData, '--pred', evalPred, '--db-root', DB_ROOT, '--json')) as { questions: { outcome: string }[] };
    report.questions.forEach((q, k) => {
      const l = logged[answered[k].i];
      const reward = l.parts.execution.value;
      if ((q.outcome === 'match') !== (reward === 1)) fail(`completion ${answered[k].i}: agro eval says ${q.outcome}, the reward TRL logged has execution ${reward}`);
      if (q.outcome === 'match') evalMatches++;
    });
  }
  const summary = {
    date: new Date().toISOString(),
    checkpoint: ck,
    steps: STEPS,
    group: GROUP,
    maxCompletion: LEN,
    rows: result.rows,
    rowsDropped: result.rows_dropped,
    completionsScored: logged.length,
    withAnswer: answered.length,
    evalMatches,
    wellFormed: logged.filter((l) => l.parts.format.value === 1).length,
    meanRewardPerStep: means,
    stepSeconds: result.step_seconds,
    load: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
  };
  writeFileSync(join(RUN, 'result.json'), JSON.stringify(summary, null, 2) + '\n');
  console.log(JSON.stringify(summary, null, 2));
  console.log(`PASS e2e:trl: ${logged.length} rewards TRL logged over ${STEPS} steps equal agro's (${answered.length} completions gave an answer, ${evalMatches} matched gold per agro eval)`);
}

await main();
