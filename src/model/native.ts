/**
 * Native kernels for the TF.js wasm backend: the addon in native/ (built by `npm install` through
 * node-gyp, like better-sqlite3) replaces the backend's BatchMatMul kernel and adds fused kernels
 * (attention, log-softmax-and-select, SwiGLU, RMSNorm, AdamW) that the model calls while they are
 * active. They compute straight in the wasm heap where the tensors live, so tensors, autograd and
 * every other kernel stay TF.js's; only the arithmetic moves to AVX2/FMA code on a small thread
 * pool. Without the addon (no compiler at install time, AGRO_NATIVE=0) the stock XNNPACK matmul
 * and the TF.js versions of the fused ops run.
 */
import { createRequire } from 'node:module';
import * as tf from '@tensorflow/tfjs-core';
import type { BackendWasm } from '@tensorflow/tfjs-backend-wasm';

interface NativeAddon {
  gemm(
    heap: Uint8Array, aOff: number, bOff: number, cOff: number, M: number, N: number, K: number,
    transA: number, transB: number, batch: number, aBatchStride: number, bBatchStride: number,
  ): void;
  logSoftmaxSelect(heap: Uint8Array, xOff: number, tOff: number, logpOff: number, pOff: number, N: number, V: number): void;
  logSoftmaxSelectGrad(heap: Uint8Array, pOff: number, tOff: number, dyOff: number, dxOff: number, N: number, V: number): void;
  swiglu(heap: Uint8Array, guOff: number, outOff: number, N: number, I: number): void;
  swigluGrad(heap: Uint8Array, guOff: number, dyOff: number, dguOff: number, N: number, I: number): void;
  rmsNorm(heap: Uint8Array, xOff: number, wOff: number, eps: number, yOff: number, rstdOff: number, N: number, H: number): void;
  rmsNormGrad(heap: Uint8Array, xOff: number, wOff: number, rstdOff: number, dyOff: number, dxOff: number, dwOff: number, N: number, H: number): void;
  adamW(heap: Uint8Array, ...args: number[]): void;
  attentionForward(heap: Uint8Array, ...args: number[]): void;
  attentionBackward(heap: Uint8Array, ...args: number[]): void;
  decodeStep(heap: Uint8Array, desc: Float64Array): void;
  packPanels(heap: Uint8Array, srcOff: number, dstOff: number, K: number, N: number, transposed: number): void;
  sampleRows(heap: Uint8Array, logitsOff: number, n: number, V: number, temperature: number, u: Float64Array, tokens: Int32Array, logp: Float64Array): void;
  info(): { kernel: string; threads: number; attention: boolean };
}

export interface NativeStatus {
  /** The addon's kernels are installed in the wasm backend and switched on. */
  active: boolean;
  /** Why not, when not active. */
  reason?: string;
  kernel?: string;
  threads?: number;
}

let addon: NativeAddon | undefined;
let loadError: string | undefined;
let installed = false;
let enabled = true;
/** The addon's attention needs SSE4.1 (read once at install). */
let attentionSupported = false;

function loadAddon(): NativeAddon | undefined {
  if (addon || loadError) return addon;
  if (process.env.AGRO_NATIVE === '0') {
    loadError = 'disabled by AGRO_NATIVE=0';
    return undefined;
  }
  try {
    addon = createRequire(import.meta.url)('../../build/Release/agro_native.node') as NativeAddon;
  } catch (e) {
    loadError = `native addon not built (${(e as Error).message.split('\n')[0]}); run npm rebuild or npm install`;
  }
  return addon;
}

interface MatMulInputs {
  a: tf.TensorInfo;
  b: tf.TensorInfo;
}

const prod = (s: readonly number[]): number => s.reduce((x, y) => x * y, 1);

/** BatchMatMul on the addon, or undefined for the cases left to the stock kernel. */
function nativeBatchMatMul(inputs: MatMulInputs, backend: BackendWasm, tA: boolean, tB: boolean): tf.TensorInfo | undefined {
  const { a, b } = inputs;
  if (a.dtype !== 'float32' || b.dtype !== 'float32' || a.shape.length < 2 || b.shape.length < 2) return undefined;
  const ra = a.shape.length;
  const rb = b.shape.length;
  const M = tA ? a.shape[ra - 1] : a.shape[ra - 2];
  const K = tA ? a.shape[ra - 2] : a.shape[ra - 1];
  const Kb = tB ? b.shape[rb - 1] : b.shape[rb - 2];
  const N = tB ? b.shape[rb - 2] : b.shape[rb - 1];
  if (K !== Kb || M === 0 || N === 0 || K === 0) return undefined; // the stock kernel reports the mismatch
  const aBatch = a.shape.slice(0, -2);
  const bBatch = b.shape.slice(0, -2);
  const outBatch = tf.backend_util.assertAndGetBroadcastShape(aBatch, bBatch);
  const batch = prod(outBatch);
  // Whole-operand broadcasting only (an operand's batch is 1 or the full batch).
  if ((prod(aBatch) !== 1 && prod(aBatch) !== batch) || (prod(bBatch) !== 1 && prod(bBatch) !== batch)) return undefined;
  const out = backend.makeOutput([...outBatch, M, N], 'float32');
  const off = (t: tf.TensorInfo): number => offsetOf(backend, t);
  addon!.gemm(
    heapOf(backend), off(a), off(b), off(out), M, N, K, tA ? 1 : 0, tB ? 1 : 0, batch,
    prod(aBatch) === 1 ? 0 : M * K, prod(bBatch) === 1 ? 0 : K * N,
  );
  return out;
}

const offsetOf = (backend: BackendWasm, t: tf.TensorInfo): number => backend.dataIdMap.get(t.dataId)!.memoryOffset;
// Re-read after makeOutput, which may have grown the heap.
const heapOf = (backend: BackendWasm): Uint8Array => (backend.wasm as unknown as { HEAPU8: Uint8Array }).HEAPU8;

type Infos = Record<string, tf.TensorInfo>;

/**
 * A wasm kernel computed by the addon: `run` allocates the outputs with makeOutput, then calls
 * the addon on heap offsets (the heap is read after the allocations, which may grow it).
 */
function registerFused(name: string, run: (inputs: Infos, be: BackendWasm, attrs: Record<string, number>) => tf.TensorInfo | tf.TensorInfo[]): void {
  tf.registerKernel({
    kernelName: name,
    backendName: 'wasm',
    kernelFunc: ({ inputs, backend, attrs }) => run(inputs as unknown as Infos, backend as BackendWasm, attrs as unknown as Record<string, number>),
  });
}

function registerFusedKernels(): void {
  const lib = addon!;
  registerFused('AgroLogSoftmaxSelect', ({ x, targets }, be) => {
    const [N, V] = x.shape;
    const logp = be.makeOutput([N], 'float32');
    const p = be.makeOutput([N, V], 'float32');
    lib.logSoftmaxSelect(heapOf(be), offsetOf(be, x), offsetOf(be, targets), offsetOf(be, logp), offsetOf(be, p), N, V);
    return [logp, p];
  });
  registerFused('AgroLogSoftmaxSelectGrad', ({ p, targets, dy }, be) => {
    const [N, V] = p.shape;
    const dx = be.makeOutput([N, V], 'float32');
    lib.logSoftmaxSelectGrad(heapOf(be), offsetOf(be, p), offsetOf(be, targets), offsetOf(be, dy), offsetOf(be, dx), N, V);
    return dx;
  });
  registerFused('AgroSwiGlu', ({ gu }, be) => {
    const [N, I2] = gu.shape;
    const out = be.makeOutput([N, I2 / 2], 'float32');
    lib.swiglu(heapOf(be), offsetOf(be, gu), offsetOf(be, out), N, I2 / 2);
    return out;
  });
  registerFused('AgroSwiGluGrad', ({ gu, dy }, be) => {
    const [N, I2] = gu.shape;
    const dgu = be.makeOutput([N, I2], 'float32');
    lib.swigluGrad(heapOf(be), offsetOf(be, gu), offsetOf(be, dy), offsetOf(be, dgu), N, I2 / 2);
    return dgu;
  });
  registerFused('AgroRmsNorm', ({ x, w }, be, { eps }) => {
    const [N, H] = x.shape;
    const y = be.makeOutput([N, H], 'float32');
    const rstd = be.makeOutput([N], 'float32');
    lib.rmsNorm(heapOf(be), offsetOf(be, x), offsetOf(be, w), eps, offsetOf(be, y), offsetOf(be, rstd), N, H);
    return [y, rstd];
  });
  registerFused('AgroAdamW', ({ p, g, m, v }, be, a) => {
    const outs = [be.makeOutput(p.shape, 'float32'), be.makeOutput(p.shape, 'float32'), be.makeOutput(p.shape, 'float32')];
    lib.adamW(
      heapOf(be), offsetOf(be, p), offsetOf(be, g), offsetOf(be, m), offsetOf(be, v), ...outs.map((o) => offsetOf(be, o)),
      prod(p.shape), a.lr, a.beta1, a.beta2, a.eps, a.decay, a.bc1, a.bc2,
    );
    return outs;
  });
  const attnDims = (a: Record<string, number>): number[] => [a.B, a.T, a.nh, a.nkv, a.hd, a.rows];
  registerFused('AgroAttention', ({ qkv, pos, cos, sin, pad }, be, a) => {
    const kvn = a.B * a.nkv * a.T * a.hd;
    // q, kt, vt with the slack the kernel's micro-kernels over-read (native/kernels.h).
    const outs = [
      be.makeOutput([a.B * a.T, a.nh * a.hd], 'float32'), be.makeOutput([a.B * a.nh * a.T], 'float32'),
      be.makeOutput([a.B * a.nh * a.T * a.hd + 4 * a.hd + 16], 'float32'), be.makeOutput([kvn], 'float32'),
      be.makeOutput([kvn + 16], 'float32'), be.makeOutput([kvn], 'float32'), be.makeOutput([kvn + 16], 'float32'),
    ];
    const [out, lse, q, k, kt, v, vt] = outs.map((o) => offsetOf(be, o));
    lib.attentionForward(
      heapOf(be), offsetOf(be, qkv), offsetOf(be, pos), offsetOf(be, cos), offsetOf(be, sin), pad ? offsetOf(be, pad) : -1,
      ...attnDims(a), q, k, kt, v, vt, out, lse,
    );
    return outs;
  });
  registerFused('AgroAttentionGrad', ({ q, k, kt, v, vt, out, lse, dout, pos, cos, sin, pad }, be, a) => {
    const dqkv = be.makeOutput([a.B * a.T, (a.nh + 2 * a.nkv) * a.hd], 'float32');
    const o = (t: tf.TensorInfo): number => offsetOf(be, t);
    lib.attentionBackward(
      heapOf(be), o(q), o(k), o(kt), o(v), o(vt), o(out), o(lse), o(dout), o(pos), o(cos), o(sin), pad ? o(pad) : -1,
      ...attnDims(a), o(dqkv),
    );
    return dqkv;
  });
  registerFused('AgroPackPanels', ({ b }, be, { transposed }) => {
    const [K, N] = transposed ? [b.shape[1], b.shape[0]] : b.shape;
    const out = be.makeOutput([Math.ceil(N / PANEL) * PANEL * K], 'float32');
    lib.packPanels(heapOf(be), offsetOf(be, b), offsetOf(be, out), K, N, transposed ? 1 : 0);
    return out;
  });
  registerFused('AgroRmsNormGrad', ({ x, w, rstd, dy }, be) => {
    const [N, H] = x.shape;
    const dx = be.makeOutput([N, H], 'float32');
    const dw = be.makeOutput([H], 'float32');
    lib.rmsNormGrad(heapOf(be), offsetOf(be, x), offsetOf(be, w), offsetOf(be, rstd), offsetOf(be, dy), offsetOf(be, dx), offsetOf(be, dw), N, H);
    return [dx, dw];
  });
}

const f32 = (t: tf.Tensor): tf.Tensor => (t.dtype === 'float32' ? t : tf.cast(t, 'float32'));

/*
 * The fused ops below run only while nativeKernelsActive(); llama.ts keeps a TF.js version of
 * each for the other cases, and the tests check that both agree.
 */

/** log softmax(x)[target] per row and the softmax itself (kept for the backward pass); x [N, V], targets int32 in [0, V). */
export function logSoftmaxSelect(x: tf.Tensor2D, targets: tf.Tensor1D): { logp: tf.Tensor1D; probs: tf.Tensor2D } {
  const [logp, probs] = tf.engine().runKernel('AgroLogSoftmaxSelect', { x, targets: tf.cast(targets, 'int32') }) as [tf.Tensor1D, tf.Tensor2D];
  return { logp, probs };
}

/** dy[n] * (onehot(target[n]) - probs[n, :]): the gradient of logSoftmaxSelect's logp. */
export function logSoftmaxSelectGrad(probs: tf.Tensor2D, targets: tf.Tensor1D, dy: tf.Tensor1D): tf.Tensor2D {
  return tf.engine().runKernel('AgroLogSoftmaxSelectGrad', { p: probs, targets: tf.cast(targets, 'int32'), dy: f32(dy) }) as tf.Tensor2D;
}

/** silu(gate) * up for gu = [gate | up] [N, 2I]. */
export function swiGluNative(gu: tf.Tensor2D): tf.Tensor2D {
  return tf.engine().runKernel('AgroSwiGlu', { gu }) as tf.Tensor2D;
}

export function swiGluNativeGrad(gu: tf.Tensor2D, dy: tf.Tensor2D): tf.Tensor2D {
  return tf.engine().runKernel('AgroSwiGluGrad', { gu, dy: f32(dy) }) as tf.Tensor2D;
}

/** RMSNorm rows of x [N, H] by w [H]: y and each row's 1/rms (for the backward pass). */
export function rmsNormNative(x: tf.Tensor2D, w: tf.Tensor1D, eps: number): { y: tf.Tensor2D; rstd: tf.Tensor1D } {
  const [y, rstd] = tf.engine().runKernel('AgroRmsNorm', { x, w }, { eps } as unknown as tf.NamedAttrMap) as [tf.Tensor2D, tf.Tensor1D];
  return { y, rstd };
}

export interface AdamWStep {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  /** 1 - lr * weightDecay, or 1 for parameters without decay. */
  decay: number;
  /** Bias corrections 1 - beta^t. */
  bc1: number;
  bc2: number;
}

/** One fused AdamW step: new parameter, first and second moments (float32, same shape). */
export function adamWNative(p: tf.Tensor, g: tf.Tensor, m: tf.Tensor, v: tf.Tensor, step: AdamWStep): [tf.Tensor, tf.Tensor, tf.Tensor] {
  return tf.engine().runKernel('AgroAdamW', { p, g: f32(g), m, v }, step as unknown as tf.NamedAttrMap) as [tf.Tensor, tf.Tensor, tf.Tensor];
}

export interface NativeAttentionArgs {
  batch: number;
  time: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  /** int32 [batch * time] rotary positions. */
  positions: tf.Tensor1D;
  /** Rotary tables [rows, headDim] as llama.ts builds them. */
  cos: tf.Tensor2D;
  sin: tf.Tensor2D;
  /** int32 [batch] leading padding keys, or none. */
  padLeft?: tf.Tensor1D;
}

/** Whether the native attention kernel can run (addon active and the CPU has SSE4.1). */
export function nativeAttentionActive(): boolean {
  return nativeKernelsActive() && attentionSupported;
}

const attnAttrs = (a: NativeAttentionArgs): tf.NamedAttrMap =>
  ({ B: a.batch, T: a.time, nh: a.heads, nkv: a.kvHeads, hd: a.headDim, rows: a.cos.shape[0] }) as unknown as tf.NamedAttrMap;

/**
 * Fused causal attention on the addon: out [B*T, nh hd] from qkv [B*T, (nh + 2 nkv) hd], plus what
 * the backward pass needs (lse and the packed q, k, kt, v, vt; k and v double as a KV cache).
 */
export function attentionNative(qkv: tf.Tensor2D, a: NativeAttentionArgs): tf.Tensor[] {
  const inputs: Record<string, tf.Tensor> = { qkv, pos: a.positions, cos: a.cos, sin: a.sin };
  if (a.padLeft) inputs.pad = a.padLeft;
  return tf.engine().runKernel('AgroAttention', inputs, attnAttrs(a)) as tf.Tensor[];
}

/** d(qkv) from d(out), given attentionNative's outputs [out, lse, q, k, kt, v, vt]. */
export function attentionNativeGrad(saved: tf.Tensor[], dout: tf.Tensor2D, a: NativeAttentionArgs): tf.Tensor2D {
  const [out, lse, q, k, kt, v, vt] = saved;
  const inputs: Record<string, tf.Tensor> = { q, k, kt, v, vt, out, lse, dout: f32(dout), pos: a.positions, cos: a.cos, sin: a.sin };
  if (a.padLeft) inputs.pad = a.padLeft;
  return tf.engine().runKernel('AgroAttentionGrad', inputs, attnAttrs(a)) as tf.Tensor2D;
}

export function rmsNormNativeGrad(x: tf.Tensor2D, w: tf.Tensor1D, rstd: tf.Tensor1D, dy: tf.Tensor2D): { dx: tf.Tensor2D; dw: tf.Tensor1D } {
  const [dx, dw] = tf.engine().runKernel('AgroRmsNormGrad', { x, w, rstd, dy: f32(dy) }) as [tf.Tensor2D, tf.Tensor1D];
  return { dx, dw };
}

/** The tensors of one layer that a decoding step reads (and, for the caches, writes). */
export interface DecodeLayerTensors {
  /** The matrices packed by packPanelsNative; the rest as the model keeps them. */
  ln1: tf.Tensor;
  wqkv: tf.Tensor;
  bqkv?: tf.Tensor;
  wo: tf.Tensor;
  ln2: tf.Tensor;
  wgu: tf.Tensor;
  wdown: tf.Tensor;
  /** [cacheRows * kvHeads, cap, headDim]: rotated keys and values, written in place at slot `t`. */
  kCache: tf.Tensor;
  vCache: tf.Tensor;
}
/** Column panel width of packed matrices (native/kernels.h PANEL). */
const PANEL = 8;

/**
 * A matrix B [K, N] (given as [N, K] when `transposed`) packed into the column panels the decoding
 * step reads (native/kernels.h pack_panels): 1-D, zero-padded to whole panels.
 */
export function packPanelsNative(b: tf.Tensor2D, transposed = false): tf.Tensor1D {
  return tf.engine().runKernel('AgroPackPanels', { b }, { transposed: transposed ? 1 : 0 } as unknown as tf.NamedAttrMap) as tf.Tensor1D;
}


export interface DecodeStepArgs {
  layers: DecodeLayerTensors[];
  embed: tf.Tensor; // [V, H]
  norm: tf.Tensor; // [H]
  head: tf.Tensor; // [H, V], packed
  cos: tf.Tensor2D; // rotary tables [positions, hd]
  sin: tf.Tensor2D;
  intermediate: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  eps: number;
  /** Rows and slots of the caches. */
  cacheRows: number;
  cap: number;
  /** The slot this step's tokens fill. */
  t: number;
  /** Per decoded row: token id, cache row, rotary position, leading padding slots. */
  ids: Int32Array;
  rows: Int32Array;
  positions: Int32Array;
  pads: Int32Array;
}

/** Whether NativeDecodeSession can run (addon active). */
export function nativeDecodeActive(): boolean {
  return nativeKernelsActive();
}

/**
 * Decoding steps on the addon (native/decode.cc) without a TF.js kernel dispatch per step: the
 * control block and the logits [maxRows, V] are buffers the session allocates once in the wasm heap,
 * and each step is one addon call over the tensors' offsets (re-read every step, so a weight the model
 * reassigns is followed). The caches are written in place: they must be tensors the caller owns and
 * shares with nothing else.
 */
export class NativeDecodeSession {
  private readonly ctl: tf.Tensor;
  private readonly logits: tf.Tensor;
  private readonly V: number;
  private n = 0;

  constructor(readonly maxRows: number, vocabSize: number) {
    this.V = vocabSize;
    this.ctl = tf.zeros([4 * maxRows], 'int32');
    this.logits = tf.zeros([maxRows, vocabSize], 'float32');
  }

  /** Appends the rows' keys and values at slot a.t and leaves their logits [n, V] in the session. */
  step(a: DecodeStepArgs): void {
    const n = a.ids.length;
    if (n > this.maxRows || n !== a.rows.length || n !== a.positions.length || n !== a.pads.length)
      throw new Error(`NativeDecodeSession: ${n} rows for a session of ${this.maxRows}, or ragged row arrays`);
    const be = tf.backend() as BackendWasm;
    const o = (t: tf.Tensor | undefined): number => (t ? offsetOf(be, t) : -1);
    const ctlOff = o(this.ctl);
    const heap = heapOf(be);
    const ctl = new Int32Array(heap.buffer, heap.byteOffset + ctlOff, 4 * n);
    ctl.set(a.ids, 0);
    ctl.set(a.rows, n);
    ctl.set(a.positions, 2 * n);
    ctl.set(a.pads, 3 * n);
    const [V, H] = a.embed.shape;
    if (V !== this.V) throw new Error(`NativeDecodeSession: vocabulary ${V}, session made for ${this.V}`);
    const desc = new Float64Array(20 + 9 * a.layers.length);
    desc.set([
      a.layers.length, H, a.intermediate, V, a.heads, a.kvHeads, a.headDim, a.cap, a.t, a.eps, a.cacheRows, a.cos.shape[0], n,
      ctlOff, o(a.cos), o(a.sin), o(a.embed), o(a.norm), o(a.head), o(this.logits),
    ]);
    a.layers.forEach((l, i) =>
      desc.set([l.ln1, l.wqkv, l.bqkv, l.wo, l.ln2, l.wgu, l.wdown, l.kCache, l.vCache].map(o), 20 + 9 * i),
    );
    addon!.decodeStep(heap, desc);
    this.n = n;
  }

  /** Each row's next token drawn from the last step's logits (see sampleRowsNative). */
  sample(temperature: number, u: Float64Array): { tokens: Int32Array; logprobs: Float64Array } {
    const be = tf.backend() as BackendWasm;
    return sampleAt(be, offsetOf(be, this.logits), this.n, this.V, temperature, u);
  }

  /** A copy of the last step's logits [n, V], row-major. */
  logitsData(): Float32Array {
    const be = tf.backend() as BackendWasm;
    const heap = heapOf(be);
    return new Float32Array(heap.buffer, heap.byteOffset + offsetOf(be, this.logits), this.n * this.V).slice();
  }

  dispose(): void {
    tf.dispose([this.ctl, this.logits]);
  }
}

/**
 * The next token of each row of logits [n, V] (wasm tensors), drawn where the logits are
 * (native/sample.cc): at `temperature` with the uniform u[i] (0 = the first maximum, u unused), as
 * generate.ts drawToken draws without top-k or top-p; logprobs at temperature 1 as logSoftmaxAt.
 */
export function sampleRowsNative(logits: tf.Tensor2D, temperature: number, u: Float64Array): { tokens: Int32Array; logprobs: Float64Array } {
  const [n, V] = logits.shape;
  const be = tf.backend() as BackendWasm;
  return sampleAt(be, offsetOf(be, logits), n, V, temperature, u);
}

function sampleAt(be: BackendWasm, off: number, n: number, V: number, temperature: number, u: Float64Array): { tokens: Int32Array; logprobs: Float64Array } {
  const tokens = new Int32Array(n);
  const logprobs = new Float64Array(n);
  addon!.sampleRows(heapOf(be), off, n, V, temperature, u, tokens, logprobs);
  return { tokens, logprobs };
}

/** Install the native kernels into the wasm backend (idempotent). */
export function installNativeKernels(): NativeStatus {
  const lib = loadAddon();
  if (!lib) return { active: false, reason: loadError };
  if (!installed) {
    const stock = tf.getKernel('BatchMatMul', 'wasm');
    if (!stock) return { active: false, reason: 'the wasm backend has no BatchMatMul kernel to replace' };
    tf.unregisterKernel('BatchMatMul', 'wasm');
    tf.registerKernel({
      ...stock,
      kernelFunc: (args) => {
        const attrs = args.attrs as unknown as { transposeA: boolean; transposeB: boolean };
        if (!enabled) return stock.kernelFunc(args);
        const r = nativeBatchMatMul(args.inputs as unknown as MatMulInputs, args.backend as BackendWasm, attrs.transposeA, attrs.transposeB);
        return r ?? stock.kernelFunc(args);
      },
    });
    // Identity (tf.clone, and a copy of every tensor a customGrad saves for its backward pass, ~80
    // per training step of the small preset) shares the input's memory, as the wasm Reshape and the
    // cpu backend's Identity do, instead of copying it. Nothing writes a tensor in place except the
    // decoding step into its KV caches, which are fresh tensors (generate.ts NativeDecoder).
    const stockIdentity = tf.getKernel('Identity', 'wasm');
    if (stockIdentity) {
      tf.unregisterKernel('Identity', 'wasm');
      tf.registerKernel({
        ...stockIdentity,
        kernelFunc: (args) => {
          const x = (args.inputs as unknown as { x: tf.TensorInfo }).x;
          if (!enabled || x.dtype === 'string') return stockIdentity.kernelFunc(args);
          (args.backend as BackendWasm).incRef(x.dataId);
          return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
        },
      });
    }
    registerFusedKernels();
    attentionSupported = lib.info().attention;
    installed = true;
  }
  return nativeStatus();
}

/**
 * Whether the native kernels run now: matmuls go through the addon (so transposed operands are free)
 * and the model uses the fused ops below.
 */
export function nativeKernelsActive(): boolean {
  return installed && enabled && tf.getBackend() === 'wasm';
}

/** Switch the installed kernels off and on (tests and benchmarks compare both in one process). */
export function setNativeKernels(on: boolean): void {
  enabled = on;
}

export function nativeStatus(): NativeStatus {
  if (!installed) return { active: false, reason: loadError ?? 'not installed' };
  const i = addon!.info();
  const reason = !enabled ? 'switched off' : tf.getBackend() !== 'wasm' ? `backend is ${tf.getBackend()}` : undefined;
  return { active: reason === undefined, kernel: i.kernel, threads: i.threads, reason };
}
