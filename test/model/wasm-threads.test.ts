import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { wasmThreadsFromEnv } from '../../src/model/backend.ts';
import { AgroError } from '../../src/errors.ts';

// Each run is its own process: the wasm backend's build and thread count are fixed once it starts.
const SRC = new URL('../../src/model/', import.meta.url).href;
const M = 96, K = 80, N = 200;
const CHILD = `
import * as tf from '@tensorflow/tfjs-core';
import { initBackend, wasmThreadCount } from '${SRC}backend.ts';
import { LlamaModel } from '${SRC}llama.ts';
import { resolveModelConfig } from '${SRC}config.ts';
await initBackend('wasm');
const fill = (n, f) => Float32Array.from({ length: n }, (_, i) => f(i));
const a = tf.tensor2d(fill(${M * K}, (i) => ((i * 7) % 13) / 13 - 0.5), [${M}, ${K}]);
const b = tf.tensor2d(fill(${K * N}, (i) => ((i * 5) % 11) / 11 - 0.5), [${K}, ${N}]);
const matmul = Array.from(tf.matMul(a, b).dataSync());
const cfg = resolveModelConfig({ preset: 'tiny', vocabSize: 50 });
const m = new LlamaModel(cfg, { seed: 4 });
const ids = tf.tensor2d(fill(4 * 24, (i) => (i * 17 + 3) % 50), [4, 24], 'int32');
const tg = tf.tensor2d(fill(4 * 24, (i) => (i * 17 + 20) % 50), [4, 24], 'int32');
const loss = () => tf.neg(tf.mean(m.tokenLogProbs(ids, tg).logp));
const vars = m.trainableVariables();
const { value, grads } = tf.variableGrads(loss, vars);
const gradSums = vars.map((v) => tf.sum(tf.abs(grads[v.name])).dataSync()[0]);
for (const v of vars) v.assign(tf.sub(v, tf.mul(0.5, grads[v.name])));
const after = loss().dataSync()[0];
process.stdout.write(JSON.stringify({ threads: wasmThreadCount(), matmul, loss: value.dataSync()[0], gradSums, after }));
if (process.env.THEN_FAIL) tf.matMul(tf.ones([2, 3]), tf.ones([4, 5]));
`;

interface ChildOut {
  threads: number;
  matmul: number[];
  loss: number;
  gradSums: number[];
  after: number;
}

function runChild(threads: number, thenFail = false): Promise<{ code: number | null; signal: string | null; out: string; err: string }> {
  // AGRO_NATIVE=0: matmuls on XNNPACK (the code under test), not on the native addon.
  const env = { ...process.env, AGRO_WASM_THREADS: String(threads), AGRO_NATIVE: '0', ...(thenFail ? { THEN_FAIL: '1' } : {}) };
  const p = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD], { env });
  let out = '';
  let err = '';
  p.stdout.on('data', (d: Buffer) => (out += d));
  p.stderr.on('data', (d: Buffer) => (err += d));
  // A pthread worker keeping Node alive would hang here: the kill turns that into a failure.
  const timer = setTimeout(() => p.kill('SIGKILL'), 90_000);
  return new Promise((resolve) =>
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out, err });
    }),
  );
}

async function run(threads: number): Promise<ChildOut> {
  const r = await runChild(threads);
  assert.equal(r.signal, null, `AGRO_WASM_THREADS=${threads}: the process did not exit by itself`);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.err, '', 'no fallback notice or warnings');
  return JSON.parse(r.out) as ChildOut;
}

test('the threaded wasm backend starts with 2 threads, exits by itself, and matches the single-threaded build', async () => {
  const two = await run(2);
  const one = await run(1);
  assert.equal(two.threads, 2);
  assert.equal(one.threads, 1);
  // The matmul against a float64 triple loop over the same inputs.
  const a = (i: number) => Math.fround(((i * 7) % 13) / 13 - 0.5);
  const b = (i: number) => Math.fround(((i * 5) % 11) / 11 - 0.5);
  for (const r of [two, one]) {
    assert.equal(r.matmul.length, M * N);
    for (let i = 0; i < M; i++)
      for (let j = 0; j < N; j++) {
        let s = 0;
        for (let k = 0; k < K; k++) s += a(i * K + k) * b(k * N + j);
        assert.ok(Math.abs(r.matmul[i * N + j] - s) < 1e-4, `c[${i},${j}] = ${r.matmul[i * N + j]}, want ${s}`);
      }
  }
  // One training step: loss, gradient magnitudes and the loss after an SGD step agree.
  const close = (x: number, y: number, what: string) => assert.ok(Math.abs(x - y) <= 1e-5 * Math.max(1, Math.abs(y)), `${what}: ${x} vs ${y}`);
  close(two.loss, one.loss, 'loss');
  assert.ok(one.loss > 3 && one.loss < 5, `loss ${one.loss} should be near ln 50 = 3.91 for a fresh model`);
  assert.equal(two.gradSums.length, one.gradSums.length);
  two.gradSums.forEach((g, i) => {
    assert.ok(one.gradSums[i] > 0, `variable ${i} has a zero gradient`);
    close(g, one.gradSums[i], `|grad| of variable ${i}`);
  });
  close(two.after, one.after, 'loss after the step');
  assert.ok(two.after < two.loss, `an SGD step lowers the loss (${two.loss} -> ${two.after})`);
});

test('errors after the threaded backend started surface as a normal uncaught error (exit 1, short message)', async () => {
  const r = await runChild(2, true);
  assert.equal(r.signal, null);
  assert.equal(r.code, 1);
  assert.match(r.err, /Error in matMul: inner shapes \(3\) and \(4\)/);
  // The module's own rethrowing handler would exit 7 and print its whole minified source line.
  assert.ok(r.err.length < 4000, `stderr is ${r.err.length} characters`);
});

test('AGRO_WASM_THREADS: default 1, auto = the core count (at most 8); bad values are usage errors', () => {
  assert.equal(wasmThreadsFromEnv({}), 1);
  assert.equal(wasmThreadsFromEnv({ AGRO_WASM_THREADS: 'auto' }), Math.min(availableParallelism(), 8));
  assert.equal(wasmThreadsFromEnv({ AGRO_WASM_THREADS: '3' }), 3);
  for (const bad of ['0', '9', '1.5', 'two'])
    assert.throws(
      () => wasmThreadsFromEnv({ AGRO_WASM_THREADS: bad }),
      (e: unknown) => e instanceof AgroError && e.kind === 'usage' && e.message.includes(`got '${bad}'`),
    );
});
