/** Order statistics, one home: the RL losses' entropy quantile and the benches' latencies. */

/** torch.quantile's linear interpolation between the sorted values. */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) throw new RangeError('quantile of an empty list');
  const s = [...xs].sort((a, b) => a - b);
  const pos = q * (s.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(s.length - 1, lo + 1);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}
