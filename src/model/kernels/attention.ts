/**
 * The fused attention kernel (attention.c, compiled to attention.wasm by scripts/build-kernels.sh)
 * as a differentiable TF.js op. Data moves between TF.js and the kernel's own linear memory by
 * copies (a few hundred KB per layer call, microseconds), which keeps the kernel independent of
 * the TF.js backend and its private heap layout.
 */
import { readFileSync } from 'node:fs';
import * as tf from '@tensorflow/tfjs-core';
import { AgroError } from '../../errors.ts';
import { attentionNative, attentionNativeGrad, nativeAttentionActive } from '../native.ts';
import type { NativeAttentionArgs } from '../native.ts';

/** Rotary tables as llama.ts builds them: [maxPositions, headDim], y = x*cos + swap_halves(x)*sin. */
export interface RopeTables {
  cos: Float32Array;
  sin: Float32Array;
  headDim: number;
  maxPositions: number;
}

export interface AttentionShape {
  batch: number;
  time: number;
  heads: number;
  kvHeads: number;
  headDim: number;
}

export interface FusedAttentionArgs extends AttentionShape {
  /** int32 [batch * time] absolute positions (rotary), row-major over (batch, time). */
  positions: Int32Array;
  tables: RopeTables;
  /** The same tables as tensors: the native kernel reads them in place. */
  tableTensors?: { cos: tf.Tensor2D; sin: tf.Tensor2D };
  /** Per batch row, leading key positions that are padding: hidden from every query. */
  padLeft?: Int32Array;
  /** Also return the rotated keys and the values [batch * kvHeads, time, headDim] (a KV cache). */
  wantKv?: boolean;
  /** Inference only: no gradient bookkeeping. */
  noGrad?: boolean;
}

// The project's lib settings carry no WebAssembly declarations: the few members used, typed here.
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: unknown };
}
const WASM = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

interface KernelExports {
  memory: { buffer: ArrayBuffer; grow(pages: number): number };
  __heap_base: { value: number };
  row_stride(L: number): number;
  pack(...args: number[]): void;
  attn_fwd(...args: number[]): void;
  attn_bwd(...args: number[]): void;
  unpack_grad(...args: number[]): void;
}

let kernel: KernelExports | undefined;

function load(): KernelExports {
  if (!kernel) {
    const bytes = readFileSync(new URL('./attention.wasm', import.meta.url));
    kernel = new WASM.Instance(new WASM.Module(bytes), {}).exports as unknown as KernelExports;
  }
  return kernel;
}

/** The kernel's requirements on the shape; the model falls back to plain TF.js ops otherwise. */
export function fusedAttentionSupports(s: { headDim: number; heads: number; kvHeads: number }): boolean {
  return s.headDim % 8 === 0 && s.heads % s.kvHeads === 0;
}

const R = 4; // query rows per kernel block (attention.c)

/**
 * One call's buffers laid out in the kernel's memory from __heap_base; the memory grows when a
 * call needs more and is reused by the next call (calls are synchronous).
 */
class Frame {
  private top: number;
  constructor(private readonly k: KernelExports) {
    this.top = (k.__heap_base.value + 15) & ~15;
  }
  /** Reserve `floats` 4-byte cells (+ slack); returns the byte offset. */
  alloc(floats: number): number {
    const at = this.top;
    this.top += ((floats + 16) * 4 + 15) & ~15;
    return at;
  }
  /** Grow memory to cover everything reserved, then hand out views (growing detaches old views). */
  commit(): void {
    const need = this.top - this.k.memory.buffer.byteLength;
    if (need > 0) this.k.memory.grow(Math.ceil(need / 65536));
  }
  f32(at: number, n: number): Float32Array {
    return new Float32Array(this.k.memory.buffer, at, n);
  }
  i32(at: number, n: number): Int32Array {
    return new Int32Array(this.k.memory.buffer, at, n);
  }
}

interface Packed {
  k: KernelExports;
  frame: Frame;
  ptr: Record<'qkv' | 'pos' | 'cos' | 'sin' | 'q' | 'k' | 'kt' | 'v' | 'vt' | 'pad', number>;
  dims: { B: number; T: number; nh: number; nkv: number; hd: number; g: number };
  extra: Record<string, number>;
}

/** Copy qkv, positions and the needed rotary rows in, and run the kernel's pack (rotary + head layout). */
function packInputs(qkv: Float32Array, a: FusedAttentionArgs, extra: Record<string, number>): Packed {
  const k = load();
  const { batch: B, time: T, heads: nh, kvHeads: nkv, headDim: hd } = a;
  const g = nh / nkv;
  let maxPos = 0; // checkArgs has checked the range
  for (const p of a.positions) if (p > maxPos) maxPos = p;
  const rows = maxPos + 1;
  const frame = new Frame(k);
  const kvN = B * nkv * T * hd;
  const ptr = {
    qkv: frame.alloc(qkv.length),
    pos: frame.alloc(B * T),
    cos: frame.alloc(rows * hd),
    sin: frame.alloc(rows * hd),
    q: frame.alloc(B * nh * T * hd + R * hd),
    k: frame.alloc(kvN),
    kt: frame.alloc(kvN),
    v: frame.alloc(kvN),
    vt: frame.alloc(kvN),
    pad: frame.alloc(B),
  };
  const extraPtr: Record<string, number> = {};
  for (const [name, n] of Object.entries(extra)) extraPtr[name] = frame.alloc(n);
  frame.commit();
  frame.f32(ptr.qkv, qkv.length).set(qkv);
  frame.i32(ptr.pos, B * T).set(a.positions);
  frame.f32(ptr.cos, rows * hd).set(a.tables.cos.subarray(0, rows * hd));
  frame.f32(ptr.sin, rows * hd).set(a.tables.sin.subarray(0, rows * hd));
  if (a.padLeft) frame.i32(ptr.pad, B).set(a.padLeft);
  k.pack(ptr.qkv, B, T, nh, nkv, hd, ptr.pos, ptr.cos, ptr.sin, ptr.q, ptr.k, ptr.kt, ptr.v, ptr.vt);
  return { k, frame, ptr, dims: { B, T, nh, nkv, hd, g }, extra: extraPtr };
}

interface ForwardResult {
  out: Float32Array;
  lse: Float32Array;
  keys?: Float32Array;
  values?: Float32Array;
}

/** Forward on plain arrays: qkv [B*T, (nh + 2 nkv) hd] -> out [B*T, nh hd] and per-row log-sum-exp. */
export function attentionForward(qkv: Float32Array, a: FusedAttentionArgs): ForwardResult {
  checkArgs(qkv.length, a);
  const { B, T, nh, nkv, hd } = dimsOf(a);
  const stride = load().row_stride(T);
  const p = packInputs(qkv, a, { out: B * T * nh * hd, lse: B * nh * T, scratch: R * stride + R * hd });
  const scale = 1 / Math.sqrt(hd);
  p.k.attn_fwd(p.ptr.q, p.ptr.k, p.ptr.kt, p.ptr.v, B, T, T, 0, nkv, nh / nkv, hd, scale,
    a.padLeft ? p.ptr.pad : 0, p.extra.out, p.extra.lse, p.extra.scratch);
  const kvN = B * nkv * T * hd;
  return {
    out: p.frame.f32(p.extra.out, B * T * nh * hd).slice(),
    lse: p.frame.f32(p.extra.lse, B * nh * T).slice(),
    keys: a.wantKv ? p.frame.f32(p.ptr.k, kvN).slice() : undefined,
    values: a.wantKv ? p.frame.f32(p.ptr.v, kvN).slice() : undefined,
  };
}

/** Backward on plain arrays: d(qkv) from d(out), given the forward's inputs, output and log-sum-exp. */
export function attentionBackward(
  qkv: Float32Array,
  a: FusedAttentionArgs,
  fwd: { out: Float32Array; lse: Float32Array },
  dout: Float32Array,
): Float32Array {
  const { B, T, nh, nkv, hd } = dimsOf(a);
  const stride = load().row_stride(T);
  const kvN = B * nkv * T * hd;
  const p = packInputs(qkv, a, {
    out: fwd.out.length, lse: fwd.lse.length, dout: dout.length, dq: B * nh * T * hd, dk: kvN, dv: kvN,
    scratch: 2 * R * stride + 3 * R * hd, dqkv: qkv.length,
  });
  p.frame.f32(p.extra.out, fwd.out.length).set(fwd.out);
  p.frame.f32(p.extra.lse, fwd.lse.length).set(fwd.lse);
  p.frame.f32(p.extra.dout, dout.length).set(dout);
  const scale = 1 / Math.sqrt(hd);
  p.k.attn_bwd(p.ptr.q, p.ptr.k, p.ptr.kt, p.ptr.v, p.ptr.vt, p.extra.out, p.extra.lse, p.extra.dout,
    B, T, T, 0, nkv, nh / nkv, hd, scale, a.padLeft ? p.ptr.pad : 0, p.extra.dq, p.extra.dk, p.extra.dv, p.extra.scratch);
  p.k.unpack_grad(p.extra.dq, p.extra.dk, p.extra.dv, B, T, nh, nkv, hd, p.ptr.pos, p.ptr.cos, p.ptr.sin, p.extra.dqkv);
  return p.frame.f32(p.extra.dqkv, qkv.length).slice();
}

function dimsOf(a: AttentionShape): { B: number; T: number; nh: number; nkv: number; hd: number } {
  return { B: a.batch, T: a.time, nh: a.heads, nkv: a.kvHeads, hd: a.headDim };
}

function checkArgs(qkvSize: number, a: FusedAttentionArgs): void {
  const { B, T, nh, nkv, hd } = dimsOf(a);
  if (!fusedAttentionSupports(a)) throw new AgroError('internal', `fused attention: unsupported head layout ${nh}/${nkv} x ${hd}`);
  if (qkvSize !== B * T * (nh + 2 * nkv) * hd)
    throw new AgroError('internal', `fused attention: qkv has ${qkvSize} values, expected ${B * T * (nh + 2 * nkv) * hd}`);
  if (a.positions.length !== B * T) throw new AgroError('internal', `fused attention: ${a.positions.length} positions for ${B * T} tokens`);
  if (a.tables.headDim !== hd) throw new AgroError('internal', `fused attention: rotary tables for head size ${a.tables.headDim}, not ${hd}`);
  if (a.padLeft && a.padLeft.length !== B) throw new AgroError('internal', `fused attention: padLeft has ${a.padLeft.length} rows, expected ${B}`);
  for (const p of a.positions)
    if (!(p >= 0 && p < a.tables.maxPositions))
      throw new AgroError('invalid_input', `attention: position ${p} is outside [0, ${a.tables.maxPositions})`);
}

/**
 * Causal self-attention with rotary embeddings as one op: qkv [B*T, (nh + 2 nkv) hd] (the fused
 * projection output) -> [B*T, nh hd]. Differentiable with respect to qkv.
 */
export function fusedAttention(
  qkv: tf.Tensor2D,
  a: FusedAttentionArgs,
): { out: tf.Tensor2D; keys?: tf.Tensor3D; values?: tf.Tensor3D } {
  const { B, T, nh, nkv, hd } = dimsOf(a);
  const kvTensors = (r: ForwardResult): { keys?: tf.Tensor3D; values?: tf.Tensor3D } =>
    r.keys && r.values
      ? { keys: tf.tensor3d(r.keys, [B * nkv, T, hd]), values: tf.tensor3d(r.values, [B * nkv, T, hd]) }
      : {};
  if (a.tableTensors && nativeAttentionActive()) return nativeFusedAttention(qkv, a, a.tableTensors);
  if (a.noGrad) {
    const r = attentionForward(qkv.dataSync() as Float32Array, a);
    return { out: tf.tensor2d(r.out, [B * T, nh * hd]), ...kvTensors(r) };
  }
  let fwd: ForwardResult | undefined;
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const x = args[0] as tf.Tensor2D;
    const data = x.dataSync() as Float32Array;
    const r = (fwd = attentionForward(data, a));
    return {
      value: tf.tensor2d(r.out, [B * T, nh * hd]),
      gradFunc: (dy: tf.Tensor) => tf.tensor2d(attentionBackward(data, a, r, dy.dataSync() as Float32Array), x.shape),
    };
  });
  const out = f(qkv) as tf.Tensor2D;
  // The cache tensors are made out here: tensors created inside customGrad's forward are not the caller's.
  return { out, ...kvTensors(fwd!) };
}

/** fusedAttention on the native addon: the same kernel source, computed in place in the TF.js heap. */
function nativeFusedAttention(
  qkv: tf.Tensor2D,
  a: FusedAttentionArgs,
  tables: { cos: tf.Tensor2D; sin: tf.Tensor2D },
): { out: tf.Tensor2D; keys?: tf.Tensor3D; values?: tf.Tensor3D } {
  checkArgs(qkv.size, a);
  const { B, T, nkv, hd } = dimsOf(a);
  const na: NativeAttentionArgs = {
    batch: B, time: T, heads: a.heads, kvHeads: nkv, headDim: hd, cos: tables.cos, sin: tables.sin,
    positions: tf.tensor1d(a.positions, 'int32'), padLeft: a.padLeft ? tf.tensor1d(a.padLeft, 'int32') : undefined,
  };
  const kv = (outs: tf.Tensor[]): { keys?: tf.Tensor3D; values?: tf.Tensor3D } =>
    a.wantKv ? { keys: tf.reshape(outs[3], [B * nkv, T, hd]), values: tf.reshape(outs[5], [B * nkv, T, hd]) } : {};
  if (a.noGrad) {
    const outs = attentionNative(qkv, na);
    return { out: outs[0] as tf.Tensor2D, ...kv(outs) };
  }
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const outs = attentionNative(args[0] as tf.Tensor2D, na);
    // Everything the backward pass reads must be saved: the forward scope disposes the rest.
    const extra = [na.positions, ...(na.padLeft ? [na.padLeft] : [])];
    (args[1] as tf.GradSaveFunc)([...outs, ...extra]);
    return {
      value: outs[0],
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) =>
        attentionNativeGrad(saved.slice(0, 7), dy as tf.Tensor2D, { ...na, positions: saved[7] as tf.Tensor1D, padLeft: na.padLeft ? (saved[8] as tf.Tensor1D) : undefined }),
    };
  });
  const out = f(qkv) as tf.Tensor2D;
  // A KV cache with gradients on (rare: prefill runs without) comes from a second, plain forward
  // call: tensors made inside customGrad's forward do not outlive it.
  return { out, ...(a.wantKv ? kv(attentionNative(qkv, na)) : {}) };
}
