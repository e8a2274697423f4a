/**
 * TensorFlow.js backend selection. wasm (XNNPACK, SIMD) is several times faster than the pure-JS
 * cpu backend here. In Node the wasm package only loads its single-threaded build; with
 * AGRO_WASM_THREADS=N (2..8) this module starts the package's multi-threaded build itself (see
 * createThreadedWasm) so XNNPACK's kernels run on N threads. The default is 1 thread: on a 2-core
 * machine 2 threads speed large matmuls up ~1.5x only while the other core is idle; when it is
 * busy (tests in parallel, another job, the native addon's own pool) every parallel kernel waits
 * for a descheduled thread and small ones (decoding) get several times slower.
 */
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { BackendWasm, getThreadsCount, setThreadsCount } from '@tensorflow/tfjs-backend-wasm';
import { createRequire, register } from 'node:module';
import { availableParallelism, type CpuInfo } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { AgroError } from '../errors.ts';
import { installNativeKernels } from './native.ts';

export type BackendName = 'wasm' | 'cpu';
const NAMES: readonly BackendName[] = ['wasm', 'cpu'];

// tfjs prints a "use tfjs-node" banner in Node; it is noise for a CLI.
tf.env().set('PROD', true);

/*
 * tfjs-core's Node bundle ships no gradient definitions (only the @tensorflow/tfjs union package
 * registers them), so tf.grads/variableGrads fail on every op. The definitions exist as ESM files
 * under dist/, written with extensionless imports that Node's ESM resolver rejects; this resolve
 * hook adds the `.js` / `/index.js`. The ESM copy shares the global engine and registries with the
 * CJS bundle, so its registrations apply everywhere.
 */
const RESOLVE_HOOK = `
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
export async function resolve(spec, ctx, next) {
  const p = ctx.parentURL;
  if (p && p.includes('/@tensorflow/tfjs-core/dist/') && spec.startsWith('.') && !spec.endsWith('.js')) {
    const base = new URL(spec, p);
    if (existsSync(fileURLToPath(base) + '.js')) return next(base.href + '.js', ctx);
    return next(base.href + '/index.js', ctx);
  }
  return next(spec, ctx);
}`;
let gradients: Promise<unknown> | undefined;

/** Register tfjs's gradient definitions once per process. */
export function ensureGradients(): Promise<unknown> {
  if (!gradients) {
    if (tf.getGradient('Neg') !== undefined) gradients = Promise.resolve();
    else {
      register('data:text/javascript,' + encodeURIComponent(RESOLVE_HOOK));
      gradients = import('@tensorflow/tfjs-core/dist/register_all_gradients.js');
    }
  }
  return gradients;
}

/** The threaded build pre-spawns 8 pthread workers, and its C++ side caps the pool there. */
const MAX_WASM_THREADS = 8;
/** Starting 8 workers takes well under a second; this only catches a worker that never loads. */
const THREADED_INIT_TIMEOUT_MS = 60_000;

/** Threads for the wasm backend: env AGRO_WASM_THREADS (1-8, or `auto` = the core count), else 1. */
export function wasmThreadsFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.AGRO_WASM_THREADS;
  if (raw === undefined || raw.trim() === '') return 1;
  if (raw.trim() === 'auto') return Math.min(availableParallelism(), MAX_WASM_THREADS);
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_WASM_THREADS)
    throw new AgroError('usage', `AGRO_WASM_THREADS must be 'auto' or an integer from 1 to ${MAX_WASM_THREADS} (got '${raw}')`);
  return n;
}

type WasmModule = ConstructorParameters<typeof BackendWasm>[0];
interface NodeWorker {
  unref(): void;
  terminate(): Promise<number>;
}
/** The members of Emscripten's pthread bookkeeping used here (Module.PThread). */
interface PThreadPool {
  runningWorkers: NodeWorker[];
  unusedWorkers: NodeWorker[];
  terminateAllThreads(): void;
}
interface EmscriptenConfig {
  locateFile(path: string, prefix: string): string;
  mainScriptUrlOrBlob: string;
  /** Emscripten fills the config object in as the module: set while the module starts. */
  PThread?: PThreadPool;
}
/** The members of the Emscripten module used here (the package's types leave EmscriptenModule undeclared). */
interface ThreadedModule {
  cwrap(name: string, returns: 'number' | null, args: 'number'[]): (...args: number[]) => number;
  PThread: PThreadPool;
  tfjs?: WasmModule['tfjs'];
}

const requireHere = createRequire(import.meta.url);
const osModule = requireHere('node:os') as { cpus: () => CpuInfo[] };

/** Run `f` with os.cpus() reporting `n` logical cores. */
async function withLogicalCores<T>(n: number, f: () => Promise<T>): Promise<T> {
  const real = osModule.cpus;
  osModule.cpus = () => {
    const c = real();
    return Array.from({ length: n }, (_, i) => c[i % c.length]);
  };
  try {
    return await f();
  } finally {
    osModule.cpus = real;
  }
}

/**
 * Run `f` with Emscripten's pthread workers started without this process's execArgv: they would
 * otherwise each load what `--import` preloads (tsx: ~0.2 s a worker, 8 workers).
 */
async function withBareWorkers<T>(f: () => Promise<T>): Promise<T> {
  const g = globalThis as { Worker?: unknown };
  const saved = Object.getOwnPropertyDescriptor(g, 'Worker');
  class BareWorker extends Worker {
    constructor(file: string) {
      super(file, { execArgv: [] });
    }
  }
  // The module assigns global.Worker = worker_threads.Worker before it creates its workers.
  Object.defineProperty(g, 'Worker', { configurable: true, get: () => BareWorker, set: () => {} });
  try {
    return await f();
  } finally {
    if (saved) Object.defineProperty(g, 'Worker', saved);
    else delete g.Worker;
  }
}

/** Run `f`, then drop the process-wide uncaughtException/unhandledRejection listeners it added. */
async function withoutAddedProcessHandlers<T>(f: () => Promise<T>): Promise<T> {
  const exceptions = process.listeners('uncaughtException');
  const rejections = process.listeners('unhandledRejection');
  try {
    return await f();
  } finally {
    for (const l of process.listeners('uncaughtException')) if (!exceptions.includes(l)) process.off('uncaughtException', l);
    for (const l of process.listeners('unhandledRejection')) if (!rejections.includes(l)) process.off('unhandledRejection', l);
  }
}

function timeout<T>(p: Promise<T>, ms: number, onTimeout: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout();
      reject(new Error(`no answer from its workers in ${ms / 1000} s`));
    }, ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/*
 * The package's loader cannot start its threaded build in Node: the WASM_HAS_MULTITHREAD_SUPPORT
 * flag is false there (tfjs#3830), and the loader hands Emscripten a Blob URL for the pthread worker
 * and for the main script, which worker_threads cannot load. So the standalone Emscripten module
 * under wasm-out/ is started here with file paths (our wasm-pthread-worker.mjs runs the worker
 * script) and wrapped in the package's BackendWasm, exactly as the loader's init() does; the
 * package's kernels are registered per backend name and apply unchanged.
 * Three Node-specific fixes:
 * - the C++ side caps the pool at navigator.hardwareConcurrency / 2 (it assumes two hyperthreads
 *   per core), which in Node is os.cpus().length / 2, read once while the module starts: 1 thread
 *   on a 2-core machine. os.cpus() reports 2 * threads cores during start-up.
 * - Emscripten keeps a worker ref'd while it runs a pthread, and the pool's threads never end, so
 *   Node would never exit: they are unref'd. The pre-spawned workers the pool leaves unused are ended.
 * - the module installs process-wide uncaughtException/unhandledRejection handlers that rethrow
 *   (exit code 7, with the minified line printed); they are removed so Node's defaults apply.
 */
async function createThreadedWasm(threads: number): Promise<BackendWasm> {
  const glue = requireHere.resolve('@tensorflow/tfjs-backend-wasm/wasm-out/tfjs-backend-wasm-threaded-simd.js');
  const factory = requireHere(glue) as (config: EmscriptenConfig) => Promise<ThreadedModule>;
  const workerScript = fileURLToPath(new URL('./wasm-pthread-worker.mjs', import.meta.url));
  const config: EmscriptenConfig = {
    locateFile: (path, prefix) => (path.endsWith('.worker.js') ? workerScript : prefix + path),
    mainScriptUrlOrBlob: glue,
  };
  const wasm = await withoutAddedProcessHandlers(() =>
    withBareWorkers(() =>
      withLogicalCores(2 * threads, () =>
        timeout(factory(config), THREADED_INIT_TIMEOUT_MS, () => config.PThread?.terminateAllThreads()),
      ),
    ),
  );
  wasm.tfjs = {
    init: wasm.cwrap('init', null, []),
    initWithThreadsCount: wasm.cwrap('init_with_threads_count', null, ['number']),
    getThreadsCount: wasm.cwrap('get_threads_count', 'number', []),
    registerTensor: wasm.cwrap('register_tensor', null, ['number', 'number', 'number']),
    disposeData: wasm.cwrap('dispose_data', null, ['number']),
    dispose: wasm.cwrap('dispose', null, []),
  };
  setThreadsCount(threads);
  const backend = new BackendWasm(wasm as unknown as WasmModule);
  const pool = wasm.PThread;
  for (const w of pool.runningWorkers) w.unref();
  for (const w of pool.unusedWorkers.splice(0)) void w.terminate();
  const got = getThreadsCount();
  if (got !== threads) {
    backend.dispose();
    throw new Error(`it started ${got} threads instead of ${threads}`);
  }
  return backend;
}

const stockWasmFactory = tf.findBackendFactory('wasm');
let wasmConfigured = false;

/**
 * Before the wasm backend first starts, register the factory for the wanted thread count: the
 * package's single-threaded build for 1 thread, else the threaded build, which falls back to the
 * single-threaded one with a one-line reason on stderr when it cannot start.
 */
function configureWasm(): void {
  if (wasmConfigured) return;
  const threads = wasmThreadsFromEnv();
  wasmConfigured = true;
  if (threads === 1 || tf.engine().registry.wasm !== undefined) return;
  tf.removeBackend('wasm');
  tf.registerBackend(
    'wasm',
    async () => {
      try {
        return await createThreadedWasm(threads);
      } catch (e) {
        const why = e instanceof Error ? e.message : String(e);
        process.stderr.write(`agro: multi-threaded wasm backend unavailable (${why}); using the single-threaded build\n`);
        setThreadsCount(1);
        return stockWasmFactory();
      }
    },
    2,
  );
}

/** Select and initialise a backend: `name`, else env AGRO_BACKEND, else wasm. Idempotent. */
export async function initBackend(name?: BackendName): Promise<BackendName> {
  const want = name ?? process.env.AGRO_BACKEND ?? 'wasm';
  if (!NAMES.includes(want as BackendName))
    throw new AgroError('usage', `unknown backend '${want}' (choose wasm or cpu)`);
  if (want === 'wasm') configureWasm();
  if (tf.getBackend() !== want || !tf.engine().backendNames().includes(want)) {
    const ok = await tf.setBackend(want);
    if (!ok) throw new AgroError('internal', `TensorFlow.js backend '${want}' failed to initialise`);
  }
  await tf.ready();
  await ensureGradients();
  // The native kernels (native.ts) plug into the wasm backend when the addon is built.
  if (want === 'wasm') installNativeKernels();
  return want as BackendName;
}

export function currentBackend(): string {
  return tf.getBackend();
}

/** Threads the wasm backend computes with; undefined before it has started. */
export function wasmThreadCount(): number | undefined {
  return tf.engine().registry.wasm === undefined ? undefined : getThreadsCount();
}
