/** Tasks as export rows: the prompt is SqlEnvironment's own opening, so an outside trainer sees what agro's policy sees. */
import { splitBySkeleton } from '../data/splits.ts';
import type { ExportRow, ExportSplits } from '../data/export-formats.ts';
import type { SqlEnvironment, SqlTask } from './sql-env.ts';
import { redactUrl } from '../sql/postgres.ts';

export function exportRow(env: SqlEnvironment, task: SqlTask): ExportRow {
  return {
    id: task.id,
    dbId: task.dbId,
    question: task.question,
    evidence: task.evidence?.trim() ?? '',
    difficulty: task.difficulty ?? '',
    goldSql: task.goldSql,
    // A server's URL without its password: the rows are training data, and the trainer's tool names databases by db_id.
    dbPath: redactUrl(task.dbPath),
    variantPaths: task.variantPaths ?? [],
    prompt: env.openingFor(task).map((m) => ({ role: m.role, content: m.content })),
  };
}

/** Every SQL a task holds: its gold query and its earlier turns' (a follow-up's conversation stays on one side). */
export const taskSqls = (task: SqlTask): string[] => [task.goldSql, ...(task.previous ?? []).map((t) => t.sql).filter((q) => q.trim())];

/**
 * Train and val rows with no SQL skeleton in both (main's splitBySkeleton): a val question is never a
 * literal swap of a training one. val gets about valFraction of the rows, train keeps at least one. `sqlsOf` gives
 * every SQL a row's prompt and answer hold (a follow-up's earlier turns too), kept on one side.
 */
export function splitRows(rows: readonly ExportRow[], valFraction: number, seed: number, sqlsOf: (r: ExportRow) => string | readonly string[] = (r) => r.goldSql): ExportSplits {
  if (valFraction <= 0 || rows.length < 2) return { train: [...rows], val: [] };
  const s = splitBySkeleton(rows, sqlsOf, { sft: 0, rl: 1 - valFraction, heldOut: valFraction }, seed);
  const train = [...s.sft, ...s.rl];
  return train.length > 0 ? { train, val: s.heldOut } : { train: s.heldOut.slice(0, 1), val: s.heldOut.slice(1) };
}
