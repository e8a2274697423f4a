/**
 * Which chart a query result wants, read from its shape alone (pure; no rendering here, see chart-svg.ts):
 *
 *   one row of one column            → value (the value in large type)
 *   a category and a number          → bar
 *   a date or a year and a number    → line
 *   two numbers                      → point
 *   anything else (or nothing)       → null: the table says it better
 *
 * Exactly two columns make a chart (in either order); a date column is text SQLite writes as ISO
 * (YYYY-MM-DD, optionally a time, or YYYY-MM); a year is a whole number from 1000 to 2999 in a column whose
 * name says year, or a four-digit text. Null cells are left out of the reading.
 */

/** A cell as the executor returns it or as it travels as JSON. */
export type ChartCell = string | number | bigint | null | Uint8Array;

export interface ChartInput {
  columns: readonly string[];
  rows: readonly (readonly ChartCell[])[];
}

export type ChartKind = 'bar' | 'line' | 'point' | 'value';

/** How a column reads: a number, a date (ISO text), a year, a category (any other text). */
export type ColumnRole = 'number' | 'date' | 'year' | 'category';

export interface ChartChoice {
  kind: ChartKind;
  /** Column index of the horizontal axis (the category, date or first number); for 'value', the only column. */
  x: number;
  /** Column index of the measured number (for 'value', the same column). */
  y: number;
  xRole: ColumnRole;
}

/** More categories than this are a table, not a bar chart (the labels would not be read). */
export const MAX_BARS = 60;

const ISO_DATE = /^\d{4}-\d{2}(-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?)?$/;
const YEAR_TEXT = /^[12]\d{3}$/;
const YEAR_NAME = /(^|[^a-z])(year|yr)s?([^a-z]|$)/i;

const isNumber = (v: ChartCell): boolean => (typeof v === 'number' && Number.isFinite(v)) || typeof v === 'bigint';

/** The role of a column from its name and its non-null cells; undefined when it has none or blobs. */
export function columnRole(name: string, cells: readonly ChartCell[]): ColumnRole | undefined {
  const vals = cells.filter((v) => v !== null);
  if (vals.length === 0 || vals.some((v) => v instanceof Uint8Array)) return undefined;
  if (vals.every(isNumber)) {
    const whole = vals.every((v) => typeof v === 'bigint' || Number.isInteger(v));
    const yearLike = vals.every((v) => Number(v) >= 1000 && Number(v) <= 2999);
    return whole && yearLike && YEAR_NAME.test(name) ? 'year' : 'number';
  }
  if (vals.every((v) => typeof v === 'string' && YEAR_TEXT.test(v))) return 'year';
  if (vals.every((v) => typeof v === 'string' && ISO_DATE.test(v))) return 'date';
  if (vals.every((v) => typeof v === 'string' || isNumber(v))) return 'category';
  return undefined;
}

/** The chart for a result, or null for a table. */
export function chartFor(result: ChartInput): ChartChoice | null {
  const { columns, rows } = result;
  if (rows.length === 0) return null;
  if (columns.length === 1) return rows.length === 1 && rows[0][0] !== null && !(rows[0][0] instanceof Uint8Array) ? { kind: 'value', x: 0, y: 0, xRole: columnRole(columns[0], [rows[0][0]]) ?? 'category' } : null;
  if (columns.length !== 2) return null;
  const roles = [0, 1].map((i) => columnRole(columns[i], rows.map((r) => r[i])));
  const [a, b] = roles;
  if (a === undefined || b === undefined) return null;
  // The measured number is the second column when both could be, the number when only one is.
  const time = (r: ColumnRole): boolean => r === 'date' || r === 'year';
  if (b === 'number' && time(a)) return { kind: 'line', x: 0, y: 1, xRole: a };
  if (a === 'number' && time(b)) return { kind: 'line', x: 1, y: 0, xRole: b };
  if (a === 'number' && b === 'number') return { kind: 'point', x: 0, y: 1, xRole: 'number' };
  const bars = (x: number, y: number): ChartChoice | null => (new Set(rows.map((r) => String(r[x]))).size <= MAX_BARS ? { kind: 'bar', x, y, xRole: 'category' } : null);
  if (a === 'category' && b === 'number') return bars(0, 1);
  if (b === 'category' && a === 'number') return bars(1, 0);
  return null;
}
