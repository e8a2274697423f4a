#!/usr/bin/env node
// `npm install` hook: build the optional native kernels addon (native/*.cc -> build/Release/agro_native.node)
// with node-gyp, as better-sqlite3 builds itself. agro works without it (TF.js's own wasm matmul runs
// instead), so a failed build warns and exits 0; set AGRO_NATIVE_REQUIRED=1 to make it fatal.
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
  console.log('agro: built the native kernels (build/Release/agro_native.node)');
  process.exit(0);
}
const why = r.error ? r.error.message : (r.stderr || r.stdout).trim().split('\n').filter((l) => /error/i.test(l)).slice(0, 3).join(' | ');
console.warn(`agro: native kernels not built (${why || `node-gyp exited ${r.status}`}); the model runs on TF.js's wasm kernels`);
process.exit(process.env.AGRO_NATIVE_REQUIRED === '1' ? 1 : 0);
