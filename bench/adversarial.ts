// `npm run bench -- adversarial [--only cli|pg|corrections] [--honest N] [--kill-questions N] [--kill-every MS] [--skip-resume]`
// Issue #21's heavy cases through the real CLI, each with its pass rule:
//   blobs       eval of one attacking prediction each (10/30/60/120 MB randomblob, 8 x 500 MB zeroblob, a
//               10 MB query): exit 0, the attack scored as a failure, peak memory of the whole process
//               tree (eval + SQL children, sampled from /proc) under 1 GiB
//   honest      N honest questions and the attacks above in one eval at --timeout 4000 (the README's
//               example): 0 honest questions scored wrong
//   kill-pool   kill -9 of a SQL child every MS ms (default 1000) during an eval of N honest questions (default
//               1840, the issue's run): 0 scored wrong
//   resume      kill -9 of synth and of sft mid-run, then the same command again: finishes, and its
//               output equals an uninterrupted run's byte for byte
//   cli         issue #35's command-line cases (bench/_adversarial_cli.ts): endless and non-regular inputs,
//               missing folders, unreadable databases, unusable output paths, control characters, the
//               result byte cap, resume with stale temp folders and changed settings; `--only cli` runs it alone
//   corrections issue #58's section (bench/_adversarial_corrections.ts): forged writes against the servers' tokens,
//               hostile headers on their new reads, bad input from the token's holder, bad memory stores, writers
//               racing and killed on one store, tokens in logs, a question on a 10M-row table; `--only corrections`
//   pg          issue #47's PostgreSQL section (bench/_adversarial_pg.ts): each bypass class on a server the
//               bench starts, superuser and reader URLs, fingerprint and next request after each case; `--only pg`
// Prints cases tried / passed and the peak memory of each; exits 1 when a case fails.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { flag, num } from './_args.ts';
import { cliSection, type CliRun } from './_adversarial_cli.ts';
import { pgSection } from './_adversarial_pg.ts';
import { correctionsSection } from './_adversarial_corrections.ts';
import { treeRss } from './_tree-rss.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'bin', 'agro.js');
const DB_ROOT = join(ROOT, 'data', 'databases');
const MUSIC = join(DB_ROOT, 'music_store', 'music_store.sqlite');
const GiB = 2 ** 30;

/** The SQL executor children under `pid`. */
function poolChildren(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid && cmd.includes('pool-child.mjs')) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

interface Run {
  status: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  peakBytes: number;
  seconds: number;
}

/** Runs the CLI, sampling the process tree's memory every 50 ms; `during` may act on the running process. */
function runCli(args: string[], during?: (child: ChildProcess) => void, keepStdout = false): Promise<Run> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, stdio: ['ignore', keepStdout ? 'pipe' : 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (c: string) => (stderr += c));
  let peakBytes = 0;
  const sampler = setInterval(() => {
    if (child.pid) peakBytes = Math.max(peakBytes, treeRss(child.pid));
  }, 50);
  during?.(child);
  return new Promise((resolve) => {
    child.on('close', (status, signal) => {
      clearInterval(sampler);
      resolve({ status, signal, stderr, peakBytes, seconds: (performance.now() - t0) / 1000 });
    });
  });
}

/** Runs the CLI with stdout kept, killed (SIGKILL) after `timeoutMs`: a command that hangs fails its case. */
async function runCliOut(args: string[], timeoutMs: number): Promise<CliRun> {
  let stdout = '';
  const r = await runCli(args, (child) => {
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (c: string) => (stdout += c));
    const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', () => clearTimeout(t));
  }, true);
  return { ...r, stdout };
}

interface Case {
  name: string;
  ok: boolean;
  detail: string;
  peakBytes?: number;
}
const cases: Case[] = [];
function record(c: Case): void {
  cases.push(c);
  const mem = c.peakBytes !== undefined ? `, peak ${(c.peakBytes / 2 ** 20).toFixed(0)} MiB` : '';
  console.log(`${c.ok ? 'PASS' : 'FAIL'} ${c.name}: ${c.detail}${mem}`);
}

interface Question {
  question_id: number;
  db_id: string;
  question: string;
  evidence: string;
  SQL: string;
  difficulty: string;
}
interface Report {
  questions: Array<{ outcome: string; message?: string }>;
}

function writeEval(dir: string, name: string, items: Question[], preds: string[]): { data: string; pred: string; out: string } {
  const data = join(dir, `${name}.data.json`);
  const pred = join(dir, `${name}.pred.json`);
  writeFileSync(data, JSON.stringify(items.map((q, i) => ({ ...q, question_id: i }))));
  writeFileSync(pred, JSON.stringify(preds));
  return { data, pred, out: join(dir, `${name}.report.json`) };
}

const ATTACKS: Array<[string, string]> = [
  ['randomblob 10 MB', 'SELECT randomblob(10000000)'],
  ['randomblob 30 MB', 'SELECT randomblob(30000000)'],
  ['randomblob 60 MB', 'SELECT randomblob(60000000)'],
  ['randomblob 120 MB', 'SELECT randomblob(120000000)'],
  ['8 x zeroblob 500 MB', `SELECT ${Array.from({ length: 8 }, () => 'zeroblob(500000000)').join(', ')}`],
  ['10 MB query text', `SELECT 1 /* ${'x'.repeat(10_000_000)} */`],
];

async function blobs(dir: string, dev: Question[]): Promise<void> {
  for (const [name, sql] of ATTACKS) {
    const f = writeEval(dir, 'blob', [dev[0]], [sql]);
    const r = await runCli(['eval', '--data', f.data, '--pred', f.pred, '--db-root', DB_ROOT, '--out', f.out]);
    let outcome = '-';
    if (r.status === 0) outcome = (JSON.parse(readFileSync(f.out, 'utf8')) as Report).questions[0].outcome;
    const ok = r.status === 0 && outcome !== 'match' && r.peakBytes < GiB;
    record({ name: `eval of one prediction: ${name}`, ok, detail: `exit ${r.status ?? r.signal}, ${outcome}, ${r.seconds.toFixed(1)} s${r.status ? `: ${r.stderr.trim()}` : ''}`, peakBytes: r.peakBytes });
  }
}

/** `n` honest questions: the dev set repeated, gold as prediction (each must match). */
function honestSet(dev: Question[], n: number): Question[] {
  return Array.from({ length: n }, (_, i) => dev[i % dev.length]);
}

function wrongHonest(report: Report, n: number): string[] {
  return report.questions.slice(0, n).flatMap((q, i) => (q.outcome === 'match' ? [] : [`#${i} ${q.outcome}: ${q.message ?? ''}`]));
}

async function honestUnderAttack(dir: string, dev: Question[], n: number): Promise<void> {
  const honest = honestSet(dev, n);
  const attacks = ATTACKS.map(([, sql]) => sql);
  const f = writeEval(dir, 'mixed', [...honest, ...attacks.map((_, i) => dev[i % dev.length])], [...honest.map((q) => q.SQL), ...attacks]);
  const r = await runCli(['eval', '--data', f.data, '--pred', f.pred, '--db-root', DB_ROOT, '--out', f.out, '--timeout', '4000']);
  const wrong = r.status === 0 ? wrongHonest(JSON.parse(readFileSync(f.out, 'utf8')) as Report, n) : ['eval failed'];
  record({ name: `${n} honest questions + ${attacks.length} attacks, --timeout 4000`, ok: r.status === 0 && wrong.length === 0, detail: `${wrong.length} honest scored wrong${wrong.length ? ` (${wrong.slice(0, 3).join('; ')})` : ''}, ${r.seconds.toFixed(1)} s`, peakBytes: r.peakBytes });
}

async function killPool(dir: string, dev: Question[], n: number, everyMs: number): Promise<void> {
  const honest = honestSet(dev, n);
  const f = writeEval(dir, 'kill', honest, honest.map((q) => q.SQL));
  let kills = 0;
  const r = await runCli(['eval', '--data', f.data, '--pred', f.pred, '--db-root', DB_ROOT, '--out', f.out, '--workers', '2'], (child) => {
    const timer = setInterval(() => {
      const pids = child.pid ? poolChildren(child.pid) : [];
      if (pids.length === 0) return;
      try {
        process.kill(pids[kills % pids.length], 'SIGKILL');
        kills++;
      } catch {
        // exited meanwhile
      }
    }, everyMs);
    child.on('close', () => clearInterval(timer));
  });
  const wrong = r.status === 0 ? wrongHonest(JSON.parse(readFileSync(f.out, 'utf8')) as Report, n) : ['eval failed'];
  record({ name: `kill -9 of a SQL child every ${everyMs} ms during an eval of ${n} questions`, ok: r.status === 0 && wrong.length === 0 && kills > 0, detail: `${kills} kills, ${wrong.length} scored wrong${wrong.length ? ` (${wrong.slice(0, 3).join('; ')})` : ''}, ${r.seconds.toFixed(1)} s`, peakBytes: r.peakBytes });
}

/** Files under `dir` (relative path -> content), without the resume bookkeeping and timings. */
function snapshot(dir: string, keep: (rel: string) => boolean): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string, rel: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(join(d, e.name), r);
      else if (keep(r)) out.set(r, readFileSync(join(d, e.name)).toString('base64'));
    }
  };
  walk(dir, '');
  return out;
}

function sameFiles(a: Map<string, string>, b: Map<string, string>): string[] {
  const names = new Set([...a.keys(), ...b.keys()]);
  return [...names].filter((k) => a.get(k) !== b.get(k));
}

/** Kill -9 `args` after `afterMs`, run it again (with `resumeArgs`), and compare with an uninterrupted run. */
async function killResume(dir: string, name: string, args: (out: string) => string[], resumeArgs: string[], afterMs: number, keep: (rel: string) => boolean): Promise<void> {
  const ref = join(dir, `${name}-ref`);
  const cut = join(dir, `${name}-cut`);
  const a = await runCli(args(ref));
  const killed = await runCli(args(cut), (child) => {
    setTimeout(() => child.kill('SIGKILL'), afterMs);
  });
  const b = await runCli([...args(cut), ...resumeArgs]);
  const diff = a.status === 0 && b.status === 0 ? sameFiles(snapshot(ref, keep), snapshot(cut, keep)) : ['a run failed'];
  const wasKilled = killed.signal === 'SIGKILL';
  record({
    name: `kill -9 of ${name} after ${afterMs / 1000} s, then resume`,
    ok: wasKilled && b.status === 0 && diff.length === 0,
    detail: `${wasKilled ? 'killed' : `finished before the kill (exit ${killed.status})`}; resumed run exit ${b.status}${b.status ? `: ${b.stderr.trim().split('\n').pop()}` : ''}; ${diff.length ? `differs: ${diff.slice(0, 3).join(', ')}` : 'output identical to the uninterrupted run'}`,
    peakBytes: Math.max(a.peakBytes, b.peakBytes),
  });
}

export async function run(args: string[]): Promise<void> {
  const n = num(args, '--honest', 300);
  const kills = num(args, '--kill-questions', 1840);
  const dir = mkdtempSync(join(tmpdir(), 'agro-bench-adv-'));
  const dev = JSON.parse(readFileSync(join(ROOT, 'data', 'dev.json'), 'utf8')) as Question[];
  const only = flag(args, '--only', '');
  try {
    if (only === '' || only === 'pg') {
      const table = await pgSection(record);
      console.log(`\nPostgreSQL section (${new Date().toISOString().slice(0, 10)}):\n${table.join('\n')}\n`);
      if (only === 'pg') return;
    }
    const bench = { root: ROOT, dbRoot: DB_ROOT, music: MUSIC, dev: join(ROOT, 'data', 'dev.json'), run: runCliOut, record };
    if (only === '' || only === 'corrections') {
      const from = cases.length;
      await correctionsSection(bench, dir);
      const mine = cases.slice(from);
      console.log(`\ncorrections section (${new Date().toISOString().slice(0, 10)}): ${mine.filter((c) => c.ok).length}/${mine.length} cases passed`);
      if (only === 'corrections') return;
    }
    await cliSection(bench, dir);
    if (only === 'cli') return;
    await blobs(dir, dev);
    await honestUnderAttack(dir, dev, n);
    await killPool(dir, dev, kills, num(args, '--kill-every', 1000));
    if (!args.includes('--skip-resume')) {
      const synth = (out: string): string[] => ['synth', '--db', MUSIC, '--out', out, '--n', '150', '--variants', '1', '--json'];
      await killResume(dir, 'synth', synth, [], 6000, (rel) => !rel.startsWith('.work') && rel !== 'manifest.json');
      const data = join(ROOT, 'data', 'dev.json');
      const sft = (out: string): string[] => ['sft', '--data', data, '--out', out, '--db-root', DB_ROOT, '--preset', 'tiny', '--vocab-size', '2048', '--backend', 'cpu', '--steps', '30', '--checkpoint-every', '5', '--json'];
      await killResume(dir, 'sft', sft, ['--resume'], 20000, (rel) => /^checkpoints\/step-30\/(model|optimizer)\.safetensors$/.test(rel) || rel === 'tokenizer.json');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    report();
  }
}

function report(): void {
  const passed = cases.filter((c) => c.ok).length;
  const peak = Math.max(...cases.map((c) => c.peakBytes ?? 0));
  console.log(`\nadversarial: ${passed}/${cases.length} cases passed; peak memory of any one command's process tree ${(peak / 2 ** 20).toFixed(0)} MiB`);
  if (passed !== cases.length) process.exitCode = 1;
}
