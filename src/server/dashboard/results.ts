/** SQL results as JSON for the browser, and which rows of two results differ. */
import { renderChart } from '../../chart/chart-svg.ts';
import type { ExecResult, SqlValue } from '../../sql/types.ts';
import type { Cell, ResultChart, ResultTable } from './api-types.ts';

/**
 * Rows a chart in the app is drawn from (a page with a chart of this many renders in under 300 ms:
 * docs/benchmarks.md#dashboard). A result cut before its end gets no chart: it would draw part of the answer as the whole.
 */
export const CHART_ROWS = 1000;

export function toCell(v: SqlValue): Cell {
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Uint8Array) return `<blob ${v.byteLength} bytes>`;
  return v;
}

export function toResultTable(r: ExecResult, maxRows = Infinity): ResultTable {
  if (!r.ok) return { ok: false, columns: [], rows: [], truncated: false, error: r.error, message: r.message, elapsedMs: Math.round(r.elapsedMs) };
  const rows = r.rows.slice(0, maxRows).map((row) => row.map(toCell));
  return { ok: true, columns: r.columns, rows, truncated: r.truncated || r.rows.length > maxRows, elapsedMs: Math.round(r.elapsedMs) };
}

/** The chart of a whole result of at most CHART_ROWS rows, or undefined (a table, an error, a cut result). */
export async function chartOf(r: ExecResult): Promise<ResultChart | undefined> {
  if (!r.ok || r.truncated || r.rows.length > CHART_ROWS) return undefined;
  const chart = await renderChart(r);
  return chart ? { kind: chart.kind, svg: chart.svg } : undefined;
}

/** A result for the page: its first `maxRows` rows as a table, and its chart (when one is drawn) from up to CHART_ROWS rows. */
export async function toChartedTable(r: ExecResult, maxRows: number): Promise<ResultTable> {
  const chart = await chartOf(r);
  return { ...toResultTable(r, maxRows), ...(chart ? { chart } : {}) };
}

/**
 * Multiset difference of rows, as a side-by-side view wants it: each pred row is matched to an unused
 * equal gold row; rows left without a partner are marked. Cells compare as their JSON text (1 and 1.0
 * are the same number in JSON).
 */
export function diffRows(pred: readonly Cell[][], gold: readonly Cell[][]): { predExtra: boolean[]; goldMissing: boolean[] } {
  const left = new Map<string, number[]>();
  gold.forEach((row, i) => {
    const k = JSON.stringify(row);
    const l = left.get(k);
    if (l) l.push(i);
    else left.set(k, [i]);
  });
  const goldMissing = gold.map(() => true);
  const predExtra = pred.map((row) => {
    const l = left.get(JSON.stringify(row));
    const i = l?.shift();
    if (i === undefined) return true;
    goldMissing[i] = false;
    return false;
  });
  return { predExtra, goldMissing };
}
