/**
 * Native kernels for the TF.js wasm backend: the addon in native/ (built by `npm install` through
 * node-gyp, like better-sqlite3) replaces the backend's BatchMatMul kernel and adds a fused
 * log-softmax-and-select for the loss. They compute straight in the wasm heap where the tensors
 * live, so tensors, autograd and every other kernel stay TF.js's; only the arithmetic moves to
 * AVX2/FMA code on a small thread pool. Without the addon (no compiler at install time,
 * AGRO_NATIVE=0) the stock XNNPACK matmul and TF.js ops run.
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
  info(): { kernel: string; threads: number };
}

export interface NativeStatus {
  /** The addon's matmul is installed as the wasm backend's BatchMatMul. */
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

/** Kernel names of the fused loss (see logSoftmaxSelect below). */
const LSS = 'AgroLogSoftmaxSelect';
const LSS_GRAD = 'AgroLogSoftmaxSelectGrad';

function registerLossKernels(): void {
  tf.registerKernel({
    kernelName: LSS,
    backendName: 'wasm',
    kernelFunc: ({ inputs, backend }) => {
      const { x, targets } = inputs as { x: tf.TensorInfo; targets: tf.TensorInfo };
      const be = backend as BackendWasm;
      const [N, V] = x.shape;
      const logp = be.makeOutput([N], 'float32');
      const p = be.makeOutput([N, V], 'float32');
      addon!.logSoftmaxSelect(heapOf(be), offsetOf(be, x), offsetOf(be, targets), offsetOf(be, logp), offsetOf(be, p), N, V);
      return [logp, p];
    },
  });
  tf.registerKernel({
    kernelName: LSS_GRAD,
    backendName: 'wasm',
    kernelFunc: ({ inputs, backend }) => {
      const { p, targets, dy } = inputs as { p: tf.TensorInfo; targets: tf.TensorInfo; dy: tf.TensorInfo };
      const be = backend as BackendWasm;
      const [N, V] = p.shape;
      const dx = be.makeOutput([N, V], 'float32');
      addon!.logSoftmaxSelectGrad(heapOf(be), offsetOf(be, p), offsetOf(be, targets), offsetOf(be, dy), offsetOf(be, dx), N, V);
      return dx;
    },
  });
}

/**
 * Native fused loss: log softmax(x)[target] per row and the softmax itself (for the backward
 * pass), in one pass over x [N, V]. Only while nativeMatMulActive(); targets int32 in [0, V).
 */
export function logSoftmaxSelect(x: tf.Tensor2D, targets: tf.Tensor1D): { logp: tf.Tensor1D; probs: tf.Tensor2D } {
  const [logp, probs] = tf.engine().runKernel(LSS, { x, targets: tf.cast(targets, 'int32') }) as [tf.Tensor1D, tf.Tensor2D];
  return { logp, probs };
}

/** dy[n] * (onehot(target[n]) - probs[n, :]): the gradient of logSoftmaxSelect's logp. */
export function logSoftmaxSelectGrad(probs: tf.Tensor2D, targets: tf.Tensor1D, dy: tf.Tensor1D): tf.Tensor2D {
  return tf.engine().runKernel(LSS_GRAD, { p: probs, targets: tf.cast(targets, 'int32'), dy: tf.cast(dy, 'float32') }) as tf.Tensor2D;
}

/** Install the native kernels into the wasm backend (idempotent). */
export function installNativeMatMul(): NativeStatus {
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
    registerLossKernels();
    installed = true;
  }
  return nativeStatus();
}

/** Whether matmuls currently run on the addon (transposed operands are then free: no copies needed). */
export function nativeMatMulActive(): boolean {
  return installed && enabled && tf.getBackend() === 'wasm';
}

/** Switch an installed addon off and on (tests and benchmarks compare both in one process). */
export function setNativeMatMul(on: boolean): void {
  enabled = on;
}

export function nativeStatus(): NativeStatus {
  if (!installed) return { active: false, reason: loadError ?? 'not installed' };
  const i = addon!.info();
  const reason = !enabled ? 'switched off' : tf.getBackend() !== 'wasm' ? `backend is ${tf.getBackend()}` : undefined;
  return { active: reason === undefined, kernel: i.kernel, threads: i.threads, reason };
}
