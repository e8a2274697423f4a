/**
 * Test setup for the tensor tests: the cpu backend plus tfjs's gradient definitions.
 * The CommonJS build of tfjs-core that Node loads carries no gradients; they live in its ES-module build,
 * whose extensionless relative imports Node cannot resolve, hence the small resolve hook. Gradient and
 * kernel registries are process-global, so registering from that copy serves the CommonJS one too.
 */
import { register } from 'node:module';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';

const HOOK = `
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

/** `gradients: false` skips loading the gradient definitions (a few seconds) for forward-only tests. */
export async function setupTf({ gradients = true } = {}): Promise<void> {
  if (gradients && tf.getGradient('RealDiv') === undefined) {
    register('data:text/javascript,' + encodeURIComponent(HOOK));
    await import('@tensorflow/tfjs-core/dist/register_all_gradients.js');
  }
  await tf.setBackend('cpu');
}
