import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'agro.js');
const tmp = mkdtempSync(join(tmpdir(), 'agro-eval-cli-'));

function agro(...args: string[]) {
  return spawnSync(process.execPath, [BIN, 'eval', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
}

function assertOneLineFailure(r: ReturnType<typeof agro>, code: number, pattern: RegExp): void {
  assert.equal(r.status, code, `stderr: ${r.stderr}`);
  const lines = r.stderr.trim().split('\n');
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0], /^agro: /);
  assert.match(lines[0], pattern);
}

test('agro eval --gold prints the table at 100% and exits 0', () => {
  const r = agro('--data', 'data/dev.json', '--gold');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^simple\s+15\s+15\s+100\.00$/m);
  assert.match(r.stdout, /^total\s+45\s+45\s+100\.00$/m);
  assert.match(r.stdout, /outcomes: match 45, mismatch 0/);
});

test('agro eval on partly-wrong predictions: exit 0, JSON report on stdout and written atomically to --out', () => {
  const out = join(tmp, 'report.json');
  const r = agro('--data', 'data/dev.json', '--db-root', 'data/databases', '--pred', 'data/predictions/partly-wrong.json', '--timeout', '4000', '--out', out, '--json');
  assert.equal(r.status, 0, r.stderr);
  const printed = JSON.parse(r.stdout);
  assert.equal(printed.summary.correct, 38);
  assert.deepEqual(printed.summary.byDifficulty.map((b: { correct: number }) => b.correct), [13, 15, 10]);
  assert.equal(printed.questions.length, 45);
  assert.equal(printed.questions[22].outcome, 'timeout');
  assert.equal(printed.timeoutMs, 4000);
  const written = JSON.parse(readFileSync(out, 'utf8'));
  assert.deepEqual(written.summary, printed.summary);
});

test('bad input exits non-zero with a one-line message and writes no report', () => {
  const out = join(tmp, 'never.json');
  assertOneLineFailure(agro('--data', 'data/nope.json', '--gold', '--out', out), 3, /data file not found: data\/nope\.json/);
  const broken = join(tmp, 'broken.json');
  writeFileSync(broken, '[{"db_id": "retail",\n "question": "q" "SQL": "SELECT 1"}]');
  assertOneLineFailure(agro('--data', broken, '--gold'), 4, /malformed JSON: line 2/);
  const unknown = join(tmp, 'unknown.json');
  writeFileSync(unknown, JSON.stringify([{ db_id: 'hospital', question: 'q', SQL: 'SELECT 1' }]));
  assertOneLineFailure(agro('--data', unknown, '--gold', '--out', out), 3, /unknown db_id "hospital"/);
  assertOneLineFailure(agro('--data', 'data/dev.json', '--pred', 'data/predictions/spider-sample.sql'), 4, /6 predictions for 45 questions/);
  assertOneLineFailure(agro('--data', 'data/dev.json'), 2, /exactly one of --pred <file> or --gold/);
  assertOneLineFailure(agro('--data', 'data/dev.json', '--gold', '--timeout', 'soon'), 2, /--timeout/);
  const badMode = agro('--data', 'data/dev.json', '--gold', '--mode', 'cosql');
  assert.notEqual(badMode.status, 0);
  assert.match(badMode.stderr, /argument 'cosql' is invalid/);
  assert.equal(existsSync(out), false);
});
