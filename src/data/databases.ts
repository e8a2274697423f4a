import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { AgroError } from '../errors.ts';

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** BIRD's and Spider's layout: `<root>/<db_id>/<db_id>.sqlite`. Fails with one line for an unknown db_id. */
export function resolveDatabase(dbRoot: string, dbId: string): string {
  if (!isDir(dbRoot)) throw new AgroError('not_found', `database root not found: ${dbRoot}`);
  if (!/^[\w.-]+$/.test(dbId) || dbId === '.' || dbId === '..') {
    throw new AgroError('invalid_input', `db_id "${dbId}" is not a plain name`);
  }
  const path = join(dbRoot, dbId, `${dbId}.sqlite`);
  if (!existsSync(path)) throw new AgroError('not_found', `unknown db_id "${dbId}": no ${path}`);
  return resolve(path);
}

/** Every db_id the data names, resolved once up front so a bad one stops the run before any query. */
export function resolveDatabases(dbRoot: string, dbIds: Iterable<string>): Map<string, string> {
  const out = new Map<string, string>();
  for (const id of dbIds) if (!out.has(id)) out.set(id, resolveDatabase(dbRoot, id));
  return out;
}

/** Test-suite variants of one database: `<suiteDir>/<db_id>/*.sqlite`, sorted; none when the folder is absent. */
export function suiteVariants(suiteDir: string, dbId: string): string[] {
  const dir = join(suiteDir, dbId);
  if (!isDir(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.sqlite'))
    .sort()
    .map((f) => resolve(dir, f));
}
