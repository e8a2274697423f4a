/**
 * Reads a SQLite database's schema and a bounded profile of its data (in-process, read-only).
 *
 * Exact vs estimated: the row count of a table is exact (COUNT(*)). Column statistics (null count,
 * distinct count, min, max, most frequent values) are exact when the table has at most
 * `statsRowLimit` rows; above that they are computed over the first `statsRowLimit` rows in storage
 * order, so they are estimates (biased towards early rows) and the counts are for that sample only.
 * Views are profiled the same way, and their rowCount is capped at `statsRowLimit` too.
 */
import { existsSync, statSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { openDatabase } from './open-database.mjs';
import { AgroError } from '../errors.ts';
import type { Column, ColumnStats, DbSchema, ForeignKey, SqlValue, Table } from './types.ts';
import { quoteIdent } from './lexer.ts';
import { databaseId } from './db-id.ts';

export interface IntrospectOptions {
  /** Most frequent distinct values kept per column. Default 3. */
  samples?: number;
  /** Rows profiled per table before statistics become sample estimates. Default 100000. */
  statsRowLimit?: number;
}

const MAX_SAMPLE_CHARS = 60;

/** SQLite's type affinity rules (https://www.sqlite.org/datatype3.html, section 3.1), in their order. */
export function affinityOf(declared: string): Column['affinity'] {
  const t = declared.toUpperCase();
  if (t.includes('INT')) return 'INTEGER';
  if (t.includes('CHAR') || t.includes('CLOB') || t.includes('TEXT')) return 'TEXT';
  if (t.includes('BLOB') || t.trim() === '') return 'BLOB';
  if (t.includes('REAL') || t.includes('FLOA') || t.includes('DOUB')) return 'REAL';
  return 'NUMERIC';
}

/** Keeps prompts small: long strings cut, blobs described instead of shown. */
export function summarizeValue(v: SqlValue): SqlValue {
  if (typeof v === 'string' && v.length > MAX_SAMPLE_CHARS) return `${v.slice(0, MAX_SAMPLE_CHARS)}…`;
  if (v instanceof Uint8Array) return `<blob ${v.byteLength} bytes>`;
  return v;
}

interface XInfo {
  cid: number;
  name: string;
  type: string;
  notnull: number;
  dflt_value: unknown;
  pk: number;
  hidden: number;
}

interface FkRow {
  id: number;
  seq: number;
  table: string;
  from: string;
  to: string | null;
}

/** Opens a database read-only (legacy double-quoted strings on); a missing or unreadable file is a one-line AgroError. */
export function openReadOnly(dbPath: string): Database.Database {
  if (!existsSync(dbPath)) throw new AgroError('not_found', `database not found: ${dbPath}`);
  if (!statSync(dbPath).isFile()) throw new AgroError('invalid_input', `not a database file: ${dbPath}`);
  let db: Database.Database;
  try {
    db = openDatabase(dbPath, { readonly: true, fileMustExist: true });
    db.prepare('SELECT count(*) FROM sqlite_schema').get();
  } catch (err) {
    throw new AgroError('invalid_input', `not a readable SQLite database: ${dbPath} (${err instanceof Error ? err.message : String(err)})`);
  }
  return db;
}

/** The tables of an open database that store rows (no views, no `sqlite_` internals), in name order. */
export function storedTables(db: Database.Database): string[] {
  return db.prepare(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name`).pluck().all() as string[];
}

/** A table's columns in declared order, a virtual table's hidden ones left out. */
export function tableColumns(db: Database.Database, table: string): string[] {
  return db.prepare(`SELECT name FROM pragma_table_xinfo(?) WHERE hidden != 1 ORDER BY cid`).pluck().all(table) as string[];
}

/** Fails with the one line of openReadOnly unless `dbPath` is a readable SQLite database (checked before any work). */
export function assertReadableDatabase(dbPath: string): void {
  openReadOnly(dbPath).close();
}

/** Columns whose counts, MIN and MAX one query computes (4 result columns each; SQLite allows 2,000). */
const STATS_COLUMNS_PER_QUERY = 100;

/** Stats of every column of `from`: one scan for the counts, MIN and MAX of many columns, one query per column for its most frequent values. */
function columnStats(db: Database.Database, from: string, cols: readonly string[], samples: number): ColumnStats[] {
  const aggs: Array<[number, number, SqlValue, SqlValue]> = [];
  for (let i = 0; i < cols.length; i += STATS_COLUMNS_PER_QUERY) {
    const part = cols.slice(i, i + STATS_COLUMNS_PER_QUERY).map(quoteIdent);
    const row = db
      .prepare(`SELECT ${part.map((c) => `COUNT(*) - COUNT(${c}), COUNT(DISTINCT ${c}), MIN(${c}), MAX(${c})`).join(', ')} FROM ${from}`)
      .raw(true)
      .get() as SqlValue[];
    for (let j = 0; j < part.length; j++) aggs.push(row.slice(4 * j, 4 * j + 4) as [number, number, SqlValue, SqlValue]);
  }
  return cols.map((col, i) => {
    const c = quoteIdent(col);
    const top =
      samples > 0
        ? (db
            .prepare(`SELECT ${c} FROM ${from} WHERE ${c} IS NOT NULL GROUP BY ${c} ORDER BY COUNT(*) DESC, ${c} LIMIT ?`)
            .raw(true)
            .all(samples) as SqlValue[][])
        : [];
    const agg = aggs[i];
    return {
      nullCount: agg[0],
      distinctCount: agg[1],
      min: summarizeValue(agg[2]),
      max: summarizeValue(agg[3]),
      samples: top.map((r) => summarizeValue(r[0])),
    };
  });
}

function readTable(db: Database.Database, name: string, kind: Table['kind'], opts: Required<IntrospectOptions>): Table {
  const q = quoteIdent(name);
  const info = (db.prepare(`SELECT * FROM pragma_table_xinfo(?)`).all(name) as XInfo[]).filter((c) => c.hidden !== 1);
  const limit = opts.statsRowLimit;
  const rowCount =
    kind === 'table'
      ? (db.prepare(`SELECT COUNT(*) FROM ${q}`).pluck().get() as number)
      : (db.prepare(`SELECT COUNT(*) FROM (SELECT 1 FROM ${q} LIMIT ?)`).pluck().get(limit) as number);
  // Profile the whole table when small, else its first `limit` rows (see the header comment).
  const from = rowCount > limit ? `(SELECT * FROM ${q} LIMIT ${limit})` : q;
  const stats = columnStats(
    db,
    from,
    info.map((c) => c.name),
    opts.samples,
  );
  const columns: Column[] = info.map((c, i) => ({
    name: c.name,
    type: c.type,
    affinity: affinityOf(c.type),
    notNull: c.notnull === 1,
    pk: c.pk,
    stats: stats[i],
  }));
  const primaryKey = columns.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name);
  return { name, kind, columns, primaryKey, foreignKeys: kind === 'table' ? readForeignKeys(db, name) : [], rowCount };
}

function readForeignKeys(db: Database.Database, table: string): ForeignKey[] {
  const rows = db.prepare(`SELECT * FROM pragma_foreign_key_list(?)`).all(table) as FkRow[];
  const byId = new Map<number, FkRow[]>();
  for (const r of rows) byId.set(r.id, [...(byId.get(r.id) ?? []), r]);
  return [...byId.keys()]
    .sort((a, b) => a - b)
    .map((id) => {
      const parts = byId.get(id)!.sort((a, b) => a.seq - b.seq);
      const toTable = parts[0].table;
      let toColumns = parts.map((p) => p.to);
      if (toColumns.some((t) => t === null)) {
        // `REFERENCES parent` without columns means the parent's primary key.
        const pk = (db.prepare(`SELECT name, pk FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk`).all(toTable) as Array<{ name: string }>).map((r) => r.name);
        toColumns = parts.map((p, i) => p.to ?? pk[i] ?? null);
      }
      return { fromTable: table, fromColumns: parts.map((p) => p.from), toTable, toColumns: toColumns.map((t) => t ?? ''), inferred: false };
    });
}

/** The schema and a bounded data profile of one database file. dbId is the file name without extension. */
export function introspectSchema(dbPath: string, opts: IntrospectOptions = {}): DbSchema {
  const o: Required<IntrospectOptions> = { samples: opts.samples ?? 3, statsRowLimit: opts.statsRowLimit ?? 100_000 };
  if (!Number.isInteger(o.samples) || o.samples < 0 || !Number.isInteger(o.statsRowLimit) || o.statsRowLimit < 1) {
    throw new AgroError('usage', 'introspectSchema: samples must be an integer >= 0 and statsRowLimit >= 1');
  }
  const db = openReadOnly(dbPath);
  try {
    const objects = db
      .prepare(`SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name`)
      .all() as Array<{ name: string; type: Table['kind'] }>;
    const tables = objects.map((o2) => readTable(db, o2.name, o2.type, o));
    return { dbId: databaseId(dbPath), path: dbPath, tables };
  } catch (err) {
    if (err instanceof AgroError) throw err;
    throw new AgroError('invalid_input', `cannot read the schema of ${dbPath}: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    db.close();
  }
}
