/**
 * Several samples per question: pass@k and execution-based self-consistency.
 *
 * pass@k is the unbiased estimator of Chen et al. (2021): with n samples of which c are right,
 * pass@k = 1 - C(n-c, k) / C(n, k), computed as a product to stay exact for large n.
 * Self-consistency votes over result sets: samples whose queries return the same result (as a set in
 * BIRD mode, a multiset in Spider mode) form one group; the largest group wins, ties go to the group
 * whose first sample came first; samples whose query failed do not vote.
 */
import { cellKey } from '../sql/compare.ts';
import type { CompareMode, ExecResult } from '../sql/types.ts';

export function passAtK(n: number, c: number, k: number): number {
  if (!(Number.isInteger(n) && Number.isInteger(c) && Number.isInteger(k)) || k < 1 || k > n || c < 0 || c > n) {
    throw new RangeError(`passAtK: need 1 <= k <= n and 0 <= c <= n, got n=${n} c=${c} k=${k}`);
  }
  if (n - c < k) return 1;
  let miss = 1;
  for (let i = n - c + 1; i <= n; i++) miss *= 1 - k / i;
  return 1 - miss;
}

/** A key equal for results the comparison in `mode` calls equal (exact values, no tolerance). */
export function resultKey(r: ExecResult, mode: CompareMode): string | null {
  if (!r.ok || r.truncated) return null;
  const rows = r.rows.map((row) => JSON.stringify(row.map(cellKey)));
  const keys = mode === 'bird' ? [...new Set(rows)] : rows;
  return keys.sort().join('\n');
}

/** Index of the sample self-consistency picks, or null when every sample's query failed. */
export function majorityVote(results: readonly ExecResult[], mode: CompareMode): number | null {
  const groups = new Map<string, { first: number; count: number }>();
  results.forEach((r, i) => {
    const k = resultKey(r, mode);
    if (k === null) return;
    const g = groups.get(k);
    if (g) g.count++;
    else groups.set(k, { first: i, count: 1 });
  });
  let best: { first: number; count: number } | null = null;
  for (const g of groups.values()) if (!best || g.count > best.count || (g.count === best.count && g.first < best.first)) best = g;
  return best ? best.first : null;
}
