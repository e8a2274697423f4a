/**
 * Stage 3: execution verification. A pair survives only when its SQL runs within the time limit
 * on the original database and gives a result that is non-empty, not all NULL, of bounded size,
 * the same when run twice, and not degenerate: no WHERE/HAVING condition that the data makes
 * always true (dropping it changes nothing), no set operation whose other side adds or removes
 * nothing, no aggregate over an empty set.
 */
import { resultsMatch } from '../sql/compare.ts';
import type { ExecResult, Row } from '../sql/types.ts';
import type { QueryAst, SelectAst } from './ast.ts';
import { printCondIn, printQuery } from './print.ts';
import type { Stage, StageContext, SynthPair } from './types.ts';

export const MAX_RESULT_ROWS = 200;

type Ok = Extract<ExecResult, { ok: true }>;

async function run(ctx: StageContext, sql: string, db = ctx.dbPath): Promise<ExecResult> {
  return ctx.executor.execute(db, sql, { timeoutMs: ctx.timeoutMs, maxRows: MAX_RESULT_ROWS + 1 });
}

const same = (a: Row[], b: Row[], ordered: boolean) => resultsMatch(a, b, { mode: 'spider', ordered });

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

function isEmptyAggregate(q: QueryAst, rows: Row[]): boolean {
  if (q.kind !== 'select' || q.groupBy.length || rows.length !== 1) return false;
  return q.columns.some((e, i) => (e.kind === 'agg' || e.kind === 'pct') && (rows[0][i] === null || (e.kind === 'agg' && e.fn === 'COUNT' && rows[0][i] === 0)));
}

/** Why the pair fails verification, or null when it passes. */
export async function verifyPair(ctx: StageContext, p: SynthPair): Promise<string | null> {
  const r = await run(ctx, p.sql);
  if (!r.ok) return r.error === 'timeout' ? 'timeout' : 'exec_error';
  if (r.truncated || r.rows.length > MAX_RESULT_ROWS) return 'result_too_large';
  if (r.rows.length === 0) return 'empty_result';
  if (r.rows.every((row) => row.every((v) => v === null))) return 'all_null';
  if (isEmptyAggregate(p.ast, r.rows)) return 'empty_aggregate';
  const ordered = isOrdered(p.ast);
  const again = await run(ctx, p.sql);
  if (!again.ok || !same(again.rows, r.rows, ordered)) return 'nondeterministic';
  const reason = await degenerate(ctx, p.ast, r as Ok, ordered);
  if (reason) return reason;
  p.resultRows = r.rows.length;
  return null;
}

async function degenerate(ctx: StageContext, q: QueryAst, r: Ok, ordered: boolean): Promise<string | null> {
  if (q.kind === 'setop') {
    for (const side of [q.left, q.right]) {
      const s = await run(ctx, printQuery(side));
      if (s.ok && same(s.rows, r.rows, false)) return 'redundant_set_operation';
    }
    return null;
  }
  const visible = visibleWhere(q);
  if (q.where.length && visible.length) {
    for (const i of visible) {
      const without: SelectAst = { ...q, where: q.where.filter((_, j) => j !== i) };
      // Cheap first: is there any row the filter removes? (stops at the first one on big tables)
      const probe: SelectAst = { ...without, columns: [{ kind: 'lit', value: 1 }], distinct: false, groupBy: [], having: [], orderBy: [], limit: null };
      const cond = printCondIn(q, q.where[i]);
      const probeSql = `${printQuery(probe)} ${without.where.length ? 'AND' : 'WHERE'} (${cond}) IS NOT 1 LIMIT 1`;
      const pr = await run(ctx, probeSql);
      if (pr.ok && pr.rows.length === 0) return 'redundant_filter'; // same input rows, same result
      // A query that keeps every input row as an output row changes when a row is added.
      const rowPreserving = !q.distinct && !q.groupBy.length && q.limit === null && q.columns.every((e) => e.kind === 'col' || e.kind === 'arith');
      if (pr.ok && rowPreserving) continue;
      const s = await run(ctx, printQuery(without));
      if (s.ok && !s.truncated && same(s.rows, r.rows, ordered)) return 'redundant_filter';
    }
  }
  if (q.having.length) {
    const s = await run(ctx, printQuery({ ...q, having: [] }));
    if (s.ok && !s.truncated && same(s.rows, r.rows, ordered)) return 'redundant_having';
  }
  return null;
}

export const verifyStage: Stage<SynthPair, SynthPair> = {
  name: 'verify',
  async run(items, ctx) {
    const out: SynthPair[] = [];
    ctx.progress.start('verify', items.length);
    for (const p of items) {
      const reason = await verifyPair(ctx, p);
      ctx.progress.tick();
      if (reason) {
        ctx.reject(p, reason);
        continue;
      }
      p.provenance.stages.push('verify');
      p.provenance.checks.push('exec', 'non_empty', 'deterministic', 'non_degenerate');
      out.push(p);
    }
    ctx.progress.stop();
    return out;
  },
};
