/** SQL results as JSON for the browser, and which rows of two results differ. */
import type { ExecResult, SqlValue } from '../../sql/types.ts';
import type { Cell, ResultTable } from './api-types.ts';

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
