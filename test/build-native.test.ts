// The install hook builds in a temporary folder and renames each file into build/Release (issue #50): a process
// running meanwhile (a `predict`, `npm test`: npx runs the hook again on its first use in the repository) never
// finds the SQLite extension missing or half-written. Checked with a slow stand-in for node-gyp that builds as
// `node-gyp rebuild` does (the build folder removed, then each file written in pieces) in a copy of the project.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const FAKE_GYP = `
const { existsSync, mkdirSync, rmSync, writeFileSync, appendFileSync } = require('node:fs');
// What the real build reads beside binding.gyp: native/attention.cc includes ../src/model/kernels/attention.c.
if (!existsSync('native/addon.cc') || !existsSync('src/model/kernels/attention.c')) { console.error('error: a source the build includes is missing'); process.exit(1); }
const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
rmSync('build', { recursive: true, force: true });
pause(150);
mkdirSync('build/Release', { recursive: true });
for (const name of ['agro_sqlite.node', 'agro_native.node']) {
  writeFileSync('build/Release/' + name, 'NEW-');
  pause(150);
  appendFileSync('build/Release/' + name, 'WHOLE');
}
if (process.env.FAKE_GYP_FAIL) process.exit(1);
`;

function project(): { dir: string; release: string; gyp: string } {
  const dir = mkdtempSync(join(tmpdir(), 'agro-build-native-'));
  mkdirSync(join(dir, 'scripts'));
  cpSync(resolve('scripts/build-native.mjs'), join(dir, 'scripts', 'build-native.mjs'));
  writeFileSync(join(dir, 'binding.gyp'), '{}');
  mkdirSync(join(dir, 'native'));
  writeFileSync(join(dir, 'native', 'addon.cc'), '');
  mkdirSync(join(dir, 'src', 'model', 'kernels'), { recursive: true });
  writeFileSync(join(dir, 'src', 'model', 'kernels', 'attention.c'), '');
  const release = join(dir, 'build', 'Release');
  mkdirSync(release, { recursive: true });
  for (const name of ['agro_sqlite.node', 'agro_native.node']) writeFileSync(join(release, name), 'OLD');
  writeFileSync(join(dir, 'fake-gyp.cjs'), FAKE_GYP);
  return { dir, release, gyp: join(dir, 'fake-gyp.cjs') };
}

/** Runs the hook and reads the extension every few ms while it runs: every content seen, in order. */
async function watchBuild(p: ReturnType<typeof project>, env: Record<string, string> = {}): Promise<{ code: number | null; seen: string[]; output: string }> {
  const child = spawn(process.execPath, [join(p.dir, 'scripts', 'build-native.mjs')], { env: { ...process.env, npm_config_node_gyp: p.gyp, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const seen: string[] = [];
  const look = (): void => {
    const f = join(p.release, 'agro_sqlite.node');
    const now = existsSync(f) ? readFileSync(f, 'utf8') : '(missing)';
    if (seen.at(-1) !== now) seen.push(now);
  };
  const timer = setInterval(look, 5);
  const code = await new Promise<number | null>((done) => child.on('close', done));
  clearInterval(timer);
  look();
  return { code, seen, output };
}

test('build-native: build/Release holds the old file or the whole new one at every moment, and no temporary folder after', { timeout: 60_000 }, async () => {
  const p = project();
  try {
    const r = await watchBuild(p);
    assert.equal(r.code, 0, r.output);
    assert.deepEqual(r.seen, ['OLD', 'NEW-WHOLE'], 'the extension was seen missing or half-written');
    assert.equal(readFileSync(join(p.release, 'agro_native.node'), 'utf8'), 'NEW-WHOLE');
    assert.deepEqual(readdirSync(join(p.dir, 'build')), ['Release'], 'a temporary folder was left');
    // A failed build keeps the files it had, and says so.
    for (const name of ['agro_sqlite.node', 'agro_native.node']) writeFileSync(join(p.release, name), 'OLD');
    rmSync(p.gyp);
    writeFileSync(p.gyp, "process.stderr.write('error: no compiler\\n'); process.exit(1);\n");
    const failed = await watchBuild(p);
    assert.equal(failed.code, 0, failed.output);
    assert.deepEqual(failed.seen, ['OLD']);
    assert.match(failed.output, /native build failed \(error: no compiler\); build\/Release keeps its previous agro_sqlite\.node and agro_native\.node/);
  } finally {
    rmSync(p.dir, { recursive: true, force: true });
  }
});
