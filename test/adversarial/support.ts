/**
 * The adversarial cases of issue #21 run through the real CLI (`node bin/agro.js ...`): what a user
 * types is what is tested. Each check holds the contract for bad input: exactly one `agro: ...` line
 * on stderr, the documented exit code, never `internal error` and never a stack trace.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = join(ROOT, 'bin', 'agro.js');
export const DB_ROOT = join(ROOT, 'data', 'databases');
export const MUSIC = join(DB_ROOT, 'music_store', 'music_store.sqlite');
export const DEV = join(ROOT, 'data', 'dev.json');

export interface CliRun {
  status: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs the CLI in `cwd` with a wall-clock cap (a command that spins fails the test instead of hanging it). */
export function agro(args: string[], opts: { cwd?: string; timeoutMs?: number } = {}): CliRun {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd: opts.cwd ?? ROOT, encoding: 'utf8', timeout: opts.timeoutMs ?? 120_000, maxBuffer: 64 * 2 ** 20 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, ms: performance.now() - t0 };
}

/** The bad-input contract: one `agro:` line matching `message`, exit `code`. */
export function assertOneLine(r: CliRun, code: number, message: RegExp): void {
  assert.equal(r.status, code, `exit ${r.status} (wanted ${code}); stderr: ${r.stderr}`);
  assert.match(r.stderr, /^agro: [^\n]+\n$/, `not one agro: line: ${JSON.stringify(r.stderr)}`);
  assert.doesNotMatch(r.stderr, /internal error|^error:|\n\s+at /);
  assert.match(r.stderr, message);
}

export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'agro-adv-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A 0-byte file (SQLite opens it as an empty database) and a database whose only table is empty. */
export function emptyDatabases(dir: string): { zeroBytes: string; noRows: string; noTables: string } {
  const zeroBytes = join(dir, 'zero.sqlite');
  writeFileSync(zeroBytes, '');
  const noRows = join(dir, 'norows.sqlite');
  const db = new Database(noRows);
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)');
  db.close();
  const noTables = join(dir, 'notables.sqlite');
  new Database(noTables).exec('CREATE VIEW v AS SELECT 1 AS x').close();
  return { zeroBytes, noRows, noTables };
}
