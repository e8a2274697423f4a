/**
 * Several samples per question: execution-based self-consistency (pass@k is src/util/pass-at-k.ts).
 * Self-consistency votes over result sets: samples whose queries return the same result (as a set in
 * BIRD mode, a multiset in Spider mode) form one group; the largest group wins, ties go to the group
 * whose first sample came first; samples whose query failed do not vote.
 */
import { cellKey } from '../sql/compare.ts';
import type { CompareMode, ExecResult } from '../sql/types.ts';

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
