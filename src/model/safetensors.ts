import { readFileSync } from 'node:fs';
import { AgroError } from '../errors.ts';
import { writeFileAtomic } from '../util/fs.ts';

/**
 * The safetensors format: an 8-byte little-endian header length N, N bytes of JSON
 * ({name: {dtype, shape, data_offsets: [begin, end]}, __metadata__?: {string: string}}), then the
 * raw little-endian tensor bytes, offsets relative to the end of the header.
 * We write F32 (training checkpoints, exact) or F16 (models agro ships: half the bytes) and read F32, F16 and
 * BF16 into Float32Array.
 */

export type WriteDtype = 'F32' | 'F16';

export type TensorMap = Map<string, { shape: number[]; data: Float32Array }>;

const BYTES: Record<string, number> = { F32: 4, F16: 2, BF16: 2 };
/** Refuse absurd headers before allocating anything for them. */
const MAX_HEADER = 100 * 1024 * 1024;

export function encodeSafetensors(tensors: TensorMap, metadata?: Record<string, string>, dtype: WriteDtype = 'F32'): Uint8Array {
  const width = BYTES[dtype];
  const header: Record<string, unknown> = {};
  if (metadata && Object.keys(metadata).length) header.__metadata__ = metadata;
  // Sorted names: the same tensors always give the same bytes.
  const names = [...tensors.keys()].sort();
  let offset = 0;
  for (const name of names) {
    const t = tensors.get(name) as { shape: number[]; data: Float32Array };
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (n !== t.data.length) throw new AgroError('internal', `tensor ${name}: shape [${t.shape}] holds ${n} values but data has ${t.data.length}`);
    header[name] = { dtype, shape: t.shape, data_offsets: [offset, offset + width * n] };
    offset += width * n;
  }
  let json = JSON.stringify(header);
  // Pad with spaces so the data starts 8-byte aligned (what the reference writer does).
  const pad = (8 - ((Buffer.byteLength(json) + 8) % 8)) % 8;
  json += ' '.repeat(pad);
  const hbytes = Buffer.from(json, 'utf8');
  const out = new Uint8Array(8 + hbytes.length + offset);
  const dv = new DataView(out.buffer);
  dv.setBigUint64(0, BigInt(hbytes.length), true);
  out.set(hbytes, 8);
  let at = 8 + hbytes.length;
  for (const name of names) {
    const t = tensors.get(name) as { data: Float32Array };
    if (dtype === 'F16') {
      for (let i = 0; i < t.data.length; i++) dv.setUint16(at + 2 * i, floatToHalf(t.data[i]), true);
    } else if (isLittleEndian()) out.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), at);
    else for (let i = 0; i < t.data.length; i++) dv.setFloat32(at + 4 * i, t.data[i], true);
    at += width * t.data.length;
  }
  return out;
}

export function writeSafetensors(path: string, tensors: TensorMap, metadata?: Record<string, string>, dtype: WriteDtype = 'F32'): void {
  writeFileAtomic(path, encodeSafetensors(tensors, metadata, dtype));
}

export function readSafetensors(path: string): { tensors: TensorMap; metadata: Record<string, string> } {
  let buf: Buffer;
  try {
    buf = readFileSync(path);
  } catch {
    throw new AgroError('not_found', `safetensors file not found: ${path}`);
  }
  return decodeSafetensors(new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength), path);
}

export function decodeSafetensors(bytes: Uint8Array, label = 'safetensors'): { tensors: TensorMap; metadata: Record<string, string> } {
  const bad = (msg: string): never => { throw new AgroError('invalid_input', `${label}: corrupt safetensors file: ${msg}`); };
  if (bytes.length < 8) bad(`file is ${bytes.length} bytes, shorter than the 8-byte header length`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const hlen64 = dv.getBigUint64(0, true);
  if (hlen64 > BigInt(Math.min(MAX_HEADER, bytes.length - 8))) bad(`header length ${hlen64} exceeds the file (${bytes.length} bytes) or the ${MAX_HEADER}-byte limit`);
  const hlen = Number(hlen64);
  let header: unknown;
  try {
    header = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset + 8, hlen).toString('utf8'));
  } catch (err) {
    return bad(`header is not valid JSON (${(err as Error).message})`);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) return bad('header is not a JSON object');
  const dataStart = 8 + hlen;
  const dataLen = bytes.length - dataStart;
  const metadata: Record<string, string> = {};
  const spans: { name: string; begin: number; end: number }[] = [];
  const tensors: TensorMap = new Map();
  for (const [name, v] of Object.entries(header as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (typeof v !== 'object' || v === null) bad('__metadata__ is not an object');
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
        if (typeof x !== 'string') bad(`__metadata__.${k} is not a string`);
        metadata[k] = x as string;
      }
      continue;
    }
    if (typeof v !== 'object' || v === null) return bad(`entry "${name}" is not an object`);
    const e = v as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (typeof e.dtype !== 'string') return bad(`tensor "${name}" has no dtype`);
    const width = BYTES[e.dtype];
    if (width === undefined) return bad(`tensor "${name}" has dtype ${e.dtype}; only F32, F16 and BF16 are supported`);
    if (!Array.isArray(e.shape) || !e.shape.every((d) => Number.isInteger(d) && d >= 0)) return bad(`tensor "${name}" has an invalid shape`);
    const offs = e.data_offsets;
    if (!Array.isArray(offs) || offs.length !== 2 || !offs.every((d) => Number.isInteger(d) && d >= 0)) return bad(`tensor "${name}" has invalid data_offsets`);
    const [begin, end] = offs as number[];
    const shape = e.shape as number[];
    const n = shape.reduce((a, b) => a * b, 1);
    if (end < begin) bad(`tensor "${name}" data_offsets [${begin}, ${end}] end before they begin`);
    if (end - begin !== n * width) bad(`tensor "${name}" spans ${end - begin} bytes but shape [${shape}] of ${e.dtype} needs ${n * width}`);
    if (end > dataLen) bad(`tensor "${name}" ends at byte ${end} but the data section has ${dataLen} bytes (truncated file?)`);
    spans.push({ name, begin, end });
    tensors.set(name, { shape, data: decodeData(bytes, dataStart + begin, n, e.dtype) });
  }
  spans.sort((a, b) => a.begin - b.begin || a.end - b.end);
  for (let i = 1; i < spans.length; i++) {
    if (spans[i].begin < spans[i - 1].end) bad(`tensors "${spans[i - 1].name}" and "${spans[i].name}" overlap`);
  }
  return { tensors, metadata };
}

function decodeData(bytes: Uint8Array, at: number, n: number, dtype: string): Float32Array {
  const dv = new DataView(bytes.buffer, bytes.byteOffset + at, n * BYTES[dtype]);
  const out = new Float32Array(n);
  if (dtype === 'F32') {
    if (isLittleEndian()) new Uint8Array(out.buffer).set(bytes.subarray(at, at + 4 * n));
    else for (let i = 0; i < n; i++) out[i] = dv.getFloat32(4 * i, true);
  } else if (dtype === 'BF16') {
    // bf16 is the top half of an f32.
    const u = new Uint32Array(out.buffer);
    for (let i = 0; i < n; i++) u[i] = dv.getUint16(2 * i, true) << 16;
  } else {
    for (let i = 0; i < n; i++) out[i] = halfToFloat(dv.getUint16(2 * i, true));
  }
  return out;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/**
 * IEEE binary16 bits of a number, rounded to nearest, ties to even (as numpy's astype(float16) and
 * torch's .half() do): overflow becomes ±Infinity, values under the subnormal range become ±0.
 */
export function floatToHalf(x: number): number {
  f32[0] = x;
  const b = u32[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  const man = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (man ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half (or zero): shift the mantissa with its implicit bit in, rounding to nearest even.
    if (e < -10) return sign;
    const m = man | 0x800000;
    const shift = 14 - e;
    const half = m >>> shift;
    const rest = m & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    return sign | (half + (rest > mid || (rest === mid && half & 1) ? 1 : 0));
  }
  const half = (e << 10) | (man >>> 13);
  const rest = man & 0x1fff;
  // A carry out of the mantissa rolls into the exponent, as it should (up to Infinity).
  return sign | (half + (rest > 0x1000 || (rest === 0x1000 && half & 1) ? 1 : 0));
}

export function halfToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? NaN : s * Infinity;
  return s * (1 + f / 1024) * 2 ** (e - 15);
}

function isLittleEndian(): boolean {
  return new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
}
