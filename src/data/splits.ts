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
 * The groups that must not be split: items linked by a shared skeleton. An item names every SQL its prompt and
 * answer hold (a follow-up: its own and the earlier turns'), so a conversation's turns share a group with each
 * other and with every item of their skeletons. Keyed by the group's first skeleton in sorted order.
 */
function skeletonGroups<T>(items: readonly T[], sqlOf: (t: T) => string | readonly string[]): Map<string, T[]> {
  const parent = new Map<string, string>();
  const find = (k: string): string => {
    let r = k;
    while (parent.get(r) !== r) r = parent.get(r) as string;
    parent.set(k, r);
    return r;
  };
  const keysOf = items.map((it) => {
    const sqls = sqlOf(it);
    const keys = (typeof sqls === 'string' ? [sqls] : sqls).map(skeletonKey);
    for (const k of keys) if (!parent.has(k)) parent.set(k, k);
    // The smaller key is the root, so a group's key is its smallest skeleton whatever the order of the items.
    for (const k of keys.slice(1)) {
      const [a, b] = [find(keys[0]), find(k)].sort();
      parent.set(b, a);
    }
    return keys;
  });
  const groups = new Map<string, T[]>();
  items.forEach((it, i) => {
    const k = find(keysOf[i][0]);
    const g = groups.get(k);
    if (g) g.push(it);
    else groups.set(k, [it]);
  });
  return groups;
}

/**
 * Splits items by skeleton group, in a seeded order, filling held-out first, then RL, then SFT, so the
 * evaluation and RL sets get their size even when one skeleton is large. Deterministic for a seed. `sqlOf` gives
 * an item's SQL, or every SQL it holds (a follow-up's and its earlier turns'), all kept on one side.
 */
export function splitBySkeleton<T>(items: readonly T[], sqlOf: (t: T) => string | readonly string[], shares: SplitShares, seed: number): Splits<T> {
  const total = shares.sft + shares.rl + shares.heldOut;
  if (!(total > 0) || [shares.sft, shares.rl, shares.heldOut].some((s) => !(s >= 0))) throw new RangeError('split shares must be >= 0 and not all 0');
  const groups = skeletonGroups(items, sqlOf);
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

/** Every SQL a dataset row holds: its own and its earlier turns' (what splitBySkeleton keeps on one side). */
export const rowSqls = (row: { SQL: string; previous?: ReadonlyArray<{ sql: string }> }): string[] => [row.SQL, ...(row.previous ?? []).map((t) => t.sql).filter((s) => s.trim())];
