import { z } from 'zod';
import { AgroError } from '../errors.ts';
import { isJsonl, parseJson, parseJsonl, readText } from './read-json.ts';
import { DIFFICULTIES } from './dataset-row.ts';
import { previousTurnSchema } from '../prompt/conversation.ts';
import type { Dataset, EvalItem } from './types.ts';

const nonEmpty = z.string().trim().min(1);

/** BIRD rows carry `SQL`, Spider rows `query`; everything else is optional and extra keys are kept out. */
const rowSchema = z
  .object({
    question_id: z.union([z.number().int(), nonEmpty]).optional(),
    db_id: nonEmpty,
    // Evaluation never reads the question; it is kept for the report when present.
    question: z.string().optional(),
    evidence: z.string().nullish(),
    SQL: nonEmpty.optional(),
    query: nonEmpty.optional(),
    difficulty: z.enum(DIFFICULTIES).optional(),
    previous: z.array(previousTurnSchema).optional(),
  })
  .refine((r) => r.SQL !== undefined || r.query !== undefined, { message: 'needs a gold query in "SQL" (BIRD) or "query" (Spider)' });

function issueText(error: z.ZodError): string {
  const issue = error.issues[0];
  const field = issue.path.length > 0 ? `field "${issue.path.join('.')}": ` : '';
  if (issue.code === 'invalid_type' && issue.path.length > 0 && issue.message.includes('undefined')) {
    return `missing field "${issue.path.join('.')}"`;
  }
  return `${field}${issue.message}`;
}

function toItem(value: unknown, index: number, where: string, path: string, styles: Set<'bird' | 'spider'>): EvalItem {
  const r = rowSchema.safeParse(value);
  if (!r.success) throw new AgroError('invalid_input', `${path}: ${where}: ${issueText(r.error)}`);
  const row = r.data;
  styles.add(row.SQL !== undefined ? 'bird' : 'spider');
  return {
    index,
    ...(row.question_id !== undefined ? { questionId: row.question_id } : {}),
    dbId: row.db_id.trim(),
    ...(row.question !== undefined ? { question: row.question } : {}),
    ...(row.evidence ? { evidence: row.evidence } : {}),
    gold: (row.SQL ?? row.query)!,
    ...(row.difficulty ? { difficulty: row.difficulty } : {}),
    ...(row.previous?.length ? { previous: row.previous } : {}),
  };
}

/**
 * BIRD's gold file (`dev_gold.sql`): one `SQL<TAB>db_id` per line, read as its evaluation scripts do
 * (`sql_str.strip().split('\t')`, exactly two parts). Blank lines at the end are ignored.
 */
function readGoldSql(path: string, text: string): Dataset {
  const lines = text.split('\n');
  while (lines.length > 0 && lines[lines.length - 1].trim() === '') lines.pop();
  const items = lines.map((line, i): EvalItem => {
    const parts = line.trim().split('\t');
    if (parts.length !== 2 || parts[0].trim() === '' || parts[1].trim() === '') {
      throw new AgroError('invalid_input', `${path}: line ${i + 1}: expected "SQL<TAB>db_id"`);
    }
    return { index: i, dbId: parts[1], gold: parts[0] };
  });
  if (items.length === 0) throw new AgroError('invalid_input', `${path}: no questions`);
  return { path, format: 'bird', items };
}

/**
 * Reads an evaluation set: a JSON array (BIRD's dev.json, Spider's dev.json) or JSONL, one question per
 * element. Malformed input fails with one line naming the file and the item index (JSON) or line (JSONL).
 */
export function readDataset(path: string): Dataset {
  const text = readText(path, 'data');
  if (/\.sql$/i.test(path)) return readGoldSql(path, text);
  let items: EvalItem[];
  const styles = new Set<'bird' | 'spider'>();
  if (isJsonl(path, text)) {
    items = parseJsonl(text, path).map(({ line, value }, i) => toItem(value, i, `line ${line}`, path, styles));
  } else {
    const value = parseJson(text, path);
    if (!Array.isArray(value)) throw new AgroError('invalid_input', `${path}: expected a JSON array of questions`);
    items = value.map((v, i) => toItem(v, i, `item ${i}`, path, styles));
  }
  if (items.length === 0) throw new AgroError('invalid_input', `${path}: no questions`);
  const ids = new Set<string>();
  for (const it of items) {
    if (it.questionId === undefined) continue;
    const key = String(it.questionId);
    if (ids.has(key)) throw new AgroError('invalid_input', `${path}: item ${it.index}: duplicate question_id ${key}`);
    ids.add(key);
  }
  // A row with BIRD's `SQL` key or a difficulty makes the file BIRD-style.
  const format = styles.has('bird') || items.some((it) => it.difficulty !== undefined) ? 'bird' : 'spider';
  return { path, format, items };
}
