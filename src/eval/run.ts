import { resultsMatch } from '../sql/compare.ts';
import { redactUrl } from '../sql/postgres.ts';
import type { CompareMode, ExecResult, Row, SqlExecutor } from '../sql/types.ts';
import { folderDatabases, resolveDatabases, suiteVariants } from '../data/databases.ts';
import type { Dataset, EvalItem } from '../data/types.ts';
import { summarize } from './metrics.ts';
import { mapConcurrent } from '../util/concurrency.ts';
import { isEmptyStatement, sortRowValues, spiderPair, type PreparedQuery } from './official.ts';
import { UNLABELED, type EvalReport, type PredErrorKind, type QuestionResult } from './types.ts';

/** Defaults in one place. 30 s per query is BIRD's meta_time_out. */
export const EVAL_DEFAULTS = {
  mode: 'bird' as CompareMode,
  timeoutMs: 30_000,
  /**
   * Results are compared whole, so the caps sit far above what a question's answer needs. 64 MiB keeps
   * one attacking prediction (a 120 MB blob) under 1 GB in all: the executor, the transfer and the
   * comparison each hold about one copy of what is kept.
   */
  maxRows: 1_000_000,
  maxBytes: 64 * 1024 * 1024,
  /** Questions in flight at once; each runs its gold and predicted query side by side. */
  concurrency: 4,
  floatTol: 0,
  keepDistinct: false,
  birdSortedRows: false,
};

/** How `evaluate` runs; every field but `dbRoot` has its default in `EVAL_DEFAULTS`. */
export interface EvaluateOptions {
  /** Databases as `<dbRoot>/<db_id>/<db_id>.sqlite`; recorded in the report. */
  dbRoot: string;
  /** The database of each db_id when they do not follow dbRoot's layout (a factory output's manifest names its own). */
  databases?: (dbId: string) => string;
  mode?: CompareMode;
  /** Wall-clock limit per query in milliseconds (BIRD's meta_time_out: 30000). */
  timeoutMs?: number;
  /** Test-suite mode: variant databases under `<suiteDir>/<db_id>/*.sqlite`. */
  suiteDir?: string;
  /** Relative tolerance for numbers; 0 compares exactly, as the official scripts do. */
  floatTol?: number;
  /** Questions in flight at once. */
  concurrency?: number;
  /** Rows kept per result; a cut result scores as a mismatch. */
  maxRows?: number;
  /** Bytes kept per result; a cut result scores as a mismatch. */
  maxBytes?: number;
  /** Spider: keep DISTINCT (upstream's --keep_distinct); by default it is removed from both queries. */
  keepDistinct?: boolean;
  /** BIRD: sort each row's values before the set comparison (DAMO-ConvAI PR #159 variant). */
  birdSortedRows?: boolean;
  /** Names recorded in the report (the files the data and predictions came from). */
  predLabel?: string;
  /** Called after each question. */
  onProgress?: (done: number, total: number) => void;
}

type Settings = Required<Omit<EvaluateOptions, 'suiteDir' | 'onProgress' | 'predLabel' | 'databases'>> & { suiteDir?: string };
type Failure = Extract<ExecResult, { ok: false }>;

function predErrorKind(r: Failure): PredErrorKind {
  if (r.error === 'syntax' || r.error === 'refused') return r.error;
  return 'runtime';
}

/**
 * Runs one prepared query as the official scripts would: text they cannot run at all is a syntax
 * error, text with no statement returns no rows (Python's sqlite3 does so), the rest goes to the
 * executor with INTEGER and REAL cells kept apart (bigint vs number), as Python keeps int and float.
 */
async function runPrepared(exec: SqlExecutor, db: string, q: PreparedQuery, s: Settings): Promise<ExecResult> {
  if (!q.ok) return { ok: false, error: 'syntax', message: q.message, elapsedMs: 0 };
  if (isEmptyStatement(q.sql)) return { ok: true, columns: [], rows: [], truncated: false, elapsedMs: 0 };
  return exec.execute(db, q.sql, { timeoutMs: s.timeoutMs, maxRows: s.maxRows, maxBytes: s.maxBytes, safeIntegers: true });
}

interface Plan {
  gold: PreparedQuery;
  pred: PreparedQuery;
  same: (pred: Row[], gold: Row[]) => boolean;
}

/** The mode's official semantics for one question: what runs, and which results count as equal. */
function plan(goldSql: string, predSql: string, s: Settings): Plan {
  if (s.mode === 'spider') {
    const p = spiderPair(goldSql, predSql, { keepDistinct: s.keepDistinct });
    return { gold: p.gold, pred: p.pred, same: (pr, gr) => resultsMatch(pr, gr, { mode: 'spider', ordered: p.ordered, floatTol: s.floatTol, pythonTypes: true }) };
  }
  const sorted = s.birdSortedRows;
  return {
    gold: { ok: true, sql: goldSql },
    pred: { ok: true, sql: predSql },
    same: (pr, gr) => resultsMatch(sorted ? sortRowValues(pr) : pr, sorted ? sortRowValues(gr) : gr, { mode: 'bird', floatTol: s.floatTol }),
  };
}

type Verdict = Pick<QuestionResult, 'outcome' | 'errorKind' | 'message'>;

/** Gold and prediction on one database. */
async function onDatabase(exec: SqlExecutor, db: string, pl: Plan, s: Settings): Promise<{ verdict: Verdict; goldMs: number; predMs: number }> {
  const [g, p] = await Promise.all([runPrepared(exec, db, pl.gold, s), runPrepared(exec, db, pl.pred, s)]);
  const ms = { goldMs: Math.round(g.elapsedMs), predMs: Math.round(p.elapsedMs) };
  if (!g.ok) return { ...ms, verdict: { outcome: 'gold_error', message: `gold query failed: ${g.error}: ${g.message}` } };
  if (!p.ok) {
    if (p.error === 'timeout') return { ...ms, verdict: { outcome: 'timeout', message: p.message } };
    return { ...ms, verdict: { outcome: 'pred_error', errorKind: predErrorKind(p), message: p.message } };
  }
  // A cut result is not the answer: comparing prefixes could call a wrong query right.
  if (g.truncated || p.truncated) return { ...ms, verdict: { outcome: 'mismatch', message: 'a result was cut at the row/byte cap' } };
  return { ...ms, verdict: { outcome: pl.same(p.rows, g.rows) ? 'match' : 'mismatch' } };
}

/**
 * One question: gold and prediction on the original database, scored in detail; then, as a test
 * suite, on every other database that must agree too (Spider: the other `.sqlite` files in the
 * database's folder, as upstream; any mode: `<suiteDir>/<db_id>/*.sqlite`). The first disagreement
 * decides.
 */
async function evaluateOne(item: EvalItem, pred: string, dbPath: string, variants: string[], exec: SqlExecutor, s: Settings): Promise<QuestionResult> {
  const base: QuestionResult = {
    index: item.index,
    ...(item.questionId !== undefined ? { questionId: item.questionId } : {}),
    dbId: item.dbId,
    bucket: item.difficulty ?? UNLABELED,
    outcome: 'match',
    pred,
    gold: item.gold,
  };
  const pl = plan(item.gold, pred, s);
  const first = await onDatabase(exec, dbPath, pl, s);
  const head: QuestionResult = { ...base, goldMs: first.goldMs, predMs: first.predMs, ...first.verdict };
  if (first.verdict.outcome !== 'match' || variants.length === 0) {
    return s.suiteDir && first.verdict.outcome === 'match' ? { ...head, variantsChecked: 0 } : head;
  }
  const results = await Promise.all(variants.map((db) => onDatabase(exec, db, pl, s)));
  const bad = results.findIndex((r) => r.verdict.outcome !== 'match');
  if (bad < 0) return { ...head, variantsChecked: variants.length };
  const v = results[bad].verdict;
  // A server variant's URL is the database's, password and all: never into a report.
  const where = redactUrl(variants[bad]);
  return {
    ...head,
    ...v,
    message: `on ${where}: ${v.message ?? 'results differ on a variant database'}`,
    failedVariant: where,
    variantsChecked: variants.length,
  };
}


/**
 * Execution accuracy of `predictions` (one SQL string per item) against the dataset's gold queries.
 * Every failure of a predicted query (error, refusal, timeout) is scored as wrong; nothing here throws
 * for bad SQL. Unknown db_ids fail up front, before any query runs.
 */
export async function evaluate(dataset: Dataset, predictions: readonly string[], exec: SqlExecutor, options: EvaluateOptions): Promise<EvalReport> {
  if (predictions.length !== dataset.items.length) {
    throw new RangeError(`evaluate: ${predictions.length} predictions for ${dataset.items.length} questions`);
  }
  const s: Settings = {
    dbRoot: options.dbRoot,
    mode: options.mode ?? EVAL_DEFAULTS.mode,
    timeoutMs: options.timeoutMs ?? EVAL_DEFAULTS.timeoutMs,
    floatTol: options.floatTol ?? EVAL_DEFAULTS.floatTol,
    concurrency: options.concurrency ?? EVAL_DEFAULTS.concurrency,
    maxRows: options.maxRows ?? EVAL_DEFAULTS.maxRows,
    maxBytes: options.maxBytes ?? EVAL_DEFAULTS.maxBytes,
    keepDistinct: options.keepDistinct ?? EVAL_DEFAULTS.keepDistinct,
    birdSortedRows: options.birdSortedRows ?? EVAL_DEFAULTS.birdSortedRows,
    ...(options.suiteDir !== undefined ? { suiteDir: options.suiteDir } : {}),
  };
  const ids = dataset.items.map((it) => it.dbId);
  const dbs = options.databases ? new Map(ids.map((id) => [id, options.databases!(id)])) : resolveDatabases(s.dbRoot, ids);
  const variants = new Map(
    [...dbs].map(([id, path]) => [id, [...(s.mode === 'spider' ? folderDatabases(path) : []), ...(s.suiteDir ? suiteVariants(s.suiteDir, id, path) : [])]]),
  );
  let done = 0;
  const questions = await mapConcurrent(dataset.items, s.concurrency, undefined, async (item, i) => {
    const r = await evaluateOne(item, predictions[i], dbs.get(item.dbId)!, variants.get(item.dbId)!, exec, s);
    options.onProgress?.(++done, dataset.items.length);
    return r;
  });
  return {
    version: 1,
    data: dataset.path,
    pred: options.predLabel ?? '(in memory)',
    // A server's URL may carry a password: never into a report.
    dbRoot: redactUrl(s.dbRoot),
    mode: s.mode,
    timeoutMs: s.timeoutMs,
    ...(s.suiteDir ? { suite: s.suiteDir } : {}),
    summary: summarize(questions, dataset.format),
    questions,
  };
}
