// Issue #21, output paths: checked before any work, never the command's own input, never a spin.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { agro, assertOneLine, DB_ROOT, DEV, MUSIC, tempDir } from './support.ts';

const tmp = tempDir();
after(() => tmp.cleanup());
const FILE = join(tmp.dir, 'a-file');
writeFileSync(FILE, 'not a directory\n');
const UNDER_FILE = join(FILE, 'x');
const data = join(tmp.dir, 'data.jsonl');
writeFileSync(data, readFileSync(DEV, 'utf8'));

test('--out under a file is a usage error for every command that writes (not ENOTDIR, not exit 70)', () => {
  const cases: string[][] = [
    ['eval', '--data', DEV, '--gold', '--db-root', DB_ROOT, '--out', UNDER_FILE],
    ['synth', '--db', MUSIC, '--out', UNDER_FILE],
    ['synth-search', '--db', MUSIC, '--out', UNDER_FILE],
    ['sft', '--data', DEV, '--out', UNDER_FILE, '--db-root', DB_ROOT],
    ['train', '--data', DEV, '--out', UNDER_FILE, '--init', tmp.dir],
    ['quickstart', '--out', UNDER_FILE],
  ];
  for (const args of cases) assertOneLine(agro(args), 2, /--out: cannot create directory .*a-file is a file, not a directory/);
});

test('eval --out an existing directory fails before any query runs and leaves no temp file', () => {
  const dir = join(tmp.dir, 'report-dir');
  mkdirSync(dir);
  const r = agro(['eval', '--data', DEV, '--gold', '--db-root', DB_ROOT, '--out', dir]);
  assertOneLine(r, 2, /--out .*report-dir is a directory; give a file name/);
  assert.deepEqual(readdirSync(dir), []);
  assert.deepEqual(readdirSync(tmp.dir).filter((f) => f.endsWith('.tmp')), []);
});

test('--out equal to an input is refused and the input is untouched: eval, sft, train', () => {
  const before = readFileSync(data, 'utf8');
  assertOneLine(agro(['eval', '--data', data, '--gold', '--db-root', DB_ROOT, '--out', data]), 2, /--out .* is the same path as --data/);
  assertOneLine(agro(['sft', '--data', data, '--out', data, '--db-root', DB_ROOT]), 2, /--out .* is the same path as --data/);
  assertOneLine(agro(['train', '--data', data, '--out', data, '--init', tmp.dir]), 2, /--out .* is the same path as --data/);
  assert.equal(readFileSync(data, 'utf8'), before);
});

test('--out /proc/x fails at once instead of spinning in a recursive mkdir: synth, sft', () => {
  for (const args of [['synth', '--db', MUSIC, '--out', '/proc/agro-x'], ['sft', '--data', DEV, '--out', '/proc/agro-x', '--db-root', DB_ROOT]]) {
    const r = agro(args, { timeoutMs: 60_000 });
    assertOneLine(r, 2, /--out: cannot create directory \/proc\/agro-x/);
  }
});
