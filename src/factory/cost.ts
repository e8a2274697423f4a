/**
 * How much of the database a query would read, from SQLite's own plan (EXPLAIN QUERY PLAN: no
 * execution), so synthesis can drop queries that would scan a million-row table before anything
 * runs them. Rows read are estimated from the plan and the table sizes:
 *  - a SCAN reads its table's rows; each join step by primary key (SEARCH ... PRIMARY KEY) after it
 *    reads about as many again;
 *  - a SEARCH through another index, or an automatic index, may read all of its table's rows
 *    (every child row of every parent), unless it is the outer loop of its query, where a value
 *    from the query picks a few rows (but not when the values come from a subquery's list);
 *  - a SEARCH naming no index (SQLite's plan for some MIN/MAX) reads like a SCAN;
 *  - a correlated subquery runs once per row of its outer loop, so its SEARCH through a non-PK
 *    index reads every child row of every outer row: its whole table (`NOT EXISTS (SELECT … WHERE
 *    child.fk = parent.id AND …)` over 50k parents and 400k children ran 1-1.5 s).
 * The database is opened read-only in this process; only plans are asked of it.
 *
 * On PostgreSQL the planner prices the query itself (`EXPLAIN (FORMAT JSON)`'s total cost, sql/pg-plan.ts,
 * through the sandbox): the same limit in rows read is turned into its units at PG_COST_PER_ROW.
 */
import { openDatabase } from '../sql/open-database.mjs';
import type { DbSchema } from '../sql/types.ts';
import { dialectOf } from '../sql/dialect.ts';
import { PgPlanner } from '../sql/pg-plan.ts';

/** Rows a synthesized query may read (by the estimate above) on a database with big tables. */
export const MAX_ROWS_READ = 250_000;

/** Databases whose largest table is at most this big are never checked: every query on them is cheap. */
export const CHECK_FROM_ROWS = 20_000;

/**
 * PostgreSQL planner cost per row a query may read. A sequential scan costs about 0.02 a row (a page of
 * ~100 short rows at seq_page_cost 1, plus cpu_tuple_cost 0.01: 2,831 for 150,000 rows of 4 columns); twice
 * that leaves room for the work done on what is read (filters, hashes, aggregates at cpu_operator_cost
 * 0.0025 each), so the default limit is 10,000: a hash join of a 150,000-row table to a small one (3,630)
 * passes, a self-join of a 30,000-row table on a 50-value column (248,876) or a cross join does not.
 */
export const PG_COST_PER_ROW = 0.04;

const hasBigTable = (schema: DbSchema): boolean => schema.tables.some((t) => t.rowCount > CHECK_FROM_ROWS);

export interface PlanLine {
  id: number;
  parent: number;
  detail: string;
}

/** Estimated rows read for a plan (pure: plan lines and the row count of each name the plan uses). */
export function rowsRead(plan: PlanLine[], rowsOf: (name: string) => number): number {
  const byParent = new Map<number, PlanLine[]>();
  for (const l of plan) byParent.set(l.parent, [...(byParent.get(l.parent) ?? []), l]);
  let total = 0;
  const listed = plan.some((l) => /LIST SUBQUERY/.test(l.detail));
  const detailOf = new Map(plan.map((l) => [l.id, l.detail]));
  for (const [parent, lines] of byParent) {
    const correlated = /^CORRELATED /.test(detailOf.get(parent) ?? '');
    let outer = 0;
    let first = true;
    for (const l of lines) {
      const m = /^(SCAN|SEARCH) (\S+)/.exec(l.detail);
      if (!m) continue;
      const rows = rowsOf(m[2]);
      if (m[1] === 'SCAN' || !/ USING /.test(l.detail)) {
        outer += rows;
        total += rows;
      } else if (/PRIMARY KEY/.test(l.detail) && !first) total += outer;
      else if (first && !listed && !(correlated && !/PRIMARY KEY/.test(l.detail))) total += Math.max(1, Math.ceil(rows / 100));
      else total += rows;
      first = false;
    }
  }
  return total;
}

export class QueryCost {
  private readonly db?: ReturnType<typeof openDatabase>;
  private readonly rows = new Map<string, number>();
  readonly active: boolean;
  constructor(
    dbPath: string,
    schema: DbSchema,
    private readonly maxRowsRead = MAX_ROWS_READ,
  ) {
    for (const t of schema.tables) this.rows.set(t.name.toLowerCase(), t.rowCount);
    this.active = dialectOf(dbPath) === 'sqlite' && hasBigTable(schema);
    if (this.active) this.db = openDatabase(dbPath, { readonly: true, fileMustExist: true });
  }

  /** Estimated rows read; 0 on a database without big tables (not checked). */
  estimate(sql: string): number {
    if (!this.active || !this.db) return 0;
    // Aliases (T1, S1) stand for the table named just before them.
    const alias = new Map<string, number>();
    for (const m of sql.matchAll(/\b(?:FROM|JOIN)\s+("(?:[^"]|"")+"|[\w$]+)(?:\s+AS\s+(\w+))?/gi)) {
      const name = m[1].replace(/^"|"$/g, '').replace(/""/g, '"').toLowerCase();
      const n = this.rows.get(name) ?? 0;
      alias.set((m[2] ?? m[1]).toLowerCase(), n);
      alias.set(name, n);
    }
    const plan = this.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as PlanLine[];
    return rowsRead(plan, (n) => alias.get(n.toLowerCase()) ?? this.rows.get(n.toLowerCase()) ?? 0);
  }

  tooCostly(sql: string): boolean {
    return this.active && this.estimate(sql) > this.maxRowsRead;
  }

  close(): void {
    this.db?.close();
  }
}

/** The planner's verdict on PostgreSQL: a query whose plan costs more than maxRowsRead rows' worth is too costly. */
export class PgQueryCost {
  private readonly planner?: PgPlanner;
  readonly active: boolean;
  readonly maxCost: number;
  constructor(url: string, schema: DbSchema, maxRowsRead = MAX_ROWS_READ) {
    this.active = dialectOf(url) === 'postgres' && hasBigTable(schema);
    this.maxCost = maxRowsRead * PG_COST_PER_ROW;
    if (this.active) this.planner = new PgPlanner(url);
  }

  /** The plan's total cost; 0 when not checked or not plannable (running it will say why). */
  async estimate(sql: string): Promise<number> {
    return (this.active && (await this.planner?.totalCost(sql))) || 0;
  }

  async tooCostly(sql: string): Promise<boolean> {
    return this.active && (await this.estimate(sql)) > this.maxCost;
  }

  async close(): Promise<void> {
    await this.planner?.close();
  }
}

/** The cost gate of a database on either engine, as StageContext.tooCostly wants it; absent when its tables are all small. */
export function costGate(db: string, schema: DbSchema, maxRowsRead = MAX_ROWS_READ): { tooCostly?: (sql: string) => Promise<boolean>; close(): Promise<void> } {
  if (dialectOf(db) === 'postgres') {
    const pg = new PgQueryCost(db, schema, maxRowsRead);
    return { ...(pg.active ? { tooCostly: (sql: string) => pg.tooCostly(sql) } : {}), close: () => pg.close() };
  }
  const lite = new QueryCost(db, schema, maxRowsRead);
  return { ...(lite.active ? { tooCostly: async (sql: string) => lite.tooCostly(sql) } : {}), close: async () => lite.close() };
}
