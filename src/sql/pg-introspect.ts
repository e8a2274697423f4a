/**
 * A PostgreSQL database's schema, data profile and documentation, read from pg_catalog over one
 * read-only connection: the same DbSchema introspect.ts makes of a SQLite file (so rendering, the
 * factory and the prompt need not know the engine). Its `COMMENT`s are read as documentation by src/prompt/pg-docs.ts.
 *
 * Which tables: those of the schemas on the role's search_path (`current_schemas(false)`, usually
 * `public`), named without their schema as a query on that connection names them. Statistics follow
 * introspect.ts's rules (exact up to statsRowLimit rows, else over the first statsRowLimit rows).
 */
import pg from 'pg';
import { AgroError } from '../errors.ts';
import { pgDbId } from './db-id.ts';
import { affinityOf, summarizeValue, type IntrospectOptions } from './introspect.ts';
import { quoteIdent } from './lexer.ts';
import { errorKindOf, pgClientConfig, redactUrl, typeParsers } from './postgres.ts';
import type { Column, ColumnStats, DbSchema, ForeignKey, SqlValue, Table } from './types.ts';

/** SQLite's affinity of a PostgreSQL type, so prompts and the factory read both engines' columns alike. */
export function pgAffinity(type: string): Column['affinity'] {
  const t = type.toLowerCase();
  if (t === 'bytea') return 'BLOB';
  if (t === 'boolean') return 'INTEGER';
  if (t === 'json' || t === 'jsonb' || t === 'xml' || t === 'uuid') return 'TEXT';
  if (t.startsWith('double') || t === 'real') return 'REAL';
  if (t.startsWith('numeric')) return 'NUMERIC';
  return affinityOf(t);
}

/** Types MIN/MAX and DISTINCT work on directly; any other (boolean, json, geometric, arrays of those) is profiled as text. */
const ORDERED = /^(smallint|integer|bigint|numeric|real|double precision|text|character|character varying|date|time|timestamp|interval|oid)\b/;

/** Columns per statistics query (4 result columns each), as introspect.ts. */
const STATS_COLUMNS_PER_QUERY = 100;

interface RawColumn {
  table: string;
  column: string;
  type: string;
  notnull: boolean;
  comment: string | null;
}

/** One read-only connection (the session options of every agro connection), or a one-line AgroError. */
export async function connect(url: string): Promise<pg.Client> {
  const c = new pg.Client(pgClientConfig(url, 'agro-introspect'));
  c.on('error', () => undefined);
  try {
    await c.connect();
  } catch (err) {
    const e = err as { code?: string; message?: string };
    const kind = errorKindOf(e.code);
    throw new AgroError(kind === 'no_database' ? 'not_found' : 'invalid_input', `cannot connect to ${redactUrl(url)}: ${e.message ?? String(err)}`);
  }
  return c;
}

export async function rows(c: pg.Client, text: string, values: unknown[] = []): Promise<SqlValue[][]> {
  const r = await c.query({ text, values, rowMode: 'array', types: typeParsers(false) });
  return r.rows as SqlValue[][];
}

export const TABLES_SQL = `
  SELECT c.oid, c.relname, c.relkind, obj_description(c.oid, 'pg_class')
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = ANY (current_schemas(false)) AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
  ORDER BY c.relname`;

export const COLUMNS_SQL = `
  SELECT a.attrelid, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, col_description(a.attrelid, a.attnum)
  FROM pg_attribute a
  WHERE a.attrelid = ANY ($1::oid[]) AND a.attnum > 0 AND NOT a.attisdropped
  ORDER BY a.attrelid, a.attnum`;

/** Primary and foreign keys with their columns in key order. */
const KEYS_SQL = `
  SELECT con.conrelid, con.contype, con.oid,
         (SELECT array_agg(a.attname ORDER BY k.i) FROM unnest(con.conkey) WITH ORDINALITY k(n, i) JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n),
         con.confrelid::regclass::text,
         (SELECT array_agg(a.attname ORDER BY k.i) FROM unnest(con.confkey) WITH ORDINALITY k(n, i) JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.n)
  FROM pg_constraint con
  WHERE con.conrelid = ANY ($1::oid[]) AND con.contype IN ('p', 'f')
  ORDER BY con.conrelid, con.contype, con.oid`;

/** `{a,b}` or `{"a b",c}` (PostgreSQL's text form of a name array) → names. */
function nameArray(v: SqlValue): string[] {
  if (typeof v !== 'string' || v.length < 2) return [];
  const out: string[] = [];
  const body = v.slice(1, -1);
  let i = 0;
  while (i < body.length) {
    if (body[i] === '"') {
      let j = i + 1;
      let s = '';
      while (j < body.length && body[j] !== '"') {
        if (body[j] === '\\') j++;
        s += body[j++];
      }
      out.push(s);
      i = j + 2;
    } else {
      const j = body.indexOf(',', i);
      out.push(body.slice(i, j < 0 ? body.length : j));
      i = j < 0 ? body.length : j + 1;
    }
  }
  return out;
}

async function columnStats(c: pg.Client, from: string, cols: RawColumn[], samples: number): Promise<ColumnStats[]> {
  const aggs: Array<SqlValue[]> = [];
  for (let i = 0; i < cols.length; i += STATS_COLUMNS_PER_QUERY) {
    const part = cols.slice(i, i + STATS_COLUMNS_PER_QUERY).map((col) => (ORDERED.test(col.type) ? quoteIdent(col.column) : `${quoteIdent(col.column)}::text`));
    const [row] = await rows(c, `SELECT ${part.map((x) => `COUNT(*) - COUNT(${x}), COUNT(DISTINCT ${x}), MIN(${x}), MAX(${x})`).join(', ')} FROM ${from}`);
    for (let j = 0; j < part.length; j++) aggs.push(row.slice(4 * j, 4 * j + 4));
  }
  const out: ColumnStats[] = [];
  for (let i = 0; i < cols.length; i++) {
    const x = ORDERED.test(cols[i].type) ? quoteIdent(cols[i].column) : `${quoteIdent(cols[i].column)}::text`;
    const top = samples > 0 ? await rows(c, `SELECT ${x} FROM ${from} WHERE ${x} IS NOT NULL GROUP BY ${x} ORDER BY COUNT(*) DESC, ${x} LIMIT ${samples}`) : [];
    const a = aggs[i];
    out.push({ nullCount: Number(a[0]), distinctCount: Number(a[1]), min: summarizeValue(a[2]), max: summarizeValue(a[3]), samples: top.map((r) => summarizeValue(r[0])) });
  }
  return out;
}

/** The schema and a bounded data profile of a PostgreSQL database (see the header). */
export async function introspectPostgres(url: string, opts: IntrospectOptions = {}): Promise<DbSchema> {
  const o: Required<IntrospectOptions> = { samples: opts.samples ?? 3, statsRowLimit: opts.statsRowLimit ?? 100_000 };
  if (!Number.isInteger(o.samples) || o.samples < 0 || !Number.isInteger(o.statsRowLimit) || o.statsRowLimit < 1) {
    throw new AgroError('usage', 'introspectSchema: samples must be an integer >= 0 and statsRowLimit >= 1');
  }
  const c = await connect(url);
  try {
    await c.query('BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const objects = await rows(c, TABLES_SQL);
    const oids = objects.map((r) => Number(r[0]));
    const byOid = new Map(objects.map((r) => [Number(r[0]), String(r[1])]));
    const cols = (await rows(c, COLUMNS_SQL, [oids])).map((r): RawColumn & { oid: number } => ({ oid: Number(r[0]), table: byOid.get(Number(r[0]))!, column: String(r[1]), type: String(r[2]), notnull: r[3] === 1, comment: r[4] as string | null }));
    const keys = await rows(c, KEYS_SQL, [oids]);
    const tables: Table[] = [];
    for (const obj of objects) {
      const oid = Number(obj[0]);
      const name = String(obj[1]);
      const kind: Table['kind'] = obj[2] === 'v' || obj[2] === 'm' ? 'view' : 'table';
      const mine = cols.filter((x) => x.oid === oid);
      const pkRow = keys.find((k) => Number(k[0]) === oid && k[1] === 'p');
      const primaryKey = pkRow ? nameArray(pkRow[3]) : [];
      const foreignKeys: ForeignKey[] = keys
        .filter((k) => Number(k[0]) === oid && k[1] === 'f')
        .map((k) => ({ fromTable: name, fromColumns: nameArray(k[3]), toTable: String(k[4]).replace(/^"(.*)"$/, '$1').replace(/""/g, '"'), toColumns: nameArray(k[5]), inferred: false }));
      const q = quoteIdent(name);
      const limit = o.statsRowLimit;
      const [[count]] =
        kind === 'table' ? await rows(c, `SELECT COUNT(*) FROM ${q}`) : await rows(c, `SELECT COUNT(*) FROM (SELECT 1 FROM ${q} LIMIT ${limit}) s`);
      const rowCount = Number(count);
      const from = rowCount > limit ? `(SELECT * FROM ${q} LIMIT ${limit}) s` : q;
      const stats = mine.length > 0 ? await columnStats(c, from, mine, o.samples) : [];
      const columns: Column[] = mine.map((x, i) => ({
        name: x.column,
        type: x.type,
        affinity: pgAffinity(x.type),
        notNull: x.notnull,
        pk: primaryKey.indexOf(x.column) + 1,
        stats: stats[i],
      }));
      tables.push({ name, kind, columns, primaryKey, foreignKeys, rowCount });
    }
    await c.query('ROLLBACK');
    return { dbId: pgDbId(url), path: url, tables };
  } catch (err) {
    if (err instanceof AgroError) throw err;
    throw new AgroError('invalid_input', `cannot read the schema of ${redactUrl(url)}: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    await c.end().catch(() => undefined);
  }
}
