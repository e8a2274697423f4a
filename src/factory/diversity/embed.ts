/**
 * Hybrid embedding of an item: its SQL structure (feature vectors of every SQL it contains) and
 * its text (question, reasoning) as a lexical embedding. Both halves are unit-normalized and
 * weighted so that squared distance = w·|Δstructure|² + (1−w)·|Δtext|².
 */
import { FEATURE_DIM, featureVector, sqlFeaturesShared } from '../../sql/features.ts';
import { fitTextEmbedder, l2normalize } from './text-embed.ts';
import type { TextEmbedOptions } from './text-embed.ts';

export interface EmbedInput {
  /** One SQL (a pair) or every SQL a trajectory ran. */
  sqls: readonly string[];
  text: string;
}

export interface HybridOptions {
  /** Weight of the SQL-structure half in [0, 1]. Default 0.5. */
  sqlWeight?: number;
  text?: TextEmbedOptions;
}

/**
 * Structure vector of several SQLs: the mean and the element-wise max of their feature vectors
 * (mean says what the item mostly does, max what it ever did), unit-normalized.
 */
export function structureVector(sqls: readonly string[]): Float64Array {
  const v = new Float64Array(2 * FEATURE_DIM);
  if (sqls.length === 0) return v;
  for (const sql of sqls) {
    const f = featureVector(sqlFeaturesShared(sql));
    for (let i = 0; i < FEATURE_DIM; i++) {
      v[i] += f[i] / sqls.length;
      v[FEATURE_DIM + i] = Math.max(v[FEATURE_DIM + i], f[i]);
    }
  }
  return l2normalize(v);
}

export function embedHybrid(items: readonly EmbedInput[], opts: HybridOptions = {}): Float64Array[] {
  const w = opts.sqlWeight ?? 0.5;
  if (!(w >= 0 && w <= 1)) throw new RangeError(`sqlWeight must be in [0, 1], got ${w}`);
  const text = fitTextEmbedder(
    items.map((x) => x.text),
    opts.text,
  );
  const a = Math.sqrt(w);
  const b = Math.sqrt(1 - w);
  return items.map((x) => {
    const s = structureVector(x.sqls);
    const t = text.embed(x.text);
    const out = new Float64Array(s.length + t.length);
    for (let i = 0; i < s.length; i++) out[i] = a * s[i];
    for (let i = 0; i < t.length; i++) out[s.length + i] = b * t[i];
    return out;
  });
}

export function sqDist(x: ArrayLike<number>, y: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) {
    const d = x[i] - y[i];
    s += d * d;
  }
  return s;
}
