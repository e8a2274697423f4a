/**
 * What a database's memory holds: verified (question, SQL) pairs, the factory's and the ones a person corrected,
 * each with its source, time and the signature of its result. The memory names the schema it was built on (a
 * fingerprint of tables, columns and types): a memory of another database, or of this one after its schema
 * changed, is refused rather than silently answering with queries that no longer fit.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import { cellKey } from '../sql/compare.ts';
import type { DbSchema } from '../sql/types.ts';

/** A database's memory store, beside its dataset (store.ts). */
export const MEMORY_STORE = 'memory.db';

export const memorySourceSchema = z.enum(['factory', 'person']);
export type MemorySource = z.infer<typeof memorySourceSchema>;

export const memoryEntrySchema = z.strictObject({
  /** The store's id of the pair (what `agro memory remove` and `DELETE /v1/corrections/ID` name); absent before it is stored. */
  id: z.number().int().min(1).optional(),
  sql: z.string().min(1),
  /** The question and its paraphrases: every way the pair was asked. */
  questions: z.array(z.string().min(1)).min(1),
  /** Who wrote the pair: the factory, or a person's correction (with when). */
  source: memorySourceSchema,
  at: z.string().optional(),
  /** Rows of the result on the database the memory was built on, and an order-free hash of them. */
  rows: z.number().int().min(0).optional(),
  signature: z.string().optional(),
});
export type MemoryEntry = z.infer<typeof memoryEntrySchema>;

/** A memory as one value: the database it serves, the schema it was verified on, its pairs. */
export interface MemoryFile {
  dbId: string;
  /** schemaFingerprint() of the database the pairs were verified on. */
  schema: string;
  entries: MemoryEntry[];
}

/**
 * The longest question agro takes (ask, chat, a correction): some 2,000 words, far past any question a person
 * asks, and short enough that a pasted file is refused before it reaches a model or the memory.
 */
export const MAX_QUESTION_CHARS = 10_000;

// eslint-disable-next-line no-control-regex -- finding control characters is the point
const UNTYPED = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffd]/;

/**
 * Refuses (exit 2) a question or SQL a person gave that agro must not take as typed: a control character (tab and
 * newlines aside: stored, a terminal's escape sequence reaches every reader of the memory, the Playground and exports too),
 * or U+FFFD, which is what bytes that are not UTF-8 (an argument, a line of stdin) decode to. A question is also
 * bounded (MAX_QUESTION_CHARS); SQL is bounded where it is run (sql/guard.ts MAX_SQL_CHARS).
 */
export function checkTypedText(text: string, what: 'question' | 'SQL', label: string): void {
  const why = untypedReason(text, what);
  if (why) throw new AgroError('usage', `${label}: ${why}`);
}

/** Why checkTypedText refuses `text` (without its label: a server names the field itself), or undefined. */
export function untypedReason(text: string, what: 'question' | 'SQL'): string | undefined {
  if (what === 'question' && text.length > MAX_QUESTION_CHARS) return `the question is ${text.length} characters long, at most ${MAX_QUESTION_CHARS}`;
  const m = UNTYPED.exec(text);
  if (!m) return undefined;
  const why = m[0] === '\ufffd' ? 'is not valid UTF-8 (or holds U+FFFD)' : `holds a control character (\\x${m[0].charCodeAt(0).toString(16).padStart(2, '0')})`;
  return `the ${what} ${why} at character ${m.index + 1}`;
}

/** What a memory must match: the tables, their columns and declared types (case-folded, order-free). */
export function schemaFingerprint(schema: DbSchema): string {
  const tables = schema.tables
    .map((t) => `${t.name.toLowerCase()}(${t.columns.map((c) => `${c.name.toLowerCase()}:${c.type.toLowerCase()}`).sort().join(',')})`)
    .sort();
  return createHash('sha256').update(tables.join(';')).digest('hex').slice(0, 16);
}

/** An order-free hash of a result's rows: candidates and pairs with the same answer share it. */
export function resultSignature(rows: readonly (readonly unknown[])[]): string {
  const keys = rows.map((r) => r.map((v) => cellKey(v as never)).join('\u0001')).sort();
  return createHash('sha256').update(keys.join('\u0002')).digest('hex').slice(0, 16);
}

/** Refuses (exit 4) a memory built on another schema than the database it is to answer on. */
export function checkMemorySchema(memory: Pick<MemoryFile, 'dbId' | 'schema'>, schema: DbSchema, path: string): void {
  if (memory.schema !== schemaFingerprint(schema)) {
    throw new AgroError('invalid_input', `${path} was built on another schema than ${schema.dbId} (database ${memory.dbId}); rebuild it with agro memory build`);
  }
}

/**
 * The order a memory lists its pairs in: people's corrections first, newest first (a correction outranks what the
 * factory guessed when two recall equally), then the factory's in the order they were made.
 */
export function memoryOrder(a: MemoryEntry, b: MemoryEntry): number {
  if (a.source !== b.source) return a.source === 'person' ? -1 : 1;
  const ia = a.id ?? 0;
  const ib = b.id ?? 0;
  return a.source === 'person' ? ib - ia : ia - ib;
}

export interface MemoryPair {
  sql: string;
  question: string;
  paraphrases?: string[];
}

/** The pairs of a dataset file: a factory's dataset.jsonl keeps every paraphrase; any BIRD/Spider file gives its questions. */
export function pairsOfDataset(rows: ReadonlyArray<{ SQL?: string; question?: string; paraphrases?: string[]; previous?: unknown[] }>): MemoryPair[] {
  // A follow-up ("just the top 3") means nothing without the turn it continues: the memory holds questions that stand alone.
  return rows.filter((r) => r.SQL && r.question && !r.previous?.length).map((r) => ({ sql: r.SQL!, question: r.question!, ...(r.paraphrases ? { paraphrases: r.paraphrases } : {}) }));
}

/**
 * A "stored at or after" time as the store compares it (an ISO date-time in UTC), from an ISO date or date-time;
 * undefined for anything else. One reading for `agro memory list --since` and `GET /v1/corrections?since=`.
 */
export function sinceTime(v: string): string | undefined {
  const t = Date.parse(v);
  return /^\d{4}-\d{2}-\d{2}/.test(v) && !Number.isNaN(t) ? new Date(t).toISOString() : undefined;
}
