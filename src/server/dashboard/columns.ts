/** Metric columns (pure, no I/O): shared by the server's cache of a run and the page's live updates. */
import type { MetricColumns } from './api-types.ts';

export function rowCount(m: MetricColumns): number {
  const first = m.keys[0];
  return first ? m.columns[first].length : 0;
}

/** Rows appended after `a`: keys new to the run are null on the earlier rows. */
export function appendColumns(a: MetricColumns, b: MetricColumns): MetricColumns {
  const na = rowCount(a);
  const nb = rowCount(b);
  const keys = [...a.keys, ...b.keys.filter((k) => !a.keys.includes(k))];
  const columns: MetricColumns['columns'] = {};
  for (const k of keys) {
    const left = a.columns[k] ?? new Array<null>(na).fill(null);
    const right = b.columns[k] ?? new Array<null>(nb).fill(null);
    columns[k] = left.concat(right);
  }
  return { keys, columns };
}
