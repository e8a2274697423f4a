/**
 * TensorFlow.js backend selection. wasm (XNNPACK, SIMD) is several times faster than the pure-JS
 * cpu backend here; the threaded wasm build needs browser workers and does not start in Node,
 * so wasm runs single-threaded.
 */
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import '@tensorflow/tfjs-backend-wasm';
import { register } from 'node:module';
import { AgroError } from '../errors.ts';

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

/** Select and initialise a backend: `name`, else env AGRO_BACKEND, else wasm. Idempotent. */
export async function initBackend(name?: BackendName): Promise<BackendName> {
  const want = name ?? process.env.AGRO_BACKEND ?? 'wasm';
  if (!NAMES.includes(want as BackendName))
    throw new AgroError('usage', `unknown backend '${want}' (choose wasm or cpu)`);
  if (tf.getBackend() !== want || !tf.engine().backendNames().includes(want)) {
    const ok = await tf.setBackend(want);
    if (!ok) throw new AgroError('internal', `TensorFlow.js backend '${want}' failed to initialise`);
  }
  await tf.ready();
  await ensureGradients();
  return want as BackendName;
}

export function currentBackend(): string {
  return tf.getBackend();
}
