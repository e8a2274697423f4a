/**
 * The value index (value-index.ts) of a PostgreSQL database, read over one read-only connection with the
 * same rules as a SQLite file's: tables in name order (views are not indexed), per text column the most
 * frequent distinct values among the first scanRows rows, ties in code-point order (COLLATE "C", SQLite's
 * BINARY), columns of free text or codes skipped. A text column is one of a character type: PostgreSQL
 * columns hold one type, where SQLite's are judged by the values' own type.
 */
import { AgroError } from '../errors.ts';
import { quoteIdent } from '../sql/lexer.ts';
import { connect, rows } from '../sql/pg-introspect.ts';
import { redactUrl } from '../sql/postgres.ts';
import { PROBE_ROWS, ValueIndex, indexLimits, unindexedKind, type ValueIndexOptions } from './value-index.ts';

const TEXT_TYPE = /^(text|character varying|character|citext|name)\b/;

const COLUMNS_SQL = `
  SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
  WHERE n.nspname = ANY (current_schemas(false)) AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
  ORDER BY c.relname COLLATE "C", a.attnum`;

/** Builds the value index of a PostgreSQL database (a connection failure is a one-line AgroError). */
export async function buildValueIndexPostgres(url: string, opts: ValueIndexOptions = {}): Promise<ValueIndex> {
  const { perColumn, total, maxChars, scanRows } = indexLimits(opts);
  const c = await connect(url);
  try {
    await c.query('BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const index = new ValueIndex();
    const textColumns: Array<{ table: string; column: string }> = [];
    for (const [t, col, type] of await rows(c, COLUMNS_SQL)) {
      const table = String(t);
      const column = String(col);
      if (!TEXT_TYPE.test(String(type))) {
        index.skip(table, column, 'not text');
        continue;
      }
      const probe = (await rows(c, `SELECT ${quoteIdent(column)} FROM ${quoteIdent(table)} WHERE ${quoteIdent(column)} IS NOT NULL LIMIT ${PROBE_ROWS}`)).map((r) => String(r[0]));
      const why = unindexedKind(probe, maxChars);
      if (why) index.skip(table, column, why);
      else textColumns.push({ table, column });
    }
    const cap = Math.min(perColumn, Math.floor(total / Math.max(1, textColumns.length)));
    for (const { table, column } of textColumns) {
      const q = quoteIdent(column);
      const found = await rows(
        c,
        `SELECT v, COUNT(*) AS n FROM (SELECT ${q} AS v FROM ${quoteIdent(table)} LIMIT ${scanRows}) s WHERE v IS NOT NULL AND length(v) <= $1 GROUP BY v ORDER BY n DESC, v COLLATE "C" LIMIT $2`,
        [maxChars, cap],
      );
      index.addColumn(table, column, found.map((r) => [String(r[0]), Number(r[1])] as const));
    }
    await c.query('ROLLBACK');
    return index;
  } catch (err) {
    if (err instanceof AgroError) throw err;
    throw new AgroError('invalid_input', `cannot read the values of ${redactUrl(url)}: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    await c.end().catch(() => undefined);
  }
}
