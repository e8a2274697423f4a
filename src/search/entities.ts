/**
 * Rows of a SQLite database as named entities: a readable title per row, foreign keys resolved to the
 * entity they point at, and a prose document per entity in which every foreign key is written as the
 * referenced entity's title (so a multi-hop chain can be followed by searching for that title).
 */
import { AgroError } from '../errors.ts';
import type { SearchDoc } from './corpus.ts';
import { quoteIdent } from '../sql/lexer.ts';
import { openReadOnly } from '../sql/introspect.ts';

export type Cell = number | string | bigint | Uint8Array | null;

export interface FkEdge {
  /** Position of this FK among the table's FKs (stable across runs). */
  index: number;
  fromColumns: string[];
  toTable: string;
  toColumns: string[];
  /** How the relation reads in prose and questions: "artist", "support rep", "employee (reports to)". */
  label: string;
}

export interface TableInfo {
  name: string;
  columns: { name: string; type: string; pk: number }[];
  primaryKey: string[];
  foreignKeys: FkEdge[];
  /** Columns whose values make up the title ([] when the title is built from the primary key). */
  titleColumns: string[];
  /** Singular, human form of the table name: "invoice line". */
  noun: string;
  /** True when the rows are people (first/last name columns): questions then ask "Who ...". */
  person: boolean;
}

export interface EntityRow {
  table: string;
  /** Document id: `<table>:<primary key values joined by '/'>` (rowid when there is no primary key). */
  docId: string;
  title: string;
  values: Record<string, Cell>;
}

export interface EntityGraph {
  dbId: string;
  tables: Map<string, TableInfo>;
  entities: Map<string, EntityRow>;
  /** Entities per table, in primary-key order. */
  byTable: Map<string, EntityRow[]>;
  /** How many entities of a table carry each title (ambiguity checks). */
  titleCounts: Map<string, Map<string, number>>;
}


export function humanize(name: string): string {
  return name.replace(/_+/g, ' ').replace(/([a-z])([A-Z])/g, '$1 $2').trim().toLowerCase();
}

export function singular(word: string): string {
  if (/ies$/.test(word)) return word.replace(/ies$/, 'y');
  if (/(ss|us|is)$/.test(word)) return word;
  if (/(ches|shes|sses|xes)$/.test(word)) return word.replace(/es$/, '');
  if (/s$/.test(word)) return word.replace(/s$/, '');
  return word;
}

export function article(noun: string): string {
  return /^[aeiou]/i.test(noun) ? 'an' : 'a';
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** A cell as prose: integers and reals in JS's shortest form, text trimmed to one line; blobs never. */
export function renderCell(v: Cell): string | undefined {
  if (v === null || v instanceof Uint8Array) return undefined;
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : undefined;
  const s = v.replace(/\s+/g, ' ').trim();
  return s || undefined;
}

function chooseTitleColumns(cols: string[]): string[] {
  const has = (c: string) => cols.includes(c);
  if (has('first_name') && has('last_name')) return ['first_name', 'last_name'];
  for (const c of ['name', 'title', 'full_name', 'display_name']) if (has(c)) return [c];
  const named = cols.find((c) => /_name$/.test(c));
  if (named) return [named];
  return [];
}

export interface LoadOptions {
  /** Rows read per table; larger tables are cut (in primary-key order) so the corpus stays bounded. */
  maxRowsPerTable?: number;
}

/** Reads every table's schema and rows and builds the entity graph. */
export function loadEntityGraph(path: string, dbId: string, opts: LoadOptions = {}): EntityGraph {
  const maxRows = opts.maxRowsPerTable ?? 20000;
  const db = openReadOnly(path);
  try {
    const tableNames = (
      db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .all() as { name: string }[]
    ).map((r) => r.name);
    type RawFk = { id: number; seq: number; table: string; from: string; to: string | null };
    const tables = new Map<string, TableInfo>();
    const rawFks = new Map<string, RawFk[][]>();
    for (const name of tableNames) {
      const columns = (db.prepare(`PRAGMA table_info(${quoteIdent(name)})`).all() as { name: string; type: string; pk: number }[]).map(
        (c) => ({ name: c.name, type: c.type, pk: c.pk }),
      );
      const primaryKey = columns
        .filter((c) => c.pk > 0)
        .sort((a, b) => a.pk - b.pk)
        .map((c) => c.name);
      const groups = new Map<number, RawFk[]>();
      for (const r of db.prepare(`PRAGMA foreign_key_list(${quoteIdent(name)})`).all() as RawFk[]) {
        groups.set(r.id, [...(groups.get(r.id) ?? []), r]);
      }
      rawFks.set(
        name,
        [...groups.entries()].sort((a, b) => a[0] - b[0]).map(([, g]) => g.sort((a, b) => a.seq - b.seq)),
      );
      const colNames = columns.map((c) => c.name);
      tables.set(name, {
        name,
        columns,
        primaryKey,
        foreignKeys: [],
        titleColumns: chooseTitleColumns(colNames),
        noun: singular(humanize(name)),
        person: colNames.includes('first_name') && colNames.includes('last_name'),
      });
    }
    // Resolved once every table's primary key is known (an FK without columns names the target's key).
    for (const t of tables.values()) {
      t.foreignKeys = (rawFks.get(t.name) ?? [])
        .map((g, index) => {
          const target = tables.get(g[0].table);
          const toColumns = g.every((r) => r.to) ? g.map((r) => r.to as string) : (target?.primaryKey ?? []);
          const fromColumns = g.map((r) => r.from);
          const label =
            fromColumns.length === 1 && /_id$/i.test(fromColumns[0])
              ? humanize(fromColumns[0].replace(/_id$/i, ''))
              : fromColumns.length === 1
                ? `${singular(humanize(g[0].table))} (${humanize(fromColumns[0])})`
                : singular(humanize(g[0].table));
          return { index, fromColumns, toTable: g[0].table, toColumns, label };
        })
        .filter((fk) => tables.has(fk.toTable) && fk.toColumns.length === fk.fromColumns.length);
    }

    const entities = new Map<string, EntityRow>();
    const byTable = new Map<string, EntityRow[]>();
    const titleCounts = new Map<string, Map<string, number>>();
    for (const t of tables.values()) {
      const keyCols = t.primaryKey.length > 0 ? t.primaryKey : ['rowid'];
      const select = t.primaryKey.length > 0 ? '*' : 'rowid AS rowid, *';
      const rows = db
        .prepare(`SELECT ${select} FROM ${quoteIdent(t.name)} ORDER BY ${keyCols.map(quoteIdent).join(', ')} LIMIT ?`)
        .all(maxRows) as Record<string, Cell>[];
      const list: EntityRow[] = [];
      const counts = new Map<string, number>();
      for (const values of rows) {
        const key = keyCols.map((c) => renderCell(values[c]) ?? '').join('/');
        const named = t.titleColumns.map((c) => renderCell(values[c])).filter((v): v is string => v !== undefined);
        const title =
          named.length === t.titleColumns.length && named.length > 0
            ? named.join(' ')
            : `${capitalize(t.noun)} ${keyCols.map((c) => renderCell(values[c]) ?? '?').join(' / ')}`;
        const e: EntityRow = { table: t.name, docId: `${t.name}:${key}`, title, values };
        if (entities.has(e.docId)) continue;
        entities.set(e.docId, e);
        list.push(e);
        counts.set(title, (counts.get(title) ?? 0) + 1);
      }
      byTable.set(t.name, list);
      titleCounts.set(t.name, counts);
    }
    return { dbId, tables, entities, byTable, titleCounts };
  } catch (err) {
    if (err instanceof AgroError) throw err;
    throw new AgroError('invalid_input', `could not read ${path}: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    db.close();
  }
}

/** The entity a row's foreign key points at; undefined when the key is null or dangles. */
export function follow(graph: EntityGraph, e: EntityRow, fk: FkEdge): EntityRow | undefined | null {
  const vals = fk.fromColumns.map((c) => e.values[c]);
  if (vals.some((v) => v === null || v === undefined)) return null;
  const target = graph.tables.get(fk.toTable)!;
  // The usual case: the FK names the target's primary key, so the doc id is known directly.
  if (fk.toColumns.join(',') === target.primaryKey.join(',')) {
    return graph.entities.get(`${fk.toTable}:${vals.map((v) => renderCell(v) ?? '').join('/')}`);
  }
  const rows = graph.byTable.get(fk.toTable) ?? [];
  const hits = rows.filter((r) => fk.toColumns.every((c, i) => renderCell(r.values[c]) === renderCell(vals[i])));
  return hits.length === 1 ? hits[0] : undefined;
}

/** True for columns whose value is already carried by the title or is a meaningless surrogate id. */
export function isHiddenColumn(t: TableInfo, column: string): boolean {
  if (t.titleColumns.includes(column)) return true;
  if (!t.primaryKey.includes(column)) return false;
  if (t.titleColumns.length === 0) return true; // the key is in the title
  const c = t.columns.find((x) => x.name === column);
  return /int/i.test(c?.type ?? '');
}

/** Columns that can be asked about: not in the title, not a surrogate key, not part of a foreign key. */
export function attributeColumns(t: TableInfo): string[] {
  const fkCols = new Set(t.foreignKeys.flatMap((fk) => fk.fromColumns));
  return t.columns.map((c) => c.name).filter((c) => !fkCols.has(c) && !isHiddenColumn(t, c));
}

/** The entity as prose: one sentence per known fact, foreign keys written as the referenced title. */
export function entityDocument(graph: EntityGraph, e: EntityRow): SearchDoc {
  const t = graph.tables.get(e.table)!;
  const sentences = [`${e.title} is ${article(t.noun)} ${t.noun}.`];
  const fkCols = new Set<string>();
  for (const fk of t.foreignKeys) {
    const target = follow(graph, e, fk);
    if (target === null) continue;
    if (target === undefined) continue; // dangling: the raw value is written below instead
    fk.fromColumns.forEach((c) => fkCols.add(c));
    sentences.push(`The ${fk.label} of ${e.title} is ${target.title}.`);
  }
  for (const c of t.columns) {
    if (fkCols.has(c.name) || isHiddenColumn(t, c.name)) continue;
    const v = renderCell(e.values[c.name]);
    if (v === undefined) continue;
    sentences.push(`The ${humanize(c.name)} of ${e.title} is ${v}.`);
  }
  return { id: e.docId, title: e.title, text: sentences.join(' ') };
}
