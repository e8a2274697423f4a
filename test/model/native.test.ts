import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs-core';
import { initBackend } from '../../src/model/backend.ts';
import {
  installNativeKernels, logSoftmaxSelect, packPanelsNative, logSoftmaxSelectGrad, nativeKernelsActive, rmsNormNative, rmsNormNativeGrad,
  sampleRowsNative, setNativeKernels, swiGluNative, swiGluNativeGrad,
} from '../../src/model/native.ts';
import { drawToken, logSoftmaxAt } from '../../src/model/generate.ts';
import { Rng } from '../../src/util/rng.ts';
import { LlamaModel, mm } from '../../src/model/llama.ts';
import { resolveModelConfig } from '../../src/model/config.ts';

await initBackend('wasm');
const status = installNativeKernels();

// The addon is built by `npm install` (scripts/build-native.mjs). On this project's machines it must
// build; AGRO_NATIVE=0 is the one way to run without it.
test('the native kernels addon is built and installed', () => {
  if (process.env.AGRO_NATIVE === '0') {
    assert.equal(status.active, false);
    assert.match(status.reason ?? '', /AGRO_NATIVE=0/);
    return;
  }
  assert.equal(status.active, true, status.reason);
  assert.ok(status.threads! >= 1);
  assert.match(status.kernel!, /avx2\+fma|generic/);
});

function compare(aShape: number[], bShape: number[], tA: boolean, tB: boolean): void {
  const a = tf.randomNormal(aShape, 0, 1, 'float32', 11);
  const b = tf.randomNormal(bShape, 0, 1, 'float32', 12);
  setNativeKernels(false);
  const want = tf.matMul(a, b, tA, tB);
  setNativeKernels(true);
  const got = tf.matMul(a, b, tA, tB);
  assert.deepEqual(got.shape, want.shape);
  const K = tA ? aShape.at(-2)! : aShape.at(-1)!;
  const g = got.dataSync();
  const w = want.dataSync();
  // Summation order differs (blocked FMA vs XNNPACK): float32 rounding grows like sqrt(K).
  const tol = 2e-6 * K + 1e-5;
  for (let i = 0; i < g.length; i++) assert.ok(Math.abs(g[i] - w[i]) <= tol, `${aShape}x${bShape} ${tA}${tB} at ${i}: ${g[i]} vs ${w[i]}`);
  tf.dispose([a, b, want, got]);
}

const shapes: [number[], number[], boolean, boolean][] = [
  [[7, 5], [5, 3], false, false], // smaller than one 6 x 16 tile
  [[8, 40], [40, 100], false, false], // few rows: B read in place, ragged last panel packed
  [[37, 19], [19, 23], false, false], // ragged tiles
  [[19, 37], [23, 19], true, true],
  [[300, 70], [300, 41], true, false], // K = 300 spans two 256-deep blocks
  [[50, 600], [1100, 600], false, true], // N = 1100 spans three 512-wide blocks
  [[256, 128], [128, 512], false, false], // big enough to be split over threads
  [[4, 9, 8], [4, 8, 10], false, false], // batched
  [[4, 9, 8], [8, 10], false, false], // b broadcast over the batch
  [[1, 9, 8], [3, 10, 8], false, true], // a broadcast over the batch
  [[1, 33], [33, 70], false, false], // decoding shapes (<= 16 rows, row-major B): B streamed once per 8 rows
  [[5, 17], [17, 41], false, false],
  [[13, 64], [64, 24], false, false],
  [[16, 20], [20, 300], false, false],
  [[40, 3], [40, 50], true, false], // few rows of a transposed A
  [[8, 128], [128, 8200], false, false], // few rows, large enough to split the columns over threads
];

for (const [a, b, tA, tB] of shapes)
  test(`native matmul equals the stock kernel: [${a}] x [${b}]${tA ? ' transA' : ''}${tB ? ' transB' : ''}`, { skip: !status.active && 'addon off' }, () =>
    compare(a, b, tA, tB),
  );

test('mm gradients are the same with the native and the stock matmul, with and without transposeB', { skip: !status.active && 'addon off' }, () => {
  const x = tf.randomNormal([33, 20], 0, 1, 'float32', 1) as tf.Tensor2D;
  for (const transposeB of [false, true]) {
    const w = tf.randomNormal(transposeB ? [17, 20] : [20, 17], 0, 1, 'float32', 2) as tf.Tensor2D;
    const grads = (on: boolean): Float32Array[] => {
      setNativeKernels(on);
      assert.equal(nativeKernelsActive(), on);
      const g = tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.square(mm(a as tf.Tensor2D, b as tf.Tensor2D, transposeB))))([x, w]);
      return g.map((t) => t.dataSync() as Float32Array);
    };
    const off = grads(false);
    const on = grads(true);
    setNativeKernels(true);
    on.forEach((g, i) => g.forEach((v, j) => assert.ok(Math.abs(v - off[i][j]) <= 1e-3 * Math.max(1, Math.abs(off[i][j])), `grad ${i}[${j}]`)));
  }
});

test('the native matmul stays correct after the wasm heap grows, and shape errors still come from TF.js', { skip: !status.active && 'addon off' }, () => {
  const big = tf.zeros([64 * 1024 * 1024 / 4 * 3]); // 192 MB: forces the heap to grow
  compare([40, 30], [30, 20], false, false);
  big.dispose();
  assert.throws(() => tf.matMul(tf.ones([3, 4]), tf.ones([5, 2])), /inner shapes|must match/i);
});

test('the native fused loss equals log-softmax + select, and its gradient dy * (onehot - softmax)', { skip: !status.active && 'addon off' }, () => {
  // V = 37: not a multiple of the 8-lane exp; one row with huge logits checks the max shift.
  const N = 6;
  const V = 37;
  // Rounded to float32 first, so that the float64 reference sees exactly the tensor's values.
  const xs = Array.from({ length: N }, (_, n) => Array.from({ length: V }, (_, j) => Math.fround((n === 5 ? 900 : 0) + Math.sin(n * 7 + j) * 6)));
  const x = tf.tensor2d(xs) as tf.Tensor2D;
  const t = [0, 3, 36, 5, 7, 20];
  const targets = tf.tensor1d(t, 'int32') as tf.Tensor1D;
  const dy = tf.tensor1d([1, -2, 0.5, 3, 0, 1]) as tf.Tensor1D;
  const { logp, probs } = logSoftmaxSelect(x, targets);
  const gx = logSoftmaxSelectGrad(probs, targets, dy).arraySync() as number[][];
  const lp = logp.dataSync();
  const pr = probs.arraySync() as number[][];
  xs.forEach((row, n) => {
    // Reference in float64 by hand.
    const m = Math.max(...row);
    const s = row.reduce((a, v) => a + Math.exp(v - m), 0);
    assert.ok(Math.abs(lp[n] - (row[t[n]] - m - Math.log(s))) < 1e-5, `logp ${n}`);
    row.forEach((v, j) => {
      const p = Math.exp(v - m) / s;
      assert.ok(Math.abs(pr[n][j] - p) < 1e-6, `p ${n},${j}`);
      const g = dy.dataSync()[n] * ((j === t[n] ? 1 : 0) - p);
      assert.ok(Math.abs(gx[n][j] - g) < 1e-5, `grad ${n},${j}`);
    });
  });
  tf.dispose([x, targets, dy, logp, probs]);
});

test('native SwiGLU and RMSNorm (values and gradients) equal hand-computed ones on ragged sizes', { skip: !status.active && 'addon off' }, () => {
  const N = 3;
  const I = 13; // not a multiple of the 8-lane path
  const gu = Array.from({ length: N }, (_, n) => Array.from({ length: 2 * I }, (_, j) => Math.fround(Math.sin(n * 5 + j) * 4)));
  const dy = Array.from({ length: N }, (_, n) => Array.from({ length: I }, (_, j) => Math.fround(Math.cos(n + j * 3))));
  const out = swiGluNative(tf.tensor2d(gu) as tf.Tensor2D).arraySync() as number[][];
  const dgu = swiGluNativeGrad(tf.tensor2d(gu) as tf.Tensor2D, tf.tensor2d(dy) as tf.Tensor2D).arraySync() as number[][];
  const sig = (x: number): number => 1 / (1 + Math.exp(-x));
  for (let n = 0; n < N; n++)
    for (let i = 0; i < I; i++) {
      const g = gu[n][i];
      const u = gu[n][I + i];
      const s = sig(g);
      assert.ok(Math.abs(out[n][i] - g * s * u) < 1e-5, `swiglu ${n},${i}`);
      assert.ok(Math.abs(dgu[n][I + i] - dy[n][i] * g * s) < 1e-5, `d up ${n},${i}`);
      assert.ok(Math.abs(dgu[n][i] - dy[n][i] * u * s * (1 + g * (1 - s))) < 1e-5, `d gate ${n},${i}`);
    }

  const H = 11;
  const x = Array.from({ length: N }, (_, n) => Array.from({ length: H }, (_, j) => Math.fround(Math.sin(n * 3 + j) * 2 + 0.5)));
  const w = Array.from({ length: H }, (_, j) => Math.fround(1 + j / 10));
  const dyn = Array.from({ length: N }, (_, n) => Array.from({ length: H }, (_, j) => Math.fround(Math.cos(n * 2 + j))));
  const eps = 1e-5;
  const r = rmsNormNative(tf.tensor2d(x) as tf.Tensor2D, tf.tensor1d(w) as tf.Tensor1D, eps);
  const g = rmsNormNativeGrad(tf.tensor2d(x) as tf.Tensor2D, tf.tensor1d(w) as tf.Tensor1D, r.rstd, tf.tensor2d(dyn) as tf.Tensor2D);
  const y = r.y.arraySync() as number[][];
  const dx = g.dx.arraySync() as number[][];
  const dw = g.dw.dataSync();
  const dwRef = new Array<number>(H).fill(0);
  for (let n = 0; n < N; n++) {
    const rs = 1 / Math.sqrt(x[n].reduce((a, v) => a + v * v, 0) / H + eps);
    // d/dx_j of sum_k dy_k w_k x_k rs = rs (dy_j w_j - x_j rs^2 mean_k(dy_k w_k x_k))
    const m = x[n].reduce((a, v, k) => a + dyn[n][k] * w[k] * v, 0) / H;
    for (let j = 0; j < H; j++) {
      assert.ok(Math.abs(y[n][j] - x[n][j] * rs * w[j]) < 1e-5, `rms y ${n},${j}`);
      assert.ok(Math.abs(dx[n][j] - rs * (dyn[n][j] * w[j] - x[n][j] * rs * rs * m)) < 1e-5, `rms dx ${n},${j}`);
      dwRef[j] += dyn[n][j] * x[n][j] * rs;
    }
  }
  dwRef.forEach((v, j) => assert.ok(Math.abs(dw[j] - v) < 1e-5, `rms dw ${j}`));
});

test('a model gives the same loss and gradients with the native kernels on and off', { skip: !status.active && 'addon off' }, () => {
  // hd 16 (fused attention), intermediate 45 (ragged SwiGLU rows), q/k/v biases, untied head.
  const cfg = resolveModelConfig({ vocabSize: 61, hiddenSize: 64, intermediateSize: 45, numLayers: 2, numHeads: 4, numKvHeads: 2, maxPositions: 32, attentionBias: true, tieEmbeddings: false });
  const m = new LlamaModel(cfg, { seed: 4 });
  const ids = tf.tensor2d([[1, 5, 9, 13, 22, 40, 7], [3, 3, 8, 60, 2, 0, 11]], undefined, 'int32');
  const tg = tf.tensor2d([[5, 9, 13, 22, 40, 7, 3], [3, 8, 60, 2, 0, 11, 59]], undefined, 'int32');
  const run = (on: boolean): { loss: number; grads: Float32Array[] } => {
    setNativeKernels(on);
    const { value, grads } = tf.variableGrads(() => tf.neg(tf.mean(m.tokenLogProbs(ids, tg).logp)) as tf.Scalar, m.trainableVariables());
    return { loss: value.dataSync()[0], grads: m.trainableVariables().map((v) => grads[v.name].dataSync() as Float32Array) };
  };
  const a = run(true);
  const b = run(false);
  setNativeKernels(true);
  assert.ok(Math.abs(a.loss - b.loss) < 1e-5);
  a.grads.forEach((g, i) => g.forEach((v, j) => assert.ok(Math.abs(v - b.grads[i][j]) < 1e-5, `${m.trainableVariables()[i].name}[${j}]`)));
  m.dispose();
});

test('packPanelsNative lays B out as zero-padded [K][8] column panels, from B or from B stored transposed', { skip: !status.active && 'addon off' }, () => {
  const K = 3;
  const N = 21;
  const b = Array.from({ length: K * N }, (_, i) => i + 1); // B[k][j] = k * N + j + 1
  const want: number[] = [];
  for (let p = 0; p < 3; p++)
    for (let k = 0; k < K; k++)
      for (let q = 0; q < 8; q++) want.push(p * 8 + q < N ? k * N + p * 8 + q + 1 : 0);
  const bt = tf.tensor2d(b, [K, N]);
  const btT = tf.transpose(bt) as tf.Tensor2D;
  const got = packPanelsNative(bt);
  const gotT = packPanelsNative(btT, true);
  assert.deepEqual(Array.from(got.dataSync()), want);
  assert.deepEqual(Array.from(gotT.dataSync()), want);
  tf.dispose([bt, btT, got, gotT]);
});

test('sampleRowsNative draws the tokens drawToken draws and the log-probs logSoftmaxAt gives', { skip: !status.active && 'addon off' }, () => {
  // Ragged vocabulary, sharp and flat rows, a tie for the maximum (the first one wins), u near 0 and near 1.
  const V = 37;
  const rng = new Rng(3);
  const rows: Float32Array[] = [];
  for (let i = 0; i < 40; i++) rows.push(Float32Array.from({ length: V }, () => rng.normal() * (i % 3 === 0 ? 8 : 1)));
  rows[1][5] = rows[1][20] = 50;
  const logits = tf.tensor2d(Float32Array.from(rows.flatMap((r) => [...r])), [rows.length, V]);
  const us = Float64Array.from(rows, (_, i) => (i === 2 ? 0 : i === 3 ? 1 - 2 ** -40 : rng.next()));
  for (const temperature of [0, 0.7, 1, 1.9]) {
    const got = sampleRowsNative(logits, temperature, us);
    rows.forEach((r, i) => {
      const want = drawToken(r, { temperature, topK: 0, topP: 1 }, { next: () => us[i] } as Rng);
      assert.equal(got.tokens[i], want, `temperature ${temperature} row ${i}`);
      assert.ok(Math.abs(got.logprobs[i] - logSoftmaxAt(r, want)) < 1e-5, `logprob at temperature ${temperature} row ${i}`);
    });
    if (temperature === 0) assert.equal(got.tokens[1], 5);
  }
  logits.dispose();
});
