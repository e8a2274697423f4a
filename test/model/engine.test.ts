import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readGgufFileInfo } from 'node-llama-cpp';
import { initBackend } from '../../src/model/backend.ts';
import { LlamaModel } from '../../src/model/llama.ts';
import { resolveModelConfig } from '../../src/model/config.ts';
import type { ModelConfig } from '../../src/model/config.ts';
import { Tokenizer } from '../../src/model/tokenizer.ts';
import { sequenceLogProbs, type Sample } from '../../src/model/generate.ts';
import { encodeGguf, exportGguf, permuteRope } from '../../src/model/gguf.ts';
import { TfjsEngine } from '../../src/model/engine.ts';
import { createEngine } from '../../src/model/engines.ts';
import { LlamaCppEngine } from '../../src/model/llamacpp-engine.ts';
import { AgroError } from '../../src/errors.ts';
import { AGENT_SPECIAL_TOKENS } from '../../src/agent/protocol.ts';

await initBackend('wasm');

const dir = mkdtempSync(join(tmpdir(), 'agro-engine-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const TOK = Tokenizer.train(['SELECT name FROM singer WHERE age > 30', 'How many singers are there?'], { vocabSize: 300, specialTokens: AGENT_SPECIAL_TOKENS });
// Model vocab larger than the tokenizer's: the GGUF pads it with placeholder tokens.
const V = 310;

/**
 * A tiny model whose weights are far from the init (larger, norms and biases not 1/0), so that a
 * wrong tensor name, layout, rope pairing or bias would change the logits by far more than rounding.
 */
function model(extra: Partial<ModelConfig>, seed: number): LlamaModel {
  const m = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: V, hiddenSize: 32, intermediateSize: 48, numHeads: 4, numKvHeads: 2, numLayers: 2, maxPositions: 64, ...extra }), { seed });
  const w = m.exportWeights();
  for (const [name, t] of w) {
    const d = t.data;
    for (let i = 0; i < d.length; i++) {
      if (name.endsWith('norm.weight') || name.endsWith('layernorm.weight')) d[i] = 1 + 0.5 * Math.sin(i * 0.7 + name.length);
      else if (name.endsWith('.bias')) d[i] = 0.5 * Math.cos(i * 1.3 + name.length);
      else d[i] *= 8;
    }
  }
  m.importWeights(w);
  return m;
}

const SEQS = [[3, 9, 14, 2, 7, 100, 250, 305, 41, 41, 8], [5, 299, 17, 60, 2]];
const PROMPTS = [[3, 9, 14, 2, 7], [11], [5, 5, 20, 301]];

test('GGUF writer: bytes of a one-key, one-tensor file, checked by hand', () => {
  const bytes = encodeGguf([['a', { type: 'u32', value: 7 }]], [{ name: 't', shape: [2], data: Float32Array.of(1.5, -2) }]);
  const u64 = (n: number): number[] => [n, 0, 0, 0, 0, 0, 0, 0];
  const expected = [
    0x47, 0x47, 0x55, 0x46, // "GGUF"
    3, 0, 0, 0, // version 3
    ...u64(1), // tensors
    ...u64(1), // metadata entries
    ...u64(1), 0x61, // key "a"
    4, 0, 0, 0, // type u32
    7, 0, 0, 0, // value
    ...u64(1), 0x74, // tensor name "t"
    1, 0, 0, 0, // one dimension
    ...u64(2), // of 2
    0, 0, 0, 0, // F32
    ...u64(0), // offset 0 in the data section
  ];
  assert.equal(expected.length, 74);
  // Padding to 96 (32-byte alignment), then 1.5f = 0x3fc00000 and -2f = 0xc0000000 little-endian, padded to 128.
  const full = [...expected, ...new Array(22).fill(0), 0, 0, 0xc0, 0x3f, 0, 0, 0, 0xc0, ...new Array(24).fill(0)];
  assert.deepEqual([...bytes], full);
});

test('GGUF writer: dims are stored innermost first and tensor data is aligned (read back by node-llama-cpp)', async () => {
  const path = join(dir, 'two.gguf');
  const a = Float32Array.from({ length: 6 }, (_, i) => i);
  const b = Float32Array.of(9);
  const bytes = encodeGguf([['general.architecture', { type: 'string', value: 'llama' }], ['x.list', { type: 'array', itemType: 'string', values: ['p', 'qq'] }]], [{ name: 'a', shape: [2, 3], data: a }, { name: 'b', shape: [1], data: b }]);
  const { writeFileSync } = await import('node:fs');
  writeFileSync(path, bytes);
  const info = await readGgufFileInfo(path, { readTensorInfo: true, ignoreKeys: [] });
  assert.equal(info.version, 3);
  assert.deepEqual(info.metadata.general.architecture, 'llama');
  assert.deepEqual((info.metadata as unknown as { x: { list: string[] } }).x.list, ['p', 'qq']);
  const ti = info.fullTensorInfo!;
  assert.deepEqual(ti.map((t) => [t.name, t.dimensions.map(Number), Number(t.offset)]), [['a', [3, 2], 0], ['b', [1], 32]]);
  // b's value (9.0f = 0x41100000) sits at data start + 32.
  const raw = readFileSync(path);
  const start = raw.length - 64;
  assert.equal(raw.readFloatLE(start + 32), 9);
  assert.equal(raw.readFloatLE(start + 20), 5);
});

test('permuteRope moves HF rotate_half pairs (i, i + hd/2) to adjacent rows (2i, 2i + 1)', () => {
  // 2 heads of head dim 4, rows of length 2: row r holds [10r, 10r + 1].
  const rows = Float32Array.from({ length: 16 }, (_, k) => 10 * Math.floor(k / 2) + (k % 2));
  const out = permuteRope(rows, 2, 4, 2);
  // Per head, HF rows [0, 1 | 2, 3] (halves) become [0, 2, 1, 3].
  assert.deepEqual([...out], [0, 1, 20, 21, 10, 11, 30, 31, 40, 41, 60, 61, 50, 51, 70, 71]);
  assert.deepEqual([...permuteRope(Float32Array.of(1, 2, 3, 4, 5, 6), 1, 6, 1)], [1, 4, 2, 5, 3, 6]);
});

// f32 weights, activations and KV cache on both sides: what differs is summation order and the
// rotary angles (llama.cpp builds them by repeated float multiplication, we round invFreq and
// p * invFreq to f32 then take cos/sin in double), ~1e-7 relative per op over two layers with
// logits of magnitude ~5-20. We observe max |dlogp| of 1e-6 to 2.3e-6; 1e-4 leaves a 40x margin
// and is still far below any layout error (a wrong rope pairing or tensor shifts them by ~0.1-1).
const TOL = 1e-4;

function maxDiff(a: number[][], b: number[][]): number {
  assert.deepEqual(a.map((x) => x.length), b.map((x) => x.length));
  return Math.max(...a.flatMap((x, i) => x.map((v, j) => Math.abs(v - b[i][j]))));
}

for (const [label, extra] of [
  ['GQA, tied embeddings', { tieEmbeddings: true }],
  ['q/k/v biases, untied', { attentionBias: true, tieEmbeddings: false }],
  ['GQA, q/k/v biases, tied', { attentionBias: true, numKvHeads: 1 }],
] as [string, Partial<ModelConfig>][]) {
  test(`llama.cpp log-probs of a token sequence match the TF.js model (${label})`, async () => {
    const m = model(extra, 11);
    const engine = new LlamaCppEngine({ tokenizer: TOK });
    try {
      await engine.sync(m);
      const ours = await sequenceLogProbs(m, SEQS);
      const theirs = await engine.sequenceLogProbs(SEQS);
      const d = maxDiff(ours, theirs);
      assert.ok(d < TOL, `max |dlogp| ${d}`);
      // The weights matter: log-probs are far from uniform.
      assert.ok(Math.max(...ours.flat().map((x) => Math.abs(x + Math.log(V)))) > 1);
    } finally {
      await engine.dispose();
      m.dispose();
    }
  });
}

function tokens(s: Sample[][]): number[][][] {
  return s.map((g) => g.map((x) => x.tokens));
}

test('greedy samples are equal across engines (native and JS draws), with matching log-probs and stop ids', async () => {
  const m = model({}, 5);
  const tfe = new TfjsEngine(m);
  const native = new LlamaCppEngine({ tokenizer: TOK, maxSequences: 4 }); // 6 rows: two chunks
  const js = new LlamaCppEngine({ tokenizer: TOK, sampling: 'js' });
  const publicApi = new LlamaCppEngine({ tokenizer: TOK, useAddon: false });
  try {
    await native.sync(m);
    await js.sync(m);
    await publicApi.sync(m);
    const opts = { maxNewTokens: 8, temperature: 0 };
    const ref = await tfe.sampleGroups(PROMPTS, 2, opts);
    for (const [k, e] of [native, js, publicApi].entries()) {
      const got = await e.sampleGroups(PROMPTS, 2, opts);
      assert.deepEqual(tokens(got), tokens(ref), `engine ${k}`);
      assert.ok(maxDiff(got.flat().map((s) => s.logprobs), ref.flat().map((s) => s.logprobs)) < TOL);
    }
    // A stop id ends the row and is kept, as in generate.ts.
    const stop = ref[0][0].tokens[3];
    const stopped = await native.sampleGroups([PROMPTS[0]], 1, { ...opts, stopTokenIds: [stop] });
    const first = ref[0][0].tokens.indexOf(stop);
    assert.deepEqual(stopped[0][0].tokens, ref[0][0].tokens.slice(0, first + 1));
    assert.equal(stopped[0][0].finish, 'stop');
    // A later turn (prompt = earlier prompt + sampled tokens + more) reuses the cached prefix and still matches.
    const turn2 = PROMPTS.map((p, i) => [...p, ...ref[i][0].tokens, 7, 8]);
    assert.deepEqual(tokens(await native.sampleGroups(turn2, 1, opts)), tokens(await tfe.sampleGroups(turn2, 1, opts)));
  } finally {
    await native.dispose();
    await js.dispose();
    await publicApi.dispose();
    m.dispose();
  }
});

test('seeded sampling: reproducible per engine; JS draws equal the TF.js engine; native draws carry the model log-probs', async () => {
  const m = model({}, 6);
  const tfe = new TfjsEngine(m);
  const native = await createEngine('llama.cpp', m, { tokenizer: TOK });
  const js = await createEngine('llama.cpp', m, { tokenizer: TOK, sampling: 'js' });
  try {
    const hot = { maxNewTokens: 10, temperature: 1.3, topP: 0.9, seed: 3 };
    // JS draws: same rule, same per-row random stream, near-identical logits -> the same tokens.
    const a = await js.sampleGroups(PROMPTS, 3, hot);
    assert.deepEqual(tokens(a), tokens(await tfe.sampleGroups(PROMPTS, 3, hot)));
    const plain = { maxNewTokens: 10, temperature: 1, seed: 4 };
    const n1 = await native.sampleGroups(PROMPTS, 3, plain);
    // The same calls after a sync (fresh caches, as in each training step's rollout) give identical results.
    const second = await native.sampleGroups(PROMPTS.map((p) => [...p, 1, 2]), 1, plain);
    const again = await createEngine('llama.cpp', m, { tokenizer: TOK });
    try {
      assert.deepEqual(await again.sampleGroups(PROMPTS, 3, plain), n1);
      assert.deepEqual(await again.sampleGroups(PROMPTS.map((p) => [...p, 1, 2]), 1, plain), second);
    } finally {
      await again.dispose();
    }
    // A repeated call reuses cached prefixes: llama.cpp's kernels then sum in another order, so the
    // log-probs may move in the 7th digit, but the draws are the same.
    const n2 = await native.sampleGroups(PROMPTS, 3, plain);
    assert.deepEqual(tokens(n2), tokens(n1));
    assert.ok(maxDiff(n2.flat().map((s) => s.logprobs), n1.flat().map((s) => s.logprobs)) < 1e-4);
    const n3 = await native.sampleGroups(PROMPTS, 3, { ...plain, seed: 5 });
    assert.notDeepEqual(tokens(n1), tokens(n3));
    assert.ok(new Set(n1[0].map((s) => s.tokens.join(','))).size > 1, 'samples of a group differ');
    // Each sampled token's logprob is log p under the model at temperature 1 (checked against TF.js scoring).
    const seqs = n1.flatMap((g, i) => g.map((s) => [...PROMPTS[i], ...s.tokens]));
    const scored = await sequenceLogProbs(m, seqs);
    const fromModel = scored.map((lp, k) => lp.slice(PROMPTS[Math.floor(k / 3)].length - 1));
    assert.ok(maxDiff(n1.flat().map((s) => s.logprobs), fromModel) < TOL);
    // The public-API path (no addon internals) draws the same way: same seeds, same samplers.
    const pub = new LlamaCppEngine({ tokenizer: TOK, useAddon: false });
    try {
      await pub.sync(m);
      assert.deepEqual(tokens(await pub.sampleGroups(PROMPTS, 3, plain)), tokens(n1));
    } finally {
      await pub.dispose();
    }
  } finally {
    await native.dispose();
    await js.dispose();
    m.dispose();
  }
});

test('sync after a weight change makes the engine sample from the new weights', async () => {
  const m = model({}, 7);
  const other = model({}, 8);
  const engine = new LlamaCppEngine({ tokenizer: TOK });
  try {
    await engine.sync(m);
    const opts = { maxNewTokens: 6, temperature: 0 };
    const before = await engine.sampleGroups(PROMPTS, 1, opts);
    assert.deepEqual(tokens(before), tokens(await new TfjsEngine(m).sampleGroups(PROMPTS, 1, opts)));
    m.importWeights(other.exportWeights());
    const expected = await new TfjsEngine(m).sampleGroups(PROMPTS, 1, opts);
    assert.notDeepEqual(tokens(expected), tokens(before));
    // Not synced yet: still the old weights.
    assert.deepEqual(tokens(await engine.sampleGroups(PROMPTS, 1, opts)), tokens(before));
    await engine.sync(m);
    assert.deepEqual(tokens(await engine.sampleGroups(PROMPTS, 1, opts)), tokens(expected));
    assert.ok(engine.lastSync && engine.lastSync.bytes > 0 && engine.lastSync.loadMs > 0);
  } finally {
    await engine.dispose();
    m.dispose();
    other.dispose();
  }
});

test('exportGguf writes llama metadata and the tokenizer that node-llama-cpp reads back', async () => {
  const m = model({ tieEmbeddings: false }, 9);
  const path = join(dir, 'policy.gguf');
  exportGguf(m, TOK, path);
  const info = await readGgufFileInfo(path, { readTensorInfo: true });
  const md = info.metadata as unknown as {
    general: { architecture: string; file_type: number };
    llama: { context_length: number; block_count: number; embedding_length: number; attention: { head_count_kv: number } };
    tokenizer: { ggml: { model: string; tokens: string[]; token_type: number[]; eos_token_id: number } };
  };
  assert.equal(md.general.architecture, 'llama');
  assert.equal(md.general.file_type, 0);
  assert.deepEqual([md.llama.context_length, md.llama.block_count, md.llama.embedding_length, md.llama.attention.head_count_kv], [64, 2, 32, 2]);
  assert.equal(md.tokenizer.ggml.model, 'gpt2');
  assert.equal(md.tokenizer.ggml.tokens.length, V);
  assert.equal(md.tokenizer.ggml.tokens[TOK.tokenId('<|eos|>')], '<|eos|>');
  assert.equal(md.tokenizer.ggml.eos_token_id, TOK.tokenId('<|eos|>'));
  assert.equal(md.tokenizer.ggml.token_type[TOK.tokenId('<|eos|>')], 3); // control
  assert.equal(md.tokenizer.ggml.tokens[305], '[PAD305]');
  assert.equal(md.tokenizer.ggml.token_type[305], 5); // unused
  const names = info.fullTensorInfo!.map((t) => t.name);
  assert.equal(names.length, 1 + 2 * 9 + 2);
  assert.ok(names.includes('output.weight') && names.includes('blk.1.ffn_down.weight'));
  const emb = info.fullTensorInfo!.find((t) => t.name === 'token_embd.weight')!;
  assert.deepEqual(emb.dimensions.map(Number), [32, V]);
  m.dispose();
});

test('bad input: one-line AgroErrors', async () => {
  const m = model({}, 10);
  const engine = new LlamaCppEngine({ tokenizer: TOK });
  try {
    await assert.rejects(engine.sampleGroups(PROMPTS, 1, { maxNewTokens: 2 }), (e: unknown) => e instanceof AgroError && /call sync\(model\) before sampling/.test(e.message));
    await engine.sync(m);
    await assert.rejects(engine.sampleGroups([[1, V]], 1, { maxNewTokens: 2 }), /prompt 0: token id 310 is outside the vocabulary \[0, 310\)/);
    await assert.rejects(engine.sampleGroups([[1, -1]], 1, { maxNewTokens: 2 }), /token id -1 is outside/);
    await assert.rejects(engine.sampleGroups([[1, 2, 3]], 1, { maxNewTokens: 62 }), /prompt 0 \(3 tokens\) \+ maxNewTokens 62 exceeds maxPositions 64/);
    await assert.rejects(engine.sampleGroups([[]], 1, { maxNewTokens: 2 }), /prompt 0 is empty/);
    await assert.rejects(engine.sampleGroups([[1]], 0, { maxNewTokens: 2 }), /groupSize must be a positive integer/);
    await assert.rejects(engine.sampleGroups([[1]], 1, { maxNewTokens: 2, topP: 0 }), /topP must be in \(0, 1\]/);
    // llama.cpp sizes the q bias as the hidden size: a wider q with biases is refused before anything is written.
    const wide = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: V, hiddenSize: 32, headDim: 16, numHeads: 4, numKvHeads: 2, numLayers: 1, attentionBias: true }), { seed: 1 });
    await assert.rejects(engine.sync(wide), /q\/k\/v biases need numHeads x headDim \(4 x 16\) = hiddenSize \(32\)/);
    wide.dispose();
    const small = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: 100, numLayers: 1 }), { seed: 1 });
    await assert.rejects(engine.sync(small), new RegExp(`the tokenizer has ${TOK.vocabSize} tokens but the model only 100`));
    small.dispose();
    await assert.rejects(createEngine('vllm', m), /unknown engine 'vllm' \(expected one of: tfjs, llama.cpp\)/);
    await assert.rejects(createEngine('llama.cpp', m), /a tokenizer is required/);
    assert.throws(() => new LlamaCppEngine({ tokenizer: TOK, threads: 0 }), /threads must be a positive integer/);
  } finally {
    await engine.dispose();
    m.dispose();
  }
});
