/** Tasks as export rows: the prompt is SqlEnvironment's own opening, so an outside trainer sees what agro's policy sees. */
import { Rng } from '../util/rng.ts';
import type { ExportRow, ExportSplits } from '../data/export-formats.ts';
import type { SqlEnvironment, SqlTask } from './sql-env.ts';

export function exportRow(env: SqlEnvironment, task: SqlTask): ExportRow {
  return {
    id: task.id,
    dbId: task.dbId,
    question: task.question,
    evidence: task.evidence?.trim() ?? '',
    difficulty: task.difficulty ?? '',
    goldSql: task.goldSql,
    dbPath: task.dbPath,
    variantPaths: task.variantPaths ?? [],
    prompt: env.openingFor(task).map((m) => ({ role: m.role, content: m.content })),
  };
}

/** A seeded shuffle, then the first round(n·valFraction) rows to val (at least one train row kept). */
export function splitRows(rows: readonly ExportRow[], valFraction: number, seed: number): ExportSplits {
  if (valFraction <= 0) return { train: [...rows], val: [] };
  const order = new Rng(seed).shuffle(rows.map((_, i) => i));
  const nVal = Math.min(rows.length - 1, Math.round(rows.length * valFraction));
  const valIdx = new Set(order.slice(0, nVal));
  return { train: rows.filter((_, i) => !valIdx.has(i)), val: rows.filter((_, i) => valIdx.has(i)) };
}
