#!/usr/bin/env node
// Node 20's test runner takes no globs, so list test/**/*.test.ts here and hand the files to `node --test`.
// Extra arguments narrow the run to files whose path contains one of them: `npm run test:only -- sql eval`.
// The tests make their scratch folders under os.tmpdir(); TMPDIR points it at one folder for the run, removed
// when the run ends (pass or fail, or interrupted), so a run leaves nothing behind in /tmp.
// The run ends with the list of failed tests and its time (scripts/test-summary.mjs collects them).
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawn } from 'node:child_process';

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? walk(p) : p.endsWith('.test.ts') ? [p] : [];
  });
}

const filters = process.argv.slice(2);
const files = walk('test')
  .map((f) => relative('.', f))
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}
const scratch = mkdtempSync(join(tmpdir(), 'agro-test-'));
// Traversable (not listable) by others: a test run as root starts PostgreSQL as an unprivileged user in a folder of its own in here.
chmodSync(scratch, 0o711);
const summaryFile = join(scratch, 'summary.json');
const started = Date.now();
// The usual reporter (spec on a terminal, TAP otherwise, as node --test chooses) to stdout, the summary to a file.
const reporters = ['--test-reporter', process.stdout.isTTY ? 'spec' : 'tap', '--test-reporter-destination', 'stdout', '--test-reporter', fileURLToPath(new URL('./test-summary.mjs', import.meta.url)), '--test-reporter-destination', summaryFile];
const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', ...reporters, ...files], { stdio: 'inherit', env: { ...process.env, TMPDIR: scratch } });
// Ctrl-C reaches the whole process group; a signal sent to this process alone is passed on. Either way the
// child's exit is what ends the run, after the scratch folder is gone.
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => child.kill(sig));
child.on('exit', (code) => {
  const summary = existsSync(summaryFile) ? readFileSync(summaryFile, 'utf8').trim() : '';
  rmSync(scratch, { recursive: true, force: true, maxRetries: 3 });
  const s = Math.round((Date.now() - started) / 1000);
  const time = s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
  const { failed = [], passed = 0, skipped = 0 } = summary ? JSON.parse(summary) : {};
  const counts = `${passed} passed, ${failed.length} failed, ${skipped} skipped, ${files.length} files in ${time}`;
  if (failed.length) console.log(`\nfailed tests (${counts}):\n${failed.map((f) => `  ${f.file}: ${f.name}`).join('\n')}`);
  else console.log(`\n${code === 0 ? 'all tests passed' : `the run failed (exit ${code ?? 'by signal'})`}: ${counts}`);
  process.exit(code ?? 1);
});
