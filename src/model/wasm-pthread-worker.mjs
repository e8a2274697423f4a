/*
 * pthread worker for TF.js's threaded wasm build in Node (see backend.ts). The package ships the
 * worker script only as a string (wasmWorkerContents) that its browser loader turns into a Blob URL,
 * which Node's worker_threads cannot load; this file runs that same string. Its escaped "\n"
 * sequences became real newlines in the template literal, so they are escaped back first (as the
 * package's own loader does). It expects CommonJS's require and __filename.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const __filename = fileURLToPath(import.meta.url);
const { wasmWorkerContents } = require('@tensorflow/tfjs-backend-wasm/wasm-out/tfjs-backend-wasm-threaded-simd.worker.js');
eval(wasmWorkerContents.replace(/\n/g, '\\n'));
