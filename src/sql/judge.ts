/**
 * "Is this answer right": the one judge of a predicted query against its gold query. The RL reward and the
 * in-training evaluation (agent/sql-env.ts), `agro eval` and `agro predict` (eval/run.ts) all ask it, with the
 * settings below, so a prediction gets the same verdict wherever it is scored.
 *
 * - What runs: BIRD runs both texts as they are; Spider runs them as test-suite-sql-eval does (official.ts:
 *   spaced comparison operators joined, DISTINCT removed unless keepDistinct, YEAR(CURDATE()) replaced, order
 *   counting iff the gold text says `order by`). Text with no statement returns no rows, as Python's sqlite3.
 * - How: under the judge's time limit and caps, with INTEGER and REAL cells kept apart (bigint vs number) as
 *   Python keeps int and float apart.
 * - Which results are equal: compare.ts in the mode's semantics. A result cut at a cap is never equal: comparing
 *   prefixes could call a wrong query right.
 */
import { z } from 'zod';
import { resultsMatch } from './compare.ts';
import { isEmptyStatement, sortRowValues, spiderQuery, type PreparedQuery } from './official.ts';
import type { ExecOptions, ExecResult, SqlExecutor } from './types.ts';

export const judgeConfigSchema = z.strictObject({
  mode: z.enum(['bird', 'spider']).default('bird'),
  /** Wall-clock limit per query: BIRD's meta_time_out. */
  timeoutMs: z.number().int().positive().default(30_000),
  /**
   * Results are compared whole, so the caps sit far above what a question's answer needs. 64 MiB keeps one
   * attacking prediction (a 120 MB blob) under 1 GB in all: the executor, the transfer and the comparison each
   * hold about one copy of what is kept. A cut result scores as a mismatch.
   */
  maxRows: z.number().int().positive().default(1_000_000),
  maxBytes: z.number().int().positive().default(64 * 1024 * 1024),
  /** Relative tolerance for numbers; 0 compares exactly, as the official scripts do (compare.ts). */
  floatTol: z.number().min(0).default(0),
  /** Spider: keep DISTINCT (upstream's --keep_distinct); by default it is removed from both queries. */
  keepDistinct: z.boolean().default(false),
  /** BIRD: sort each row's values before the set comparison (DAMO-ConvAI PR #159 variant). */
  birdSortedRows: z.boolean().default(false),
});
export type JudgeConfig = z.infer<typeof judgeConfigSchema>;

/** The judge's defaults: the one home of its limits. */
export const JUDGE_DEFAULTS: Readonly<JudgeConfig> = Object.freeze(judgeConfigSchema.parse({}));

/** Why a question counted as right or wrong. Only `match` is correct. */
export const OUTCOMES = ['match', 'mismatch', 'pred_error', 'timeout', 'gold_error'] as const;
export type Outcome = (typeof OUTCOMES)[number];
/** How a predicted query failed: it did not parse, it failed while running, or the sandbox refused it (a write). */
export const PRED_ERROR_KINDS = ['syntax', 'runtime', 'refused'] as const;
export type PredErrorKind = (typeof PRED_ERROR_KINDS)[number];

/** The judge's answer for one prediction on one database. */
export interface Verdict {
  outcome: Outcome;
  /** For pred_error: what went wrong with the predicted query. */
  errorKind?: PredErrorKind;
  /** The executor's message for errors and timeouts, or why a mismatch was called. */
  message?: string;
}

/** A gold query as the judge runs it: prepared once per question, whatever the number of predictions. */
export interface JudgedGold {
  sql: string;
  query: PreparedQuery;
  /** Spider: rows must be in the gold's order. */
  ordered: boolean;
}

type Failure = Extract<ExecResult, { ok: false }>;

function predErrorKind(r: Failure): PredErrorKind {
  if (r.error === 'syntax' || r.error === 'refused') return r.error;
  return 'runtime';
}

export class Judge {
  readonly config: JudgeConfig;

  constructor(config: Partial<JudgeConfig> = {}) {
    this.config = judgeConfigSchema.parse(config);
  }

  /** How every query of the judge runs. */
  get execOptions(): ExecOptions {
    const c = this.config;
    return { timeoutMs: c.timeoutMs, maxRows: c.maxRows, maxBytes: c.maxBytes, safeIntegers: true };
  }

  gold(goldSql: string): JudgedGold {
    if (this.config.mode === 'spider') {
      const g = spiderQuery(goldSql, { keepDistinct: this.config.keepDistinct });
      return { sql: goldSql, query: g.query, ordered: g.ordered };
    }
    return { sql: goldSql, query: { ok: true, sql: goldSql }, ordered: false };
  }

  /** What runs for a predicted query. */
  prediction(predSql: string): PreparedQuery {
    return this.config.mode === 'spider' ? spiderQuery(predSql, { keepDistinct: this.config.keepDistinct }).query : { ok: true, sql: predSql };
  }

  /**
   * Runs one prepared query: text that cannot run at all is a syntax error, text with no statement returns no
   * rows (Python's sqlite3 does so), the rest goes to the executor under the judge's limits.
   */
  run(exec: SqlExecutor, db: string, q: PreparedQuery): Promise<ExecResult> {
    if (!q.ok) return Promise.resolve({ ok: false, error: 'syntax', message: q.message, elapsedMs: 0 });
    if (isEmptyStatement(q.sql)) return Promise.resolve({ ok: true, columns: [], rows: [], truncated: false, elapsedMs: 0 });
    return exec.execute(db, q.sql, this.execOptions);
  }

  /** The verdict on one database, from the results of the gold query and of the prediction as the judge ran them. */
  verdict(gold: JudgedGold, g: ExecResult, p: ExecResult): Verdict {
    if (!g.ok) return { outcome: 'gold_error', message: `gold query failed: ${g.error}: ${g.message}` };
    if (!p.ok) {
      if (p.error === 'timeout') return { outcome: 'timeout', message: p.message };
      return { outcome: 'pred_error', errorKind: predErrorKind(p), message: p.message };
    }
    if (g.truncated || p.truncated) return { outcome: 'mismatch', message: 'a result was cut at the row/byte cap' };
    const c = this.config;
    if (c.mode === 'spider') return { outcome: resultsMatch(p.rows, g.rows, { mode: 'spider', ordered: gold.ordered, floatTol: c.floatTol, pythonTypes: true }) ? 'match' : 'mismatch' };
    const sorted = c.birdSortedRows;
    return { outcome: resultsMatch(sorted ? sortRowValues(p.rows) : p.rows, sorted ? sortRowValues(g.rows) : g.rows, { mode: 'bird', floatTol: c.floatTol }) ? 'match' : 'mismatch' };
  }
}
