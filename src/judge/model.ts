/**
 * The judge: one weight per hashed feature (features.ts), a logit per candidate and one for "none of these".
 * A result's probability is the softmax mass of its candidates (they are one answer, and the training objective
 * is the mass on the right ones), divided by a temperature fitted on held-out databases so the probability of the
 * chosen result reads as how often such an answer is right.
 */
import { FEATURE_DIM, listFeatures, type Sparse } from './features.ts';
import type { JudgeCandidate } from './types.ts';

export class JudgeModel {
  constructor(
    readonly weights: Float32Array = new Float32Array(FEATURE_DIM),
    /** Logits are divided by it before the softmax (calibration). */
    public temperature = 1,
  ) {
    if (weights.length !== FEATURE_DIM) throw new RangeError(`judge weights: ${weights.length} values, the featurizer has ${FEATURE_DIM}`);
  }

  dot(x: Sparse): number {
    let s = 0;
    for (let i = 0; i < x.idx.length; i++) s += this.weights[x.idx[i]] * x.val[i];
    return s;
  }

  /** Raw logits of a list's candidates and of "none of these". */
  logits(question: string, candidates: readonly JudgeCandidate[]): { logits: number[]; none: number } {
    const f = listFeatures(question, candidates);
    return { logits: f.candidates.map((x) => this.dot(x)), none: this.dot(f.none) };
  }
}

/** Each result group's probability (keyed by signature) and none's, at a temperature. */
export function groupProbabilities(signatures: readonly string[], logits: readonly number[], none: number, temperature = 1): { groups: Map<string, number>; none: number } {
  const top = Math.max(none, ...logits) / temperature;
  const e = logits.map((s) => Math.exp(s / temperature - top));
  const eNone = Math.exp(none / temperature - top);
  const z = eNone + e.reduce((a, b) => a + b, 0);
  const groups = new Map<string, number>();
  signatures.forEach((sig, i) => groups.set(sig, (groups.get(sig) ?? 0) + e[i] / z));
  return { groups, none: eNone / z };
}
