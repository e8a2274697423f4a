/**
 * Prediction files in the official formats, for the official scripts as well as `agro eval`:
 *  - BIRD (predict_dev.json): a JSON object { "<index>": "<SQL>\t----- bird -----\t<db_id>" }.
 *  - Spider (predict.sql): one query per line in data order; a line never breaks inside a query.
 * A question without an answer gets NO_ANSWER_SQL rather than a blank line: Spider's script pairs
 * lines with questions by position, and a blank line would shift or drop one.
 */
export const NO_ANSWER_SQL = 'SELECT NULL';
const BIRD_SEPARATOR = '\t----- bird -----\t';

/** One line: newlines and tabs become spaces (inside a string literal too; a query that needs them there is rare). */
export function oneLineSql(sql: string): string {
  const s = sql.replace(/[\r\n\t]+/g, ' ').trim().replace(/;\s*$/, '');
  return s === '' ? NO_ANSWER_SQL : s;
}

export function birdPredictions(preds: readonly { sql: string; dbId: string }[]): string {
  const obj: Record<string, string> = {};
  preds.forEach((p, i) => (obj[String(i)] = `${oneLineSql(p.sql)}${BIRD_SEPARATOR}${p.dbId}`));
  return JSON.stringify(obj, null, 4) + '\n';
}

export function spiderPredictions(preds: readonly { sql: string }[]): string {
  return preds.map((p) => oneLineSql(p.sql)).join('\n') + '\n';
}
