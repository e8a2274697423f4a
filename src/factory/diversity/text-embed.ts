/**
 * Deterministic lexical embedding: hashed TF-IDF over word unigrams and bigrams (the hashing
 * trick with a sign hash, so collisions cancel in expectation), L2-normalized. IDF is fitted on
 * the corpus being embedded, so rare words (entities, column names) weigh more than "the".
 */
import { fnv1a } from '../../util/hash.ts';

export interface TextEmbedOptions {
  /** Buckets; more means fewer collisions. */
  dim?: number;
  /** Include word bigrams. */
  bigrams?: boolean;
}

const STOP = new Set('a an the of in on at to for by with and or is are was were be what which who how many much do does did that this those these from as it its their there'.split(' '));

/** Lower-cased word tokens; digits kept; stop words dropped (they carry no structure). */
export function words(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? []).filter((w) => !STOP.has(w));
}

function terms(text: string, bigrams: boolean): string[] {
  const w = words(text);
  const out = [...w];
  if (bigrams) for (let i = 0; i + 1 < w.length; i++) out.push(`${w[i]} ${w[i + 1]}`);
  return out;
}

export interface TextEmbedder {
  dim: number;
  embed(text: string): Float64Array;
}

/** Fit IDF on `corpus` and return an embedder; deterministic (no randomness at all). */
export function fitTextEmbedder(corpus: readonly string[], opts: TextEmbedOptions = {}): TextEmbedder {
  const dim = opts.dim ?? 256;
  const bigrams = opts.bigrams ?? true;
  const df = new Map<string, number>();
  for (const doc of corpus) for (const t of new Set(terms(doc, bigrams))) df.set(t, (df.get(t) ?? 0) + 1);
  const n = corpus.length;
  // Smoothed IDF as in scikit-learn: ln((1+n)/(1+df)) + 1, so unseen terms still count.
  const idf = (t: string): number => Math.log((1 + n) / (1 + (df.get(t) ?? 0))) + 1;
  return {
    dim,
    embed(text: string): Float64Array {
      const v = new Float64Array(dim);
      const tf = new Map<string, number>();
      for (const t of terms(text, bigrams)) tf.set(t, (tf.get(t) ?? 0) + 1);
      for (const [t, c] of tf) {
        const h = fnv1a(t);
        const sign = fnv1a(t, 1) & 1 ? 1 : -1;
        v[h % dim] += sign * (1 + Math.log(c)) * idf(t);
      }
      return l2normalize(v);
    },
  };
}

export function l2normalize(v: Float64Array): Float64Array {
  let s = 0;
  for (const x of v) s += x * x;
  if (s === 0) return v;
  const inv = 1 / Math.sqrt(s);
  for (let i = 0; i < v.length; i++) v[i] *= inv;
  return v;
}
