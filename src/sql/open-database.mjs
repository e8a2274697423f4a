// The one place agro opens a SQLite database to run SQL on it (the pool's executor children, schema
// introspection, variant building, entity search). Plain JavaScript so that pool-child.mjs, which runs
// without tsx, can import it too.
//
// Every connection loads agro's SQLite extension (native/sqlite/agro_sqlite.c, built with the native addon):
// - SQLite's default-build treatment of double-quoted string literals ("DQS"): better-sqlite3 compiles
//   its SQLite with SQLITE_DQS=0, which makes `WHERE name = "Bob"` an error, while Python's sqlite3 (and
//   so the official Spider and BIRD evaluators) accepts it;
// - agro_limit(), with which the pool's SQL processes stop a query past its limits without dying
//   (pool-child.mjs).
// better-sqlite3 enables extension loading through the C API only: the SQL function load_extension()
// stays disabled ("not authorized"), so queries cannot load anything themselves.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';

/** Where `npm run build:native` puts the extension. */
export const AGRO_SQLITE_EXTENSION = fileURLToPath(new URL('../../build/Release/agro_sqlite.node', import.meta.url));
const ENTRY_POINT = 'sqlite3_agrosqlite_init';

let available;

/** Whether the extension is built (checked once per process). */
export function legacyQuotesAvailable() {
  if (available === undefined) available = existsSync(AGRO_SQLITE_EXTENSION);
  return available;
}

/** One line telling a user what is missing and what changes without it. */
export const LEGACY_QUOTES_MISSING =
  `agro's SQLite extension (double-quoted string literals, query limits) is not built (${AGRO_SQLITE_EXTENSION}); ` +
  'run "npm run build:native". Until then "text" in SQL is an identifier only, and queries that use it as a string fail';

/**
 * Opens `path` with better-sqlite3 (same options) and turns on legacy double-quoted string literals
 * when the extension is built (else
 * SQLite's strict default; callers that need parity check legacyQuotesAvailable()).
 */
export function openDatabase(path, options = {}) {
  const db = new Database(path, options);
  if (legacyQuotesAvailable()) {
    try {
      db.loadExtension(AGRO_SQLITE_EXTENSION, ENTRY_POINT);
    } catch (err) {
      db.close();
      throw err;
    }
  }
  return db;
}
