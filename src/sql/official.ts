/**
 * How the official evaluators turn a query's text into what they execute, and which rows they call
 * equal: the semantics agro's judge reproduces (pure functions; execution is judge.ts's).
 *
 * Spider: taoyds/test-suite-sql-eval `exec_eval.eval_exec_match(db, p_str, g_str, plug_value=False,
 * keep_distinct=False, progress_bar_for_each_datapoint=False)`:
 *   1. `postprocess`: '> =', '< =', '! =' lose their space (anywhere in the text, strings included);
 *   2. `remove_distinct` on both queries unless keep_distinct (sqlparse-compat.ts: first statement
 *      only, every `distinct` token dropped, an empty query raises and scores 0);
 *   3. order matters iff `'order by' in g_str.lower()` (a plain substring test, after 1 and 2);
 *   4. `replace_cur_year`: `YEAR(CURDATE())` becomes 2020 just before execution;
 *   5. result_eq (src/sql/compare.ts, with quick_rej on Python-typed cells), on every `.sqlite` file in
 *      the database's folder.
 * BIRD: bird-bench/mini_dev evaluation/evaluation_ex.py: `set(predicted_res) == set(ground_truth_res)`
 * on the raw text; the `sortedRows` variant first sorts each row's values by `str(x)` (DAMO-ConvAI
 * bird/llm/src/evaluation.py at bcbfb0c, "Sort SQL result tuples for fair comparison", PR #159).
 */
import { cmpCodePoints, pyStr } from './compare.ts';
import { tokenize } from './lexer.ts';
import type { Row } from './types.ts';
import { NoStatementError, removeDistinct } from './sqlparse-compat.ts';

/** What one query becomes before it runs: SQL to execute, or why it cannot run at all. */
export type PreparedQuery = { ok: true; sql: string } | { ok: false; message: string };

/** exec_eval.postprocess. */
export function spiderPostprocess(sql: string): string {
  return sql.replaceAll('> =', '>=').replaceAll('< =', '<=').replaceAll('! =', '!=');
}

/** exec_eval.replace_cur_year (Python's \s is Unicode whitespace, as JS's). */
export function replaceCurYear(sql: string): string {
  return sql.replace(/YEAR\s*\(\s*CURDATE\s*\(\s*\)\s*\)\s*/gi, '2020');
}

export interface SpiderPair {
  gold: PreparedQuery;
  pred: PreparedQuery;
  /** `'order by' in g_str.lower()`. */
  ordered: boolean;
}

function prepare(sql: string, keepDistinct: boolean): { text: string; q: PreparedQuery } {
  let text = spiderPostprocess(sql);
  if (!keepDistinct) {
    try {
      text = removeDistinct(text);
    } catch (err) {
      if (err instanceof NoStatementError) return { text: '', q: { ok: false, message: err.message } };
      throw err;
    }
  }
  return { text, q: { ok: true, sql: replaceCurYear(text) } };
}

/** One query as eval_exec_match runs it, and whether row order counts when it is the gold query (`'order by' in g_str.lower()`). */
export function spiderQuery(sql: string, opts: { keepDistinct?: boolean } = {}): { query: PreparedQuery; ordered: boolean } {
  const p = prepare(sql, opts.keepDistinct ?? false);
  return { query: p.q, ordered: p.text.toLowerCase().includes('order by') };
}

/** Both queries as eval_exec_match runs them, and whether row order counts. */
export function spiderPair(goldSql: string, predSql: string, opts: { keepDistinct?: boolean } = {}): SpiderPair {
  const g = spiderQuery(goldSql, opts);
  return { gold: g.query, pred: spiderQuery(predSql, opts).query, ordered: g.ordered };
}

/**
 * True when SQLite would find no statement in the text (only comments, whitespace and semicolons).
 * Python's sqlite3 runs such text and returns no rows, so the official scripts score it as an empty
 * result (equal to an empty gold result); agro's guard would refuse it, so the caller answers [].
 */
export function isEmptyStatement(sql: string): boolean {
  return tokenize(sql).every((t) => t.kind === 'punct' && t.text === ';');
}

/** The PR #159 variant's `sort_tuple`: each row's values sorted by `str(x)` (stable). */
export function sortRowValues(rows: Row[]): Row[] {
  return rows.map((row) => row.map((v) => ({ v, k: pyStr(v) })).sort((a, b) => cmpCodePoints(a.k, b.k)).map((c) => c.v));
}
