/** An order-insensitive hash of a query result, for "same skeleton and same answer" dedup. */
import { createHash } from 'node:crypto';
import type { Row, SqlValue } from '../../sql/types.ts';

const cell = (v: SqlValue): string => {
  if (v === null) return 'N';
  if (typeof v === 'bigint') return `i${v}`;
  if (typeof v === 'number') return `n${v}`;
  if (typeof v === 'string') return `s${JSON.stringify(v)}`;
  return `b${Buffer.from(v).toString('base64')}`;
};

export function resultFingerprint(rows: readonly Row[]): string {
  const lines = rows.map((r) => r.map(cell).join('\u0001')).sort();
  return createHash('sha1').update(lines.join('\u0002')).digest('hex').slice(0, 16);
}
