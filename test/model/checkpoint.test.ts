import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeSafetensors, decodeSafetensors, readSafetensors, writeSafetensors, halfToFloat } from '../../src/model/safetensors.ts';
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
