import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs-core';
import { initBackend } from '../../src/model/backend.ts';
import { LlamaModel } from '../../src/model/llama.ts';
import { resolveModelConfig } from '../../src/model/config.ts';
import { AgroError } from '../../src/errors.ts';

const cfg = resolveModelConfig({ preset: 'tiny', vocabSize: 31, hiddenSize: 32, intermediateSize: 40, numHeads: 4, numKvHeads: 2 });

async function lossAndGrads(backend: 'wasm' | 'cpu'): Promise<{ loss: number; grads: Float32Array[] }> {
  assert.equal(await initBackend(backend), backend);
  assert.equal(tf.getBackend(), backend);
  const m = new LlamaModel(cfg, { seed: 21 });
  const ids = tf.tensor2d([[1, 5, 9, 5, 30], [2, 2, 7, 0, 1]], [2, 5], 'int32');
  const tg = tf.tensor2d([[5, 9, 5, 30, 3], [2, 7, 0, 1, 1]], [2, 5], 'int32');
  const vars = m.trainableVariables();
  const { value, grads } = tf.variableGrads(() => {
    const { logp, entropy } = m.tokenLogProbs(ids, tg, { withEntropy: true });
    return tf.sub(tf.neg(tf.mean(logp)), tf.mul(0.1, tf.mean(entropy!))) as tf.Scalar;
  }, vars);
  const out = { loss: value.dataSync()[0], grads: vars.map((v) => grads[v.name].dataSync() as Float32Array) };
  tf.dispose([value, ids, tg, ...Object.values(grads)]);
  m.dispose();
  return out;
}

test('wasm and cpu backends give the same loss and gradients (embedding, log-prob and entropy paths)', async () => {
  const w = await lossAndGrads('wasm');
  const c = await lossAndGrads('cpu');
  assert.ok(Math.abs(w.loss - c.loss) < 1e-5);
  w.grads.forEach((g, i) => {
    let m = 0;
    let scale = 0;
    for (let j = 0; j < g.length; j++) {
      m = Math.max(m, Math.abs(g[j] - c.grads[i][j]));
      scale = Math.max(scale, Math.abs(c.grads[i][j]));
    }
    assert.ok(scale > 0, `variable ${i} has a zero gradient`);
    assert.ok(m <= 1e-4 * Math.max(1, scale), `variable ${i}: max diff ${m} (scale ${scale})`);
  });
  await initBackend('wasm');
});

test('entropy output equals -sum p log p', async () => {
  await initBackend('wasm');
  const m = new LlamaModel(cfg, { seed: 2 });
  const ids = tf.tensor2d([[3, 4, 5]], [1, 3], 'int32');
  const { logp, entropy } = m.tokenLogProbs(ids, ids, { withEntropy: true });
  const logits = m.forward(ids).arraySync()[0];
  const ent = entropy!.arraySync()[0];
  logits.forEach((row, t) => {
    const mx = Math.max(...row);
    const z = row.reduce((s, x) => s + Math.exp(x - mx), 0);
    const h = -row.reduce((s, x) => s + (Math.exp(x - mx) / z) * (x - mx - Math.log(z)), 0);
    assert.ok(Math.abs(h - ent[t]) < 1e-4, `t=${t}: ${h} vs ${ent[t]}`);
  });
  tf.dispose([logp, entropy!, ids]);
  m.dispose();
});

test('unknown backends are rejected with a usage error', async () => {
  await assert.rejects(initBackend('webgl' as 'wasm'), (e: unknown) => e instanceof AgroError && e.kind === 'usage' && /unknown backend 'webgl'/.test(e.message));
});
