/**
 * Predictors: anything that turns questions into SQL. The refinement loop (stage 8) checks the
 * factory's pairs against whichever one it is given: a predictions file, a served LLM, a plain
 * function (the round-trip parser; later the built-in model).
 */
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import type { ChatMessage } from '../llm/client.ts';
import { LlmClient } from '../llm/client.ts';
import { CircuitBreaker } from '../llm/breaker.ts';
import { mapConcurrent } from '../util/concurrency.ts';
import { readInputText } from '../util/fs.ts';

export interface PredictItem {
  dbId: string;
  question: string;
  evidence: string;
}

export interface Predictor {
  readonly name: string;
  /** One SQL per item, in order; '' when the predictor has no answer for an item. */
  predict(items: PredictItem[]): Promise<string[]>;
}

/** Questions are matched by database and text, ignoring case and spacing. */
export function questionKey(dbId: string, question: string): string {
  return `${dbId}\u0000${question.trim().toLowerCase().replace(/\s+/g, ' ')}`;
}

const RecordSchema = z
  .object({
    db_id: z.string().optional(),
    question: z.string(),
    SQL: z.string().optional(),
    sql: z.string().optional(),
    query: z.string().optional(),
    prediction: z.string().optional(),
  })
  .refine((r) => [r.SQL, r.sql, r.query, r.prediction].some((x) => typeof x === 'string'), { message: 'needs "SQL", "sql", "query" or "prediction"' });

/**
 * Predictions keyed by question: a JSON array or JSONL of {db_id?, question, SQL|sql|query|prediction},
 * or a JSON object mapping question text to SQL. Records without db_id match any database.
 */
export class PredictionsFilePredictor implements Predictor {
  readonly name: string;
  /** Items asked for that the file had no prediction for. */
  missing = 0;
  private readonly byKey = new Map<string, string>();

  constructor(records: ReadonlyArray<{ dbId?: string; question: string; sql: string }>, name = 'predictions') {
    this.name = name;
    for (const r of records) this.byKey.set(questionKey(r.dbId ?? '*', r.question), r.sql);
  }

  static fromFile(path: string): PredictionsFilePredictor {
    const text = readInputText(path, 'predictions');
    const values: Array<{ where: string; value: unknown }> = [];
    const trimmed = text.trim();
    const jsonl = /\.jsonl$/i.test(path) || /\}\s*\n\s*\{/.test(trimmed);
    if (!jsonl) {
      let v: unknown;
      try {
        v = JSON.parse(trimmed);
      } catch (e) {
        throw new AgroError('invalid_input', `${path}: not valid JSON (${(e as Error).message})`);
      }
      if (Array.isArray(v)) v.forEach((x, i) => values.push({ where: `item ${i}`, value: x }));
      else if (v && typeof v === 'object' && 'question' in v) values.push({ where: 'record', value: v });
      else if (v && typeof v === 'object') {
        const records: Array<{ question: string; sql: string }> = [];
        for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
          if (typeof x !== 'string') throw new AgroError('invalid_input', `${path}: key "${k}": expected a SQL string`);
          records.push({ question: k, sql: x });
        }
        return new PredictionsFilePredictor(records, path);
      }
    } else {
      trimmed.split('\n').forEach((line, i) => {
        if (!line.trim()) return;
        try {
          values.push({ where: `line ${i + 1}`, value: JSON.parse(line) });
        } catch {
          throw new AgroError('invalid_input', `${path}: line ${i + 1}: not valid JSON`);
        }
      });
    }
    const records = values.map(({ where, value }) => {
      const r = RecordSchema.safeParse(value);
      if (!r.success) throw new AgroError('invalid_input', `${path}: ${where}: ${r.error.issues[0].path.join('.') || 'record'}: ${r.error.issues[0].message}`);
      const d = r.data;
      return { dbId: d.db_id, question: d.question, sql: (d.SQL ?? d.sql ?? d.query ?? d.prediction)! };
    });
    return new PredictionsFilePredictor(records, path);
  }

  async predict(items: PredictItem[]): Promise<string[]> {
    return items.map((it) => {
      const sql = this.byKey.get(questionKey(it.dbId, it.question)) ?? this.byKey.get(questionKey('*', it.question));
      if (sql === undefined) this.missing++;
      return sql ?? '';
    });
  }
}

/** Wraps a function (the round-trip parser today, the built-in model later). */
export class FunctionPredictor implements Predictor {
  constructor(
    readonly name: string,
    private readonly fn: (item: PredictItem) => Promise<string> | string,
  ) {}
  async predict(items: PredictItem[]): Promise<string[]> {
    const out: string[] = [];
    for (const it of items) {
      try {
        out.push(await this.fn(it));
      } catch {
        out.push('');
      }
    }
    return out;
  }
}

const SqlReplySchema = z.object({ sql: z.string().min(1) });

/** The SQL in a model's reply: JSON {"sql"}, a ```sql fence, or the text from SELECT/WITH on. */
export function extractSql(reply: string): string {
  const t = reply.trim();
  try {
    const j = SqlReplySchema.safeParse(JSON.parse(t));
    if (j.success) return j.data.sql.trim();
  } catch {
    // not JSON: look for a fence or a bare query
  }
  const fence = /```(?:sql|sqlite)?\s*\n?([\s\S]*?)```/i.exec(t);
  if (fence) return fence[1].trim().replace(/;\s*$/, '');
  const bare = /\b(SELECT|WITH)\b[\s\S]*/i.exec(t);
  return bare ? bare[0].trim().replace(/;\s*$/, '') : '';
}

export function predictPrompt(item: PredictItem, schemaText: string): ChatMessage[] {
  return [
    { role: 'system', content: 'You translate questions into SQLite queries. Reply with only the SQL query in a ```sql block.' },
    { role: 'user', content: `Schema:\n${schemaText}\n\nQuestion: ${item.question}\nEvidence: ${item.evidence || '(none)'}` },
  ];
}

/** A served model behind an OpenAI-compatible endpoint; failures give '' (counted in `failures`). */
export class LlmPredictor implements Predictor {
  readonly name = 'llm';
  failures = 0;
  constructor(
    private readonly client: LlmClient,
    private readonly schemaText: (dbId: string) => string,
    private readonly breaker = new CircuitBreaker(),
  ) {}
  async predict(items: PredictItem[]): Promise<string[]> {
    return mapConcurrent(items, this.client.config.concurrency, undefined, async (it) => {
      if (this.breaker.open) {
        this.failures++;
        return '';
      }
      try {
        const reply = await this.client.chat(predictPrompt(it, this.schemaText(it.dbId)), { temperature: 0 });
        this.breaker.success();
        return extractSql(reply);
      } catch (err) {
        this.breaker.failure(err);
        this.failures++;
        return '';
      }
    });
  }
}
