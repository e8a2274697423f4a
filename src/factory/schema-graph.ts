/**
 * Stage 1: the schema as a graph. Tables are nodes, foreign keys edges (composite keys kept
 * whole, self-references and cycles allowed). Join paths are found by breadth-first search over
 * edges taken in both directions, in a fixed order, so synthesis and the round-trip parser build
 * the same joins for the same tables. Where a database declares no foreign keys, likely ones are
 * inferred from names, types and value containment and marked inferred.
 */
import type { DbSchema, ForeignKey, SqlExecutor, Table } from '../sql/types.ts';
import { col, type JoinStep } from './ast.ts';
import { dialectOf, nameIn } from '../sql/dialect.ts';

export interface SchemaGraph {
  tables: string[];
  edges: ForeignKey[];
  /** Tables with parents before children; cycles broken at the lexically smallest remaining table. */
  topoOrder: string[];
  /** Edges that were ignored to break cycles (child -> parent), for augmentation to fill late. */
  cycleEdges: ForeignKey[];
}

export function buildSchemaGraph(schema: DbSchema, extraFks: ForeignKey[] = []): SchemaGraph {
  const names = new Set(schema.tables.filter((t) => t.kind === 'table').map((t) => t.name));
  const edges: ForeignKey[] = [];
  for (const t of schema.tables) {
    if (!names.has(t.name)) continue;
    for (const fk of t.foreignKeys) if (names.has(fk.toTable) && fk.fromColumns.length === fk.toColumns.length) edges.push(fk);
  }
  for (const fk of extraFks) if (names.has(fk.fromTable) && names.has(fk.toTable)) edges.push(fk);
  const tables = [...names].sort();
  const { order, broken } = topoSort(tables, edges);
  return { tables, edges, topoOrder: order, cycleEdges: broken };
}

function topoSort(tables: string[], edges: ForeignKey[]): { order: string[]; broken: ForeignKey[] } {
  // parents(child) = tables the child references (self-references do not constrain order).
  const parents = new Map<string, Set<string>>(tables.map((t) => [t, new Set<string>()]));
  for (const e of edges) if (e.fromTable !== e.toTable) parents.get(e.fromTable)?.add(e.toTable);
  const order: string[] = [];
  const done = new Set<string>();
  const broken: ForeignKey[] = [];
  while (order.length < tables.length) {
    const ready = tables.filter((t) => !done.has(t) && [...parents.get(t)!].every((p) => done.has(p)));
    const pick = ready.length ? ready : [tables.find((t) => !done.has(t))!];
    if (!ready.length) {
      for (const e of edges) if (e.fromTable === pick[0] && !done.has(e.toTable) && e.toTable !== pick[0]) broken.push(e);
    }
    for (const t of pick) {
      done.add(t);
      order.push(t);
    }
  }
  return { order, broken };
}

/** An edge walked from `from` to `to` (either direction of a foreign key). */
export interface Hop {
  from: string;
  to: string;
  fromColumns: string[];
  toColumns: string[];
}

function hopsFrom(g: SchemaGraph, table: string): Hop[] {
  const out: Hop[] = [];
  for (const e of g.edges) {
    if (e.fromTable === e.toTable) continue; // self-joins are not synthesized (their questions are ambiguous)
    if (e.fromTable === table) out.push({ from: table, to: e.toTable, fromColumns: e.fromColumns, toColumns: e.toColumns });
    if (e.toTable === table) out.push({ from: table, to: e.fromTable, fromColumns: e.toColumns, toColumns: e.fromColumns });
  }
  return out.sort((a, b) => (a.to + a.fromColumns.join()).localeCompare(b.to + b.fromColumns.join()));
}

/** Shortest hop path between two tables (BFS, deterministic), or null when unconnected. */
export function shortestPath(g: SchemaGraph, from: string, to: string, maxDepth = 3): Hop[] | null {
  if (from === to) return [];
  const prev = new Map<string, Hop>();
  let frontier = [from];
  const seen = new Set([from]);
  for (let depth = 0; depth < maxDepth && frontier.length; depth++) {
    const next: string[] = [];
    for (const t of frontier) {
      for (const h of hopsFrom(g, t)) {
        if (seen.has(h.to)) continue;
        seen.add(h.to);
        prev.set(h.to, h);
        if (h.to === to) {
          const path: Hop[] = [];
          for (let cur = to; cur !== from; cur = prev.get(cur)!.from) path.unshift(prev.get(cur)!);
          return path;
        }
        next.push(h.to);
      }
    }
    frontier = next;
  }
  return null;
}

/** Tables reachable from `table` within maxDepth hops, with their paths. */
export function joinPaths(g: SchemaGraph, table: string, maxDepth = 2): Array<{ table: string; path: Hop[] }> {
  const out: Array<{ table: string; path: Hop[] }> = [];
  for (const t of g.tables) {
    if (t === table) continue;
    const p = shortestPath(g, table, t, maxDepth);
    if (p) out.push({ table: t, path: p });
  }
  return out;
}

/**
 * Joins that bring `tables` (in order of first mention) into a query on `base`: each table
 * is reached by its shortest path from the base, reusing tables already joined. Returns the alias
 * of every table, or null when one is unreachable.
 */
export function buildJoins(
  g: SchemaGraph,
  base: string,
  tables: string[],
): { joins: JoinStep[]; aliasOf: Map<string, string> } | null {
  const aliasOf = new Map<string, string>([[base, 'T1']]);
  const joins: JoinStep[] = [];
  for (const t of tables) {
    if (aliasOf.has(t)) continue;
    const path = shortestPath(g, base, t);
    if (!path) return null;
    for (const h of path) {
      if (aliasOf.has(h.to)) continue;
      const alias = `T${aliasOf.size + 1}`;
      const leftAlias = aliasOf.get(h.from)!;
      aliasOf.set(h.to, alias);
      joins.push({
        table: h.to,
        alias,
        on: h.fromColumns.map((c, i) => ({ left: col(leftAlias, h.from, c), right: col(alias, h.to, h.toColumns[i]) })),
      });
    }
  }
  return { joins, aliasOf };
}

/** An English plural's singular, by the common suffixes (table names: `stations` -> `station`). */
export function singular(w: string): string {
  if (/ies$/.test(w)) return w.slice(0, -3) + 'y';
  if (/(ses|xes|zes|ches|shes)$/.test(w)) return w.slice(0, -2);
  if (/s$/.test(w) && !/ss$/.test(w)) return w.slice(0, -1);
  return w;
}

/**
 * Foreign keys a database does not declare, inferred from names (x_id / xId / xid -> table x or xs,
 * key column id or x_id), matching type affinity, and value containment checked with a bounded
 * query (every non-null value of the child column, in the first 5000 rows, exists in the parent).
 */
export async function inferForeignKeys(schema: DbSchema, exec: SqlExecutor, timeoutMs = 2000): Promise<ForeignKey[]> {
  const d = dialectOf(schema.path);
  const tables = schema.tables.filter((t) => t.kind === 'table');
  const byKey = new Map<string, Table>();
  for (const t of tables) {
    const k = singular(t.name.toLowerCase());
    if (!byKey.has(k)) byKey.set(k, t);
  }
  const out: ForeignKey[] = [];
  for (const child of tables) {
    for (const c of child.columns) {
      const m = /^(.+?)_?id$/i.exec(c.name);
      if (!m) continue;
      const stem = singular(m[1].toLowerCase().replace(/_$/, ''));
      const parent = byKey.get(stem);
      if (!parent || parent.name === child.name) continue;
      const target =
        parent.primaryKey.length === 1
          ? parent.columns.find((pc) => pc.name === parent.primaryKey[0])
          : parent.columns.find((pc) => pc.name.toLowerCase() === 'id' || pc.name.toLowerCase() === c.name.toLowerCase());
      if (!target || target.affinity !== c.affinity) continue;
      const sql =
        `SELECT COUNT(*) FROM (SELECT ${nameIn(c.name, d)} AS v FROM ${nameIn(child.name, d)} WHERE ${nameIn(c.name, d)} IS NOT NULL LIMIT 5000)${d === 'postgres' ? ' AS s' : ''} ` +
        `WHERE v NOT IN (SELECT ${nameIn(target.name, d)} FROM ${nameIn(parent.name, d)})`;
      const r = await exec.execute(schema.path, sql, { timeoutMs });
      if (r.ok && Number(r.rows[0]?.[0]) === 0 && child.rowCount > 0) {
        out.push({ fromTable: child.name, fromColumns: [c.name], toTable: parent.name, toColumns: [target.name], inferred: true });
      }
    }
  }
  return out;
}
