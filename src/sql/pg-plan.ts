/**
 * The planner's estimate of what a query costs on a PostgreSQL server (`EXPLAIN (FORMAT JSON)`, whose top
 * node's "Total Cost" is in the planner's units: seq_page_cost 1 per page read in order), asked without
 * running the query, through the sandbox's layers: the guard first (one read query), then one read-only
 * connection (the session of every agro connection, pg-introspect.ts connect) with a statement timeout.
 */
import type pg from 'pg';
import { assertSingleReadQuery } from './guard.ts';
import { connect } from './pg-introspect.ts';

/** Planning alone is quick; a query the planner cannot finish in this long is not planned (and not refused for it). */
const PLAN_TIMEOUT_MS = 2000;

export class PgPlanner {
  private conn?: Promise<pg.Client>;
  /** The last plan asked: one connection answers one query at a time, so each waits for the one before. */
  private queue: Promise<unknown> = Promise.resolve();
  constructor(private readonly url: string) {}

  private client(): Promise<pg.Client> {
    this.conn ??= connect(this.url).then(async (c) => {
      await c.query(`SET statement_timeout = ${PLAN_TIMEOUT_MS}`);
      return c;
    });
    return this.conn;
  }

  /** The plan's total cost, or null when the query is refused by the guard or cannot be planned (an error it will meet when run). */
  async totalCost(sql: string): Promise<number | null> {
    try {
      assertSingleReadQuery(sql, 'postgres');
    } catch {
      return null;
    }
    const c = await this.client();
    const asked = this.queue.then(async () => {
      try {
        const r = await c.query<{ 'QUERY PLAN': Array<{ Plan: { 'Total Cost': number } }> }>(`EXPLAIN (FORMAT JSON) ${sql}`);
        return r.rows[0]['QUERY PLAN'][0].Plan['Total Cost'];
      } catch {
        return null;
      }
    });
    this.queue = asked;
    return asked;
  }

  async close(): Promise<void> {
    const c = await this.conn?.catch(() => undefined);
    await c?.end().catch(() => undefined);
  }
}
