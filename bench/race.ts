// `npm run bench -- race [--quickstart DIR | --init CK --data RL.json --held-out HELD.json --db-root DIR]
//     [--seeds 0,1,2] [--steps 400] [--prompts 4] [--group 4] [--lr 3e-4] [--lr-end 3e-5] [--turn-tokens 96]
//     [--response-tokens 320] [--schema-chars 200] [--trainers agro,trl,trl-mt] [--agro-algo grpo] [--agro-set JSON] [--venv DIR] [--out runs/race]`
//
// The race: from ONE SFT checkpoint, the same RL questions, held-out questions, seeds and budget (steps ×
// prompts × group, lr with a cosine to --lr-end), three trainers:
//   agro   `agro train` (GRPO preset --agro-algo, multi-turn with the SQL tool)
//   trl    TRL GRPOTrainer, single-turn completions, rewards from agro's server (integrations/python/agro_trl.py)
//   trl-mt TRL GRPOTrainer with agro_rollout_func: agro's multi-turn episodes through the server's sessions
// Each trained policy answers the held-out questions with the same `agro predict` (greedy, agent mode), as
// does the SFT checkpoint before. Reported: held-out EX before/after per seed, mean and spread of the gain,
// seconds and CPU-seconds per step (the trainer's process tree; for TRL plus the agro server's), tool calls
// per episode, and the recipe settings that still differ. Written to <out>/race.json.
// --quickstart DIR takes the checkpoint, the RL and held-out questions, the variants and the schema budget
// of an `agro quickstart` run. A venv with trl is made from the local package index when --venv has none.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agroCli } from './_agro.ts';
import { flag, num } from './_args.ts';
import { listCheckpoints } from '../src/train/run-state.ts';
import { writeJsonAtomic } from '../src/util/fs.ts';
import { checkpointPrompt } from '../src/prompt/contract.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'bin/agro.js');
const TRAINERS = ['agro', 'trl', 'trl-mt'] as const;
type Trainer = (typeof TRAINERS)[number];

interface Setup {
  init: string;
  data: string;
  heldOut: string;
  dbRoot: string;
  variants: string | null;
  schemaChars: number;
}

interface Timed {
  status: number | null;
  stdout: string;
  stderr: string;
  wallS: number;
  cpuS: number;
}

/** Run a command under /usr/bin/time: wall and CPU seconds (user + system) of it and every child it waited for. */
function timed(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Timed> {
  const tf = join(ROOT, 'runs', `.time-${process.pid}-${Date.now()}`);
  mkdirSync(dirname(tf), { recursive: true });
  return new Promise((res) => {
    const c = spawn('/usr/bin/time', ['-f', '%e %U %S', '-o', tf, cmd, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    c.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-20_000)));
    c.on('close', (status) => {
      const [wall, user, sys] = (existsSync(tf) ? readFileSync(tf, 'utf8').trim().split('\n').at(-1)! : '0 0 0').split(' ').map(Number);
      res({ status, stdout, stderr, wallS: wall, cpuS: user + sys });
    });
  });
}

/** CPU seconds (user + system) a live process has used, its reaped children included, from /proc. */
function procCpuS(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100; // utime stime cutime cstime, in USER_HZ (100)
  } catch {
    return 0;
  }
}

const agro = (...args: string[]): string => agroCli(args).stdout;

/** The schema budget the checkpoint was trained with (its prompt contract, as predict reads it), unless --schema-chars asks another. */
function schemaCharsOf(args: string[], checkpoint: string): number {
  const asked = flag(args, '--schema-chars', '');
  return checkpointPrompt(checkpoint, asked ? { schemaChars: num(args, '--schema-chars', 0) } : {}).schemaChars;
}

function setupFrom(args: string[], out: string): Setup {
  const qs = flag(args, '--quickstart', '');
  if (qs) {
    const rep = JSON.parse(readFileSync(join(qs, 'report.json'), 'utf8')) as { config: { db: string }; sft: { checkpoint: string } };
    const variants = join(qs, 'synth/variants');
    const ck = existsSync(rep.sft.checkpoint) ? rep.sft.checkpoint : resolve(ROOT, rep.sft.checkpoint);
    const schemaChars = schemaCharsOf(args, resolve(ck));
    return { init: resolve(ck), data: join(qs, 'rl.jsonl'), heldOut: join(qs, 'held_out.jsonl'), dbRoot: resolve(ROOT, dirname(dirname(rep.config.db))), variants: existsSync(variants) ? variants : null, schemaChars };
  }
  const dbRoot = resolve(flag(args, '--db-root', join(ROOT, 'data/databases')));
  let data = flag(args, '--data', '');
  let heldOut = flag(args, '--held-out', '');
  if (!data || !heldOut) {
    // No split given: data/dev.json, every 4th question held out (never trained on by any of the three).
    const rows = JSON.parse(readFileSync(join(ROOT, 'data/dev.json'), 'utf8')) as unknown[];
    data = join(out, 'rl.json');
    heldOut = join(out, 'held_out.json');
    writeFileSync(data, JSON.stringify(rows.filter((_, i) => i % 4 !== 3)));
    writeFileSync(heldOut, JSON.stringify(rows.filter((_, i) => i % 4 === 3)));
  }
  let init = flag(args, '--init', '');
  if (!init) {
    const sft = join(out, 'sft');
    if (!listCheckpoints(sft).length) {
      console.log('race: no --init: a tiny SFT checkpoint (agro sft --preset tiny, 60 steps on the RL questions) ...');
      // The quickstart's budget: the tiny model's 512 positions hold a 200-character grounded schema, not 1,800.
      agro('sft', '--preset', 'tiny', '--data', data, '--db-root', dbRoot, '--steps', '60', '--schema-chars', '200', '--out', sft, '--json');
    }
    init = listCheckpoints(sft).at(-1)!.dir;
  }
  const schemaChars = schemaCharsOf(args, resolve(init));
  return { init: resolve(init), data: resolve(data), heldOut: resolve(heldOut), dbRoot, variants: flag(args, '--variants', '') || null, schemaChars };
}

/** A Python with trl: --venv's, else runs/e2e-trl/venv, made from the local package index when missing. */
function pythonWithTrl(venvArg: string): string {
  const venv = resolve(venvArg || process.env.AGRO_E2E_VENV || join(ROOT, 'runs/e2e-trl/venv'));
  const py = join(venv, 'bin/python');
  const has = (): boolean => existsSync(py) && spawnSync(py, ['-c', 'import trl, datasets, torch']).status === 0;
  if (has()) return py;
  console.log(`race: creating ${venv} and installing trl from the local package index ...`);
  if (!existsSync(py) && spawnSync('python3', ['-m', 'venv', venv]).status !== 0) throw new Error(`python3 -m venv ${venv} failed`);
  const pip = spawnSync(py, ['-m', 'pip', 'install', '--retries', '0', '--timeout', '10', 'trl', 'pyarrow'], { encoding: 'utf8' });
  if (pip.status !== 0 || !has()) throw new Error(`pip install trl failed: ${(pip.stderr || pip.stdout).trim().split('\n').at(-1)}`);
  return py;
}

interface PredictReport {
  accuracy: number;
  n: number;
  toolCalls?: number;
}

/** Held-out EX of a checkpoint with `agro predict` (greedy, agent mode, the training turn budget), as every trainer's result is scored. */
function heldOutEx(ck: string, s: Setup, out: string, turnTokens: number): PredictReport {
  // With the variant databases as a test suite, as the quickstart scores its held-out questions: the same figure.
  const suite = s.variants ? ['--suite', s.variants] : [];
  const r = JSON.parse(agro('predict', '--policy', ck, '--data', s.heldOut, '--db-root', s.dbRoot, '--schema-chars', String(s.schemaChars), '--max-turn-tokens', String(turnTokens), ...suite, '--out', out, '--json')) as { summary: { accuracy: number; count: number }; predict: { toolCalls: number } };
  return { accuracy: r.summary.accuracy, n: r.summary.count, toolCalls: r.predict.toolCalls };
}

interface Budget {
  steps: number;
  prompts: number;
  group: number;
  lr: number;
  lrEnd: number;
  turnTokens: number;
  responseTokens: number;
}

interface RunResult {
  trainer: Trainer;
  seed: number;
  exAfter: number;
  stepS: number;
  cpuPerStepS: number;
  toolCallsPerEpisode: number | null;
  checkpoint: string;
}

const REWARDS = [
  { name: 'execution', weight: 1 },
  { name: 'format', weight: 0.1 },
];

async function runAgro(s: Setup, b: Budget, seed: number, dir: string, algo: string, set: Record<string, unknown>): Promise<Omit<RunResult, 'exAfter'>> {
  const cfgPath = join(dir, 'agro-train.json');
  writeFileSync(cfgPath, JSON.stringify({ algo, steps: b.steps, promptsPerStep: b.prompts, groupSize: b.group, lr: b.lr, minLrRatio: b.lrEnd / b.lr, maxTurnTokens: b.turnTokens, maxResponseTokens: b.responseTokens, checkpointEvery: 0, seed, ...set }));
  const variants = s.variants ? ['--variants', s.variants] : [];
  const t = await timed(process.execPath, [BIN, 'train', '--init', s.init, '--data', s.data, '--db-root', s.dbRoot, '--config', cfgPath, '--schema-chars', String(s.schemaChars), '--out', join(dir, 'run'), '--json', ...variants]);
  if (t.status !== 0) throw new Error(`agro train exited ${t.status}: ${t.stderr.trim().split('\n').slice(-2).join(' | ')}`);
  const metrics = readFileSync(join(dir, 'run/metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, number>).filter((m) => 'time_rollout_s' in m);
  const stepS = metrics.reduce((a, m) => a + m.time_rollout_s + m.time_reward_s + m.time_update_s, 0) / metrics.length;
  const calls = metrics.reduce((a, m) => a + (m.tool_calls ?? 0), 0) / metrics.length;
  return { trainer: 'agro', seed, stepS, cpuPerStepS: t.cpuS / b.steps, toolCallsPerEpisode: calls, checkpoint: listCheckpoints(join(dir, 'run')).at(-1)!.dir };
}

async function runTrl(py: string, s: Setup, b: Budget, seed: number, dir: string, multi: boolean, trainJsonl: string): Promise<Omit<RunResult, 'exAfter'>> {
  // The sessions play the episode the checkpoint's prompt contract describes (turns, observations), as agro train does.
  const env = checkpointPrompt(s.init, { schemaChars: s.schemaChars });
  const srv = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/_env_server.ts'), JSON.stringify({ dbRoot: s.dbRoot, env, ...(s.variants ? { variants: s.variants } : {}) })], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((res, rej) => {
    srv.stdout.once('data', (d: Buffer) => res((JSON.parse(d.toString().split('\n')[0]) as { url: string }).url));
    srv.once('exit', (c) => rej(new Error(`environment server exited ${c}`)));
  });
  const model = join(dir, 'model');
  const rolloutLog = join(dir, 'rollouts.jsonl');
  writeFileSync(rolloutLog, '');
  const cfg = {
    checkpoint: s.init, train: trainJsonl, out: join(dir, 'trl'), steps: b.steps, group: b.group, prompts_per_step: b.prompts,
    max_completion: multi ? b.responseTokens : b.turnTokens, max_turn_tokens: b.turnTokens, max_response_tokens: b.responseTokens,
    lr: b.lr, lr_end: b.lrEnd, beta: 0, temperature: 1, rewards: REWARDS, seed, save_model: model, multiturn: multi, rollout_log: rolloutLog, print_completions: 0,
  };
  let t: Timed;
  let serverCpu = 0;
  try {
    const before = procCpuS(srv.pid!);
    t = await timed(py, [join(ROOT, 'scripts/e2e_trl.py'), JSON.stringify(cfg)], { AGRO_URL: url, TOKENIZERS_PARALLELISM: 'false' });
    serverCpu = procCpuS(srv.pid!) - before;
  } finally {
    srv.kill('SIGTERM');
  }
  if (t.status !== 0) throw new Error(`TRL (${multi ? 'multi-turn' : 'single-turn'}) exited ${t.status}: ${t.stderr.trim().split('\n').slice(-3).join(' | ')}`);
  const res = JSON.parse(readFileSync(join(dir, 'trl/trl_result.json'), 'utf8')) as { step_seconds: number[] };
  const eps = readFileSync(rolloutLog, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { tool_calls: number });
  return {
    trainer: multi ? 'trl-mt' : 'trl', seed,
    stepS: res.step_seconds.reduce((a, x) => a + x, 0) / res.step_seconds.length,
    cpuPerStepS: (t.cpuS + serverCpu) / b.steps,
    toolCallsPerEpisode: multi ? eps.reduce((a, e) => a + e.tool_calls, 0) / Math.max(1, eps.length) : null,
    checkpoint: model,
  };
}

const mean = (xs: number[]): number => xs.reduce((a, x) => a + x, 0) / Math.max(1, xs.length);
const sd = (xs: number[]): number => (xs.length < 2 ? 0 : Math.sqrt(xs.reduce((a, x) => a + (x - mean(xs)) ** 2, 0) / (xs.length - 1)));

export async function run(args: string[]): Promise<void> {
  const out = resolve(flag(args, '--out', join(ROOT, 'runs/race')));
  mkdirSync(out, { recursive: true });
  const s = setupFrom(args, out);
  const seeds = flag(args, '--seeds', '0,1,2').split(',').filter(Boolean).map(Number);
  const trainers = flag(args, '--trainers', TRAINERS.join(',')).split(',').filter(Boolean) as Trainer[];
  for (const t of trainers) if (!TRAINERS.includes(t)) throw new Error(`bench race: unknown trainer ${t} (have ${TRAINERS.join(', ')})`);
  const lr = num(args, '--lr', 3e-4);
  const b: Budget = { steps: num(args, '--steps', 400), prompts: num(args, '--prompts', 4), group: num(args, '--group', 4), lr, lrEnd: num(args, '--lr-end', lr / 10), turnTokens: num(args, '--turn-tokens', 96), responseTokens: num(args, '--response-tokens', 320) };
  const algo = flag(args, '--agro-algo', 'grpo');
  // Train-config fields over the race's own for agro (e.g. '{"beta2":0.999}', TRL's AdamW), to test one recipe difference at a time.
  const agroSet = JSON.parse(flag(args, '--agro-set', '{}')) as Record<string, unknown>;
  const load = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  console.log(`race: ${s.init}\n  RL questions ${s.data}, held out ${s.heldOut}, schema ${s.schemaChars} chars; seeds ${seeds.join(',')}; ${b.steps} steps × ${b.prompts} prompts × ${b.group}, lr ${b.lr} cosine to ${b.lrEnd}; turns ≤ ${b.turnTokens} tokens, episode ≤ ${b.responseTokens}; load ${load()}`);
  const py = trainers.some((t) => t !== 'agro') ? pythonWithTrl(flag(args, '--venv', '')) : '';
  let trainJsonl = '';
  if (py) {
    agro('export', '--format', 'trl', '--data', s.data, '--db-root', s.dbRoot, '--out', join(out, 'trl-data'), '--val', '0', '--schema-chars', String(s.schemaChars), ...(s.variants ? ['--variants', s.variants] : []));
    trainJsonl = join(out, 'trl-data/train.jsonl');
  }

  // A race is hours of CPU: every finished piece (the SFT score, each trainer × seed) is kept in its folder
  // with the budget it ran under, and a rerun with the same --out and budget picks up where it stopped.
  const key = JSON.stringify({ ...s, b, algo, ...(Object.keys(agroSet).length ? { agroSet } : {}) });
  const cached = <T>(file: string, make: () => Promise<T>): Promise<T> => {
    const f = join(out, file);
    if (existsSync(f)) {
      const c = JSON.parse(readFileSync(f, 'utf8')) as { key: string; value: T };
      if (c.key === key) return Promise.resolve(c.value);
    }
    return make().then((value) => (writeJsonAtomic(f, { key, value }), value));
  };
  const before = await cached('predict-sft/race-piece.json', async () => heldOutEx(s.init, s, join(out, 'predict-sft'), b.turnTokens));
  console.log(`race: SFT checkpoint, held-out EX ${before.accuracy.toFixed(1)}% on ${before.n} questions`);
  const results: RunResult[] = [];
  for (const seed of seeds) {
    for (const trainer of trainers) {
      const dir = join(out, `${trainer}-seed${seed}`);
      mkdirSync(dir, { recursive: true });
      const t0 = performance.now();
      let fresh = false;
      const r = await cached(`${trainer}-seed${seed}/race-piece.json`, async (): Promise<RunResult> => {
        fresh = true;
        const run = trainer === 'agro' ? await runAgro(s, b, seed, dir, algo, agroSet) : await runTrl(py, s, b, seed, dir, trainer === 'trl-mt', trainJsonl);
        return { ...run, exAfter: heldOutEx(run.checkpoint, s, join(dir, 'predict'), b.turnTokens).accuracy };
      });
      results.push(r);
      console.log(`race: ${trainer} seed ${seed}: held-out EX ${before.accuracy.toFixed(1)}% → ${r.exAfter.toFixed(1)}%, ${r.stepS.toFixed(2)} s/step, ${r.cpuPerStepS.toFixed(2)} CPU-s/step, tool calls/episode ${r.toolCallsPerEpisode?.toFixed(2) ?? '—'} (${fresh ? `${((performance.now() - t0) / 1000).toFixed(0)} s with scoring; load ${load()}` : 'kept from an earlier run'})`);
    }
  }
  const table = trainers.map((trainer) => {
    const rs = results.filter((r) => r.trainer === trainer);
    const gains = rs.map((r) => r.exAfter - before.accuracy);
    return {
      trainer,
      seeds: rs.length,
      exBefore: Math.round(before.accuracy * 10) / 10,
      exAfter: rs.map((r) => r.exAfter.toFixed(1)).join(' / '),
      gainMean: Math.round(mean(gains) * 10) / 10,
      gainSd: Math.round(sd(gains) * 10) / 10,
      sPerStep: Math.round(mean(rs.map((r) => r.stepS)) * 100) / 100,
      cpuSPerStep: Math.round(mean(rs.map((r) => r.cpuPerStepS)) * 100) / 100,
      toolCallsPerEpisode: rs[0]?.toolCallsPerEpisode === null ? '—' : (Math.round(mean(rs.map((r) => r.toolCallsPerEpisode ?? 0)) * 100) / 100).toString(),
    };
  });
  console.log(`\nheld-out EX (agro predict, greedy, agent mode) on ${before.n} questions; ${seeds.length} seed(s); ${new Date().toISOString()}, load ${load()}`);
  console.table(table);
  const differences = [
    `agro: preset "${algo}" (advantage eps 1e-6, dual clip 3, log-ratio clamp ±20, k3 KL 0.001 unless the preset says otherwise; --agro-algo trl_grpo matches TRL's defaults); TRL: GRPOConfig defaults (loss_type dapo = token-mean, scale_rewards group, eps 1e-4, ε 0.2, β 0)`,
    'samplers: agro samples with its own TF.js/llama.cpp sampler (top-p 1), TRL with transformers generate (top-p 1, top-k 0); same temperature 1, different random streams',
    'optimizer: both AdamW with global-norm clipping at 1 and no weight decay, but agro β2 0.99 (its RL default), TRL β2 0.999 (transformers\' default); --agro-set \'{"beta2":0.999}\' matches it',
    'prompt order: agro draws its prompts with its own seeded order; TRL with its RepeatSampler (seeded with the same number)',
    'dynamic sampling: off in both here (quickstart turns agro\'s on when it has pass rates; TRL has none)',
    'trl (single-turn): one completion of ≤ turn tokens, no tool; agro and trl-mt: episodes of turns with the SQL tool, observations masked',
    'trl-mt: a turn also stops at </sql> or </answer> (its <|end|> appended); agro stops at <|end|> only; a truncated episode is scored from its turns (format may differ from agro\'s token_budget)',
  ];
  console.log('\nwhere the recipes still differ:\n' + differences.map((d) => `  - ${d}`).join('\n'));
  writeJsonAtomic(join(out, 'race.json'), { date: new Date().toISOString(), setup: s, budget: b, seeds, agroAlgo: algo, before, results, table, differences, load: load() });
  console.log(`\nrace: ${join(out, 'race.json')}`);
}
