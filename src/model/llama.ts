/**
 * Decoder-only Llama-family transformer on TensorFlow.js: RMSNorm, rotary embeddings (HF
 * rotate_half convention), SwiGLU MLP, grouped-query attention, optional tied embeddings and
 * Qwen2 q/k/v biases.
 *
 * Layout choices for speed: projections are stored as [in, out] so every linear is one plain 2-D
 * matmul; q/k/v and gate/up are fused into one matmul each (split after). Export and import
 * convert to and from Hugging Face names and [out, in] layouts.
 */
import * as tf from '@tensorflow/tfjs-core';
import { AgroError } from '../errors.ts';
import { Rng } from '../util/rng.ts';
import { headDimOf, resolveModelConfig } from './config.ts';
import type { ModelConfig } from './config.ts';
import { fusedAttention, fusedAttentionSupports } from './kernels/attention.ts';
import type { RopeTables } from './kernels/attention.ts';
import {
  logSoftmaxSelect, logSoftmaxSelectGrad, nativeKernelsActive, rmsNormNative, rmsNormNativeGrad, swiGluNative, swiGluNativeGrad,
} from './native.ts';

export type WeightMap = Map<string, { shape: number[]; data: Float32Array }>;

/** Per-layer key/value cache: [rows * numKvHeads, length, headDim]. */
// A type alias (not an interface) so it is assignable to tf.TensorContainer and can leave a tf.tidy.
export type KvCache = {
  k: tf.Tensor3D[];
  v: tf.Tensor3D[];
};

export interface ForwardOptions {
  /** int32 [B, T] absolute positions; default 0..T-1 (after the cache length). */
  positions?: tf.Tensor2D;
  /** Additive mask [B or 1, 1, 1, T, L] over the L = past + T keys; default causal. Forces the plain TF.js attention. */
  mask?: tf.Tensor;
  /**
   * Per batch row, how many leading key positions are left padding: no query attends to them (a
   * padding query sees only itself). Used by batched sampling instead of a hand-built mask.
   */
  padLeft?: number[];
  /**
   * 'fused' (default where the head size allows): the wasm attention kernel (kernels/attention.c);
   * 'tfjs': plain TF.js ops. Env AGRO_ATTENTION=tfjs switches the default. Steps with a KV cache
   * always use plain ops.
   */
  attention?: 'fused' | 'tfjs';
  cache?: KvCache;
  /** Inference only (decoding): plain ops without the custom-gradient wrappers, fewer dispatches per step. */
  noGrad?: boolean;
}

interface Layer {
  ln1: tf.Variable;
  wqkv: tf.Variable; // [H, (nh + 2 nkv) hd]
  bqkv?: tf.Variable;
  wo: tf.Variable; // [nh hd, H]
  ln2: tf.Variable;
  wgu: tf.Variable; // [H, 2 I]: gate then up
  wdown: tf.Variable; // [I, H]
}

const NEG = -1e9;

/** Embedding lookup whose gradient is a scatter-add (the stock gather gradient needs UnsortedSegmentSum, which wasm lacks). */
export function embedLookup(table: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D {
  const idx = tf.reshape(ids, [-1, 1]);
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const w = args[0] as tf.Tensor;
    const save = args[1] as tf.GradSaveFunc;
    // Tensors the backward pass needs must go through save(): the forward scope disposes the rest.
    save([idx]);
    return {
      value: tf.gather(w, ids),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.scatterND(saved[0], dy, w.shape),
    };
  });
  return f(table) as tf.Tensor2D;
}

/**
 * log softmax(logits)[target] per row, with a fused gradient dy * (onehot - softmax). The forward
 * pass keeps the softmax it computes anyway, so the backward pass needs no second exp over [N, V]
 * (the two exps were the largest non-matmul cost of a training step) and no gather gradient.
 */
export function selectLogProbs(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor1D {
  const [N, V] = logits.shape;
  if (nativeKernelsActive()) {
    // The same computation as below in one native pass (native/softmax.cc).
    const nf = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
      const { logp, probs } = logSoftmaxSelect(args[0] as tf.Tensor2D, targets);
      // targets too: the forward scope disposes what is not saved.
      (args[1] as tf.GradSaveFunc)([probs, targets]);
      return {
        value: logp,
        gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) =>
          logSoftmaxSelectGrad(saved[0] as tf.Tensor2D, saved[1] as tf.Tensor1D, dy as tf.Tensor1D),
      };
    });
    return nf(logits) as tf.Tensor1D;
  }
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const x = args[0] as tf.Tensor2D;
    const save = args[1] as tf.GradSaveFunc;
    const shifted = tf.sub(x, tf.max(x, -1, true));
    const e = tf.exp(shifted);
    const sum = tf.sum(e, -1, true);
    // gather with batchDims crashes the wasm backend; gatherND over (row, target) pairs does not.
    const pairs = tf.stack([tf.range(0, targets.shape[0], 1, 'int32'), targets], 1);
    const picked = tf.gatherND(shifted, pairs) as tf.Tensor1D;
    save([tf.div(e, sum), pairs]);
    return {
      value: tf.sub(picked, tf.reshape(tf.log(sum), [-1])),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [p, pr] = saved;
        // dy * (onehot - softmax), the onehot part as a scatter of dy into [N, V].
        return tf.sub(tf.scatterND(pr, dy, [N, V]), tf.mul(p, tf.reshape(dy, [-1, 1])));
      },
    };
  });
  return f(logits) as tf.Tensor1D;
}

/**
 * 2-D matmul a @ b (a @ b^T with `transposeB`) with a hand-written gradient. With the native
 * matmul (native.ts) transposed operands are free, so the gradient is two matmuls with transpose
 * flags. On the stock wasm kernel a transposed operand falls off XNNPACK onto a naive loop (~15x
 * slower here), so there the gradient transposes copies explicitly and runs plain matmuls.
 */
export function mm(a: tf.Tensor2D, b: tf.Tensor2D, transposeB = false): tf.Tensor2D {
  const native = nativeKernelsActive();
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [x, w] = args as [tf.Tensor2D, tf.Tensor2D];
    (args[2] as tf.GradSaveFunc)([x, w]);
    return {
      value: native || !transposeB ? tf.matMul(x, w, false, transposeB) : tf.matMul(x, tf.transpose(w)),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [xs, ws] = saved as [tf.Tensor2D, tf.Tensor2D];
        const d = dy as tf.Tensor2D;
        if (native)
          return transposeB
            ? [tf.matMul(d, ws), tf.matMul(d, xs, true, false)]
            : [tf.matMul(d, ws, false, true), tf.matMul(xs, d, true, false)];
        return transposeB
          ? [tf.matMul(d, ws), tf.matMul(tf.transpose(d), xs)]
          : [tf.matMul(d, tf.transpose(ws)), tf.matMul(tf.transpose(xs), d)];
      },
    };
  });
  return f(a, b) as tf.Tensor2D;
}

/**
 * RMSNorm x * rsqrt(mean(x^2) + eps) * w with a hand-written gradient: one native pass each way
 * with the addon, else a few TF.js ops instead of the dozen autodiff would record.
 */
export function rmsNorm(x: tf.Tensor2D, w: tf.Tensor, eps: number): tf.Tensor2D {
  if (nativeKernelsActive()) {
    const nf = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
      const [xs, ws] = args as [tf.Tensor2D, tf.Tensor1D];
      const { y, rstd } = rmsNormNative(xs, ws, eps);
      (args[2] as tf.GradSaveFunc)([xs, ws, rstd]);
      return {
        value: y,
        gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
          const { dx, dw } = rmsNormNativeGrad(saved[0] as tf.Tensor2D, saved[1] as tf.Tensor1D, saved[2] as tf.Tensor1D, dy as tf.Tensor2D);
          return [dx, dw];
        },
      };
    });
    return nf(x, w) as tf.Tensor2D;
  }
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [xs, ws] = args as [tf.Tensor2D, tf.Tensor1D];
    const r = tf.rsqrt(tf.add(tf.mean(tf.square(xs), -1, true), eps));
    const n = tf.mul(xs, r);
    (args[2] as tf.GradSaveFunc)([n, r, ws]);
    return {
      value: tf.mul(n, ws),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [ns, rs, wv] = saved;
        const dn = tf.mul(dy, wv);
        // d/dx = r * (dn - n * mean(dn * n)); d/dw = sum over rows of dy * n.
        const dx = tf.mul(rs, tf.sub(dn, tf.mul(ns, tf.mean(tf.mul(dn, ns), -1, true))));
        return [dx, tf.sum(tf.mul(dy, ns), 0)];
      },
    };
  });
  return f(x, w) as tf.Tensor2D;
}

function rmsNormForward(x: tf.Tensor2D, w: tf.Tensor, eps: number): tf.Tensor2D {
  if (nativeKernelsActive()) return rmsNormNative(x, w as tf.Tensor1D, eps).y;
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), eps))), w);
}

/** SwiGLU silu(gate) * up over the fused projection gu = [gate | up] [N, 2I]. */
export function swiGlu(gu: tf.Tensor2D, noGrad = false): tf.Tensor2D {
  if (nativeKernelsActive()) {
    if (noGrad) return swiGluNative(gu);
    const nf = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
      const x = args[0] as tf.Tensor2D;
      (args[1] as tf.GradSaveFunc)([x]);
      return { value: swiGluNative(x), gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => swiGluNativeGrad(saved[0] as tf.Tensor2D, dy as tf.Tensor2D) };
    });
    return nf(gu) as tf.Tensor2D;
  }
  const [gate, up] = tf.split(gu, 2, 1);
  return tf.mul(tf.mul(gate, tf.sigmoid(gate)), up);
}

function ropeForward(x: tf.Tensor4D, cos: tf.Tensor, sin: tf.Tensor): tf.Tensor4D {
  return tf.add(tf.mul(x, cos), tf.mul(swapHalves(x), sin));
}

/** [x1, x2] -> [x2, x1] on the last axis; its own adjoint. */
function swapHalves(x: tf.Tensor): tf.Tensor {
  const [x1, x2] = tf.split(x, 2, -1);
  return tf.concat([x2, x1], -1);
}

/**
 * HF rotate_half rotary embedding: x * cos + rotate_half(x) * sin, written as
 * x * [cos, cos] + swap(x) * [-sin, sin] over x [B, T, heads, hd] and tables [B|1, T, 1, hd].
 * The gradient is dy * cos + swap(dy * sin).
 */
export function rope(x: tf.Tensor4D, cos: tf.Tensor, sin: tf.Tensor): tf.Tensor4D {
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const xs = args[0] as tf.Tensor;
    (args[1] as tf.GradSaveFunc)([cos, sin]);
    return {
      value: tf.add(tf.mul(xs, cos), tf.mul(swapHalves(xs), sin)),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.add(tf.mul(dy, saved[0]), swapHalves(tf.mul(dy, saved[1]))),
    };
  });
  return f(x) as tf.Tensor4D;
}

export class LlamaModel {
  readonly config: ModelConfig;
  readonly headDim: number;
  private embed: tf.Variable; // [V, H]
  private lmHead?: tf.Variable; // [H, V] when untied
  private norm: tf.Variable;
  private layers: Layer[];
  private cosTable: tf.Tensor2D; // [maxPositions, hd]: [cos, cos]
  private sinTable: tf.Tensor2D; // [-sin, sin]
  private rope: RopeTables; // the same tables as arrays, for the fused kernel
  private causalCache = new Map<number, tf.Tensor>();

  constructor(config: ModelConfig, opts: { seed?: number } = {}) {
    this.config = resolveModelConfig(config);
    const c = this.config;
    const hd = (this.headDim = headDimOf(c));
    const rng = new Rng(opts.seed ?? 0);
    const H = c.hiddenSize;
    const qkvOut = (c.numHeads + 2 * c.numKvHeads) * hd;
    const normal = (shape: number[], std: number, name: string): tf.Variable => {
      const n = shape.reduce((a, b) => a * b, 1);
      const data = new Float32Array(n);
      for (let i = 0; i < n; i++) data[i] = rng.normal() * std;
      return tf.variable(tf.tensor(data, shape), true, name);
    };
    const ones = (n: number, name: string): tf.Variable => tf.variable(tf.ones([n]), true, name);
    const uid = Math.floor(Math.random() * 1e9).toString(36); // tf variable names are global
    const std = 0.02;
    const outStd = std / Math.sqrt(2 * c.numLayers);
    this.embed = normal([c.vocabSize, H], std, `${uid}.embed`);
    this.layers = [];
    for (let i = 0; i < c.numLayers; i++) {
      this.layers.push({
        ln1: ones(H, `${uid}.${i}.ln1`),
        wqkv: normal([H, qkvOut], std, `${uid}.${i}.wqkv`),
        bqkv: c.attentionBias ? tf.variable(tf.zeros([qkvOut]), true, `${uid}.${i}.bqkv`) : undefined,
        wo: normal([c.numHeads * hd, H], outStd, `${uid}.${i}.wo`),
        ln2: ones(H, `${uid}.${i}.ln2`),
        wgu: normal([H, 2 * c.intermediateSize], std, `${uid}.${i}.wgu`),
        wdown: normal([c.intermediateSize, H], outStd, `${uid}.${i}.wdown`),
      });
    }
    this.norm = ones(H, `${uid}.norm`);
    if (!c.tieEmbeddings) this.lmHead = normal([H, c.vocabSize], std, `${uid}.lm_head`);
    // Rotary tables in float64 then rounded, like HF's inv_freq computation.
    const half = hd / 2;
    const cosD = new Float32Array(c.maxPositions * hd);
    const sinD = new Float32Array(c.maxPositions * hd);
    for (let p = 0; p < c.maxPositions; p++)
      for (let j = 0; j < half; j++) {
        const invFreq = Math.fround(1 / Math.pow(c.ropeTheta, (2 * j) / hd));
        const a = Math.fround(p * invFreq);
        cosD[p * hd + j] = cosD[p * hd + j + half] = Math.cos(a);
        sinD[p * hd + j] = -Math.sin(a);
        sinD[p * hd + j + half] = Math.sin(a);
      }
    this.rope = { cos: cosD, sin: sinD, headDim: hd, maxPositions: c.maxPositions };
    this.cosTable = tf.tensor2d(cosD, [c.maxPositions, hd]);
    this.sinTable = tf.tensor2d(sinD, [c.maxPositions, hd]);
  }

  trainableVariables(): tf.Variable[] {
    const vs: tf.Variable[] = [this.embed];
    for (const l of this.layers) {
      vs.push(l.ln1, l.wqkv);
      if (l.bqkv) vs.push(l.bqkv);
      vs.push(l.wo, l.ln2, l.wgu, l.wdown);
    }
    vs.push(this.norm);
    if (this.lmHead) vs.push(this.lmHead);
    return vs;
  }

  private causalMask(T: number): tf.Tensor {
    let m = this.causalCache.get(T);
    if (!m) {
      const d = new Float32Array(T * T);
      for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) d[i * T + j] = NEG;
      m = tf.keep(tf.tensor(d, [1, 1, 1, T, T]));
      this.causalCache.set(T, m);
    }
    return m;
  }

  /**
   * Hidden states after the final norm, [B*T, H], and the updated cache (when one was given or
   * `wantCache`). Call inside tf.tidy; the returned cache tensors must be kept by the caller.
   */
  forwardHidden(
    ids: tf.Tensor2D,
    opts: ForwardOptions & { wantCache?: boolean } = {},
  ): { hidden: tf.Tensor2D; cache?: KvCache } {
    const c = this.config;
    const [B, T] = ids.shape;
    const hd = this.headDim;
    const past = opts.cache ? opts.cache.k[0].shape[1] : 0;
    if (past + T > c.maxPositions && !opts.positions)
      throw new AgroError('invalid_input', `sequence of ${past + T} tokens exceeds maxPositions ${c.maxPositions}`);
    if (opts.padLeft && opts.padLeft.length !== B)
      throw new AgroError('internal', `forwardHidden: padLeft has ${opts.padLeft.length} rows for a batch of ${B}`);
    const want = opts.attention ?? (process.env.AGRO_ATTENTION === 'tfjs' ? 'tfjs' : 'fused');
    const fused =
      want === 'fused' && !opts.cache && !opts.mask &&
      fusedAttentionSupports({ headDim: hd, heads: c.numHeads, kvHeads: c.numKvHeads });
    const newCache: KvCache | undefined = opts.cache || opts.wantCache ? { k: [], v: [] } : undefined;
    const attend = fused ? this.fusedAttender(B, T, opts, newCache) : this.plainAttender(B, T, past, opts, newCache);

    // Clamped for the same reason as targets in tokenLogProbs; the public sampling entry points reject bad ids.
    const flatIds = tf.clipByValue(tf.reshape(ids, [-1]), 0, c.vocabSize - 1) as tf.Tensor1D;
    const ng = opts.noGrad === true;
    const lin = ng ? (a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D => tf.matMul(a, b) : mm;
    const norm = ng ? rmsNormForward : rmsNorm;
    let x: tf.Tensor2D = ng ? (tf.gather(this.embed, flatIds) as tf.Tensor2D) : embedLookup(this.embed as tf.Tensor2D, flatIds); // [N, H]
    this.layers.forEach((layer, li) => {
      const h = norm(x, layer.ln1, c.rmsNormEps);
      let qkv: tf.Tensor2D = lin(h, layer.wqkv as tf.Tensor2D);
      if (layer.bqkv) qkv = tf.add(qkv, layer.bqkv);
      x = tf.add(x, lin(attend(qkv, li), layer.wo as tf.Tensor2D));
      const h2 = norm(x, layer.ln2, c.rmsNormEps);
      const act = swiGlu(lin(h2, layer.wgu as tf.Tensor2D), ng);
      x = tf.add(x, lin(act, layer.wdown as tf.Tensor2D));
    });
    return { hidden: norm(x, this.norm, c.rmsNormEps), cache: newCache };
  }

  /** Attention through the wasm kernel: qkv [B*T, (nh + 2 nkv) hd] -> [B*T, nh hd]. */
  private fusedAttender(
    B: number,
    T: number,
    opts: ForwardOptions,
    newCache: KvCache | undefined,
  ): (qkv: tf.Tensor2D, layer: number) => tf.Tensor2D {
    const c = this.config;
    let positions: Int32Array;
    if (opts.positions) positions = Int32Array.from(opts.positions.dataSync());
    else {
      positions = new Int32Array(B * T);
      for (let i = 0; i < B * T; i++) positions[i] = i % T;
    }
    const padLeft = opts.padLeft ? Int32Array.from(opts.padLeft) : undefined;
    return (qkv) => {
      const r = fusedAttention(qkv, {
        batch: B, time: T, heads: c.numHeads, kvHeads: c.numKvHeads, headDim: this.headDim,
        positions, tables: this.rope, tableTensors: { cos: this.cosTable, sin: this.sinTable }, padLeft,
        wantKv: newCache !== undefined, noGrad: opts.noGrad,
      });
      if (newCache) {
        newCache.k.push(r.keys!);
        newCache.v.push(r.values!);
      }
      return r.out;
    };
  }

  /** Attention from TF.js ops (any head size, custom masks, KV-cache steps). */
  private plainAttender(
    B: number,
    T: number,
    past: number,
    opts: ForwardOptions,
    newCache: KvCache | undefined,
  ): (qkv: tf.Tensor2D, layer: number) => tf.Tensor2D {
    const c = this.config;
    const hd = this.headDim;
    const nh = c.numHeads;
    const nkv = c.numKvHeads;
    const g = nh / nkv;
    let cos: tf.Tensor;
    let sin: tf.Tensor;
    if (opts.positions) {
      const flat = tf.reshape(opts.positions, [-1]) as tf.Tensor1D;
      cos = tf.reshape(tf.gather(this.cosTable, flat), [B, T, 1, hd]);
      sin = tf.reshape(tf.gather(this.sinTable, flat), [B, T, 1, hd]);
    } else {
      cos = tf.reshape(tf.slice(this.cosTable, [past, 0], [T, hd]), [1, T, 1, hd]);
      sin = tf.reshape(tf.slice(this.sinTable, [past, 0], [T, hd]), [1, T, 1, hd]);
    }
    const mask = opts.mask ?? (opts.padLeft ? this.paddingMask(opts.padLeft, T, past) : past === 0 ? this.causalMask(T) : undefined);
    if (!mask && T > 1) throw new AgroError('internal', 'forwardHidden: a mask is required for multi-token steps with a cache');
    const scale = 1 / Math.sqrt(hd);
    const rot = opts.noGrad ? ropeForward : rope;
    return (qkv, li) => {
      // q and k are adjacent in the fused projection: one rotary call covers both.
      const [qkf, vf] = tf.split(qkv, [(nh + nkv) * hd, nkv * hd], 1);
      const [q, kr] = tf.split(rot(tf.reshape(qkf, [B, T, nh + nkv, hd]), cos, sin), [nh, nkv], 2);
      // [B, T, nkv, g, hd] -> [B, nkv, g, T, hd] -> [B*nkv, g*T, hd]; kv head j serves heads j*g..j*g+g-1 (HF repeat_kv).
      // With one new token (decoding) the moved axis has size 1 and the transposes are reshapes.
      const one = T === 1;
      const q3 = tf.reshape(one ? q : tf.transpose(tf.reshape(q, [B, T, nkv, g, hd]), [0, 2, 3, 1, 4]), [B * nkv, g * T, hd]) as tf.Tensor3D;
      let k3 = tf.reshape(one ? kr : tf.transpose(kr, [0, 2, 1, 3]), [B * nkv, T, hd]) as tf.Tensor3D;
      let v3 = tf.reshape(one ? vf : tf.transpose(tf.reshape(vf, [B, T, nkv, hd]), [0, 2, 1, 3]), [B * nkv, T, hd]) as tf.Tensor3D;
      if (opts.cache) {
        k3 = tf.concat([opts.cache.k[li], k3], 1);
        v3 = tf.concat([opts.cache.v[li], v3], 1);
      }
      if (newCache) {
        newCache.k.push(k3);
        newCache.v.push(v3);
      }
      const L = k3.shape[1];
      let scores: tf.Tensor = tf.matMul(q3, k3, false, true); // [B*nkv, g*T, L]
      scores = tf.mul(scores, scale);
      if (mask) scores = tf.add(tf.reshape(scores, [B, nkv, g, T, L]), mask);
      const probs = tf.softmax(tf.reshape(scores, [B * nkv, g * T, L]) as tf.Tensor3D);
      const pv = tf.matMul(probs, v3);
      return tf.reshape(one ? pv : tf.transpose(tf.reshape(pv, [B, nkv, g, T, hd]), [0, 3, 1, 2, 4]), [B * T, nh * hd]) as tf.Tensor2D;
    };
  }

  /** Additive mask [B, 1, 1, T, past + T]: causal, left padding hidden (a padding query sees only itself). */
  private paddingMask(padLeft: number[], T: number, past: number): tf.Tensor {
    const L = past + T;
    const d = new Float32Array(padLeft.length * T * L);
    padLeft.forEach((pad, b) => {
      for (let i = 0; i < T; i++)
        for (let j = 0; j < L; j++) {
          const ok = (j <= past + i && j >= pad) || (past + i < pad && j === past + i);
          if (!ok) d[(b * T + i) * L + j] = NEG;
        }
    });
    return tf.tensor(d, [padLeft.length, 1, 1, T, L]);
  }

  /** Logits [N, V] from hidden states [N, H]. */
  logits(hidden: tf.Tensor2D, head?: tf.Tensor2D): tf.Tensor2D {
    if (head) return tf.matMul(hidden, head);
    return this.lmHead ? mm(hidden, this.lmHead as tf.Tensor2D) : mm(hidden, this.embed as tf.Tensor2D, true);
  }

  /**
   * The output projection as [H, V] for repeated no-gradient use (decoding): a fresh tensor the
   * caller disposes, so the tied case transposes the embedding once instead of every step.
   */
  inferenceHead(): tf.Tensor2D {
    return tf.tidy(() => (this.lmHead ? tf.clone(this.lmHead) : tf.transpose(this.embed)) as tf.Tensor2D);
  }

  /**
   * The tensors a native decoding step reads (native.ts NativeDecodeSession): the weights as the model
   * keeps them and the rotary tables. Read-only views; the model still owns them.
   */
  decodeWeights(): {
    embed: tf.Tensor2D; norm: tf.Tensor; cos: tf.Tensor2D; sin: tf.Tensor2D;
    layers: { ln1: tf.Tensor; wqkv: tf.Tensor; bqkv?: tf.Tensor; wo: tf.Tensor; ln2: tf.Tensor; wgu: tf.Tensor; wdown: tf.Tensor }[];
  } {
    return {
      embed: this.embed as tf.Tensor2D, norm: this.norm, cos: this.cosTable, sin: this.sinTable,
      layers: this.layers.map((l) => ({ ln1: l.ln1, wqkv: l.wqkv, bqkv: l.bqkv, wo: l.wo, ln2: l.ln2, wgu: l.wgu, wdown: l.wdown })),
    };
  }

  /** Full forward pass: logits [B, T, V]. */
  forward(ids: tf.Tensor2D, opts: ForwardOptions = {}): tf.Tensor3D {
    return tf.tidy(() => {
      const [B, T] = ids.shape;
      return tf.reshape(this.logits(this.forwardHidden(ids, opts).hidden), [B, T, this.config.vocabSize]);
    });
  }

  /**
   * Per-token log-probs of targets, differentiable (call inside tf.variableGrads). ids/targets: int32 [B,T].
   * temperature (default 1) divides the logits first: the distribution a sampler at that temperature draws from,
   * as TRL and verl score their rollouts.
   */
  tokenLogProbs(
    ids: tf.Tensor2D,
    targets: tf.Tensor2D,
    opts: { withEntropy?: boolean; attention?: ForwardOptions['attention']; temperature?: number } = {},
  ): { logp: tf.Tensor2D; entropy?: tf.Tensor2D } {
    const [B, T] = ids.shape;
    if (targets.shape[0] !== B || targets.shape[1] !== T)
      throw new AgroError('invalid_input', `targets shape [${targets.shape}] differs from ids shape [${ids.shape}]`);
    const raw = this.logits(this.forwardHidden(ids, { attention: opts.attention }).hidden);
    const temperature = opts.temperature ?? 1;
    if (!(temperature > 0)) throw new AgroError('invalid_input', `temperature must be > 0, got ${temperature}`);
    const logits = temperature === 1 ? raw : (tf.div(raw, temperature) as tf.Tensor2D);
    // Out-of-range targets (e.g. -1 padding) would read outside the wasm heap: clamp them; callers mask those positions.
    const tg = tf.clipByValue(tf.reshape(targets, [-1]), 0, this.config.vocabSize - 1) as tf.Tensor1D;
    const logp = tf.reshape(selectLogProbs(logits, tg), [B, T]) as tf.Tensor2D;
    if (!opts.withEntropy) return { logp };
    const p = tf.softmax(logits);
    const entropy = tf.reshape(tf.sub(tf.logSumExp(logits, -1), tf.sum(tf.mul(p, logits), -1)), [B, T]) as tf.Tensor2D;
    return { logp, entropy };
  }


  exportWeights(): WeightMap {
    const c = this.config;
    const hd = this.headDim;
    const out: WeightMap = new Map();
    const put = (name: string, t: tf.Tensor): void => {
      out.set(name, { shape: t.shape.slice(), data: t.dataSync() as Float32Array });
      t.dispose();
    };
    const put1 = (name: string, v: tf.Variable): void => put(name, tf.clone(v));
    put('model.embed_tokens.weight', tf.clone(this.embed));
    this.layers.forEach((l, i) => {
      const p = `model.layers.${i}`;
      const sizes = [c.numHeads * hd, c.numKvHeads * hd, c.numKvHeads * hd];
      const parts = tf.split(l.wqkv, sizes, 1);
      ['q', 'k', 'v'].forEach((n, j) => put(`${p}.self_attn.${n}_proj.weight`, tf.tidy(() => tf.transpose(parts[j]))));
      parts.forEach((t) => t.dispose());
      if (l.bqkv) {
        const bs = tf.split(l.bqkv, sizes, 0);
        ['q', 'k', 'v'].forEach((n, j) => put(`${p}.self_attn.${n}_proj.bias`, bs[j]));
      }
      put(`${p}.self_attn.o_proj.weight`, tf.tidy(() => tf.transpose(l.wo)));
      const [gate, up] = tf.split(l.wgu, 2, 1);
      put(`${p}.mlp.gate_proj.weight`, tf.tidy(() => tf.transpose(gate)));
      put(`${p}.mlp.up_proj.weight`, tf.tidy(() => tf.transpose(up)));
      gate.dispose();
      up.dispose();
      put(`${p}.mlp.down_proj.weight`, tf.tidy(() => tf.transpose(l.wdown)));
      put1(`${p}.input_layernorm.weight`, l.ln1);
      put1(`${p}.post_attention_layernorm.weight`, l.ln2);
    });
    put1('model.norm.weight', this.norm);
    if (this.lmHead) put('lm_head.weight', tf.tidy(() => tf.transpose(this.lmHead!)));
    return out;
  }

  importWeights(w: WeightMap): void {
    const c = this.config;
    const hd = this.headDim;
    const H = c.hiddenSize;
    const I = c.intermediateSize;
    const get = (name: string, shape: number[]): tf.Tensor => {
      const e = w.get(name);
      if (!e) throw new AgroError('invalid_input', `weights: missing tensor ${name}`);
      const n = shape.reduce((a, b) => a * b, 1);
      if (e.shape.length !== shape.length || e.shape.some((d, i) => d !== shape[i]) || e.data.length !== n)
        throw new AgroError('invalid_input', `weights: ${name} has shape [${e.shape}], expected [${shape}]`);
      return tf.tensor(e.data, shape, 'float32');
    };
    // Validate everything first so a bad map leaves the model untouched.
    const staged: [tf.Variable, () => tf.Tensor][] = [];
    const stage = (v: tf.Variable, make: () => tf.Tensor): void => void staged.push([v, make]);
    const T = (name: string, shape: number[]): (() => tf.Tensor) => () => tf.transpose(get(name, shape));
    const names: [string, number[]][] = [['model.embed_tokens.weight', [c.vocabSize, H]]];
    this.layers.forEach((_, i) => {
      const p = `model.layers.${i}`;
      names.push(
        [`${p}.self_attn.q_proj.weight`, [c.numHeads * hd, H]],
        [`${p}.self_attn.k_proj.weight`, [c.numKvHeads * hd, H]],
        [`${p}.self_attn.v_proj.weight`, [c.numKvHeads * hd, H]],
        [`${p}.self_attn.o_proj.weight`, [H, c.numHeads * hd]],
        [`${p}.mlp.gate_proj.weight`, [I, H]],
        [`${p}.mlp.up_proj.weight`, [I, H]],
        [`${p}.mlp.down_proj.weight`, [H, I]],
        [`${p}.input_layernorm.weight`, [H]],
        [`${p}.post_attention_layernorm.weight`, [H]],
      );
      if (c.attentionBias)
        names.push(
          [`${p}.self_attn.q_proj.bias`, [c.numHeads * hd]],
          [`${p}.self_attn.k_proj.bias`, [c.numKvHeads * hd]],
          [`${p}.self_attn.v_proj.bias`, [c.numKvHeads * hd]],
        );
    });
    names.push(['model.norm.weight', [H]]);
    if (!c.tieEmbeddings) names.push(['lm_head.weight', [c.vocabSize, H]]);
    for (const [n, s] of names) tf.tidy(() => void get(n, s)); // throws on the first problem
    stage(this.embed, () => get('model.embed_tokens.weight', [c.vocabSize, H]));
    this.layers.forEach((l, i) => {
      const p = `model.layers.${i}`;
      stage(l.wqkv, () =>
        tf.concat(
          [
            T(`${p}.self_attn.q_proj.weight`, [c.numHeads * hd, H])(),
            T(`${p}.self_attn.k_proj.weight`, [c.numKvHeads * hd, H])(),
            T(`${p}.self_attn.v_proj.weight`, [c.numKvHeads * hd, H])(),
          ],
          1,
        ),
      );
      if (l.bqkv)
        stage(l.bqkv, () =>
          tf.concat([
            get(`${p}.self_attn.q_proj.bias`, [c.numHeads * hd]),
            get(`${p}.self_attn.k_proj.bias`, [c.numKvHeads * hd]),
            get(`${p}.self_attn.v_proj.bias`, [c.numKvHeads * hd]),
          ]),
        );
      stage(l.wo, T(`${p}.self_attn.o_proj.weight`, [H, c.numHeads * hd]));
      stage(l.wgu, () => tf.concat([T(`${p}.mlp.gate_proj.weight`, [I, H])(), T(`${p}.mlp.up_proj.weight`, [I, H])()], 1));
      stage(l.wdown, T(`${p}.mlp.down_proj.weight`, [H, I]));
      stage(l.ln1, () => get(`${p}.input_layernorm.weight`, [H]));
      stage(l.ln2, () => get(`${p}.post_attention_layernorm.weight`, [H]));
    });
    stage(this.norm, () => get('model.norm.weight', [H]));
    if (this.lmHead) stage(this.lmHead, T('lm_head.weight', [c.vocabSize, H]));
    for (const [v, make] of staged) tf.tidy(() => v.assign(make()));
  }

  dispose(): void {
    for (const v of this.trainableVariables()) v.dispose();
    this.cosTable.dispose();
    this.sinTable.dispose();
    for (const m of this.causalCache.values()) m.dispose();
    this.causalCache.clear();
  }
}
