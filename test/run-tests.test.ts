// `npm test` ends with the failed tests and its time (scripts/run-tests.mjs with scripts/test-summary.mjs), so a
// failure is not lost in thousands of lines. Run here on a folder of three small test files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

test('the test runner ends with the list of failed tests and the total time', { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'agro-run-tests-'));
  try {
    mkdirSync(join(dir, 'test', 'sub'), { recursive: true });
    symlinkSync(resolve('node_modules'), join(dir, 'node_modules'));
    writeFileSync(join(dir, 'test', 'a.test.ts'), [
      "import { describe, test } from 'node:test';",
      "test('passes', () => {});",
      "test('fails at the top', () => { throw new Error('no'); });",
      "describe('group', () => { test('fails inside', () => { throw new Error('no'); }); test('skipped', { skip: true }, () => {}); });",
    ].join('\n'));
    writeFileSync(join(dir, 'test', 'sub', 'b.test.ts'), "throw new Error('the file does not load');\n");
    writeFileSync(join(dir, 'test', 'c.test.ts'), "import { test } from 'node:test';\ntest('fine', () => {});\n");
    // Without NODE_TEST_CONTEXT: set in this test's own process, it would make the inner runner report to this one.
    const { NODE_TEST_CONTEXT: _inner, ...env } = process.env;
    const run = (...filters: string[]) => spawnSync(process.execPath, [resolve('scripts/run-tests.mjs'), ...filters], { cwd: dir, encoding: 'utf8', env });
    const r = run();
    assert.notEqual(r.status, 0);
    const tail = r.stdout.slice(r.stdout.lastIndexOf('\nfailed tests'));
    assert.match(tail, /^\nfailed tests \(2 passed, 3 failed, 1 skipped, 3 files in \d+ s\):\n {2}test\/a\.test\.ts: fails at the top\n {2}test\/a\.test\.ts: fails inside\n {2}test\/sub\/b\.test\.ts: \(the file itself: it failed outside its tests\)\n$/, r.stdout.slice(-600));
    const ok = run('c.test');
    assert.equal(ok.status, 0, ok.stdout);
    assert.match(ok.stdout, /\nall tests passed: 1 passed, 0 failed, 0 skipped, 1 files in \d+ s\n$/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
