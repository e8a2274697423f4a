/**
 * A database's memory: the verified (question, SQL) pairs the factory made of it (every paraphrase too), and
 * the pairs a person corrected, kept as one file beside the dataset (`memory.json`) and read at answer time.
 * The file names the schema it was built on (a fingerprint of tables, columns and types): a memory of another
 * database, or of this one after its schema changed, is refused rather than silently answering with queries
 * that no longer fit. Retrieval is lexical (TF-IDF over the stored questions, text.ts).
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import { cellKey } from '../sql/compare.ts';
import type { DbSchema, SqlExecutor } from '../sql/types.ts';
import { readJsonFile, writeJsonAtomic } from '../util/fs.ts';
import { cosine, Idf, type Vec } from './text.ts';

export const MEMORY_FILE = 'memory.json';

export const memoryEntrySchema = z.strictObject({
  sql: z.string().min(1),
  /** The question and its paraphrases: every way the pair was asked. */
  questions: z.array(z.string().min(1)).min(1),
  /** Who wrote the pair: the factory, or a person's correction (with when). */
  source: z.enum(['factory', 'person']),
  at: z.string().optional(),
  /** Rows of the result on the database the memory was built on, and an order-free hash of them. */
  rows: z.number().int().min(0).optional(),
  signature: z.string().optional(),
});
export type MemoryEntry = z.infer<typeof memoryEntrySchema>;

export const memoryFileSchema = z.strictObject({
  kind: z.literal('agro-memory'),
  version: z.literal(1),
  dbId: z.string().min(1),
  /** schemaFingerprint() of the database the pairs were verified on. */
  schema: z.string().min(1),
  entries: z.array(memoryEntrySchema),
});
export type MemoryFile = z.infer<typeof memoryFileSchema>;

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

export interface MemoryPair {
  sql: string;
  question: string;
  paraphrases?: string[];
}

/** A memory of pairs (one entry per distinct SQL; its questions merged), each run once for its signature. */
export async function buildMemory(dbId: string, schema: DbSchema, pairs: readonly MemoryPair[], executor?: SqlExecutor, dbPath?: string): Promise<MemoryFile> {
  const bySql = new Map<string, MemoryEntry>();
  for (const p of pairs) {
    const e = bySql.get(p.sql) ?? { sql: p.sql, questions: [], source: 'factory' as const };
    for (const q of [p.question, ...(p.paraphrases ?? [])]) if (!e.questions.includes(q)) e.questions.push(q);
    bySql.set(p.sql, e);
  }
  const entries = [...bySql.values()];
  if (executor && dbPath) {
    for (const e of entries) {
      const r = await executor.execute(dbPath, e.sql, { timeoutMs: 5000, maxRows: 10_000 });
      if (r.ok) {
        e.rows = r.rows.length;
        e.signature = resultSignature(r.rows);
      }
    }
  }
  return { kind: 'agro-memory', version: 1, dbId, schema: schemaFingerprint(schema), entries };
}

export function writeMemory(path: string, memory: MemoryFile): void {
  writeJsonAtomic(path, memory);
}

/**
 * Reads a memory file (util/fs.ts's bounded reader: a missing file exit 3, one that is no JSON, a directory or a
 * device exit 4) and checks it against the database it is to answer on (exit 4 on any mismatch).
 */
export function readMemory(path: string, schema?: DbSchema): MemoryFile {
  const r = memoryFileSchema.safeParse(readJsonFile(path, 'memory'));
  if (!r.success) {
    const i = r.error.issues[0];
    throw new AgroError('invalid_input', `${path}: ${i.path.join('.') || 'memory'}: ${i.message} (not a memory agro wrote?)`);
  }
  if (schema) checkMemorySchema(r.data, schema, path);
  return r.data;
}

/** Refuses (exit 4) a memory built on another schema than the database it is to answer on. */
export function checkMemorySchema(memory: MemoryFile, schema: DbSchema, path: string): void {
  if (memory.schema !== schemaFingerprint(schema)) {
    throw new AgroError('invalid_input', `${path} was built on another schema than ${schema.dbId} (database ${memory.dbId}); rebuild it with agro memory build`);
  }
}

export interface Recall {
  entry: MemoryEntry;
  /** Cosine of the question with the closest of the entry's questions. */
  score: number;
  /** That closest question. */
  question: string;
}

/** A memory ready to search: one TF-IDF vector per stored question. */
export class MemoryIndex {
  readonly idf = new Idf();
  private readonly vecs: Array<{ entry: number; question: string; vec: Vec }> = [];
  private readonly postings = new Map<string, number[]>();

  constructor(readonly memory: MemoryFile) {
    for (const e of memory.entries) for (const q of e.questions) this.idf.add(q);
    memory.entries.forEach((e, i) => {
      for (const q of e.questions) {
        const id = this.vecs.length;
        const vec = this.idf.vector(q);
        this.vecs.push({ entry: i, question: q, vec });
        for (const s of vec.keys()) {
          const p = this.postings.get(s);
          if (p) p.push(id);
          else this.postings.set(s, [id]);
        }
      }
    });
  }

  /** The k entries whose questions are closest to the question, best first. */
  nearest(question: string, k: number): Recall[] {
    const qv = this.idf.vector(question);
    const seen = new Set<number>();
    for (const s of qv.keys()) for (const id of this.postings.get(s) ?? []) seen.add(id);
    const best = new Map<number, Recall>();
    for (const id of seen) {
      const v = this.vecs[id];
      const score = cosine(qv, v.vec);
      const cur = best.get(v.entry);
      if (!cur || score > cur.score) best.set(v.entry, { entry: this.memory.entries[v.entry], score, question: v.question });
    }
    return [...best.values()].sort((a, b) => b.score - a.score || (a.entry.sql < b.entry.sql ? -1 : 1)).slice(0, k);
  }
}

/** The pairs of a dataset file: a factory's dataset.jsonl keeps every paraphrase; any BIRD/Spider file gives its questions. */
export function pairsOfDataset(rows: ReadonlyArray<{ SQL?: string; question?: string; paraphrases?: string[]; previous?: unknown[] }>): MemoryPair[] {
  // A follow-up ("just the top 3") means nothing without the turn it continues: the memory holds questions that stand alone.
  return rows.filter((r) => r.SQL && r.question && !r.previous?.length).map((r) => ({ sql: r.SQL!, question: r.question!, ...(r.paraphrases ? { paraphrases: r.paraphrases } : {}) }));
}

/**
 * Stores a person's pair (a correction) in a memory file: the memory is checked against the database, the SQL runs
 * read-only in the sandbox first, and only a query that runs is written (one line and exit 5 or 6 otherwise; the
 * file untouched). With `create` (the database's id), a missing file is started as an empty memory of the
 * database, written only with the first pair that runs. Returns the stored query's result.
 */
export async function storeCorrection(path: string, db: string, schema: DbSchema, question: string, sql: string, executor: SqlExecutor, o: { create?: string } = {}): Promise<Extract<Awaited<ReturnType<SqlExecutor['execute']>>, { ok: true }>> {
  if (!question.trim()) throw new AgroError('usage', 'the question of a correction is empty');
  if (!sql.trim()) throw new AgroError('usage', 'the SQL of a correction is empty');
  const memory: MemoryFile = o.create && !existsSync(path) ? { kind: 'agro-memory', version: 1, dbId: o.create, schema: schemaFingerprint(schema), entries: [] } : readMemory(path, schema);
  const r = await executor.execute(db, sql, { timeoutMs: 10_000, maxRows: 10_000 });
  if (!r.ok) throw new AgroError(r.error === 'refused' ? 'refused' : 'sql_error', `the corrected SQL does not run (${r.error}: ${r.message}); nothing written`);
  writeMemory(path, addPersonPair(memory, sql.trim(), question.trim(), new Date().toISOString(), r.rows.length, resultSignature(r.rows)));
  return r;
}

/** Adds a person's pair (a correction) to a memory: it replaces a factory entry of the same SQL and keeps its questions. */
export function addPersonPair(memory: MemoryFile, sql: string, question: string, at: string, rows?: number, signature?: string): MemoryFile {
  const old = memory.entries.find((e) => e.sql === sql);
  const questions = [question, ...(old?.questions ?? []).filter((q) => q !== question)];
  const entry: MemoryEntry = { sql, questions, source: 'person', at, ...(rows !== undefined ? { rows } : {}), ...(signature ? { signature } : {}) };
  return { ...memory, entries: [entry, ...memory.entries.filter((e) => e !== old)] };
}
