import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { AgroError } from '../errors.ts';
import { isPostgresUrl } from '../sql/postgres.ts';
import { variantUrl } from '../sql/pg-variants.ts';
import { assertReadableDatabase } from '../sql/introspect.ts';

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/**
 * A PostgreSQL server as the root: each db_id is the database of that name on it (`postgres://u:p@host/`,
 * as `agro db copy` lays them out), or the URL has `{db_id}` where the name goes. Nothing is checked
 * here (that needs the server): a missing database fails its queries as no_database.
 */
function pgDatabaseUrl(root: string, dbId: string): string {
  if (root.includes('{db_id}')) return root.replaceAll('{db_id}', encodeURIComponent(dbId));
  let u: URL;
  try {
    u = new URL(root);
  } catch {
    throw new AgroError('invalid_input', 'database root is not a valid postgres:// URL');
  }
  u.pathname = `/${encodeURIComponent(dbId)}`;
  return u.toString();
}

/** BIRD's and Spider's layout: `<root>/<db_id>/<db_id>.sqlite`, or a PostgreSQL server (above). Fails with one line for an unknown db_id. */
export function resolveDatabase(dbRoot: string, dbId: string): string {
  if (!/^[\w.-]+$/.test(dbId) || dbId === '.' || dbId === '..') {
    throw new AgroError('invalid_input', `db_id "${dbId}" is not a plain name`);
  }
  if (isPostgresUrl(dbRoot)) return pgDatabaseUrl(dbRoot, dbId);
  if (!isDir(dbRoot)) throw new AgroError('not_found', `database root not found: ${dbRoot}`);
  const path = join(dbRoot, dbId, `${dbId}.sqlite`);
  if (!existsSync(path)) throw new AgroError('not_found', `unknown db_id "${dbId}": no ${path}`);
  return resolve(path);
}

/**
 * Every db_id the data names, resolved once up front so a bad one stops the run before any query: a
 * missing database is not_found, one that is not a readable SQLite file (truncated, corrupt) invalid_input.
 */
export function resolveDatabases(dbRoot: string, dbIds: Iterable<string>): Map<string, string> {
  const out = new Map<string, string>();
  for (const id of dbIds) {
    if (out.has(id)) continue;
    const path = resolveDatabase(dbRoot, id);
    // A PostgreSQL database is checked by its first query (that needs the server).
    if (!isPostgresUrl(path)) assertReadableDatabase(path);
    out.set(id, path);
  }
  return out;
}

/** A folder the user named (--suite, --db-root, --variants): a missing one is not_found before any work. */
export function assertDir(flag: string, dir: string): void {
  if (!isPostgresUrl(dir) && !isDir(dir)) throw new AgroError('not_found', `${flag}: folder not found: ${dir}`);
}

/**
 * Test-suite variants of database `db` (its db_id `dbId`): `<suiteDir>/<db_id>/*.sqlite`, and for a server
 * database `*.pg` files, each naming a schema of it that the factory made (factory/augment.ts), as `db`'s
 * URL with that schema as its search_path. Sorted; none when the folder is absent.
 */
export function suiteVariants(suiteDir: string, dbId: string, db: string): string[] {
  if (isPostgresUrl(suiteDir)) return [];
  const dir = join(suiteDir, dbId);
  if (!isDir(dir)) return [];
  const server = isPostgresUrl(db);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.sqlite') || (server && f.endsWith('.pg')))
    .sort()
    .map((f) => (f.endsWith('.pg') ? variantUrl(db, readFileSync(join(dir, f), 'utf8').trim()) : resolve(dir, f)));
}

/**
 * Spider's test suite as upstream finds it: every other `.sqlite` file in the folder of the database
 * (exec_eval lists `<db_id>/` and runs both queries on each), sorted; the database itself excluded.
 */
export function folderDatabases(dbPath: string): string[] {
  if (isPostgresUrl(dbPath)) return [];
  const dir = dirname(dbPath);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.sqlite'))
    .sort()
    .map((f) => resolve(dir, f))
    .filter((p) => p !== resolve(dbPath));
}
