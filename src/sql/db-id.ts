/**
 * A database's id, the one rule every part of agro names a database by: a SQLite file's name without its extension
 * (`dbs/shop/shop.sqlite` → `shop`), a PostgreSQL URL's database (the path's last part, `postgres` when none).
 * The id keys a schema (introspection), a memory store's owner, the factory's rows and a session's corrections, so
 * two spellings of it would let one part refuse or miss what another wrote.
 */
import { basename, extname } from 'node:path';
import { isPostgresUrl } from './postgres.ts';

export function databaseId(db: string): string {
  return isPostgresUrl(db) ? pgDbId(db) : basename(db, extname(db));
}

/** The database's name (the URL's path), as the dbId of its schema. */
export function pgDbId(url: string): string {
  try {
    return decodeURIComponent(basename(new URL(url).pathname)) || 'postgres';
  } catch {
    return 'postgres';
  }
}
