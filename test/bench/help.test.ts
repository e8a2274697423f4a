/**
 * `npm run bench -- <name> --help` is usage for every bench: exit 0, the bench's usage line, and no work done
 * (the dispatcher never imports the bench, so no `=== bench` header and no run). Issue 49: `race --help`
 * used to start a full race with the defaults.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const names = readdirSync(join(ROOT, 'bench'))
  .filter((f) => f.endsWith('.ts') && f !== 'index.ts' && !f.startsWith('_'))
  .map((f) => f.slice(0, -3));

function bench(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const c = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/index.ts'), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    c.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    c.on('close', (code) => res({ code, stdout, stderr }));
  });
}

test('every bench answers --help (and -h, after other flags) with its usage, exit 0, without running', async () => {
  assert.ok(names.length >= 10, `benches found: ${names.join(', ')}`);
  const runs = await Promise.all(names.map(async (n) => ({ n, r: await bench([n, ...(n === 'race' ? ['--seeds', '0', '-h'] : ['--help'])]) })));
  for (const { n, r } of runs) {
    assert.equal(r.code, 0, `${n} --help exited ${r.code}: ${r.stderr.slice(-300)}`);
    assert.match(r.stdout.split('\n')[0], new RegExp(`^usage: \`?npm run bench -- ${n}( |\`|$)`), `${n} --help: ${r.stdout.slice(0, 200)}`);
    assert.doesNotMatch(r.stdout, /=== bench/, `${n} --help started the bench`);
  }
});

test('bench --help lists the benches; an unknown bench is exit 2 even with --help', async () => {
  const all = await bench(['--help']);
  assert.equal(all.code, 0);
  for (const n of names) assert.ok(all.stdout.includes(n), `bench --help does not list ${n}`);
  const bad = await bench(['no-such-bench', '--help']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /unknown benchmark 'no-such-bench'/);
});
