import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeSafetensors, decodeSafetensors, readSafetensors, writeSafetensors, halfToFloat, floatToHalf } from '../../src/model/safetensors.ts';
import type { TensorMap } from '../../src/model/safetensors.ts';
import { AgroError } from '../../src/errors.ts';

const tmp = (): string => mkdtempSync(join(tmpdir(), 'agro-ck-'));

/** A file with a given JSON header and data bytes, laid out by hand. */
function rawFile(header: unknown, data: number[]): Uint8Array {
  const h = Buffer.from(JSON.stringify(header), 'utf8');
  const out = new Uint8Array(8 + h.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
  out.set(h, 8);
  out.set(data, 8 + h.length);
  return out;
}

const corrupt = (re: RegExp) => (e: unknown): boolean => e instanceof AgroError && e.kind === 'invalid_input' && re.test(e.message);

test('safetensors F32 round trip keeps every bit, shapes and metadata', () => {
  const t: TensorMap = new Map([
    ['b', { shape: [2, 3], data: new Float32Array([1, -2.5, 3e-38, NaN, -0, Infinity]) }],
    ['a', { shape: [1], data: new Float32Array([Math.PI]) }],
    ['empty', { shape: [0, 4], data: new Float32Array(0) }],
  ]);
  const p = join(tmp(), 'w.safetensors');
  writeSafetensors(p, t, { format: 'pt' });
  const bytes = readFileSync(p);
  const hlen = Number(bytes.readBigUInt64LE(0));
  assert.equal((8 + hlen) % 8, 0, 'data section is 8-byte aligned');
  const header = JSON.parse(bytes.subarray(8, 8 + hlen).toString());
  assert.deepEqual(header.a, { dtype: 'F32', shape: [1], data_offsets: [0, 4] });
  assert.deepEqual(header.b, { dtype: 'F32', shape: [2, 3], data_offsets: [4, 28] });
  assert.equal(bytes.length, 8 + hlen + 28);
  const back = readSafetensors(p);
  assert.deepEqual(back.metadata, { format: 'pt' });
  assert.deepEqual([...back.tensors.keys()].sort(), ['a', 'b', 'empty']);
  for (const [k, v] of t) {
    const r = back.tensors.get(k)!;
    assert.deepEqual(r.shape, v.shape);
    assert.deepEqual(new Uint32Array(r.data.buffer, r.data.byteOffset, r.data.length), new Uint32Array(v.data.buffer));
  }
});

test('reads F16 and BF16 little-endian data into float32', () => {
  // F16: 0x3C00 = 1, 0xC000 = -2, 0x3555 = 1 + 341/1024 times 2^-2, 0x0001 = 2^-24 (subnormal), 0x7C00 = +inf.
  // BF16: 0x3F80 = 1, 0xC040 = -3.
  const f = decodeSafetensors(rawFile({
    h: { dtype: 'F16', shape: [5], data_offsets: [0, 10] },
    g: { dtype: 'BF16', shape: [2], data_offsets: [10, 14] },
  }, [0x00, 0x3c, 0x00, 0xc0, 0x55, 0x35, 0x01, 0x00, 0x00, 0x7c, 0x80, 0x3f, 0x40, 0xc0]));
  assert.deepEqual([...f.tensors.get('h')!.data], [1, -2, Math.fround((1 + 341 / 1024) / 4), Math.fround(2 ** -24), Infinity]);
  assert.deepEqual([...f.tensors.get('g')!.data], [1, -3]);
  assert.equal(halfToFloat(0x7e00), NaN);
});

test('each kind of corrupt safetensors file gets its own clear error', () => {
  const good = encodeSafetensors(new Map([['x', { shape: [4], data: new Float32Array([1, 2, 3, 4]) }]]));
  assert.throws(() => decodeSafetensors(good.subarray(0, 5)), corrupt(/shorter than the 8-byte header length/));
  assert.throws(() => decodeSafetensors(good.subarray(0, good.length - 3)), corrupt(/ends at byte 16 but the data section has 13 bytes \(truncated/));
  const bigLen = new Uint8Array(good);
  new DataView(bigLen.buffer).setBigUint64(0, 1n << 40n, true);
  assert.throws(() => decodeSafetensors(bigLen), corrupt(/header length \d+ exceeds the file/));
  const badJson = new Uint8Array(good);
  badJson[8] = 0x5b; // '[' where '{' was
  assert.throws(() => decodeSafetensors(badJson), corrupt(/header is not valid JSON|not a JSON object/));
  assert.throws(() => decodeSafetensors(rawFile({ a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] } }, new Array(12).fill(0))), corrupt(/"a" and "b" overlap/));
  assert.throws(() => decodeSafetensors(rawFile({ a: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }, new Array(8).fill(0))), corrupt(/spans 8 bytes but shape \[3\] of F32 needs 12/));
  assert.throws(() => decodeSafetensors(rawFile({ a: { dtype: 'I64', shape: [1], data_offsets: [0, 8] } }, new Array(8).fill(0))), corrupt(/dtype I64; only F32, F16 and BF16/));
  assert.throws(() => decodeSafetensors(rawFile({ a: { dtype: 'F32', shape: [1], data_offsets: [8, 4] } }, new Array(8).fill(0))), corrupt(/end before they begin/));
  assert.throws(() => readSafetensors('/nonexistent/model.safetensors'), (e: unknown) => e instanceof AgroError && e.kind === 'not_found');
  const p = join(tmp(), 'bad.safetensors');
  writeFileSync(p, good.subarray(0, 20));
  assert.throws(() => readSafetensors(p), corrupt(/bad\.safetensors: corrupt safetensors file/));
});

// ---- checkpoints ----
import { readdirSync, rmSync } from 'node:fs';
import { initBackend } from '../../src/model/backend.ts';
import { LlamaModel } from '../../src/model/llama.ts';
import { resolveModelConfig } from '../../src/model/config.ts';
import { Tokenizer } from '../../src/model/tokenizer.ts';
import { saveCheckpoint, loadCheckpoint } from '../../src/model/checkpoint.ts';
import { AGENT_SPECIAL_TOKENS } from '../../src/agent/protocol.ts';

const TOK = Tokenizer.train(['SELECT name FROM singer WHERE age > 30', 'How many singers are there?'], { vocabSize: 300, specialTokens: AGENT_SPECIAL_TOKENS });

function tinyModel(vocabSize: number, seed: number, extra: Record<string, unknown> = {}): LlamaModel {
  return new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize, numLayers: 1, ...extra }), { seed });
}

function bits(w: Map<string, { shape: number[]; data: Float32Array }>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of w) out[k] = `${v.shape}:${Buffer.from(v.data.buffer, v.data.byteOffset, v.data.byteLength).toString('base64')}`;
  return out;
}

test('checkpoint round trip is bit-exact for weights, tokenizer, trainer and optimizer state', async () => {
  await initBackend('cpu');
  for (const extra of [{}, { tieEmbeddings: false, attentionBias: true }]) {
    const model = tinyModel(320, 7, extra); // tokenizer smaller than the embedding: allowed
    const dir = join(tmp(), 'ck');
    const opt = new Map([['adam.m.0', { shape: [2], data: new Float32Array([0.1, -0.2]) }]]);
    saveCheckpoint(dir, { model, tokenizer: TOK, trainerState: { step: 3, rng: 12345 }, optimizerState: opt });
    assert.deepEqual(readdirSync(dir).sort(), ['config.json', 'generation_config.json', 'model.safetensors', 'optimizer.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'trainer_state.json']);
    const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
    assert.equal(cfg.vocab_size, 320);
    assert.equal(cfg.bos_token_id, TOK.tokenId('<|bos|>'));
    const back = loadCheckpoint(dir);
    assert.deepEqual({ ...back.model.config, headDim: 16 }, { ...model.config, headDim: 16 });
    assert.deepEqual(bits(back.model.exportWeights()), bits(model.exportWeights()));
    assert.deepEqual(back.tokenizer.toJSON(), TOK.toJSON());
    assert.deepEqual(back.trainerState, { step: 3, rng: 12345 });
    assert.deepEqual(bits(back.optimizerState!), bits(opt));
    // Saving again over an existing checkpoint swaps it whole and leaves no temp dirs behind.
    const other = tinyModel(320, 8, extra);
    saveCheckpoint(dir, { model: other, tokenizer: TOK });
    assert.deepEqual(readdirSync(join(dir, '..')), ['ck']);
    assert.deepEqual(readdirSync(dir).sort(), ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);
    assert.deepEqual(bits(loadCheckpoint(dir).model.exportWeights()), bits(other.exportWeights()));
    model.dispose(); other.dispose(); back.model.dispose();
  }
});

test('loading reports missing files, corrupt weights, vocab and shape mismatches clearly', async () => {
  await initBackend('cpu');
  const model = tinyModel(300, 1);
  const dir = join(tmp(), 'ck');
  saveCheckpoint(dir, { model, tokenizer: TOK });
  const kind = (k: string, re: RegExp) => (e: unknown): boolean => e instanceof AgroError && e.kind === k && re.test(e.message);
  assert.throws(() => loadCheckpoint(join(dir, 'nope')), kind('not_found', /checkpoint directory not found/));
  const cfgPath = join(dir, 'config.json');
  const cfg = JSON.parse(readFileSync(cfgPath, 'utf8'));
  // Tokenizer larger than the embedding.
  const v = TOK.vocabSize;
  writeFileSync(cfgPath, JSON.stringify({ ...cfg, vocab_size: v - 1 }));
  assert.throws(() => loadCheckpoint(dir), kind('invalid_input', new RegExp(`tokenizer has ${v} ids but the model embedding has only ${v - 1} rows`)));
  // Config says a wider embedding than the stored tensor.
  writeFileSync(cfgPath, JSON.stringify({ ...cfg, vocab_size: 310 }));
  assert.throws(() => loadCheckpoint(dir), kind('invalid_input', /model\.embed_tokens\.weight has shape \[300,64\], expected \[310,64\]/));
  writeFileSync(cfgPath, JSON.stringify({ ...cfg, num_hidden_layers: 2 }));
  assert.throws(() => loadCheckpoint(dir), kind('invalid_input', /missing tensor model\.layers\.1\./));
  writeFileSync(cfgPath, JSON.stringify(cfg));
  const w = readFileSync(join(dir, 'model.safetensors'));
  writeFileSync(join(dir, 'model.safetensors'), w.subarray(0, w.length - 100));
  assert.throws(() => loadCheckpoint(dir), kind('invalid_input', /corrupt safetensors file: .*truncated/));
  rmSync(join(dir, 'tokenizer.json'));
  assert.throws(() => loadCheckpoint(dir), kind('not_found', /missing tokenizer\.json/));
  const small = tinyModel(v - 2, 1);
  assert.throws(() => saveCheckpoint(join(tmp(), 'x'), { model: small, tokenizer: TOK }), new RegExp(`tokenizer has ${v} ids but the model embedding has ${v - 2} rows`));
  small.dispose();
  model.dispose();
});

test('F16: every finite half survives float -> half -> float; ties round to even; overflow is Infinity', () => {
  for (let h = 0; h < 0x10000; h++) {
    if ((h & 0x7c00) === 0x7c00 && h & 0x3ff) continue; // NaN payloads
    assert.equal(floatToHalf(halfToFloat(h)), h, `half 0x${h.toString(16)}`);
  }
  // Half-way between 1 and the next half (1 + 2^-10) goes to the even one (1); a hair above goes up.
  assert.equal(floatToHalf(1 + 2 ** -11), 0x3c00);
  assert.equal(floatToHalf(1 + 3 * 2 ** -11), 0x3c02);
  assert.equal(floatToHalf(1 + 2 ** -11 + 2 ** -20), 0x3c01);
  assert.equal(floatToHalf(65504), 0x7bff);
  assert.equal(floatToHalf(65520), 0x7c00); // the tie above the largest half rounds to Infinity
  assert.equal(floatToHalf(-1e9), 0xfc00);
  assert.equal(floatToHalf(2 ** -25), 0); // half of the smallest subnormal: tie to even (0)
  assert.equal(floatToHalf(1.5 * 2 ** -24), 0x0002);
  assert.ok(Number.isNaN(halfToFloat(floatToHalf(NaN))));
});

test('a checkpoint saved in F16 has half the weight bytes and loads with each weight rounded to the nearest half', async () => {
  await initBackend('cpu');
  const model = tinyModel(320, 7);
  const dir = join(tmp(), 'ck16');
  saveCheckpoint(dir, { model, tokenizer: TOK }, { dtype: 'F16' });
  const { tensors } = readSafetensors(join(dir, 'model.safetensors'));
  const header = JSON.parse(readFileSync(join(dir, 'model.safetensors')).subarray(8, 8 + Number(readFileSync(join(dir, 'model.safetensors')).readBigUInt64LE(0))).toString('utf8'));
  assert.ok(Object.entries(header).every(([k, v]) => k === '__metadata__' || (v as { dtype: string }).dtype === 'F16'));
  const back = loadCheckpoint(dir);
  let n = 0;
  const loaded = back.model.exportWeights();
  for (const [name, t] of model.exportWeights()) {
    const got = loaded.get(name)!.data;
    assert.deepEqual(tensors.get(name)!.shape, t.shape);
    for (let i = 0; i < t.data.length; i++, n++) assert.equal(got[i], halfToFloat(floatToHalf(t.data[i])), `${name}[${i}]`);
  }
  assert.ok(n > 1000);
  model.dispose(); back.model.dispose();
});
