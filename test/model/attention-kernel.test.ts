import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs-core';
import { initBackend } from '../../src/model/backend.ts';
import { LlamaModel } from '../../src/model/llama.ts';
import { resolveModelConfig } from '../../src/model/config.ts';
import type { ModelConfig } from '../../src/model/config.ts';
import { attentionForward, fusedAttentionSupports } from '../../src/model/kernels/attention.ts';
import { AgroError } from '../../src/errors.ts';
import { nativeAttentionActive, setNativeKernels } from '../../src/model/native.ts';

await initBackend('wasm');
// On this project's machines the addon builds (native.test.ts asserts it); AGRO_NATIVE=0 skips the native runs.

// The fused kernel (kernels/attention.c) against the model's plain TF.js attention, which the
// llama tests check against an independent loop implementation of the HF model.

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

function batch(B: number, T: number, V: number, salt: number): tf.Tensor2D {
  return tf.tensor2d(Array.from({ length: B }, (_, b) => Array.from({ length: T }, (_, t) => (b * 31 + t * 7 + salt) % V)), [B, T], 'int32');
}

/** Loss and every parameter gradient of mean token log-prob, with the given attention implementation. */
function lossAndGrads(m: LlamaModel, ids: tf.Tensor2D, tg: tf.Tensor2D, attention: 'fused' | 'tfjs'): { loss: number; grads: Float32Array[] } {
  const saved = process.env.AGRO_ATTENTION;
  process.env.AGRO_ATTENTION = attention === 'tfjs' ? 'tfjs' : '';
  try {
    const { value, grads } = tf.variableGrads(() => tf.neg(tf.mean(m.tokenLogProbs(ids, tg).logp)) as tf.Scalar, m.trainableVariables());
    const out = { loss: value.dataSync()[0], grads: m.trainableVariables().map((v) => grads[v.name].dataSync() as Float32Array) };
    tf.dispose([value, ...Object.values(grads)]);
    return out;
  } finally {
    process.env.AGRO_ATTENTION = saved ?? '';
  }
}

const cases: [string, Partial<ModelConfig>, number, number][] = [
  // [name, config, batch, time]: T not a multiple of the kernel's 4-row blocks, GQA groups 1, 2, 4, biases.
  ['GQA 4/2, hd 16, T 13', { hiddenSize: 64, numHeads: 4, numKvHeads: 2 }, 2, 13],
  ['MHA 4/4, hd 32, T 8', { hiddenSize: 128, numHeads: 4, numKvHeads: 4 }, 1, 8],
  ['GQA 8/2, hd 16, T 37, q/k/v biases', { hiddenSize: 128, numHeads: 8, numKvHeads: 2, attentionBias: true }, 3, 37],
];

// Each case runs twice: on the native addon's build of the kernel and on its wasm build.
const builds = [
  ['native', true],
  ['wasm', false],
] as const;

for (const [name, over, B, T] of cases)
  for (const [build, native] of builds)
  test(`fused attention (${build}) gives the plain attention's loss and gradients: ${name}`, { skip: native && !nativeAttentionActive() && 'no native addon' }, () => {
    setNativeKernels(native);
    const cfg = resolveModelConfig({ vocabSize: 97, intermediateSize: 48, numLayers: 2, maxPositions: 64, ...over });
    const m = new LlamaModel(cfg, { seed: 3 });
    // Non-zero biases, so that the bias gradient path is exercised too.
    for (const v of m.trainableVariables()) if (v.name.endsWith('bqkv')) v.assign(tf.randomNormal(v.shape, 0, 0.3, 'float32', 5));
    const ids = batch(B, T, 97, 0);
    const tg = batch(B, T, 97, 1);
    const a = lossAndGrads(m, ids, tg, 'fused');
    const b = lossAndGrads(m, ids, tg, 'tfjs');
    assert.ok(Math.abs(a.loss - b.loss) < 1e-5, `loss ${a.loss} vs ${b.loss}`);
    a.grads.forEach((g, i) => {
      const scale = Math.max(...b.grads[i].map(Math.abs));
      assert.ok(maxDiff(g, b.grads[i]) <= 1e-5 * Math.max(1, scale) + 1e-6, `gradient ${m.trainableVariables()[i].name}`);
    });
    tf.dispose([ids, tg]);
    m.dispose();
    setNativeKernels(true);
  });

for (const [build, native] of builds)
test(`fused attention (${build}) with left padding and given positions matches the masked plain attention, cache included`, { skip: native && !nativeAttentionActive() && 'no native addon' }, () => {
  setNativeKernels(native);
  const cfg = resolveModelConfig({ vocabSize: 50, hiddenSize: 64, intermediateSize: 48, numLayers: 2, numHeads: 4, numKvHeads: 2, maxPositions: 64 });
  const m = new LlamaModel(cfg, { seed: 9 });
  const B = 3;
  const T = 10;
  const pad = [0, 3, 9];
  const ids = batch(B, T, 50, 2);
  const pos = tf.tensor2d(pad.flatMap((p) => Array.from({ length: T }, (_, t) => Math.max(0, t - p))), [B, T], 'int32');
  const run = (attention: 'fused' | 'tfjs'): { h: Float32Array; k: Float32Array[]; v: Float32Array[] } =>
    tf.tidy(() => {
      const r = m.forwardHidden(ids, { positions: pos, padLeft: pad, attention, wantCache: true, noGrad: true });
      return { h: r.hidden.dataSync() as Float32Array, k: r.cache!.k.map((x) => x.dataSync() as Float32Array), v: r.cache!.v.map((x) => x.dataSync() as Float32Array) };
    });
  const a = run('fused');
  const b = run('tfjs');
  const H = cfg.hiddenSize;
  // Hidden states of real (non-padding) tokens agree; padding rows are never read.
  for (let bi = 0; bi < B; bi++)
    for (let t = pad[bi]; t < T; t++)
      assert.ok(maxDiff(a.h.subarray((bi * T + t) * H, (bi * T + t + 1) * H), b.h.subarray((bi * T + t) * H, (bi * T + t + 1) * H)) < 1e-5);
  // The caches hold the same rotated keys and values at every real position (padding keys are
  // masked forever; past the first layer they differ, as padding rows' outputs do).
  const hd = 16;
  const nkv = 2;
  a.k.forEach((k, l) => {
    for (let bi = 0; bi < B; bi++)
      for (let h = 0; h < nkv; h++)
        for (let t = pad[bi]; t < T; t++) {
          const at = ((bi * nkv + h) * T + t) * hd;
          assert.ok(maxDiff(k.subarray(at, at + hd), b.k[l].subarray(at, at + hd)) < 1e-5, `layer ${l} key ${bi}/${h}/${t}`);
          assert.ok(maxDiff(a.v[l].subarray(at, at + hd), b.v[l].subarray(at, at + hd)) < 1e-5, `layer ${l} value ${bi}/${h}/${t}`);
        }
  });
  tf.dispose([ids, pos]);
  m.dispose();
  setNativeKernels(true);
});

test('a fully padded row attends to nothing and yields zeros, not NaN', () => {
  const hd = 8;
  const args = {
    batch: 1, time: 4, heads: 2, kvHeads: 1, headDim: hd,
    positions: Int32Array.from([0, 0, 0, 0]),
    tables: { cos: new Float32Array(8 * hd).fill(1), sin: new Float32Array(8 * hd), headDim: hd, maxPositions: 8 },
    padLeft: Int32Array.from([4]),
  };
  const r = attentionForward(new Float32Array(4 * 4 * hd).map((_, i) => Math.sin(i)), args);
  assert.ok(r.out.every((x) => x === 0));
});

test('the fused kernel rejects positions outside the rotary table and reports unsupported head sizes', () => {
  const hd = 8;
  assert.throws(
    () =>
      attentionForward(new Float32Array(3 * hd), {
        batch: 1, time: 1, heads: 1, kvHeads: 1, headDim: hd, positions: Int32Array.from([8]),
        tables: { cos: new Float32Array(8 * hd), sin: new Float32Array(8 * hd), headDim: hd, maxPositions: 8 },
      }),
    (e: unknown) => e instanceof AgroError && /position 8 is outside \[0, 8\)/.test(e.message),
  );
  assert.equal(fusedAttentionSupports({ headDim: 12, heads: 2, kvHeads: 1 }), false); // rotary halves of 6: not SIMD-aligned
  assert.equal(fusedAttentionSupports({ headDim: 16, heads: 4, kvHeads: 2 }), true);
});

test('a head size the kernel cannot take falls back to plain attention with the same results', () => {
  const cfg = resolveModelConfig({ vocabSize: 40, hiddenSize: 24, intermediateSize: 32, numLayers: 1, numHeads: 2, numKvHeads: 1, maxPositions: 32 });
  const m = new LlamaModel(cfg, { seed: 1 });
  const ids = batch(1, 6, 40, 0);
  const a = tf.tidy(() => m.forwardHidden(ids, { attention: 'fused' }).hidden.dataSync() as Float32Array);
  const b = tf.tidy(() => m.forwardHidden(ids, { attention: 'tfjs' }).hidden.dataSync() as Float32Array);
  assert.equal(maxDiff(a, b), 0);
  ids.dispose();
  m.dispose();
});
