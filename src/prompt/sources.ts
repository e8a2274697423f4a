/**
 * A database's documentation and value index, whichever its engine: the one place the prompt's material
 * picks an engine, as src/sql/executor.ts is for queries.
 */
import { isPostgresUrl } from '../sql/postgres.ts';
import { findDocs, readDocs } from './docs.ts';
import type { DbDocs } from './docs-types.ts';
import { pgDocs } from './pg-docs.ts';
import { buildValueIndexPostgres } from './pg-value-index.ts';
import { buildValueIndex, type ValueIndex, type ValueIndexOptions } from './value-index.ts';
import { databaseId } from '../sql/db-id.ts';

/**
 * A database's documentation: a SQLite file's is found beside it (docs.ts findDocs), a PostgreSQL database's
 * is its COMMENTs (pgDocs); undefined when it has none.
 */
export async function databaseDocs(db: string): Promise<DbDocs | undefined> {
  if (!isPostgresUrl(db)) return findDocs(db)?.docs;
  const docs = await pgDocs(db);
  return docs.overview || docs.tables.length ? docs : undefined;
}

/**
 * The documentation a command reads: the file or folder given (`--docs`), else the database's own (databaseDocs).
 * One rule for the factory's commands (synth, memory grow, the quickstart), so a memory's pairs are worded alike.
 */
export async function documentationOf(db: string, given?: string): Promise<DbDocs | undefined> {
  if (given) return readDocs(given, databaseId(db));
  return databaseDocs(db);
}

/** The value index (value-index.ts) of a SQLite file or a PostgreSQL database. */
export async function databaseValueIndex(db: string, opts: ValueIndexOptions = {}): Promise<ValueIndex> {
  return isPostgresUrl(db) ? buildValueIndexPostgres(db, opts) : buildValueIndex(db, opts);
}
