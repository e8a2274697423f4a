/**
 * A query's result as the policy reads it after a <sql> turn: a header, a few rows, the row count, always within
 * the prompt settings' observation budget (settings.ts observationRows, observationChars). The terminal's
 * `agro ask` and `agro chat` print results the same way.
 */
import type { ExecResult, SqlValue } from '../sql/types.ts';

function cell(v: SqlValue): string {
  if (v === null) return 'NULL';
  if (v instanceof Uint8Array) return `<blob ${v.byteLength}B>`;
  const s = String(v);
  return s.length > 40 ? `${s.slice(0, 37)}...` : s;
}

/** A result as the agent sees it: header, a few rows, the row count; always under `maxChars`. */
export function formatResultTable(r: ExecResult, maxRows: number, maxChars: number): string {
  if (!r.ok) return `error (${r.error}): ${r.message}`.slice(0, maxChars);
  const lines = [r.columns.join(' | ')];
  for (const row of r.rows.slice(0, maxRows)) lines.push(row.map(cell).join(' | '));
  const more = r.rows.length > maxRows || r.truncated ? `${r.truncated ? 'over ' : ''}${r.rows.length} rows, first ${maxRows} shown` : `${r.rows.length} rows`;
  let text = lines.join('\n');
  const tail = `\n(${more})`;
  if (text.length + tail.length > maxChars) text = text.slice(0, Math.max(0, maxChars - tail.length - 4)) + ' ...';
  return text + tail;
}
