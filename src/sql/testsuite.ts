/**
 * Test-suite accuracy (Zhong et al. 2020, Spider's test-suite-sql-eval): a prediction is right only
 * when it matches the gold query on every database of the suite: the original plus variant databases
 * with the same schema whose data expose queries that are only accidentally right.
 */
import { AgroError } from '../errors.ts';
import { hasOrderBy, resultsMatch } from './compare.ts';
import type { CompareMode, ExecOptions, ExecResult, SqlExecutor } from './types.ts';

export interface TestSuiteOptions extends ExecOptions {
  mode: CompareMode;
  /** Spider mode: rows must be in order. Default: the gold query has a top-level ORDER BY. */
  ordered?: boolean;
  floatTol?: number;
}

export interface TestSuiteResult {
  match: boolean;
  perDb: Array<{ db: string; match: boolean; error?: string }>;
}

function why(r: Extract<ExecResult, { ok: false }>): string {
  return `${r.error}: ${r.message}`;
}

export async function testSuiteMatch(
  executor: SqlExecutor,
  predSql: string,
  goldSql: string,
  dbPaths: string[],
  opts: TestSuiteOptions,
): Promise<TestSuiteResult> {
  if (dbPaths.length === 0) throw new AgroError('usage', 'testSuiteMatch needs at least one database');
  const ordered = opts.ordered ?? (opts.mode === 'spider' && hasOrderBy(goldSql));
  const exec: ExecOptions = { timeoutMs: opts.timeoutMs, maxRows: opts.maxRows, maxBytes: opts.maxBytes };
  for (const k of Object.keys(exec) as Array<keyof ExecOptions>) if (exec[k] === undefined) delete exec[k];
  const perDb = await Promise.all(
    dbPaths.map(async (db) => {
      const [gold, pred] = await Promise.all([executor.execute(db, goldSql, exec), executor.execute(db, predSql, exec)]);
      if (!gold.ok) return { db, match: false, error: `gold query failed: ${why(gold)}` };
      if (!pred.ok) return { db, match: false, error: `predicted query failed: ${why(pred)}` };
      // A cut result is not the answer: comparing prefixes could call a wrong query right.
      if (gold.truncated || pred.truncated) return { db, match: false, error: 'result truncated by maxRows/maxBytes; raise the caps to compare' };
      return { db, match: resultsMatch(pred.rows, gold.rows, { mode: opts.mode, ordered, floatTol: opts.floatTol }) };
    }),
  );
  return { match: perDb.every((d) => d.match), perDb };
}
