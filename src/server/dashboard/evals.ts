/**
 * Evaluations for the Evaluations page: an `agro eval --out` report as written, or a quickstart's
 * predictions.json scored on demand with the evaluator (against held_out.jsonl, on the original and the
 * variant databases, as the command the quickstart prints does). And, per question, the predicted and
 * gold results side by side: on the original, or on the variant a question failed on when it was right there.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { readDataset } from '../../data/read-dataset.ts';
import { readPredictions } from '../../data/read-predictions.ts';
import { resolveDatabase } from '../../data/databases.ts';
import { evaluate } from '../../eval/run.ts';
import type { EvalReport } from '../../eval/types.ts';
import type { SqlExecutor } from '../../sql/types.ts';
import { isPostgresUrl, redactUrl, withoutRedactedPassword } from '../../sql/postgres.ts';
import type { CompareResult, EvalDetail, EvalInfo } from './api-types.ts';
import { diffRows, toResultTable } from './results.ts';
import type { FoundEval } from './scan.ts';

export interface LoadedEval {
  detail: EvalDetail;
  dbRoot: string;
  timeoutMs: number;
}

const cache = new Map<string, { mtimeMs: number; value: LoadedEval }>();

export function evalLabel(e: FoundEval): string {
  return e.source === 'predictions' ? `${basename(dirname(e.file))} predictions (held out)` : e.id;
}

function questionsText(dataPath: string): Map<number, { question: string }> {
  const out = new Map<number, { question: string }>();
  try {
    for (const it of readDataset(dataPath).items) if (it.question !== undefined) out.set(it.index, { question: it.question });
  } catch {
    // The data file moved or is gone: the page shows the queries without the question text.
  }
  return out;
}

type WithTrajectory = EvalReport['questions'][number] & { trajectory?: { role: string; content: string }[] };

function toDetail(info: EvalInfo, report: EvalReport): EvalDetail {
  const text = questionsText(report.data);
  return {
    info,
    summary: report.summary,
    mode: report.mode,
    questions: (report.questions as WithTrajectory[]).map((q) => ({
      index: q.index,
      ...(q.questionId !== undefined ? { questionId: q.questionId } : {}),
      dbId: q.dbId,
      bucket: q.bucket,
      outcome: q.outcome,
      ...(q.errorKind ? { errorKind: q.errorKind } : {}),
      ...(q.message ? { message: q.message } : {}),
      ...(text.get(q.index) ? { question: text.get(q.index)!.question } : {}),
      pred: q.pred,
      gold: q.gold,
      ...(q.failedVariant ? { failedVariant: redactUrl(q.failedVariant) } : {}),
      ...(q.trajectory ? { trajectory: q.trajectory } : {}),
    })),
  };
}

/** The quickstart's layout: <out>/held_out.jsonl, <out>/report.json (its config names the database), <out>/synth/variants. */
async function scorePredictions(file: string, exec: SqlExecutor): Promise<EvalReport> {
  const out = dirname(dirname(file));
  const dataset = readDataset(join(out, 'held_out.jsonl'));
  const preds = readPredictions(file, dataset.items);
  let dbRoot = 'data/databases';
  try {
    const qs = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as { config?: { db?: string } };
    // A server's URL is its own root (the db_id is its database); written without the password, which PGPASSWORD or ~/.pgpass gives.
    if (qs.config?.db) dbRoot = isPostgresUrl(qs.config.db) ? withoutRedactedPassword(qs.config.db) : dirname(dirname(qs.config.db));
  } catch {
    // No report.json: the bundled databases' root.
  }
  const suite = join(out, 'synth', 'variants');
  return evaluate(dataset, preds, exec, { dbRoot, predLabel: file, timeoutMs: 10_000, ...(existsSync(suite) ? { suiteDir: suite } : {}) });
}

export async function loadEval(e: FoundEval, exec: SqlExecutor): Promise<LoadedEval> {
  const mtimeMs = statSync(e.file).mtimeMs;
  const hit = cache.get(e.file);
  if (hit && hit.mtimeMs === mtimeMs) return hit.value;
  const report = e.source === 'report' ? (JSON.parse(readFileSync(e.file, 'utf8')) as EvalReport) : await scorePredictions(e.file, exec);
  const value: LoadedEval = { detail: toDetail({ id: e.id, source: e.source, label: evalLabel(e) }, report), dbRoot: report.dbRoot, timeoutMs: report.timeoutMs };
  cache.set(e.file, { mtimeMs, value });
  return value;
}

/**
 * The policy an evaluation is of: an `agro predict` run's policy (run.json beside its report), a quickstart's
 * stage (the folder of its predictions), else the predictions file the report names.
 */
export function policyOf(e: FoundEval, report: { pred?: unknown }): string {
  const run = join(dirname(e.file), 'run.json');
  if (existsSync(run)) {
    try {
      const p = (JSON.parse(readFileSync(run, 'utf8')) as { policy?: unknown }).policy;
      if (typeof p === 'string' && p) return p;
    } catch {
      // Not a predict run's file.
    }
  }
  if (e.source === 'predictions') return basename(dirname(e.file));
  return typeof report.pred === 'string' && report.pred ? basename(report.pred) : e.id;
}

/** A report's question file and policy, read without scoring (a quickstart's predictions are scored when opened). */
export function reportHead(e: FoundEval): { data: string; policy: string; summary: EvalDetail['summary'] } | null {
  if (e.source !== 'report') return null;
  try {
    const r = JSON.parse(readFileSync(e.file, 'utf8')) as EvalReport;
    return { data: resolve(r.data), policy: policyOf(e, r), summary: r.summary };
  } catch {
    return null;
  }
}

/** Rows shown per side: enough to see a difference, bounded for the page. */
const COMPARE_ROWS = 500;

export async function compareQuestion(ev: LoadedEval, index: number, exec: SqlExecutor): Promise<CompareResult | null> {
  const q = ev.detail.questions.find((x) => x.index === index);
  if (!q) return null;
  // A question right on the original but wrong on a test-suite variant: its rows are the variant's, where the two differ.
  const db = q.failedVariant ? withoutRedactedPassword(q.failedVariant) : resolveDatabase(withoutRedactedPassword(ev.dbRoot), q.dbId);
  const opts = { timeoutMs: Math.min(ev.timeoutMs, 30_000), maxRows: COMPARE_ROWS + 1 };
  const [p, g] = await Promise.all([exec.execute(db, q.pred, opts), exec.execute(db, q.gold, opts)]);
  const pred = toResultTable(p, COMPARE_ROWS);
  const gold = toResultTable(g, COMPARE_ROWS);
  return { pred, gold, ...(q.failedVariant ? { variant: q.failedVariant } : {}), ...diffRows(pred.rows, gold.rows) };
}
