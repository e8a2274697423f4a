/**
 * What a line chart draws of a long run: per pixel column (a bucket of the x range), the first and last
 * point and each series' lowest and highest. The drawn line covers the same pixels as the full series
 * (every peak and dip is kept), each kept point is a real row with its exact values (what hovering shows),
 * and a 10,000-step run costs the chart a few hundred points per series instead of 10,000.
 * Pure: the browser app and its tests share it.
 */
export type Columns = [number[], ...(number | null)[][]];

/** First index with xs[i] >= v (xs ascending). */
function lowerBound(xs: readonly number[], v: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The rows to draw of aligned columns (x ascending) within [xMin, xMax] (all rows by default), in `buckets`
 * columns of equal x width; one row before and after the range is kept so that the line reaches the edges,
 * and the first and last rows always (resetting a zoom scales x to the data drawn: the whole run).
 * Every row is kept when the range holds no more than 2 × buckets rows.
 */
export function decimateRows(data: Columns, buckets: number, xMin = -Infinity, xMax = Infinity): number[] {
  const xs = data[0];
  const from = Math.max(0, lowerBound(xs, xMin) - 1);
  const to = Math.min(xs.length, lowerBound(xs, xMax) + (xMax === Infinity ? 0 : 1) + 1);
  const n = to - from;
  const ends = (rows: number[]): number[] => {
    if (xs.length && rows[0] !== 0) rows.unshift(0);
    if (xs.length && rows[rows.length - 1] !== xs.length - 1) rows.push(xs.length - 1);
    return rows;
  };
  const all = (): number[] => ends(Array.from({ length: n }, (_, i) => from + i));
  if (n <= 2 * buckets || buckets < 1) return all();
  const x0 = xs[from];
  const span = xs[to - 1] - x0;
  if (!(span > 0)) return all();
  const keep = new Uint8Array(n);
  const ys = data.slice(1) as (number | null)[][];
  let bucket = -1;
  let first = 0;
  const lo = new Int32Array(ys.length);
  const hi = new Int32Array(ys.length);
  const flush = (last: number): void => {
    keep[first - from] = 1;
    keep[last - from] = 1;
    for (let s = 0; s < ys.length; s++) {
      if (lo[s] >= 0) keep[lo[s] - from] = 1;
      if (hi[s] >= 0) keep[hi[s] - from] = 1;
    }
  };
  for (let i = from; i < to; i++) {
    const b = Math.min(buckets - 1, Math.floor(((xs[i] - x0) / span) * buckets));
    if (b !== bucket) {
      if (bucket >= 0) flush(i - 1);
      bucket = b;
      first = i;
      lo.fill(-1);
      hi.fill(-1);
    }
    for (let s = 0; s < ys.length; s++) {
      const v = ys[s][i];
      if (v === null || v === undefined) continue;
      if (lo[s] < 0 || v < (ys[s][lo[s]] as number)) lo[s] = i;
      if (hi[s] < 0 || v > (ys[s][hi[s]] as number)) hi[s] = i;
    }
  }
  flush(to - 1);
  const out: number[] = [];
  for (let i = 0; i < n; i++) if (keep[i]) out.push(from + i);
  return ends(out);
}

/** The columns at the given rows. */
export function pickRows(data: Columns, rows: readonly number[]): Columns {
  return data.map((col) => rows.map((i) => col[i])) as Columns;
}
