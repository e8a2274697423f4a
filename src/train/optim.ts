/**
 * What every trainer of agro optimizes with (SFT and the GRPO family alike): AdamW with decoupled weight
 * decay, linear warmup then cosine decay, gradient accumulation and global-norm clipping, and the zod
 * fields that configure them.
 */
import * as tf from '@tensorflow/tfjs-core';
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import type { WeightMap } from '../model/llama.ts';
import { adamWNative, nativeKernelsActive } from '../model/native.ts';

/**
 * The optimizer and schedule fields shared by the SFT and GRPO trainer configs (AdamW, warmup + cosine,
 * global-norm clipping); each trainer passes its own defaults.
 */
export function optimizerFields(d: { lr: number; minLrRatio: number; warmupSteps: number; weightDecay: number; beta1: number; beta2: number }) {
  return {
    lr: z.number().positive().default(d.lr),
    /** The cosine decays to lr * minLrRatio (1 = constant after warmup). */
    minLrRatio: z.number().min(0).max(1).default(d.minLrRatio),
    warmupSteps: z.number().int().min(0).default(d.warmupSteps),
    weightDecay: z.number().min(0).default(d.weightDecay),
    beta1: z.number().min(0).lt(1).default(d.beta1),
    beta2: z.number().min(0).lt(1).default(d.beta2),
    eps: z.number().positive().default(1e-8),
    /** Clip the global gradient norm to this; 0 disables clipping. */
    clipNorm: z.number().min(0).default(1),
  };
}

/** Learning rate at optimizer step `step` (1-based): linear warmup to lr, then cosine down to lr * minLrRatio at `steps`. */
export function lrAt(step: number, c: { lr: number; minLrRatio: number; warmupSteps: number; steps: number }): number {
  if (c.warmupSteps > 0 && step <= c.warmupSteps) return (c.lr * step) / c.warmupSteps;
  const span = Math.max(1, c.steps - c.warmupSteps);
  const progress = Math.min(1, Math.max(0, (step - c.warmupSteps) / span));
  const min = c.lr * c.minLrRatio;
  return min + (c.lr - min) * 0.5 * (1 + Math.cos(Math.PI * progress));
}

export interface AdamWHyper { beta1: number; beta2: number; eps: number; weightDecay: number }

/**
 * AdamW (Loshchilov & Hutter; PyTorch's torch.optim.AdamW): p <- p - lr * wd * p, then the Adam step
 * with bias-corrected moments. Weight decay applies to matrices only (rank >= 2), not to norms or biases.
 */
export class AdamW {
  readonly m: tf.Variable[];
  readonly v: tf.Variable[];
  step = 0;
  constructor(readonly params: tf.Variable[], readonly hp: AdamWHyper) {
    this.m = params.map((p) => tf.variable(tf.zerosLike(p), false));
    this.v = params.map((p) => tf.variable(tf.zerosLike(p), false));
  }

  apply(grads: tf.Tensor[], lr: number): void {
    this.step += 1;
    const { beta1, beta2, eps, weightDecay } = this.hp;
    const bc1 = 1 - Math.pow(beta1, this.step);
    const bc2 = 1 - Math.pow(beta2, this.step);
    tf.tidy(() => {
      this.params.forEach((p, i) => {
        const g = grads[i];
        if (nativeKernelsActive()) {
          // The same update in one native pass (native/elementwise.cc).
          const decay = weightDecay > 0 && p.rank >= 2 ? 1 - lr * weightDecay : 1;
          const [np, nm, nv] = adamWNative(p, g, this.m[i], this.v[i], { lr, beta1, beta2, eps, decay, bc1, bc2 });
          this.m[i].assign(nm);
          this.v[i].assign(nv);
          p.assign(np);
          return;
        }
        const m = tf.add(tf.mul(this.m[i], beta1), tf.mul(g, 1 - beta1));
        const v = tf.add(tf.mul(this.v[i], beta2), tf.mul(tf.square(g), 1 - beta2));
        this.m[i].assign(m);
        this.v[i].assign(v);
        const decayed = weightDecay > 0 && p.rank >= 2 ? tf.mul(p, 1 - lr * weightDecay) : p;
        const update = tf.mul(tf.div(tf.div(m, bc1), tf.add(tf.sqrt(tf.div(v, bc2)), eps)), lr);
        p.assign(tf.sub(decayed, update));
      });
    });
  }

  /** Moments as a WeightMap for optimizer.safetensors (index i = params[i]). */
  exportState(): WeightMap {
    const out: WeightMap = new Map();
    this.params.forEach((p, i) => {
      out.set(`adamw.m.${i}`, { shape: p.shape.slice(), data: this.m[i].dataSync() as Float32Array });
      out.set(`adamw.v.${i}`, { shape: p.shape.slice(), data: this.v[i].dataSync() as Float32Array });
    });
    return out;
  }

  importState(state: WeightMap, step: number): void {
    this.params.forEach((p, i) => {
      for (const [kind, vars] of [['m', this.m], ['v', this.v]] as const) {
        const e = state.get(`adamw.${kind}.${i}`);
        if (!e || e.shape.join(',') !== p.shape.join(',')) {
          throw new AgroError('invalid_input', `optimizer state: adamw.${kind}.${i} is ${e ? `[${e.shape}]` : 'missing'}, expected [${p.shape}] (was the checkpoint made with another model config?)`);
        }
        vars[i].assign(tf.tensor(e.data, e.shape, 'float32'));
      }
    });
    this.step = step;
  }

  dispose(): void {
    for (const x of [...this.m, ...this.v]) x.dispose();
  }
}

/** Add one pass's gradients to the running sums (both are consumed; the sums are returned). */
export function accumulateGrads(summed: tf.Tensor[] | null, grads: tf.Tensor[]): tf.Tensor[] {
  if (summed === null) return grads;
  const out = summed.map((x, i) => tf.add(x, grads[i]));
  summed.forEach((x) => x.dispose());
  grads.forEach((x) => x.dispose());
  return out;
}

/** Scale gradients so their global L2 norm is at most maxNorm; returns the norm before clipping. */
export function clipByGlobalNorm(grads: tf.Tensor[], maxNorm: number): { grads: tf.Tensor[]; norm: number } {
  const norm = Math.sqrt(tf.tidy(() => tf.addN(grads.map((g) => tf.sum(tf.square(g)))).dataSync()[0]));
  if (maxNorm <= 0 || !(norm > maxNorm)) return { grads, norm };
  const scale = maxNorm / (norm + 1e-6);
  return { grads: grads.map((g) => tf.mul(g, scale)), norm };
}
