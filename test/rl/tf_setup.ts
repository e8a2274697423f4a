/** Test setup for the tensor tests: the cpu backend plus tfjs's gradient definitions (see src/model/backend.ts). */
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { ensureGradients } from '../../src/model/backend.ts';

/** `gradients: false` skips loading the gradient definitions (a few seconds) for forward-only tests. */
export async function setupTf({ gradients = true } = {}): Promise<void> {
  if (gradients) await ensureGradients();
  await tf.setBackend('cpu');
}
