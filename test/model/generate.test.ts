import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs-core';
import { initBackend } from '../../src/model/backend.ts';
import { LlamaModel } from '../../src/model/llama.ts';
import { resolveModelConfig } from '../../src/model/config.ts';
import { drawToken, sampleGroups, sequenceLogProbs } from '../../src/model/generate.ts';
import { Rng } from '../../src/util/rng.ts';
import { nativeDecodeActive, setNativeKernels } from '../../src/model/native.ts';

await initBackend('wasm');

const cfg = resolveModelConfig({ preset: 'tiny', vocabSize: 29, hiddenSize: 32, intermediateSize: 48, numHeads: 4, numKvHeads: 2, maxPositions: 64 });
const model = new LlamaModel(cfg, { seed: 4 });
const prompts = [[3, 9, 14, 2, 7], [11], [5, 5, 20]];

function fullLogits(seq: number[]): Float32Array {
  return tf.tidy(() => model.forward(tf.tensor2d([seq], [1, seq.length], 'int32')).dataSync() as Float32Array);
}
function argmax(a: Float32Array): number {
  let b = 0;
  for (let i = 1; i < a.length; i++) if (a[i] > a[b]) b = i;
  return b;
}

test('greedy decoding (left-padded batch, KV cache) equals step-by-step argmax of full forward passes', async () => {
  const out = await sampleGroups(model, prompts, 1, { maxNewTokens: 6, temperature: 0 });
  const V = cfg.vocabSize;
  prompts.forEach((p, i) => {
    const seq = [...p];
    for (let t = 0; t < 6; t++) {
      const lg = fullLogits(seq).subarray((seq.length - 1) * V, seq.length * V);
      seq.push(argmax(lg));
    }
    assert.deepEqual(out[i][0].tokens, seq.slice(p.length), `prompt ${i}`);
    assert.equal(out[i][0].finish, 'length');
  });
});

test('top-k = 1 sampling equals greedy', async () => {
  const greedy = await sampleGroups(model, prompts, 2, { maxNewTokens: 5, temperature: 0 });
  const topk1 = await sampleGroups(model, prompts, 2, { maxNewTokens: 5, temperature: 1.5, topK: 1, seed: 99 });
  assert.deepEqual(topk1.map((g) => g.map((s) => s.tokens)), greedy.map((g) => g.map((s) => s.tokens)));
});

test('seeded sampling is reproducible; another seed differs; groups share the prompt', async () => {
  const opts = { maxNewTokens: 8, temperature: 1.2, topP: 0.95, seed: 7 };
  const a = await sampleGroups(model, prompts, 4, opts);
  const b = await sampleGroups(model, prompts, 4, opts);
  assert.deepEqual(a, b);
  const c = await sampleGroups(model, prompts, 4, { ...opts, seed: 8 });
  assert.notDeepEqual(a.map((g) => g.map((s) => s.tokens)), c.map((g) => g.map((s) => s.tokens)));
  assert.equal(a.length, 3);
  for (const g of a) {
    assert.equal(g.length, 4);
    for (const s of g) assert.equal(s.tokens.length, 8);
  }
  // With a high temperature the 4 samples of one prompt are not all identical.
  assert.ok(new Set(a[0].map((s) => s.tokens.join(','))).size > 1);
});

test('per-prompt seeds: what a prompt draws does not depend on the prompts batched with it', async () => {
  const opts = { maxNewTokens: 8, temperature: 1.2 };
  const alone = await Promise.all(prompts.map((p, i) => sampleGroups(model, [p], 2, { ...opts, promptSeeds: [100 + i] })));
  const together = await sampleGroups(model, prompts, 2, { ...opts, promptSeeds: prompts.map((_, i) => 100 + i) });
  const reversed = await sampleGroups(model, [...prompts].reverse(), 2, { ...opts, promptSeeds: prompts.map((_, i) => 100 + i).reverse() });
  prompts.forEach((_, i) => {
    assert.deepEqual(together[i].map((s) => s.tokens), alone[i][0].map((s) => s.tokens), `prompt ${i}`);
    assert.deepEqual(reversed[prompts.length - 1 - i].map((s) => s.tokens), together[i].map((s) => s.tokens), `prompt ${i} reversed`);
  });
  // A shared seed forks by batch position instead: the same prompt draws differently in another place.
  const shared = await sampleGroups(model, [prompts[1], prompts[1]], 1, { ...opts, seed: 5 });
  assert.notDeepEqual(shared[0][0].tokens, shared[1][0].tokens);
  await assert.rejects(sampleGroups(model, prompts, 1, { ...opts, promptSeeds: [1] }), /promptSeeds must hold one/);
});

test('returned log-probs equal recomputed sequence log-probs; stop tokens end a sample', async () => {
  const stop = 6;
  const out = await sampleGroups(model, prompts, 3, { maxNewTokens: 10, temperature: 1.5, seed: 3, stopTokenIds: [stop] });
  const seqs: number[][] = [];
  const expected: number[][] = [];
  out.forEach((g, i) =>
    g.forEach((s) => {
      assert.equal(s.tokens.length, s.logprobs.length);
      if (s.finish === 'stop') assert.equal(s.tokens.at(-1), stop);
      else assert.equal(s.tokens.length, 10);
      assert.ok(!s.tokens.slice(0, -1).includes(stop));
      seqs.push([...prompts[i], ...s.tokens]);
      expected.push(s.logprobs);
    }),
  );
  const re = await sequenceLogProbs(model, seqs, { batchSize: 4 });
  re.forEach((lp, j) => {
    const gen = lp.slice(lp.length - expected[j].length);
    gen.forEach((v, t) => assert.ok(Math.abs(v - expected[j][t]) < 1e-4, `seq ${j} token ${t}: ${v} vs ${expected[j][t]}`));
  });
});

test('sequenceLogProbs: padded batches equal one-at-a-time; values are log-softmax of full logits', async () => {
  const seqs = [[1, 2, 3, 4, 5, 6, 7], [8, 9], [10, 11, 12], [4]];
  const batched = await sequenceLogProbs(model, seqs);
  assert.deepEqual(batched[3], []);
  const V = cfg.vocabSize;
  for (let i = 0; i < 3; i++) {
    const [one] = await sequenceLogProbs(model, [seqs[i]]);
    assert.equal(one.length, seqs[i].length - 1);
    one.forEach((v, t) => assert.ok(Math.abs(v - batched[i][t]) < 1e-5));
    const lg = fullLogits(seqs[i]);
    for (let t = 1; t < seqs[i].length; t++) {
      const row = lg.subarray((t - 1) * V, t * V);
      const m = Math.max(...row);
      const lse = m + Math.log(row.reduce((s, x) => s + Math.exp(x - m), 0));
      assert.ok(Math.abs(row[seqs[i][t]] - lse - one[t - 1]) < 1e-4);
    }
  }
});

test('drawToken: top-p keeps the nucleus, temperature 0 is argmax, frequencies follow the distribution', () => {
  const logits = Float32Array.from([Math.log(0.5), Math.log(0.3), Math.log(0.15), Math.log(0.05)]);
  const rng = new Rng(1);
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < 4000; i++) counts[drawToken(logits, { temperature: 1, topP: 0.7, topK: 0 }, rng)]++;
  // Nucleus {0, 1} (mass 0.8 >= 0.7), renormalised: 0.625 / 0.375.
  assert.equal(counts[2] + counts[3], 0);
  assert.ok(Math.abs(counts[0] / 4000 - 0.625) < 0.03, `${counts}`);
  const all = [0, 0, 0, 0];
  for (let i = 0; i < 4000; i++) all[drawToken(logits, { temperature: 1, topP: 1, topK: 0 }, rng)]++;
  assert.ok(Math.abs(all[3] / 4000 - 0.05) < 0.015, `${all}`);
  const k2 = [0, 0, 0, 0];
  for (let i = 0; i < 500; i++) k2[drawToken(logits, { temperature: 1, topP: 1, topK: 2 }, rng)]++;
  assert.equal(k2[2] + k2[3], 0);
  assert.equal(drawToken(logits, { temperature: 0, topP: 1, topK: 0 }, rng), 0);
});

test('bad inputs are rejected with one-line errors', async () => {
  await assert.rejects(sampleGroups(model, [[1, 99]], 1, { maxNewTokens: 2 }), /token id 99 is outside the vocabulary/);
  await assert.rejects(sampleGroups(model, [[]], 1, { maxNewTokens: 2 }), /prompt 0 is empty/);
  await assert.rejects(sampleGroups(model, [[1]], 0, { maxNewTokens: 2 }), /groupSize/);
  await assert.rejects(sampleGroups(model, [[1]], 1, { maxNewTokens: 2, topP: 0 }), /topP/);
  await assert.rejects(sampleGroups(model, [[1]], 1, { maxNewTokens: 64 }), /exceeds maxPositions 64/);
  await assert.rejects(sequenceLogProbs(model, [[1, -1]]), /token id -1/);
});

test('sampling and log-prob recomputation leave no tensors behind', async () => {
  await sampleGroups(model, prompts, 2, { maxNewTokens: 3, seed: 1 });
  await sequenceLogProbs(model, [[1, 2, 3]]);
  const before = tf.memory().numTensors;
  await sampleGroups(model, prompts, 3, { maxNewTokens: 6, temperature: 1, seed: 5, stopTokenIds: [1, 2, 3] });
  await sequenceLogProbs(model, [[1, 2, 3], [4, 5]]);
  assert.equal(tf.memory().numTensors, before);
});

test('tokenLogProbs clamps padding targets (-1) instead of reading out of bounds', () => {
  const ids = tf.tensor2d([[1, 2, 3]], [1, 3], 'int32');
  const lp = tf.tidy(() => model.tokenLogProbs(ids, tf.tensor2d([[2, -1, -1]], [1, 3], 'int32')).logp.arraySync()[0]);
  const ref = tf.tidy(() => model.tokenLogProbs(ids, tf.tensor2d([[2, 0, 0]], [1, 3], 'int32')).logp.arraySync()[0]);
  assert.deepEqual(lp, ref);
  assert.ok(lp.every((v) => Number.isFinite(v) && v < 0));
  ids.dispose();
});

test('tokenLogProbs and sequenceLogProbs at a temperature are the log-softmax of the logits divided by it', async () => {
  const seq = [3, 9, 14, 2, 7];
  const ids = tf.tensor2d([seq.slice(0, -1)], [1, 4], 'int32');
  const tg = tf.tensor2d([seq.slice(1)], [1, 4], 'int32');
  const V = cfg.vocabSize;
  const logits = fullLogits(seq.slice(0, -1));
  for (const T of [0.5, 1, 1.7]) {
    const got = tf.tidy(() => model.tokenLogProbs(ids, tg, { temperature: T }).logp.arraySync()[0]);
    const rows = await sequenceLogProbs(model, [seq], { temperature: T });
    for (let t = 0; t < 4; t++) {
      const z = Array.from(logits.subarray(t * V, (t + 1) * V), (x) => x / T);
      const m = Math.max(...z);
      const want = z[seq[t + 1]] - m - Math.log(z.reduce((a, x) => a + Math.exp(x - m), 0));
      assert.ok(Math.abs(got[t] - want) < 1e-4, `T=${T} t=${t}: ${got[t]} vs ${want}`);
      assert.ok(Math.abs(rows[0][t] - want) < 1e-4);
    }
  }
  assert.throws(() => model.tokenLogProbs(ids, tg, { temperature: 0 }), /temperature must be > 0/);
  ids.dispose();
  tg.dispose();
});

test('the native decoding step samples what the TF.js steps sample (biases, untied head, ragged sizes, finished rows)', { skip: !nativeDecodeActive() && 'addon off' }, async () => {
  // Sizes off the kernels' tiles (H 40, I 37, V 53, head dim 10) and rows that stop at different steps.
  const c = resolveModelConfig({
    vocabSize: 53, hiddenSize: 40, intermediateSize: 37, numLayers: 2, numHeads: 4, numKvHeads: 2, maxPositions: 64,
    tieEmbeddings: false, attentionBias: true,
  });
  const m = new LlamaModel(c, { seed: 9 });
  // Weights ~15x the init scale: sharp attention and logits, so a wrong rotary, mask or cache row shows.
  const w = m.exportWeights();
  for (const [name, e] of w) if (!name.endsWith('norm.weight') && !name.endsWith('layernorm.weight')) e.data = e.data.map((x) => x * 15);
  m.importWeights(w);
  const ps = [[3, 9, 14, 2, 7, 30, 1], [11], [5, 5, 20]];
  const run = async (native: boolean, o: { temperature?: number; seed?: number; stopTokenIds?: number[] }) => {
    setNativeKernels(native);
    try {
      return await sampleGroups(m, ps, 3, { maxNewTokens: 12, ...o });
    } finally {
      setNativeKernels(true);
    }
  };
  for (const o of [{ temperature: 0 }, { temperature: 1, seed: 5, stopTokenIds: [4, 17, 33] }]) {
    const want = await run(false, o);
    const got = await run(true, o);
    assert.ok(got.flat().some((s) => s.finish === 'stop') || o.temperature === 0);
    got.forEach((g, p) =>
      g.forEach((s, j) => {
        const w = want[p][j];
        assert.deepEqual(s.tokens, w.tokens, `prompt ${p} sample ${j}`);
        assert.equal(s.finish, w.finish);
        s.logprobs.forEach((lp, t) => assert.ok(Math.abs(lp - w.logprobs[t]) < 1e-4, `logprob ${p}/${j}/${t}: ${lp} vs ${w.logprobs[t]}`));
      }),
    );
  }
  m.dispose();
});
