import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs-core';
import { initBackend } from '../../src/model/backend.ts';
import { LlamaModel, embedLookup } from '../../src/model/llama.ts';
import type { WeightMap } from '../../src/model/llama.ts';
import { PRESETS, fromHfConfig, parameterCount, resolveModelConfig, toHfConfig } from '../../src/model/config.ts';
import type { ModelConfig } from '../../src/model/config.ts';
import { AgroError } from '../../src/errors.ts';

await initBackend('wasm');

const small = (over: Partial<ModelConfig> = {}): ModelConfig =>
  resolveModelConfig({ preset: 'tiny', vocabSize: 23, hiddenSize: 32, intermediateSize: 48, numHeads: 4, numKvHeads: 2, ...over });

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

function logitsOf(m: LlamaModel, seq: number[]): Float32Array {
  return tf.tidy(() => m.forward(tf.tensor2d([seq], [1, seq.length], 'int32')).dataSync() as Float32Array);
}

/**
 * Independent reference: a plain-loop Llama forward over Hugging Face-layout weights ([out, in]
 * matrices, rotate_half RoPE, repeat_kv GQA), written straight from the HF modeling code.
 */
function referenceLogits(cfg: ModelConfig, w: WeightMap, seq: number[]): Float64Array {
  const H = cfg.hiddenSize;
  const hd = cfg.headDim ?? H / cfg.numHeads;
  const g = cfg.numHeads / cfg.numKvHeads;
  const T = seq.length;
  const W = (n: string): Float32Array => w.get(n)!.data;
  const linear = (x: Float64Array, name: string, outDim: number, inDim: number, bias?: string): Float64Array => {
    const m = W(name);
    const y = new Float64Array(outDim);
    for (let o = 0; o < outDim; o++) {
      let s = bias ? W(bias)[o] : 0;
      for (let i = 0; i < inDim; i++) s += m[o * inDim + i] * x[i];
      y[o] = s;
    }
    return y;
  };
  const rms = (x: Float64Array, name: string): Float64Array => {
    let ms = 0;
    for (const v of x) ms += v * v;
    const r = 1 / Math.sqrt(ms / x.length + cfg.rmsNormEps);
    return x.map((v, i) => v * r * W(name)[i]);
  };
  const rope = (v: Float64Array, heads: number, pos: number): Float64Array => {
    const out = new Float64Array(v.length);
    const half = hd / 2;
    for (let h = 0; h < heads; h++)
      for (let j = 0; j < hd; j++) {
        const f = Math.fround(1 / Math.pow(cfg.ropeTheta, (2 * (j % half)) / hd));
        const a = Math.fround(pos * f);
        const rot = j < half ? -v[h * hd + j + half] : v[h * hd + j - half];
        out[h * hd + j] = v[h * hd + j] * Math.cos(a) + rot * Math.sin(a);
      }
    return out;
  };
  let xs = seq.map((t) => Float64Array.from(W('model.embed_tokens.weight').subarray(t * H, (t + 1) * H)));
  for (let l = 0; l < cfg.numLayers; l++) {
    const p = `model.layers.${l}`;
    const b = (n: string): string | undefined => (cfg.attentionBias ? `${p}.self_attn.${n}_proj.bias` : undefined);
    const hs = xs.map((x) => rms(x, `${p}.input_layernorm.weight`));
    const q = hs.map((h, t) => rope(linear(h, `${p}.self_attn.q_proj.weight`, cfg.numHeads * hd, H, b('q')), cfg.numHeads, t));
    const k = hs.map((h, t) => rope(linear(h, `${p}.self_attn.k_proj.weight`, cfg.numKvHeads * hd, H, b('k')), cfg.numKvHeads, t));
    const v = hs.map((h) => linear(h, `${p}.self_attn.v_proj.weight`, cfg.numKvHeads * hd, H, b('v')));
    xs = xs.map((x, t) => {
      const att = new Float64Array(cfg.numHeads * hd);
      for (let h = 0; h < cfg.numHeads; h++) {
        const kv = Math.floor(h / g);
        const sc = Array.from({ length: t + 1 }, (_, s) => {
          let d = 0;
          for (let j = 0; j < hd; j++) d += q[t][h * hd + j] * k[s][kv * hd + j];
          return d / Math.sqrt(hd);
        });
        const mx = Math.max(...sc);
        const e = sc.map((z) => Math.exp(z - mx));
        const z = e.reduce((a2, b2) => a2 + b2, 0);
        for (let s = 0; s <= t; s++) for (let j = 0; j < hd; j++) att[h * hd + j] += (e[s] / z) * v[s][kv * hd + j];
      }
      const o = linear(att, `${p}.self_attn.o_proj.weight`, H, cfg.numHeads * hd);
      const x1 = x.map((val, i) => val + o[i]);
      const h2 = rms(x1, `${p}.post_attention_layernorm.weight`);
      const gt = linear(h2, `${p}.mlp.gate_proj.weight`, cfg.intermediateSize, H);
      const up = linear(h2, `${p}.mlp.up_proj.weight`, cfg.intermediateSize, H);
      const act = gt.map((gv, i) => (gv / (1 + Math.exp(-gv))) * up[i]);
      const dn = linear(act, `${p}.mlp.down_proj.weight`, H, cfg.intermediateSize);
      return x1.map((val, i) => val + dn[i]);
    });
  }
  const head = cfg.tieEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight';
  const out = new Float64Array(T * cfg.vocabSize);
  xs.forEach((x, t) => out.set(linear(rms(x, 'model.norm.weight'), head, cfg.vocabSize, H), t * cfg.vocabSize));
  return out;
}

test('presets are valid and small is 5-20M parameters with a 4k vocabulary', () => {
  const tiny = resolveModelConfig({ preset: 'tiny', vocabSize: 100 });
  assert.equal(tiny.numLayers, PRESETS.tiny.numLayers);
  const n = parameterCount(resolveModelConfig({ preset: 'small', vocabSize: 4096 }));
  assert.ok(n >= 5e6 && n <= 20e6, `small has ${n} parameters`);
  const m = new LlamaModel(small({ tieEmbeddings: false, attentionBias: true }));
  const counted = m.trainableVariables().reduce((s, v) => s + v.size, 0);
  assert.equal(counted, parameterCount(m.config));
  m.dispose();
});

test('impossible configs are rejected with one-line invalid_input errors', () => {
  const cases: [object, RegExp][] = [
    [{ vocabSize: 10, hiddenSize: 30, numHeads: 4 }, /numHeads \(4\) must divide hiddenSize \(30\)/],
    [{ vocabSize: 10, hiddenSize: 64, numHeads: 4, numKvHeads: 3 }, /numKvHeads \(3\) must divide numHeads \(4\)/],
    [{ vocabSize: 10, numHeads: 4, numKvHeads: 8 }, /must not exceed/],
    [{ vocabSize: 0 }, /vocabSize/],
    [{ vocabSize: 10, hiddenSize: 60, numHeads: 4, numKvHeads: 4 }, /must be even/],
    [{ preset: 'huge', vocabSize: 10 }, /preset/],
  ];
  for (const [input, re] of cases) {
    assert.throws(
      () => resolveModelConfig(input),
      (e: unknown) => e instanceof AgroError && e.kind === 'invalid_input' && re.test(e.message) && !e.message.includes('\n'),
    );
  }
  assert.throws(() => fromHfConfig({ model_type: 'gpt2', vocab_size: 5, hidden_size: 8, intermediate_size: 8, num_hidden_layers: 1, num_attention_heads: 2 }), /unsupported architecture 'gpt2'/);
});

test('HF config.json round trip (Llama and Qwen2)', () => {
  for (const cfg of [small(), small({ attentionBias: true, tieEmbeddings: false })]) {
    const hf = toHfConfig(cfg, { bosTokenId: 1, eosTokenId: 2 });
    assert.equal((hf.architectures as string[])[0], cfg.attentionBias ? 'Qwen2ForCausalLM' : 'LlamaForCausalLM');
    assert.deepEqual(fromHfConfig(hf), { ...cfg, headDim: 8 });
  }
});

test('forward matches an independent HF-convention reference (RoPE rotate_half, GQA repeat_kv, biases, untied head)', () => {
  const cfg = small({ attentionBias: true, tieEmbeddings: false, numLayers: 2 });
  const m = new LlamaModel(cfg, { seed: 3 });
  // Non-trivial norms and biases so every weight matters.
  const w = m.exportWeights();
  for (const [name, t] of w) if (name.endsWith('norm.weight') || name.endsWith('.bias')) t.data.forEach((_, i) => (t.data[i] = 1 + 0.1 * Math.sin(i + name.length)));
  m.importWeights(w);
  const seq = [3, 17, 5, 9, 22, 0, 11];
  const ours = logitsOf(m, seq);
  const ref = referenceLogits(cfg, w, seq);
  assert.ok(maxDiff(ours, ref) < 1e-4, `max diff ${maxDiff(ours, ref)}`);
  m.dispose();
});

test('KV-cache decoding gives the same logits as a full forward pass', () => {
  const m = new LlamaModel(small({ numKvHeads: 1 }), { seed: 5 });
  const seq = [1, 4, 7, 2, 9, 13, 20, 6];
  const full = logitsOf(m, seq);
  const V = m.config.vocabSize;
  const prefix = 3;
  let { cache } = tf.tidy(() => m.forwardHidden(tf.tensor2d([seq.slice(0, prefix)], [1, prefix], 'int32'), { wantCache: true }));
  for (let t = prefix; t < seq.length; t++) {
    const r = tf.tidy(() => {
      const o = m.forwardHidden(tf.tensor2d([[seq[t]]], [1, 1], 'int32'), { cache });
      return { logits: m.logits(o.hidden), cache: o.cache! };
    });
    const got = r.logits.dataSync();
    const d = maxDiff(got, full.subarray(t * V, (t + 1) * V));
    assert.ok(d < 1e-4, `position ${t}: max diff ${d}`);
    for (const x of [...cache!.k, ...cache!.v, r.logits]) x.dispose();
    cache = r.cache;
  }
  for (const x of [...cache!.k, ...cache!.v]) x.dispose();
  m.dispose();
});

test('attention is causal: changing a later token leaves earlier logits unchanged', () => {
  const m = new LlamaModel(small(), { seed: 7 });
  const V = m.config.vocabSize;
  const a = logitsOf(m, [5, 6, 7, 8, 9]);
  const b = logitsOf(m, [5, 6, 7, 1, 2]);
  assert.equal(maxDiff(a.subarray(0, 3 * V), b.subarray(0, 3 * V)), 0);
  assert.ok(maxDiff(a.subarray(3 * V), b.subarray(3 * V)) > 1e-3);
  m.dispose();
});

test('GQA equals multi-head attention with each kv head repeated for its query group', () => {
  const gqa = new LlamaModel(small({ numHeads: 4, numKvHeads: 2 }), { seed: 11 });
  const mha = new LlamaModel(small({ numHeads: 4, numKvHeads: 4 }), { seed: 12 });
  const w = gqa.exportWeights();
  const hd = 8;
  const H = 32;
  for (let l = 0; l < gqa.config.numLayers; l++)
    for (const n of ['k', 'v']) {
      const name = `model.layers.${l}.self_attn.${n}_proj.weight`;
      const src = w.get(name)!.data;
      const dst = new Float32Array(4 * hd * H);
      for (let h = 0; h < 4; h++) dst.set(src.subarray(Math.floor(h / 2) * hd * H, (Math.floor(h / 2) + 1) * hd * H), h * hd * H);
      w.set(name, { shape: [4 * hd, H], data: dst });
    }
  mha.importWeights(w);
  const seq = [2, 8, 14, 3, 19];
  const d = maxDiff(logitsOf(gqa, seq), logitsOf(mha, seq));
  assert.ok(d < 1e-5, `max diff ${d}`);
  gqa.dispose();
  mha.dispose();
});

test('exportWeights/importWeights round trip bit-exactly; bad maps name the tensor', () => {
  const a = new LlamaModel(small({ attentionBias: true, tieEmbeddings: false }), { seed: 1 });
  const b = new LlamaModel(small({ attentionBias: true, tieEmbeddings: false }), { seed: 2 });
  const wa = a.exportWeights();
  assert.ok(wa.has('lm_head.weight') && wa.has('model.layers.1.self_attn.k_proj.bias'));
  assert.deepEqual(wa.get('model.layers.0.self_attn.q_proj.weight')!.shape, [32, 32]);
  assert.deepEqual(wa.get('model.layers.0.self_attn.k_proj.weight')!.shape, [16, 32]);
  assert.deepEqual(wa.get('model.layers.0.mlp.down_proj.weight')!.shape, [32, 48]);
  b.importWeights(wa);
  const wb = b.exportWeights();
  assert.equal(wb.size, wa.size);
  for (const [n, t] of wa) assert.deepEqual(Buffer.from(wb.get(n)!.data.buffer), Buffer.from(t.data.buffer), n);
  const missing = new Map(wa);
  missing.delete('model.layers.1.mlp.up_proj.weight');
  assert.throws(() => b.importWeights(missing), /missing tensor model\.layers\.1\.mlp\.up_proj\.weight/);
  const wrong = new Map(wa);
  wrong.set('model.norm.weight', { shape: [31], data: new Float32Array(31) });
  assert.throws(() => b.importWeights(wrong), /model\.norm\.weight has shape \[31\], expected \[32\]/);
  a.dispose();
  b.dispose();
});

test('embedding gradient (scatter-add) matches the hand-computed sum, with repeated ids', () => {
  const w = tf.variable(tf.tensor2d([[1, 2], [3, 4], [5, 6]]));
  const up = tf.tensor2d([[1, 10], [100, 1000], [7, 7]]);
  const { grads } = tf.variableGrads(
    () => tf.sum(tf.mul(embedLookup(w as tf.Tensor2D, tf.tensor1d([1, 1, 0], 'int32')), up)) as tf.Scalar,
    [w],
  );
  // Row 1 is looked up twice: its gradient is the sum of both upstream rows; row 2 is never used.
  assert.deepEqual(grads[w.name].arraySync(), [[7, 7], [101, 1010], [0, 0]]);
  w.dispose();
  up.dispose();
});

test('model gradients match central finite differences', () => {
  const m = new LlamaModel(small({ attentionBias: true }), { seed: 9 });
  const ids = tf.tensor2d([[1, 2, 3, 4], [5, 6, 7, 8]], [2, 4], 'int32');
  const tg = tf.tensor2d([[2, 3, 4, 5], [6, 7, 8, 9]], [2, 4], 'int32');
  const f = (): tf.Scalar => tf.neg(tf.mean(m.tokenLogProbs(ids, tg).logp)) as tf.Scalar;
  const vars = m.trainableVariables();
  const { grads } = tf.variableGrads(f, vars);
  for (const v of vars) {
    const d = tf.randomNormal(v.shape, 0, 1, 'float32', 3);
    const eps = 1e-3;
    const orig = v.clone();
    v.assign(tf.tidy(() => tf.add(orig, tf.mul(d, eps))));
    const fp = tf.tidy(() => f().dataSync()[0]);
    v.assign(tf.tidy(() => tf.sub(orig, tf.mul(d, eps))));
    const fm = tf.tidy(() => f().dataSync()[0]);
    v.assign(orig);
    const fd = (fp - fm) / (2 * eps);
    const an = tf.tidy(() => tf.sum(tf.mul(grads[v.name], d)).dataSync()[0]);
    assert.ok(Math.abs(fd - an) <= 0.02 * Math.max(Math.abs(fd), 0.05), `${v.name}: fd ${fd} vs analytic ${an}`);
    orig.dispose();
    d.dispose();
  }
  m.dispose();
});

test('a tiny model learns a copy task to near-zero loss', () => {
  // Sequences [BOS, a, b, c, d, SEP, a, b, c, d]: the second half is predictable only by copying.
  const cfg = resolveModelConfig({ preset: 'tiny', vocabSize: 12, maxPositions: 16 });
  const m = new LlamaModel(cfg, { seed: 1 });
  const opt = tf.train.adam(1e-2);
  const rng = (s: number): (() => number) => () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
  const r = rng(42);
  const batch = (): { ids: tf.Tensor2D; tg: tf.Tensor2D; mask: tf.Tensor2D } => {
    const ids: number[][] = [];
    const tg: number[][] = [];
    const mask: number[][] = [];
    for (let b = 0; b < 16; b++) {
      const body = Array.from({ length: 4 }, () => 2 + Math.floor(r() * 10));
      const s = [0, ...body, 1, ...body];
      ids.push(s.slice(0, -1));
      tg.push(s.slice(1));
      mask.push(s.slice(1).map((_, t) => (t >= 5 ? 1 : 0)));
    }
    return { ids: tf.tensor2d(ids, undefined, 'int32'), tg: tf.tensor2d(tg, undefined, 'int32'), mask: tf.tensor2d(mask) };
  };
  let loss = Infinity;
  for (let step = 0; step < 400 && loss > 0.05; step++) {
    const { ids, tg, mask } = batch();
    const l = opt.minimize(() => tf.div(tf.neg(tf.sum(tf.mul(m.tokenLogProbs(ids, tg).logp, mask))), tf.sum(mask)) as tf.Scalar, true, m.trainableVariables());
    loss = l!.dataSync()[0];
    tf.dispose([l!, ids, tg, mask]);
  }
  assert.ok(loss < 0.05, `copy loss ${loss}`);
  m.dispose();
  opt.dispose();
});
