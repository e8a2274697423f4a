/**
 * The memory.json files of agro before the store (one JSON document, rewritten whole per correction): read once
 * and converted to a store beside them (`memory.json` → `memory.db`), on first use with one line saying so, or
 * by `agro memory migrate`. The JSON file is left as it was: an older agro can still read it.
 */
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import { readJsonFile } from '../util/fs.ts';
import type { DbSchema } from '../sql/types.ts';
import { memoryEntrySchema, type MemoryFile } from './entry.ts';
import { memoryFileKind, MemoryStore, writeMemory } from './store.ts';

const legacyFileSchema = z.strictObject({
  kind: z.literal('agro-memory'),
  version: z.literal(1),
  dbId: z.string().min(1),
  schema: z.string().min(1),
  entries: z.array(memoryEntrySchema.omit({ id: true })),
});

/** Where a memory.json's store goes: the same name with `.db` for `.json`. */
export function storePathOf(jsonPath: string): string {
  return jsonPath.endsWith('.json') ? `${jsonPath.slice(0, -'.json'.length)}.db` : `${jsonPath}.db`;
}

/** A memory.json's contents (exit 4 when it is not one agro wrote). */
export function readLegacyMemory(path: string): MemoryFile {
  const r = legacyFileSchema.safeParse(readJsonFile(path, 'memory', { strictUtf8: true }));
  if (!r.success) {
    const i = r.error.issues[0];
    throw new AgroError('invalid_input', `${path}: ${i.path.join('.') || 'memory'}: ${i.message} (not a memory agro wrote?)`);
  }
  return { dbId: r.data.dbId, schema: r.data.schema, entries: r.data.entries };
}

/** Converts a memory.json to a store (`out`, else beside it); returns where and how many pairs. */
export function migrateMemory(jsonPath: string, out = storePathOf(jsonPath)): { out: string; entries: number } {
  const memory = readLegacyMemory(jsonPath);
  writeMemory(out, memory);
  return { out, entries: memory.entries.length };
}

/**
 * The store a memory path names: the store itself, or for a memory.json its store beside it, converted on
 * first use (`note` gets the one line saying so). With `create`, a missing store is started empty.
 */
export function openMemory(path: string, o: { create?: { dbId: string; schema: DbSchema }; note?: (line: string) => void } = {}): MemoryStore {
  if (memoryFileKind(path) !== 'json') return MemoryStore.open(path, o.create ? { create: o.create } : {});
  const out = storePathOf(path);
  if (memoryFileKind(out) === 'none') {
    const { entries } = migrateMemory(path, out);
    (o.note ?? ((l) => process.stderr.write(`${l}\n`)))(`agro: converted ${path} to the memory store ${out} (${entries} pairs); agro uses the store from now on`);
  }
  return MemoryStore.open(out);
}

/** A memory as it is now (its live pairs), checked against the database's schema when one is given (exit 4). */
export function readMemory(path: string, schema?: DbSchema): MemoryFile {
  const store = openMemory(path);
  try {
    if (schema) store.check(schema);
    const { dbId, schema: fp, entries } = store.snapshot();
    return { dbId, schema: fp, entries };
  } finally {
    store.close();
  }
}
