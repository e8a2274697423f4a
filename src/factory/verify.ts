/**
 * Stage 3: execution verification. A pair survives only when its SQL runs within the time limit
 * on the original database and gives a result that is non-empty, not all NULL, of bounded size,
 * and not degenerate: no WHERE/HAVING condition that the data makes
 * always true (dropping it changes nothing), no set operation whose other side adds or removes
 * nothing, no aggregate over an empty set.
 */
import { resultsMatch } from '../sql/compare.ts';
import type { ExecResult, Row } from '../sql/types.ts';
import type { QueryAst, SelectAst } from './ast.ts';
import { printCondIn, printQuery } from './print.ts';
import { isNotTrue } from '../sql/dialect.ts';
import type { Stage, StageContext, SynthPair } from './types.ts';
import { checkPairs } from './check-pairs.ts';

export const MAX_RESULT_ROWS = 200;

type Ok = Extract<ExecResult, { ok: true }>;

/** Verification gives each query at most this long (or --timeout when shorter): a slow pair is a poor pair to train on. */
export const VERIFY_TIMEOUT_MS = 1500;

async function run(ctx: StageContext, sql: string, db = ctx.dbPath): Promise<ExecResult> {
  return ctx.executor.execute(db, sql, { timeoutMs: Math.min(ctx.timeoutMs, VERIFY_TIMEOUT_MS), maxRows: MAX_RESULT_ROWS + 1 });
}

const same = (a: Row[], b: Row[], ordered: boolean) => resultsMatch(a, b, { mode: 'spider', ordered });

function resultWidth(p: SynthPair): number {
  return p.ast.kind === 'select' ? p.ast.columns.length : p.ast.left.columns.length;
}

export function isOrdered(q: QueryAst): boolean {
  return q.kind === 'select' && q.orderBy.length > 0;
}

/** Conditions a reader sees in the question (the NOT NULL guard on a ranked column is implicit). */
export function visibleWhere(q: SelectAst): number[] {
  const idx: number[] = [];
  q.where.forEach((c, i) => {
    const implicit = c.kind === 'null' && c.negated && q.limit !== null;
    if (!implicit) idx.push(i);
  });
  return idx;
}

/** A one-cell answer that says next to nothing (0, 1, 100: a count of one row, a share of all). */
export function isTrivialValue(rows: Row[]): boolean {
  if (rows.length !== 1 || rows[0].length !== 1) return false;
  const v = rows[0][0];
  return typeof v === 'number' && (v === 0 || v === 1 || v === 100);
}

/** Distinct rows as strings: set operations compare sets, not multisets. */
const rowSet = (rows: Row[]) => new Set(rows.map((r) => JSON.stringify(r, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))));
const sameSet = (a: Row[], b: Row[]) => {
  const x = rowSet(a);
  const y = rowSet(b);
  return x.size === y.size && [...x].every((k) => y.has(k));
};

export function isEmptyAggregate(q: QueryAst, rows: Row[]): boolean {
  if (q.kind !== 'select' || q.groupBy.length || rows.length !== 1) return false;
  return q.columns.some((e, i) => (e.kind === 'agg' || e.kind === 'pct') && (rows[0][i] === null || (e.kind === 'agg' && e.fn === 'COUNT' && rows[0][i] === 0)));
}

/** Why the pair fails verification, or null when it passes. */
export async function verifyPair(ctx: StageContext, p: SynthPair): Promise<string | null> {
  // Rejected from the text alone, before anything runs (on a big table each side can be a scan).
  if (p.ast.kind === 'setop' && printQuery(p.ast.left, ctx.dialect) === printQuery(p.ast.right, ctx.dialect)) return 'identical_set_sides';
  const r = await run(ctx, p.sql);
  if (!r.ok) return r.error === 'timeout' ? 'timeout' : 'exec_error';
  if (r.truncated || r.rows.length > MAX_RESULT_ROWS) return 'result_too_large';
  if (r.rows.length === 0) return 'empty_result';
  if (r.rows.every((row) => row.every((v) => v === null))) return 'all_null';
  if (isEmptyAggregate(p.ast, r.rows)) return 'empty_aggregate';
  // A computed 0, 1 or 100 (a count, a share) says little; a row's own value does ("which store has the most rentals": 1).
  const computed = p.ast.kind === 'select' && p.ast.columns.length === 1 && p.ast.columns[0].kind !== 'col';
  if (computed && isTrivialValue(r.rows)) return 'trivial_result';
  const ordered = isOrdered(p.ast);
  // No second run to test determinism: SQLite runs the same query on the same file the same way.
  // What could differ (rows tied at a LIMIT) is tested by the ambiguity stage, which flips the
  // tie-breakers on the original and every variant.
  const reason = await degenerate(ctx, p.ast, r as Ok, ordered);
  if (reason) return reason;
  p.resultRows = r.rows.length;
  p.result = JSON.stringify(r.rows, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v instanceof Uint8Array ? `<${v.length} bytes>` : v));
  return null;
}

async function degenerate(ctx: StageContext, q: QueryAst, r: Ok, ordered: boolean): Promise<string | null> {
  if (q.kind === 'setop') {
    for (const side of [printQuery(q.left, ctx.dialect), printQuery(q.right, ctx.dialect)]) {
      const s = await run(ctx, side);
      if (s.ok && sameSet(s.rows, r.rows)) return 'redundant_set_operation';
    }
    return null;
  }
  if (q.limit !== null && !q.orderBy.length) return 'limit_without_order';
  if (q.limit !== null) {
    // "the top 5" of a result that has 5 rows or fewer anyway: the LIMIT says nothing.
    const all = await ctx.executor.execute(ctx.dbPath, printQuery({ ...q, limit: q.limit + 1 }, ctx.dialect), { timeoutMs: Math.min(ctx.timeoutMs, VERIFY_TIMEOUT_MS), maxRows: q.limit + 1 });
    if (all.ok && all.rows.length <= q.limit) return 'limit_not_needed';
  }
  const visible = visibleWhere(q);
  if (q.where.length && visible.length) {
    for (const i of visible) {
      const without: SelectAst = { ...q, where: q.where.filter((_, j) => j !== i) };
      // Cheap first: is there any row the filter removes? (stops at the first one on big tables)
      const probe: SelectAst = { ...without, columns: [{ kind: 'lit', value: 1 }], distinct: false, groupBy: [], having: [], orderBy: [], limit: null };
      const cond = printCondIn(q, q.where[i], ctx.dialect);
      const probeSql = `${printQuery(probe, ctx.dialect)} ${without.where.length ? 'AND' : 'WHERE'} ${isNotTrue(cond, ctx.dialect)} LIMIT 1`;
      const pr = await run(ctx, probeSql);
      if (pr.ok && pr.rows.length === 0) return 'redundant_filter'; // same input rows, same result
      // A query that keeps every input row as an output row changes when a row is added.
      const rowPreserving = !q.distinct && !q.groupBy.length && q.limit === null && q.columns.every((e) => e.kind === 'col' || e.kind === 'arith');
      if (pr.ok && rowPreserving) continue;
      const withoutSql = printQuery(without, ctx.dialect);
      // Without its filter a query may read a whole big table: unverifiable in time, so dropped.
      if (await ctx.tooCostly?.(withoutSql)) return 'too_costly_to_verify';
      const s = await run(ctx, withoutSql);
      if (s.ok && !s.truncated && same(s.rows, r.rows, ordered)) return 'redundant_filter';
    }
  }
  if (q.having.length) {
    const s = await run(ctx, printQuery({ ...q, having: [] }, ctx.dialect));
    if (s.ok && !s.truncated && same(s.rows, r.rows, ordered)) return 'redundant_having';
  }
  return null;
}

/** Most single-value answers (one row, one column) a run keeps, as a share of the candidates verified. */
export const SINGLE_VALUE_SHARE = 0.3;

export const verifyStage: Stage<SynthPair, SynthPair> = {
  name: 'verify',
  run(items, ctx) {
    let single = 0;
    return checkPairs(ctx, 'verify', items, (p) => verifyPair(ctx, p), ['exec', 'non_empty', 'non_degenerate'], (p) => {
      if (p.resultRows !== 1 || resultWidth(p) !== 1) return null;
      // The share is of the candidates, not of those kept so far, so a run is not starved of pairs.
      if (single + 1 > Math.max(3, SINGLE_VALUE_SHARE * items.length)) return 'single_value_cap';
      single++;
      return null;
    });
  },
};
