#!/usr/bin/env node
// `npm install` hook: build agro's two native targets with node-gyp, as better-sqlite3 builds itself:
//  - build/Release/agro_sqlite.node (native/sqlite/agro_sqlite.c): the SQLite extension that lets SQL use
//    double-quoted string literals as the official evaluators' SQLite does, and stops a query past its
//    limits without killing its process (src/sql/open-database.mjs); plain C against better-sqlite3's headers;
//  - build/Release/agro_native.node (native/*.cc): the optional model kernels.
// agro runs without either (strict quoting, where `agro eval` refuses to score; TF.js's wasm kernels), so a
// failed build says what is missing and exits 0; set AGRO_NATIVE_REQUIRED=1 to make it fatal.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
if (process.env.AGRO_NATIVE === '0') {
  console.log('agro: native addon skipped (AGRO_NATIVE=0)');
  process.exit(0);
}
// npm runs lifecycle scripts with its bundled node-gyp on PATH and npm_config_node_gyp pointing at it.
const gyp = process.env.npm_config_node_gyp;
const [cmd, args] = gyp && existsSync(gyp) ? [process.execPath, [gyp, 'rebuild']] : ['node-gyp', ['rebuild']];
const r = spawnSync(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
if (r.status === 0) {
  console.log('agro: built the SQLite extension and the native kernels (build/Release/)');
  process.exit(0);
}
const why = r.error ? r.error.message : (r.stderr || r.stdout).trim().split('\n').filter((l) => /error/i.test(l)).slice(0, 3).join(' | ');
const built = (name) => existsSync(join(root, 'build', 'Release', name));
if (!built('agro_sqlite.node')) {
  console.warn(`agro: SQLite extension not built (${why || `node-gyp exited ${r.status}`}); "text" in SQL stays an identifier, agro eval refuses to score, and a query past its limit costs its SQL process`);
}
if (!built('agro_native.node')) {
  console.warn(`agro: native kernels not built (${why || `node-gyp exited ${r.status}`}); the model runs on TF.js's wasm kernels`);
}
process.exit(process.env.AGRO_NATIVE_REQUIRED === '1' ? 1 : 0);
