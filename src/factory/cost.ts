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
 * The database is opened read-only in this process; only plans are asked of it. A PostgreSQL database
 * is not checked here (its plans differ, and its role's statement_timeout bounds what a query costs).
 */
import { openDatabase } from '../sql/open-database.mjs';
import type { DbSchema } from '../sql/types.ts';
import { dialectOf } from '../sql/dialect.ts';

/** Rows a synthesized query may read (by the estimate above) on a database with big tables. */
export const MAX_ROWS_READ = 250_000;

/** Databases whose largest table is at most this big are never checked: every query on them is cheap. */
export const CHECK_FROM_ROWS = 20_000;

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
  constructor(dbPath: string, schema: DbSchema) {
    for (const t of schema.tables) this.rows.set(t.name.toLowerCase(), t.rowCount);
    this.active = dialectOf(dbPath) === 'sqlite' && schema.tables.some((t) => t.rowCount > CHECK_FROM_ROWS);
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
    return this.active && this.estimate(sql) > MAX_ROWS_READ;
  }

  close(): void {
    this.db?.close();
  }
}
