/** Which columns synthesis may use, and how (filter literal kind, aggregate, projection). */
import type { Column, DbSchema, SqlExecutor, Table } from '../sql/types.ts';
import { dialectOf, nameIn, textLength } from '../sql/dialect.ts';
import type { SchemaGraph } from './schema-graph.ts';
import { colKey, type Lexicon } from './language/names.ts';

export type ColumnRole = 'numeric' | 'category' | 'text' | 'date';

export interface UsableColumn {
  table: string;
  column: string;
  role: ColumnRole;
  isKey: boolean;
  nullable: boolean;
  /** Distinct values and table rows (a column unique in its table makes a useless group). */
  distinct: number;
  rows: number;
}

export interface TableProfile {
  table: Table;
  columns: UsableColumn[];
  /** Primary key columns (for deterministic tie-breaks); empty when none is declared. */
  pk: string[];
}

export interface Skipped {
  what: string;
  why: string;
}

/** An ISO date or date-time, with a time zone or not ('2015-05-24T04:50:53+03:00'). */
const ISO_DATE = /^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

function roleOf(c: Column): ColumnRole | null {
  // An empty string is a missing value as CSV imports store it ('' in a date column).
  const samples = c.stats.samples.filter((v) => v !== null && v !== '');
  // A column declared without a type has BLOB affinity but usually holds text or numbers (CSV imports):
  // only a declared BLOB type or stored bytes make it unusable.
  if (/blob/i.test(c.type) || samples.some((v) => v instanceof Uint8Array)) return null;
  if (samples.some((v) => typeof v === 'string' && v.length > 80)) return null;
  // Dates stored as text are dates whatever the declared type (DATETIME has NUMERIC affinity).
  if (samples.length && samples.every((v) => typeof v === 'string' && ISO_DATE.test(v))) return 'date';
  if (samples.length && samples.every((v) => typeof v === 'number' || typeof v === 'bigint')) return 'numeric';
  if (!samples.length) return c.affinity === 'TEXT' ? 'text' : 'numeric';
  if (samples.some((v) => typeof v === 'number' || typeof v === 'bigint')) return null; // mixed storage classes
  return c.stats.distinctCount <= 50 ? 'category' : 'text';
}

export function profileSchema(schema: DbSchema, graph: SchemaGraph, lex: Lexicon, longText: Set<string> = new Set()): { profiles: Map<string, TableProfile>; skipped: Skipped[] } {
  const keyCols = new Set<string>();
  for (const e of graph.edges) {
    e.fromColumns.forEach((c) => keyCols.add(colKey(e.fromTable, c)));
    e.toColumns.forEach((c) => keyCols.add(colKey(e.toTable, c)));
  }
  const profiles = new Map<string, TableProfile>();
  const skipped: Skipped[] = [];
  for (const t of schema.tables) {
    if (t.kind === 'view') {
      skipped.push({ what: `view ${t.name}`, why: 'views are not synthesized from (no keys, cannot be augmented)' });
      continue;
    }
    if (t.rowCount === 0) {
      skipped.push({ what: `table ${t.name}`, why: 'empty table: no values to draw filters from' });
      continue;
    }
    const columns: UsableColumn[] = [];
    for (const c of t.columns) {
      const role = longText.has(colKey(t.name, c.name)) ? null : roleOf(c);
      if (!role) {
        skipped.push({ what: `column ${t.name}.${c.name}`, why: 'blob or long text column' });
        continue;
      }
      if (lex.unspeakable.has(colKey(t.name, c.name))) {
        skipped.push({ what: `column ${t.name}.${c.name}`, why: 'its spoken name is ambiguous or clashes with question keywords' });
        continue;
      }
      // A column of a composite primary key that is no foreign key (countrylanguage.Language) is data, not an id.
      const isKey = (c.pk > 0 && t.primaryKey.length === 1) || keyCols.has(colKey(t.name, c.name));
      columns.push({ table: t.name, column: c.name, role, isKey, nullable: !c.notNull && c.pk === 0, distinct: c.stats.distinctCount, rows: t.rowCount });
    }
    if (!columns.length) {
      skipped.push({ what: `table ${t.name}`, why: 'no usable columns' });
      continue;
    }
    profiles.set(t.name, { table: t, columns, pk: t.primaryKey });
  }
  return { profiles, skipped };
}

/**
 * Text columns whose values run long (over 200 characters in the first 1000 rows): introspection
 * samples are cut short, so this asks the database, with a bounded query.
 */
export async function longTextColumns(schema: DbSchema, exec: SqlExecutor, timeoutMs = 2000): Promise<Set<string>> {
  const out = new Set<string>();
  const d = dialectOf(schema.path);
  for (const t of schema.tables) {
    if (t.kind !== 'table' || t.rowCount === 0) continue;
    const text = t.columns.filter((c) => c.affinity === 'TEXT' || c.affinity === 'BLOB' || c.type === '');
    if (!text.length) continue;
    const sql = `SELECT ${text.map((c) => `MAX(${textLength(nameIn(c.name, d), d)})`).join(', ')} FROM (SELECT * FROM ${nameIn(t.name, d)} LIMIT 1000)${d === 'postgres' ? ' AS s' : ''}`;
    const r = await exec.execute(schema.path, sql, { timeoutMs });
    if (!r.ok) continue;
    text.forEach((c, i) => {
      if (Number(r.rows[0][i] ?? 0) > 200) out.add(colKey(t.name, c.name));
    });
  }
  return out;
}

/**
 * The distinct values of every category column (50 at most by definition), read from the first
 * `rowLimit` rows as profiling reads them, so a big table is not scanned: "table\u0000column" -> values.
 */
export async function categoryValues(schema: DbSchema, profiles: Map<string, TableProfile>, exec: SqlExecutor, timeoutMs = 2000, rowLimit = 20_000): Promise<Map<string, string[]>> {
  const d = dialectOf(schema.path);
  const cols = [...profiles.values()].flatMap((p) => p.columns.filter((c) => c.role === 'category'));
  const out = new Map<string, string[]>();
  await Promise.all(
    cols.map(async (c) => {
      const sql = `SELECT DISTINCT ${nameIn(c.column, d)} FROM (SELECT ${nameIn(c.column, d)} FROM ${nameIn(c.table, d)} LIMIT ${rowLimit})${d === 'postgres' ? ' AS s' : ''} LIMIT 60`;
      const r = await exec.execute(schema.path, sql, { timeoutMs });
      if (r.ok) out.set(colKey(c.table, c.column), r.rows.map((x) => x[0]).filter((v): v is string => typeof v === 'string'));
    }),
  );
  return out;
}
