/**
 * Filling a memory: the factory's pairs, each run once for its result's signature, and a person's correction,
 * run read-only in the sandbox before it is stored.
 */
import { dirname } from 'node:path';
import { AgroError } from '../errors.ts';
import { ensureDir } from '../util/fs.ts';
import type { DbSchema, SqlExecutor } from '../sql/types.ts';
import { checkTypedText, resultSignature, schemaFingerprint, type MemoryEntry, type MemoryFile, type MemoryPair } from './entry.ts';
import { openMemory } from './legacy.ts';
import { memoryFileKind, type StoredEntry } from './store.ts';

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
  return { dbId, schema: schemaFingerprint(schema), entries };
}

type Ran = Extract<Awaited<ReturnType<SqlExecutor['execute']>>, { ok: true }>;

/**
 * Stores a person's pair (a correction): the store is checked against the database, the SQL runs read-only in the
 * sandbox first, and only a query that runs is stored (one line and exit 5 or 6 otherwise; nothing written), in
 * one transaction of its own. With `create` (the database's id), a missing store is started as an empty memory
 * of the database. Returns the stored pair (with its id) and the query's result.
 */
export async function storeCorrection(path: string, db: string, schema: DbSchema, question: string, sql: string, executor: SqlExecutor, o: { create?: string } = {}): Promise<Ran & { entry: StoredEntry; path: string }> {
  if (!question.trim()) throw new AgroError('usage', 'the question of a correction is empty');
  if (!sql.trim()) throw new AgroError('usage', 'the SQL of a correction is empty');
  checkTypedText(question, 'question', 'correction');
  checkTypedText(sql, 'SQL', 'correction');
  // A store that exists is checked before the query runs (another database's is refused without running anything);
  // a missing one is started only once the query ran, so a correction that fails leaves no file behind.
  const exists = memoryFileKind(path) !== 'none' || !o.create;
  const store = exists ? openMemory(path) : undefined;
  try {
    store?.check(schema);
    const r = await executor.execute(db, sql, { timeoutMs: 10_000, maxRows: 10_000 });
    if (!r.ok) throw new AgroError(r.error === 'refused' ? 'refused' : 'sql_error', `the corrected SQL does not run (${r.error}: ${r.message}); nothing written`);
    if (!store) ensureDir(dirname(path));
    const target = store ?? openMemory(path, { create: { dbId: o.create!, schema } });
    try {
      if (!store) target.check(schema);
      const entry = target.addPerson({ sql: sql.trim(), question: question.trim(), at: new Date().toISOString(), rows: r.rows.length, signature: resultSignature(r.rows) });
      return { ...r, entry, path: target.path };
    } finally {
      if (!store) target.close();
    }
  } finally {
    store?.close();
  }
}
