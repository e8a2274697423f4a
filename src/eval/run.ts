import { redactUrl } from '../sql/postgres.ts';
import { Judge, JUDGE_DEFAULTS, type JudgeConfig } from '../sql/judge.ts';
import type { CompareMode, ExecResult, SqlExecutor } from '../sql/types.ts';
import { folderDatabases, resolveDatabases, suiteVariants } from '../data/databases.ts';
import type { Dataset, EvalItem } from '../data/types.ts';
import { summarize } from './metrics.ts';
import { mapConcurrent } from '../util/concurrency.ts';
import { UNLABELED, type EvalReport, type QuestionResult } from './types.ts';

/** Defaults in one place: the judge's (src/sql/judge.ts), and how many questions are in flight at once (each runs its gold and predicted query side by side). */
export const EVAL_DEFAULTS = { ...JUDGE_DEFAULTS, concurrency: 4 };

/** How `evaluate` runs; every field but `dbRoot` has its default in `EVAL_DEFAULTS`. */
export interface EvaluateOptions extends Partial<JudgeConfig> {
  /** Databases as `<dbRoot>/<db_id>/<db_id>.sqlite`; recorded in the report. */
  dbRoot: string;
  /** The database of each db_id when they do not follow dbRoot's layout (a factory output's manifest names its own). */
  databases?: (dbId: string) => string;
  /** Test-suite mode: variant databases under `<suiteDir>/<db_id>/*.sqlite`. */
  suiteDir?: string;
  /** Questions in flight at once. */
  concurrency?: number;
  /** Names recorded in the report (the files the data and predictions came from). */
  predLabel?: string;
  /** Called after each question. */
  onProgress?: (done: number, total: number) => void;
}

/** Where one question is judged: its database and the variants that must agree too. */
export interface JudgedDatabase {
  db: string;
  variants: string[];
}

/**
 * The databases of each db_id, resolved once for a dataset: the database, then as a test suite every other one
 * that must agree too (Spider: the other `.sqlite` files in the database's folder, as upstream; any mode:
 * `<suiteDir>/<db_id>/*.sqlite`).
 */
export function judgedDatabases(dbs: ReadonlyMap<string, string>, mode: CompareMode, suiteDir?: string): Map<string, JudgedDatabase> {
  return new Map([...dbs].map(([id, db]) => [id, { db, variants: [...(mode === 'spider' ? folderDatabases(db) : []), ...(suiteDir ? suiteVariants(suiteDir, id, db) : [])] }]));
}

/**
 * Scores any number of predictions of one question: the gold query is prepared once, and each distinct query
 * (the gold's included) runs once per database however many predictions are scored. The prediction is judged
 * on the original database in detail; then, as a test suite, on every variant, and the first disagreement
 * decides. `suite`: the report counts variants checked even when there are none (`agro eval --suite`).
 */
export function questionScorer(item: EvalItem, where: JudgedDatabase, exec: SqlExecutor, judge: Judge, suite = false): (pred: string) => Promise<QuestionResult> {
  const gold = judge.gold(item.gold);
  const runs = new Map<string, Promise<ExecResult>>();
  const run = (db: string, q: ReturnType<Judge['prediction']>): Promise<ExecResult> => {
    if (!q.ok) return judge.run(exec, db, q);
    const key = `${db}\u0000${q.sql}`;
    let r = runs.get(key);
    if (!r) runs.set(key, (r = judge.run(exec, db, q)));
    return r;
  };
  const onDatabase = async (db: string, pred: ReturnType<Judge['prediction']>) => {
    const [g, p] = await Promise.all([run(db, gold.query), run(db, pred)]);
    return { verdict: judge.verdict(gold, g, p), goldMs: Math.round(g.elapsedMs), predMs: Math.round(p.elapsedMs) };
  };
  return async (predSql) => {
    const base: QuestionResult = {
      index: item.index,
      ...(item.questionId !== undefined ? { questionId: item.questionId } : {}),
      dbId: item.dbId,
      bucket: item.difficulty ?? UNLABELED,
      outcome: 'match',
      pred: predSql,
      gold: item.gold,
    };
    const pred = judge.prediction(predSql);
    const first = await onDatabase(where.db, pred);
    const head: QuestionResult = { ...base, goldMs: first.goldMs, predMs: first.predMs, ...first.verdict };
    if (first.verdict.outcome !== 'match' || where.variants.length === 0) {
      return suite && first.verdict.outcome === 'match' ? { ...head, variantsChecked: 0 } : head;
    }
    const results = await Promise.all(where.variants.map((db) => onDatabase(db, pred)));
    const bad = results.findIndex((r) => r.verdict.outcome !== 'match');
    if (bad < 0) return { ...head, variantsChecked: where.variants.length };
    const v = results[bad].verdict;
    // A server variant's URL is the database's, password and all: never into a report.
    const at = redactUrl(where.variants[bad]);
    return {
      ...head,
      ...v,
      message: `on ${at}: ${v.message ?? 'results differ on a variant database'}`,
      failedVariant: at,
      variantsChecked: where.variants.length,
    };
  };
}

/** The judge of `evaluate`'s options (unset fields: the judge's defaults). */
export function judgeOf(options: Partial<JudgeConfig>): Judge {
  const keys = Object.keys(JUDGE_DEFAULTS) as Array<keyof JudgeConfig>;
  return new Judge(Object.fromEntries(keys.flatMap((k) => (options[k] !== undefined ? [[k, options[k]]] : []))));
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
  const judge = judgeOf(options);
  const concurrency = options.concurrency ?? EVAL_DEFAULTS.concurrency;
  const ids = dataset.items.map((it) => it.dbId);
  const dbs = options.databases ? new Map(ids.map((id) => [id, options.databases!(id)])) : resolveDatabases(options.dbRoot, ids);
  const where = judgedDatabases(dbs, judge.config.mode, options.suiteDir);
  let done = 0;
  const questions = await mapConcurrent(dataset.items, concurrency, undefined, async (item, i) => {
    const r = await questionScorer(item, where.get(item.dbId)!, exec, judge, Boolean(options.suiteDir))(predictions[i]);
    options.onProgress?.(++done, dataset.items.length);
    return r;
  });
  return {
    version: 1,
    data: dataset.path,
    pred: options.predLabel ?? '(in memory)',
    // A server's URL may carry a password: never into a report.
    dbRoot: redactUrl(options.dbRoot),
    mode: judge.config.mode,
    timeoutMs: judge.config.timeoutMs,
    ...(options.suiteDir ? { suite: options.suiteDir } : {}),
    summary: summarize(questions, dataset.format),
    questions,
  };
}
