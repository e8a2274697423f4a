/**
 * Table-driven CLI cases in one process: the CLI's main() (src/cli/main.ts, what bin/agro.js runs) once per argv,
 * in order, each run's stdout, stderr and exit code captured apart. A `node bin/agro.js` costs a second or more
 * to start (tsx, the command's modules); a file of twenty error cases paid that twenty times. Use it where what is
 * tested is what a run prints, exits with and writes, not the process boundary itself (raw argv bytes, signals,
 * a pipe closed early, several processes at once): those cases keep spawning bin/agro.js.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin', 'agro.js');
const CHILD = fileURLToPath(new URL('./cli-batch-child.ts', import.meta.url));

export interface BatchRun {
  status: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface BatchOptions {
  cwd?: string;
  /** For the whole batch: a run that hangs fails the test instead of hanging it. */
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
}

function prepare(runs: readonly string[][]): { dir: string; input: string; output: string; argv: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'agro-batch-'));
  const input = join(dir, 'runs.json');
  const output = join(dir, 'results.json');
  writeFileSync(input, JSON.stringify(runs));
  return { dir, input, output, argv: ['--import', 'tsx', CHILD, input, output, BIN] };
}

function collect(runs: readonly string[][], output: string, dir: string, how: { status: number | null; signal: NodeJS.Signals | null; stderr: string }): BatchRun[] {
  const results = existsSync(output) ? (JSON.parse(readFileSync(output, 'utf8')) as BatchRun[]) : [];
  rmSync(dir, { recursive: true, force: true });
  if (results.length !== runs.length || how.status !== 0) {
    const next = runs[results.length];
    throw new Error(`the CLI batch stopped after ${results.length} of ${runs.length} runs (exit ${how.status}, signal ${how.signal})${next ? ` at agro ${next.join(' ').slice(0, 200)}` : ''}: ${how.stderr.slice(-2000)}`);
  }
  return results;
}

/** The runs, in order, in one process. */
export function agroBatch(runs: readonly string[][], o: BatchOptions = {}): BatchRun[] {
  const { dir, output, argv } = prepare(runs);
  const r = spawnSync(process.execPath, argv, { cwd: o.cwd ?? ROOT, encoding: 'utf8', timeout: o.timeoutMs ?? 120_000, env: o.env ?? process.env, maxBuffer: 64 * 2 ** 20 });
  return collect(runs, output, dir, { status: r.status, signal: r.signal, stderr: `${r.stderr ?? ''}${r.error ? ` ${r.error.message}` : ''}` });
}

/** agroBatch without blocking this process's event loop (a server the runs talk to answers from it). */
export function agroBatchAsync(runs: readonly string[][], o: BatchOptions = {}): Promise<BatchRun[]> {
  const { dir, output, argv } = prepare(runs);
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, argv, { cwd: o.cwd ?? ROOT, stdio: ['ignore', 'ignore', 'pipe'], timeout: o.timeoutMs ?? 120_000, env: o.env ?? process.env });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', fail);
    child.on('close', (status, signal) => {
      try {
        done(collect(runs, output, dir, { status, signal, stderr }));
      } catch (e) {
        fail(e);
      }
    });
  });
}
