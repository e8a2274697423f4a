/**
 * BIRD's own evaluation files, written so the official scripts can score exactly what agro scored:
 * `predict_dev.json` (`{"0": "SQL\t----- bird -----\tdb_id", ...}`, keys in data order: the scripts
 * pair predictions with gold lines by position) and `dev_gold.sql` (`SQL<TAB>db_id` per line).
 * Both scripts split a gold line on tabs and a prediction on the separator, and take the text as one
 * line, so SQL is written on one line: each run of tabs and newlines becomes one space (the same SQL,
 * unless a string literal itself holds a tab or newline, which these formats cannot carry at all).
 */
import { join } from 'node:path';
import { writeFileAtomic } from '../util/fs.ts';
import type { EvalItem } from './types.ts';

export const BIRD_SEPARATOR = '\t----- bird -----\t';

function oneLineSql(sql: string): string {
  return sql.replace(/[\t\r\n]+/g, ' ').trim();
}

/** The prediction file's object: key = position in the data, value = SQL + separator + db_id. */
export function birdPredictions(items: readonly EvalItem[], sqls: readonly string[]): Record<string, string> {
  if (items.length !== sqls.length) throw new RangeError(`birdPredictions: ${sqls.length} predictions for ${items.length} questions`);
  return Object.fromEntries(items.map((it, i) => [String(i), `${oneLineSql(sqls[i])}${BIRD_SEPARATOR}${it.dbId}`]));
}

/** dev_gold.sql's text. */
export function birdGoldSql(items: readonly EvalItem[]): string {
  return items.map((it) => `${oneLineSql(it.gold)}\t${it.dbId}\n`).join('');
}

/** Writes `predict_dev.json` and `dev_gold.sql` into `dir` (atomically); returns their paths. */
export function writeBirdFiles(dir: string, items: readonly EvalItem[], sqls: readonly string[]): { pred: string; gold: string } {
  const pred = join(dir, 'predict_dev.json');
  const gold = join(dir, 'dev_gold.sql');
  writeFileAtomic(pred, JSON.stringify(birdPredictions(items, sqls), null, 2) + '\n');
  writeFileAtomic(gold, birdGoldSql(items));
  return { pred, gold };
}
