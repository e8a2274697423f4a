/**
 * Stage 4: structure-aware database augmentation. Variant databases keep the original schema
 * (its DDL copied verbatim) and get new rows, table by table in foreign-key topological order:
 * keys stay consistent (child keys point at parent rows present in the variant), values are drawn
 * from each column's observed values (numbers perturbed, columns sampled independently so new
 * combinations appear, some NULLs where allowed), plus a share of copied original rows so that
 * filters drawn from the original data still hit.
 *
 * The variants then (a) screen pairs whose question leaves a reading open (rule below) and
 * (b) form a test suite for evaluation (`agro eval --suite <out>/variants/<db_id>`) and rewards.
 */
import { ensureDir, writeFileAtomic } from '../util/fs.ts';
import { buildPgVariant, dropVariantSchemas, existingSchemas, variantSchemaName, variantUrl } from '../sql/pg-variants.ts';
import { openDatabase } from '../sql/open-database.mjs';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { testSuiteMatch } from '../sql/testsuite.ts';
import type { DbSchema, SqlValue, VariantWriter } from '../sql/types.ts';
import { Rng } from '../util/rng.ts';
import { col, isRankGuard, type Expr, type QueryAst, type SelectAst } from './ast.ts';
import { printQuery } from './print.ts';
import { sqlName } from '../sql/lexer.ts';
import type { SchemaGraph } from './schema-graph.ts';
import type { Stage, StageContext, SynthPair } from './types.ts';
import { checkPairs } from './check-pairs.ts';

export interface AugmentOptions {
  count: number;
  seed: number;
  /** Directory that receives variant-N.sqlite. */
  dir: string;
  /** Rows per table in a variant (tables are cut to this). Default 2000. */
  maxRowsPerTable?: number;
  /** Share of each table's variant rows copied from the original. Default 0.3. */
  copyShare?: number;
  /** Probability that a nullable column gets NULL in a synthesized row. Default 0.1. */
  nullShare?: number;
}

const READ_LIMIT = 5000;

function perturb(v: SqlValue, rng: Rng, intLike: boolean): SqlValue {
  if (typeof v !== 'number' || rng.next() < 0.15) return v;
  const x = v * (1 + 0.25 * rng.normal()) + (rng.next() < 0.2 ? rng.normal() * 3 : 0);
  return intLike ? Math.round(x) : Math.round(x * 100) / 100;
}

/**
 * Fills a variant whose tables exist and are empty: table by table in foreign-key order, the rows the
 * header describes. The writer reads and writes one engine (a SQLite file below, a PostgreSQL schema in
 * sql/pg-variants.ts); the rows, for a seed, are decided here alone.
 */
export async function fillVariant(w: VariantWriter, schema: DbSchema, graph: SchemaGraph, rng: Rng, opts: Omit<AugmentOptions, 'count' | 'seed' | 'dir'>): Promise<void> {
  const maxRows = opts.maxRowsPerTable ?? 2000;
  const copyShare = opts.copyShare ?? 0.3;
  const nullShare = opts.nullShare ?? 0.1;
  const keysOf = new Map<string, SqlValue[][]>(); // table -> rows of key columns, filled lazily
  const keyTuples = async (table: string, cols: string[]): Promise<SqlValue[][]> => {
    const k = `${table}\u0000${cols.join('\u0000')}`;
    if (!keysOf.has(k)) keysOf.set(k, await w.readVariant(table, cols));
    return keysOf.get(k)!;
  };
  const done = new Set<string>();
  for (const tname of graph.topoOrder) {
    const table = schema.tables.find((t) => t.name === tname && t.kind === 'table');
    if (!table) continue;
    const colNames = table.columns.map((c) => c.name);
    const source = await w.readOriginal(tname, colNames, READ_LIMIT);
    done.add(tname);
    if (!source.length) continue;
    const fks = graph.edges.filter((e) => e.fromTable === tname);
    const target = Math.min(table.rowCount, maxRows);
    const nCopy = Math.round(target * copyShare);
    const intLike = colNames.map((_, j) => source.every((r) => r[j] === null || (typeof r[j] === 'number' && Number.isInteger(r[j]))));
    const pkIdx = table.primaryKey.length === 1 ? colNames.indexOf(table.primaryKey[0]) : -1;
    let nextId = 1 + Math.max(0, ...source.map((r) => (pkIdx >= 0 && typeof r[pkIdx] === 'number' ? (r[pkIdx] as number) : 0)));
    const rows: SqlValue[][] = [];
    for (const r of rng.shuffle([...source]).slice(0, nCopy)) rows.push([...r]);
    for (let k = rows.length; k < target; k++) {
      const row = colNames.map((_, j) => {
        const c = table.columns[j];
        const v = rng.pick(source)[j];
        if (!c.notNull && c.pk === 0 && rng.next() < nullShare) return null;
        return perturb(v, rng, intLike[j]);
      });
      if (pkIdx >= 0) {
        if (intLike[pkIdx]) row[pkIdx] = nextId++;
        else row[pkIdx] = `${String(rng.pick(source)[pkIdx])}-${k}`;
      }
      rows.push(row);
    }
    // Point every foreign key at a parent row that exists in this variant.
    for (const fk of fks) {
      const idx = fk.fromColumns.map((c) => colNames.indexOf(c));
      if (idx.some((i) => i < 0)) continue;
      const selfRef = fk.toTable === tname;
      const parentReady = done.has(fk.toTable) && !selfRef;
      const parents = parentReady ? await keyTuples(fk.toTable, fk.toColumns) : [];
      const present = new Set(parents.map((p) => JSON.stringify(p)));
      const nullable = idx.every((i) => !table.columns[i].notNull);
      for (const row of rows) {
        const cur = idx.map((i) => row[i]);
        if (cur.every((v) => v === null)) continue;
        if (selfRef) {
          // a self-reference points at a row of this table (copied keys) or nothing
          if (nullable && rng.next() < 0.3) idx.forEach((i) => (row[i] = null));
          continue;
        }
        if (!parentReady) {
          if (nullable) idx.forEach((i) => (row[i] = null));
          continue;
        }
        if (present.has(JSON.stringify(cur)) && rng.next() < 0.7) continue;
        if (!parents.length) {
          if (nullable) idx.forEach((i) => (row[i] = null));
          continue;
        }
        const p = rng.pick(parents);
        idx.forEach((i, j) => (row[i] = p[j]));
      }
    }
    await w.insert(tname, colNames, rows);
  }
}

/** Builds one variant database file (atomically: temp file, then rename). */
export async function buildVariant(srcPath: string, schema: DbSchema, graph: SchemaGraph, outPath: string, rng: Rng, opts: AugmentOptions): Promise<void> {
  const tmp = `${outPath}.${process.pid}.tmp`;
  rmSync(tmp, { force: true });
  const src = openDatabase(srcPath, { readonly: true, fileMustExist: true });
  const dst = openDatabase(tmp);
  // Keys are kept consistent by construction; enforcement would only abort on cycles we leave NULL-free.
  dst.pragma('foreign_keys = OFF');
  dst.pragma('journal_mode = OFF');
  dst.pragma('synchronous = OFF');
  const select = (db: typeof src, table: string, cols: string[], limit = ''): SqlValue[][] =>
    db
      .prepare(`SELECT ${cols.map(sqlName).join(', ')} FROM ${sqlName(table)}${limit}`)
      .raw()
      .all() as SqlValue[][];
  try {
    const ddl = src
      .prepare("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'view' THEN 2 ELSE 3 END, rowid")
      .all() as Array<{ type: string; name: string; sql: string }>;
    for (const d of ddl) if (d.type !== 'trigger') dst.exec(d.sql);
    await fillVariant(
      {
        readOriginal: async (table, cols, limit) => select(src, table, cols, ` LIMIT ${limit}`),
        readVariant: async (table, cols) => select(dst, table, cols),
        insert: async (table, cols, rows) => {
          const insert = dst.prepare(`INSERT OR IGNORE INTO ${sqlName(table)} (${cols.map(sqlName).join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`);
          dst.transaction(() => {
            for (const r of rows) insert.run(...r);
          })();
        },
      },
      schema,
      graph,
      rng,
      opts,
    );
    indexJoinKeys(dst, schema, graph);
  } finally {
    src.close();
    dst.close();
  }
  renameSync(tmp, outPath);
}

/**
 * Indexes a variant's join keys (both ends of every foreign key, declared or inferred, that no primary key
 * already covers). The factory runs each pair's SQL on every variant; without them SQLite scans a joined table
 * or builds a throwaway automatic index for each query. An index changes no result a comparison reads (a
 * query's rows are compared as a multiset unless it orders them), and a variant's rows stay as drawn.
 */
function indexJoinKeys(db: ReturnType<typeof openDatabase>, schema: DbSchema, graph: SchemaGraph): void {
  const names = new Set((db.prepare("SELECT name FROM sqlite_master WHERE type = 'index'").pluck().all() as string[]).map((n) => n.toLowerCase()));
  const done = new Set<string>();
  let k = 0;
  for (const e of graph.edges) {
    for (const [table, cols] of [
      [e.fromTable, e.fromColumns],
      [e.toTable, e.toColumns],
    ] as const) {
      const t = schema.tables.find((x) => x.name === table && x.kind === 'table');
      if (!t || !cols.length || (t.primaryKey.length && t.primaryKey.length === cols.length && t.primaryKey.every((c, i) => c === cols[i]))) continue;
      const key = `${table}\u0000${cols.join('\u0000')}`;
      if (done.has(key)) continue;
      done.add(key);
      let name: string;
      do name = `agro_join_key_${++k}`;
      while (names.has(name));
      db.exec(`CREATE INDEX ${sqlName(name)} ON ${sqlName(table)} (${cols.map(sqlName).join(', ')})`);
    }
  }
}

/** Builds (or reuses, when already complete) opts.count variants; returns their paths. */
export async function buildVariants(srcPath: string, schema: DbSchema, graph: SchemaGraph, opts: AugmentOptions): Promise<string[]> {
  ensureDir(opts.dir);
  const paths: string[] = [];
  for (let i = 1; i <= opts.count; i++) {
    const out = join(opts.dir, `variant-${i}.sqlite`);
    if (!existsSync(out)) await buildVariant(srcPath, schema, graph, out, variantRng(opts.seed, i), opts);
    paths.push(out);
  }
  return paths;
}

/**
 * The variants of a PostgreSQL database: schemas on its server (sql/pg-variants.ts), each named in
 * `<dir>/variant-N.pg` (its schema's name: what agro's test-suite readers, data/databases.ts suiteVariants,
 * turn back into a URL with the database's own, password and all). Reused when its file and schema both
 * exist, as a SQLite variant's file is; kept after the run as those files are (`agro db drop-variants`
 * drops them). Returns their URLs.
 */
export async function buildServerVariants(url: string, schema: DbSchema, graph: SchemaGraph, opts: AugmentOptions & { tag: string; log?: (line: string) => void }): Promise<string[]> {
  ensureDir(opts.dir);
  const names = Array.from({ length: opts.count }, (_, k) => variantSchemaName(opts.tag, k + 1));
  const have = await existingSchemas(url, names);
  const tables = schema.tables.filter((t) => t.kind === 'table').map((t) => t.name);
  // Views come too, made again over the variant's tables (as a SQLite variant's file keeps its CREATE VIEW).
  const views = schema.tables.filter((t) => t.kind === 'view').map((t) => t.name);
  for (const [k, name] of names.entries()) {
    const file = join(opts.dir, `variant-${k + 1}.pg`);
    if (!(have.has(name) && existsSync(file))) {
      // A schema without its file is another run's (its output folder removed): its rows may be another seed's.
      if (have.has(name)) await dropVariantSchemas(url, [name]);
      const skipped = await buildPgVariant(url, name, tables, (w) => fillVariant(w, schema, graph, variantRng(opts.seed, k + 1), opts), views);
      // Pairs over a view left out fail on the variant and are dropped, as before views were copied.
      for (const v of skipped) opts.log?.(`variant ${name}: view ${v.view} left out (${v.why})`);
      writeFileAtomic(file, `${name}\n`);
    }
  }
  return names.map((n) => variantUrl(url, n));
}

/** The schemas' tag of one factory output's variants of one database: its folder and db_id, hashed. */
export function variantTag(out: string, dbId: string): string {
  return createHash('sha256').update(`${out}\u0000${dbId}`).digest('hex').slice(0, 10);
}

/** Drops the variant schemas `<dir>/variant-N.pg` name (a rerun with other arguments rebuilds them). */
export async function dropServerVariants(url: string, dir: string, log?: (line: string) => void): Promise<void> {
  const names = existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.pg'))
        .map((f) => readFileSync(join(dir, f), 'utf8').trim())
    : [];
  if (!names.length) return;
  try {
    await dropVariantSchemas(url, names);
  } catch (err) {
    log?.(`old variant schemas left on the server: ${(err as Error).message}`);
  }
}

/** The random stream of variant i (from 1) for a seed: the same on both engines. */
export const variantRng = (seed: number, i: number): Rng => new Rng(seed * 1000 + i);

function flipTieBreakers(q: SelectAst): SelectAst | null {
  if (q.orderBy.length < 2) return null;
  return { ...q, orderBy: q.orderBy.map((o, i) => (i === 0 ? o : { ...o, dir: o.dir === 'ASC' ? 'DESC' : 'ASC' })) };
}

function countDistinctBase(q: SelectAst, schema: DbSchema): SelectAst | null {
  if (!q.joins.length) return null;
  const t = schema.tables.find((x) => x.name === q.from.table);
  if (!t || t.primaryKey.length !== 1) return null;
  const pk = col(q.from.alias, q.from.table, t.primaryKey[0]);
  let changed = false;
  const swap = (e: Expr): Expr => {
    if (e.kind === 'agg' && e.fn === 'COUNT' && e.arg.kind === 'star') {
      changed = true;
      return { kind: 'agg', fn: 'COUNT', arg: pk, distinct: true };
    }
    return e;
  };
  const out: SelectAst = { ...q, columns: q.columns.map(swap), orderBy: q.orderBy.map((o) => ({ ...o, expr: swap(o.expr) })) };
  return changed ? out : null;
}

/**
 * The ambiguity rule. A question leaves some readings unstated: how ties at a LIMIT are broken
 * (the tie-breaker is not spoken), and whether "the number of X" counts X rows or joined rows.
 * For each such alternative reading, the pair is kept only if the alternative gives the same
 * result as the pair's SQL on the original AND on every variant; otherwise the answer depends on
 * an unstated choice and the pair is rejected (reason suffixed _on_variant when only a variant
 * exposed it: the original alone would have accepted the pair). Every pair must also run without
 * error on every variant.
 */
export function ambiguityStage(): Stage<SynthPair, SynthPair> {
  return {
    name: 'augment',
    run(items, ctx) {
      return checkPairs(ctx, 'augment', items, async (p) => {
        const r = await ambiguityReason(ctx, p);
        if (!r) await humanizeRanking(ctx, p);
        return r;
      }, [`variants:${ctx.variants.length}`, 'unambiguous']);
    },
  };
}

/**
 * A ranked query as people write it: ORDER BY its measure alone, no NOT NULL guard (none of the 1,119
 * ORDER BY ... LIMIT queries of Spider's train split has a second sort key). The tie-breakers and the
 * guard exist for the ambiguity check; once it has passed they are dropped when that changes the result
 * on no database (the original and every variant), and kept otherwise (a guard that keeps NULLs out).
 */
export async function humanizeRanking(ctx: StageContext, p: SynthPair): Promise<void> {
  const q = p.ast;
  if (q.kind !== 'select' || q.limit === null || !q.orderBy.length) return;
  const bare: SelectAst = { ...q, orderBy: [q.orderBy[0]], where: q.where.filter((c) => !isRankGuard(q, c)) };
  const tieFree: SelectAst = { ...q, orderBy: [q.orderBy[0]] };
  for (const alt of [bare, tieFree]) {
    if (alt.orderBy.length === q.orderBy.length && alt.where.length === q.where.length) continue;
    const sql = printQuery(alt, ctx.dialect);
    const r = await testSuiteMatch(ctx.executor, sql, p.sql, [ctx.dbPath, ...ctx.variants], { mode: 'spider', timeoutMs: ctx.timeoutMs });
    if (r.match) {
      p.ast = alt;
      p.sql = sql;
      return;
    }
  }
}

export async function ambiguityReason(ctx: StageContext, p: SynthPair): Promise<string | null> {
  // Every variant at once (the pool queues them); the first failure in variant order is the reason.
  const runs = await Promise.all(ctx.variants.map((v) => ctx.executor.execute(v, p.sql, { timeoutMs: ctx.timeoutMs })));
  for (const r of runs) if (!r.ok) return r.error === 'timeout' ? 'variant_timeout' : 'variant_exec_error';
  const q: QueryAst = p.ast;
  if (q.kind !== 'select') return null;
  const alts: Array<[string, SelectAst | null]> = [
    ['ambiguous_ties', flipTieBreakers(q)],
    ['ambiguous_count', countDistinctBase(q, ctx.schema)],
  ];
  for (const [name, alt] of alts) {
    if (!alt) continue;
    const r = await testSuiteMatch(ctx.executor, printQuery(alt, ctx.dialect), p.sql, [ctx.dbPath, ...ctx.variants], { mode: 'spider', timeoutMs: ctx.timeoutMs });
    if (!r.match) return r.perDb[0].match ? `${name}_on_variant` : name;
  }
  return null;
}
