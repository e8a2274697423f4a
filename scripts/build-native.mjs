#!/usr/bin/env node
// `npm install` hook: build agro's two native targets with node-gyp, as better-sqlite3 builds itself:
//  - build/Release/agro_sqlite.node (native/sqlite/agro_sqlite.c): the SQLite extension that lets SQL use
//    double-quoted string literals as the official evaluators' SQLite does, and stops a query past its
//    limits without killing its process (src/sql/open-database.mjs); plain C against better-sqlite3's headers;
//  - build/Release/agro_native.node (native/*.cc): the optional model kernels.
// agro runs without either (strict quoting, where `agro eval` refuses to score; TF.js's wasm kernels), so a
// failed build says what is missing and exits 0; set AGRO_NATIVE_REQUIRED=1 to make it fatal.
// The build runs in a temporary folder (build/.tmp-<pid>-…, a copy of binding.gyp, native/ and the C sources it
// includes from src/model/kernels/) and each built
// file is renamed into build/Release, one atomic rename each: a `predict` or `npm test` running meanwhile (npx
// runs this hook again on its first use in the repository) loads the old file or the new one, never a missing or
// half-written one, and a failed build leaves the old files in place.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
if (process.env.AGRO_NATIVE === '0') {
  console.log('agro: native addon skipped (AGRO_NATIVE=0)');
  process.exit(0);
}
const TARGETS = ['agro_sqlite.node', 'agro_native.node'];
const release = join(root, 'build', 'Release');
mkdirSync(release, { recursive: true });
// Temporary folders of builds whose process is gone (killed mid-build).
for (const name of readdirSync(join(root, 'build'))) {
  const pid = Number(/^\.tmp-(\d+)-/.exec(name)?.[1]);
  if (!pid) continue;
  let alive = true;
  try {
    process.kill(pid, 0);
  } catch (err) {
    alive = err.code === 'EPERM';
  }
  if (!alive) rmSync(join(root, 'build', name), { recursive: true, force: true });
}
const tmp = mkdtempSync(join(root, 'build', `.tmp-${process.pid}-`));
let r;
try {
  cpSync(join(root, 'binding.gyp'), join(tmp, 'binding.gyp'));
  cpSync(join(root, 'native'), join(tmp, 'native'), { recursive: true });
  // The native kernels include the wasm build's C source (native/attention.cc: ../src/model/kernels/attention.c).
  cpSync(join(root, 'src', 'model', 'kernels'), join(tmp, 'src', 'model', 'kernels'), { recursive: true });
  // npm runs lifecycle scripts with its bundled node-gyp on PATH and npm_config_node_gyp pointing at it.
  const gyp = process.env.npm_config_node_gyp;
  const [cmd, args] = gyp && existsSync(gyp) ? [process.execPath, [gyp, 'rebuild']] : ['node-gyp', ['rebuild']];
  r = spawnSync(cmd, args, { cwd: tmp, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  for (const name of TARGETS) {
    const built = join(tmp, 'build', 'Release', name);
    if (existsSync(built)) renameSync(built, join(release, name));
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
if (r.status === 0) {
  console.log('agro: built the SQLite extension and the native kernels (build/Release/)');
  process.exit(0);
}
const why = r.error ? r.error.message : (r.stderr || r.stdout).trim().split('\n').filter((l) => /error/i.test(l)).slice(0, 3).join(' | ');
const built = (name) => existsSync(join(release, name));
const kept = TARGETS.filter(built);
if (kept.length) console.warn(`agro: native build failed (${why || `node-gyp exited ${r.status}`}); build/Release keeps its previous ${kept.join(' and ')}`);
if (!built('agro_sqlite.node')) {
  console.warn(`agro: SQLite extension not built (${why || `node-gyp exited ${r.status}`}); "text" in SQL stays an identifier, agro eval refuses to score, and a query past its limit costs its SQL process`);
}
if (!built('agro_native.node')) {
  console.warn(`agro: native kernels not built (${why || `node-gyp exited ${r.status}`}); the model runs on TF.js's wasm kernels`);
}
process.exit(process.env.AGRO_NATIVE_REQUIRED === '1' ? 1 : 0);
