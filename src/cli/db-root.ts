/** `--db-root` as eval and predict take it: a question file's databases, with a hint when the default was used. */
import { AgroError } from '../errors.ts';
import { resolveDatabases } from '../data/databases.ts';

/**
 * resolveDatabases under `given`, else under `fallback`: when the flag was left out and a database is not found
 * there, the line says so and names the flag (a question file of one's own rarely lives beside the bundled data).
 */
export function resolveDatabasesFromFlag(given: string | undefined, fallback: string, dbIds: Iterable<string>): Map<string, string> {
  try {
    return resolveDatabases(given ?? fallback, dbIds);
  } catch (err) {
    if (given !== undefined || !(err instanceof AgroError) || err.kind !== 'not_found') throw err;
    throw new AgroError('not_found', `${err.message} (without --db-root the databases are looked for under ${fallback}; pass --db-root <folder holding <db_id>/<db_id>.sqlite>)`);
  }
}
