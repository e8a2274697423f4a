/** F1 of two sets; both empty → null (nothing to compare). */
export function setF1(pred: Set<string>, gold: Set<string>): number | null {
  if (pred.size === 0 && gold.size === 0) return null;
  if (pred.size === 0 || gold.size === 0) return 0;
  let hit = 0;
  for (const x of pred) if (gold.has(x)) hit++;
  if (hit === 0) return 0;
  const p = hit / pred.size;
  const r = hit / gold.size;
  return (2 * p * r) / (p + r);
}
