import { hasOrderBy, resultsMatch } from '../sql/compare.ts';
import { testSuiteMatch } from '../sql/testsuite.ts';
import type { CompareMode, ExecResult, SqlExecutor } from '../sql/types.ts';
import { resolveDatabases, suiteVariants } from '../data/databases.ts';
import { summarize } from './metrics.ts';
import type { Dataset, EvalItem } from '../data/types.ts';
import { UNLABELED, type EvalReport, type PredErrorKind, type QuestionResult } from './types.ts';

/** Defaults in one place. 30 s per query is BIRD's meta_time_out. */
export const EVAL_DEFAULTS = {
  mode: 'bird' as CompareMode,
  timeoutMs: 30_000,
  /** Results are compared whole, so the caps sit far above what a question's answer needs. */
  maxRows: 1_000_000,
  maxBytes: 256 * 1024 * 1024,
  /** Questions in flight at once; each runs its gold and predicted query side by side. */
  concurrency: 4,
  floatTol: 0,
};

export interface EvaluateOptions {
  dbRoot: string;
  mode?: CompareMode;
  timeoutMs?: number;
  /** Test-suite mode: variant databases under `<suiteDir>/<db_id>/*.sqlite`. */
  suiteDir?: string;
  floatTol?: number;
  concurrency?: number;
  maxRows?: number;
  maxBytes?: number;
  /** Names recorded in the report (the files the data and predictions came from). */
  predLabel?: string;
  onProgress?: (done: number, total: number) => void;
}

type Settings = Required<Omit<EvaluateOptions, 'suiteDir' | 'onProgress' | 'predLabel'>> & { suiteDir?: string };

function predErrorKind(r: Extract<ExecResult, { ok: false }>): PredErrorKind {
  if (r.error === 'syntax' || r.error === 'refused') return r.error;
  return 'runtime';
}

/** How a failure on a variant database (testSuiteMatch's per-database error text) is scored. */
function variantFailure(error: string | undefined): Pick<QuestionResult, 'outcome' | 'errorKind'> {
  const m = /^predicted query failed: (\w+):/.exec(error ?? '');
  if (!m) return { outcome: 'mismatch' };
  if (m[1] === 'timeout') return { outcome: 'timeout' };
  return { outcome: 'pred_error', errorKind: m[1] === 'syntax' || m[1] === 'refused' ? m[1] : 'runtime' };
}

/**
 * One question: gold and prediction on the original database, scored in detail; in test-suite mode a
 * match there must also hold on every variant database (src/sql/testsuite.ts), else it is wrong.
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
  const execOpts = { timeoutMs: s.timeoutMs, maxRows: s.maxRows, maxBytes: s.maxBytes };
  const [g, p] = await Promise.all([exec.execute(dbPath, item.gold, execOpts), exec.execute(dbPath, pred, execOpts)]);
  base.goldMs = Math.round(g.elapsedMs);
  base.predMs = Math.round(p.elapsedMs);
  if (!g.ok) return { ...base, outcome: 'gold_error', message: `gold query failed: ${g.error}: ${g.message}` };
  if (!p.ok) {
    if (p.error === 'timeout') return { ...base, outcome: 'timeout', message: p.message };
    return { ...base, outcome: 'pred_error', errorKind: predErrorKind(p), message: p.message };
  }
  // A cut result is not the answer: comparing prefixes could call a wrong query right.
  if (g.truncated || p.truncated) return { ...base, outcome: 'mismatch', message: 'a result was cut at the row/byte cap' };
  const ordered = s.mode === 'spider' && hasOrderBy(item.gold);
  if (!resultsMatch(p.rows, g.rows, { mode: s.mode, ordered, floatTol: s.floatTol })) return { ...base, outcome: 'mismatch' };
  if (!s.suiteDir) return base;
  if (variants.length === 0) return { ...base, variantsChecked: 0 };
  const suite = await testSuiteMatch(exec, pred, item.gold, variants, { mode: s.mode, ordered, floatTol: s.floatTol, ...execOpts });
  if (suite.match) return { ...base, variantsChecked: variants.length };
  const first = suite.perDb.find((d) => !d.match)!;
  return {
    ...base,
    ...variantFailure(first.error),
    failedVariant: first.db,
    message: first.error ?? 'results differ on a variant database',
    variantsChecked: variants.length,
  };
}

/** Runs `fn` over `items` with at most `limit` in flight, keeping results in input order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return out;
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
    ...(options.suiteDir !== undefined ? { suiteDir: options.suiteDir } : {}),
  };
  const dbs = resolveDatabases(s.dbRoot, dataset.items.map((it) => it.dbId));
  const variants = new Map([...dbs.keys()].map((id) => [id, s.suiteDir ? suiteVariants(s.suiteDir, id) : []]));
  let done = 0;
  const questions = await mapLimit(dataset.items, s.concurrency, async (item, i) => {
    const r = await evaluateOne(item, predictions[i], dbs.get(item.dbId)!, variants.get(item.dbId)!, exec, s);
    options.onProgress?.(++done, dataset.items.length);
    return r;
  });
  return {
    version: 1,
    data: dataset.path,
    pred: options.predLabel ?? '(in memory)',
    dbRoot: s.dbRoot,
    mode: s.mode,
    timeoutMs: s.timeoutMs,
    ...(s.suiteDir ? { suite: s.suiteDir } : {}),
    summary: summarize(questions, dataset.format),
    questions,
  };
}
