/**
 * Disjoint splits for the cold start, RL and held-out evaluation. Items are grouped by the skeleton of
 * their SQL (literals masked, names kept): every item of a skeleton lands in the same split, so a
 * held-out question is never a paraphrase or a literal swap of one that SFT or RL trained on, and
 * RL's questions are new to the SFT policy (their pass rate is below 1, which is what gives RL a signal).
 */
import { sqlSkeleton } from '../sql/features.ts';
import { Rng } from '../util/rng.ts';

export interface SplitShares {
  /** Share of the skeleton groups (by item count) for each split; they are normalized to sum to 1. */
  sft: number;
  rl: number;
  heldOut: number;
}

export interface Splits<T> {
  sft: T[];
  rl: T[];
  heldOut: T[];
}

/** The key that must not cross splits: the SQL with literals masked (and the question text, for exact repeats). */
export function skeletonKey(sql: string): string {
  return sqlSkeleton(sql, { maskLiterals: true });
}

/**
 * Splits items by skeleton group, in a seeded order, filling held-out first, then RL, then SFT, so the
 * evaluation and RL sets get their size even when one skeleton is large. Deterministic for a seed.
 */
export function splitBySkeleton<T>(items: readonly T[], sqlOf: (t: T) => string, shares: SplitShares, seed: number): Splits<T> {
  const total = shares.sft + shares.rl + shares.heldOut;
  if (!(total > 0) || [shares.sft, shares.rl, shares.heldOut].some((s) => !(s >= 0))) throw new RangeError('split shares must be >= 0 and not all 0');
  const groups = new Map<string, T[]>();
  for (const it of items) {
    const k = skeletonKey(sqlOf(it));
    const g = groups.get(k);
    if (g) g.push(it);
    else groups.set(k, [it]);
  }
  const keys = new Rng(seed).shuffle([...groups.keys()].sort());
  const want = { heldOut: (items.length * shares.heldOut) / total, rl: (items.length * shares.rl) / total };
  const out: Splits<T> = { sft: [], rl: [], heldOut: [] };
  for (const k of keys) {
    const g = groups.get(k) as T[];
    const target = out.heldOut.length < want.heldOut ? out.heldOut : out.rl.length < want.rl ? out.rl : out.sft;
    target.push(...g);
  }
  return out;
}
