/**
 * Training the judge on labelled candidate lists. The loss is listwise: the negative log of the softmax mass on
 * the right candidates (or on "none of these" when no candidate is right), so the judge learns to put the answer
 * above its near-misses in the very lists the answer path makes. AdaGrad on the sparse weights, a few epochs,
 * the epoch kept that chooses best on held-out databases; then the temperature that makes the chosen result's
 * probability calibrated there (the least log loss of "the chosen result is right").
 */
import { Rng } from '../util/rng.ts';
import { FEATURE_DIM, listFeatures, type Sparse } from './features.ts';
import { groupProbabilities, JudgeModel } from './model.ts';
import type { JudgeCandidate, LabelledList } from './types.ts';

export interface TrainOptions {
  epochs?: number;
  learningRate?: number;
  /** Weight decay on every weight a list touches. */
  l2?: number;
  /** Wrong candidates kept per list when training: the best ones by the transparent score, then a random few. */
  hardNegatives?: number;
  randomNegatives?: number;
  seed?: number;
  log?: (line: string) => void;
}

export const TRAIN_DEFAULTS = { epochs: 4, learningRate: 0.03, l2: 1e-3, hardNegatives: 24, randomNegatives: 8, seed: 0 };

interface Prepared {
  x: Sparse[];
  none: Sparse;
  right: boolean[];
}

/** Chooses from a list: the result group with the most probability. */
export function chooseGroup(model: JudgeModel, list: { question: string; candidates: readonly JudgeCandidate[] }): { signature: string; probability: number } | null {
  if (list.candidates.length === 0) return null;
  const { logits, none } = model.logits(list.question, list.candidates);
  const signatures = list.candidates.map((c) => c.signature);
  // Chosen by the probabilities the judge was trained on; the temperature only says how sure to be of it.
  const { groups } = groupProbabilities(signatures, logits, none);
  let signature = signatures[0];
  for (const [s, p] of groups) if (p > groups.get(signature)!) signature = s;
  return { signature, probability: groupProbabilities(signatures, logits, none, model.temperature).groups.get(signature)! };
}

function prepare(l: LabelledList, o: typeof TRAIN_DEFAULTS, rng: Rng): Prepared {
  const right = l.candidates.filter((c) => c.right);
  const wrong = l.candidates.filter((c) => !c.right);
  const hard = [...wrong].sort((a, b) => b.score - a.score).slice(0, o.hardNegatives);
  const rest = rng.shuffle(wrong.slice(0).filter((c) => !hard.includes(c))).slice(0, o.randomNegatives);
  // The list's context (group sizes, the transparent order) is of the whole list, as at answer time.
  const f = listFeatures(l.question, l.candidates);
  const keep = new Set([...right, ...hard, ...rest]);
  const x: Sparse[] = [];
  const labels: boolean[] = [];
  l.candidates.forEach((c, i) => {
    if (!keep.has(c)) return;
    x.push(f.candidates[i]);
    labels.push(c.right);
  });
  return { x, none: f.none, right: labels };
}

/** One list's loss and gradient step (AdaGrad). */
function step(model: JudgeModel, g2: Float32Array, p: Prepared, lr: number, l2: number): number {
  const s = p.x.map((x) => model.dot(x));
  const sNone = model.dot(p.none);
  const top = Math.max(sNone, ...s);
  const e = s.map((v) => Math.exp(v - top));
  const eNone = Math.exp(sNone - top);
  const z = e.reduce((a, b) => a + b, eNone);
  const anyRight = p.right.some(Boolean);
  const mass = anyRight ? e.reduce((a, v, i) => a + (p.right[i] ? v : 0), 0) : eNone;
  const update = (x: Sparse, grad: number): void => {
    if (grad === 0) return;
    for (let k = 0; k < x.idx.length; k++) {
      const j = x.idx[k];
      const g = grad * x.val[k] + l2 * model.weights[j];
      g2[j] += g * g;
      model.weights[j] -= (lr * g) / Math.sqrt(g2[j] + 1e-8);
    }
  };
  p.x.forEach((x, i) => update(x, e[i] / z - (p.right[i] ? e[i] / mass : 0)));
  update(p.none, eNone / z - (anyRight ? 0 : 1));
  return -Math.log(mass / z);
}

export interface Reliability {
  /** Lower edge of the bucket (0, 0.1, …, 0.9). */
  from: number;
  count: number;
  confidence: number;
  accuracy: number;
}

export interface Evaluation {
  lists: number;
  /** Some candidate right. */
  oracle: number;
  /** The transparent ranker's choice (the list's first candidate) right. */
  transparent: number;
  judge: number;
  /** Expected calibration error of the judge's chosen probability. */
  ece: number;
  reliability: Reliability[];
}

export function evaluate(model: JudgeModel, lists: readonly LabelledList[]): Evaluation {
  let oracle = 0;
  let transparent = 0;
  let judge = 0;
  const buckets = Array.from({ length: 10 }, (_, i) => ({ from: i / 10, count: 0, conf: 0, right: 0 }));
  for (const l of lists) {
    if (l.candidates.some((c) => c.right)) oracle++;
    if (l.candidates[0]?.right) transparent++;
    const c = chooseGroup(model, l);
    if (!c) continue;
    const right = l.candidates.some((x) => x.signature === c.signature && x.right);
    if (right) judge++;
    const b = buckets[Math.min(9, Math.floor(c.probability * 10))];
    b.count++;
    b.conf += c.probability;
    b.right += right ? 1 : 0;
  }
  const n = Math.max(1, lists.length);
  const reliability = buckets.filter((b) => b.count > 0).map((b) => ({ from: b.from, count: b.count, confidence: b.conf / b.count, accuracy: b.right / b.count }));
  const ece = reliability.reduce((a, b) => a + (b.count / n) * Math.abs(b.confidence - b.accuracy), 0);
  return { lists: lists.length, oracle: oracle / n, transparent: transparent / n, judge: judge / n, ece, reliability };
}

/** The temperature whose chosen-result probabilities have the least log loss on the lists. */
function fitTemperature(model: JudgeModel, lists: readonly LabelledList[]): number {
  const scored = lists.map((l) => ({ l, ...model.logits(l.question, l.candidates) }));
  let best = { t: 1, loss: Infinity };
  for (let t = 0.25; t <= 4.001; t *= 1.1) {
    let loss = 0;
    for (const s of scored) {
      if (s.l.candidates.length === 0) continue;
      const sigs = s.l.candidates.map((c) => c.signature);
      const at1 = groupProbabilities(sigs, s.logits, s.none).groups;
      let sig = sigs[0];
      for (const [g, q] of at1) if (q > at1.get(sig)!) sig = g;
      const p = groupProbabilities(sigs, s.logits, s.none, t).groups.get(sig)!;
      const right = s.l.candidates.some((c) => c.signature === sig && c.right);
      const q = Math.min(1 - 1e-6, Math.max(1e-6, p));
      loss -= right ? Math.log(q) : Math.log(1 - q);
    }
    if (loss < best.loss) best = { t, loss };
  }
  return best.t;
}

export interface TrainReport {
  trainLists: number;
  epochs: Array<{ epoch: number; loss: number; validation: number }>;
  bestEpoch: number;
  temperature: number;
  validation: Evaluation;
  /** The validation lists by where their questions came from. */
  byOrigin: Record<string, Evaluation>;
  seconds: number;
}

export function trainJudge(train: readonly LabelledList[], val: readonly LabelledList[], options: TrainOptions = {}): { model: JudgeModel; report: TrainReport } {
  const { log = () => {}, ...given } = options;
  // An option given as undefined keeps its default.
  const o: typeof TRAIN_DEFAULTS = { ...TRAIN_DEFAULTS, ...Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) };
  const t0 = performance.now();
  const rng = new Rng(o.seed);
  const prepared = train.filter((l) => l.candidates.length > 0).map((l) => prepare(l, o, rng));
  const model = new JudgeModel();
  const g2 = new Float32Array(FEATURE_DIM);
  let best = { epoch: 0, validation: -1, weights: new Float32Array(model.weights) };
  const epochs: TrainReport['epochs'] = [];
  for (let epoch = 1; epoch <= o.epochs; epoch++) {
    let loss = 0;
    for (const p of rng.shuffle([...prepared])) loss += step(model, g2, p, o.learningRate, o.l2);
    const v = evaluate(model, val).judge;
    epochs.push({ epoch, loss: loss / Math.max(1, prepared.length), validation: v });
    log(`judge train: epoch ${epoch}/${o.epochs}: loss ${(loss / Math.max(1, prepared.length)).toFixed(4)}, held-out choice ${(100 * v).toFixed(1)}%`);
    if (v > best.validation) best = { epoch, validation: v, weights: new Float32Array(model.weights) };
  }
  const chosen = new JudgeModel(best.weights);
  chosen.temperature = fitTemperature(chosen, val);
  const origins = [...new Set(val.map((l) => l.origin))];
  const report: TrainReport = {
    trainLists: prepared.length,
    epochs,
    bestEpoch: best.epoch,
    temperature: Math.round(chosen.temperature * 1000) / 1000,
    validation: evaluate(chosen, val),
    byOrigin: Object.fromEntries(origins.map((k) => [k, evaluate(chosen, val.filter((l) => l.origin === k))])),
    seconds: Math.round((performance.now() - t0) / 1000),
  };
  return { model: chosen, report };
}
