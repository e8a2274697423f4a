/**
 * Where a db_id's database and its test-suite variants live. Two layouts: BIRD/Spider's
 * `<root>/<db_id>/<db_id>.sqlite` (+ an optional `<variants>/<db_id>/*.sqlite`), and a factory output
 * (`agro synth --out DIR`: manifest.json names the database, DIR/variants/<db_id>/ holds the variants).
 * Clients of the environment server name databases by db_id only, never by path.
 */
import { existsSync } from 'node:fs';
import { readText } from './read-json.ts';
import { basename, dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import { resolveDatabase, suiteVariants } from './databases.ts';
import { assertReadableDatabase } from '../sql/introspect.ts';
import { isPostgresUrl, redactUrl, withoutRedactedPassword } from '../sql/postgres.ts';

export interface CatalogEntry {
  dbId: string;
  path: string;
  /** Variant databases with the same schema (test-suite reward); may be empty. */
  variants: string[];
}

export interface DatabaseCatalog {
  /** The entry for a db_id; throws AgroError not_found / invalid_input for an unknown or malformed id. */
  resolve(dbId: string): CatalogEntry;
  /** A human description for logs (`db-root X`, `factory output Y`). */
  readonly describe: string;
}

/** `<root>/<db_id>/<db_id>.sqlite`, variants from `<variantsDir>/<db_id>/*.sqlite`; entries cached. */
export function catalogFromDbRoot(dbRoot: string, variantsDir?: string): DatabaseCatalog {
  const cache = new Map<string, CatalogEntry>();
  return {
    describe: `db-root ${redactUrl(dbRoot)}${variantsDir ? `, variants ${variantsDir}` : ''}`,
    resolve(dbId) {
      let e = cache.get(dbId);
      if (!e) {
        const path = resolveDatabase(dbRoot, dbId);
        // A PostgreSQL database is checked by its first query (that needs the server).
        if (!isPostgresUrl(path)) assertReadableDatabase(path);
        e = { dbId, path, variants: variantsDir ? suiteVariants(variantsDir, dbId, path) : [] };
        cache.set(dbId, e);
      }
      return e;
    },
  };
}

const manifestSchema = z.object({ dbId: z.string().min(1), db: z.string().min(1) });

export function isFactoryOutput(dir: string): boolean {
  return existsSync(join(dir, 'dataset.jsonl')) && existsSync(join(dir, 'manifest.json'));
}

/**
 * The factory output that `data` names: the folder itself, or the folder of its dataset.jsonl when the
 * factory's manifest.json sits beside it (`--data out/x/dataset.jsonl` names its database as `--data out/x` does).
 */
export function factoryOutputOf(data: string): string | undefined {
  if (isFactoryOutput(data)) return data;
  if (basename(data) === 'dataset.jsonl' && isFactoryOutput(dirname(data))) return dirname(data);
  return undefined;
}

/** A factory output folder: its manifest's database under its db_id, its variants/ folder. */
export function catalogFromFactoryOutput(dir: string): DatabaseCatalog {
  const manifestPath = join(dir, 'manifest.json');
  if (!existsSync(manifestPath)) throw new AgroError('not_found', `${manifestPath} not found (give the folder written by agro synth)`);
  const text = readText(manifestPath, 'manifest');
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new AgroError('invalid_input', `${manifestPath}: not valid JSON: ${(err as Error).message}`);
  }
  const m = manifestSchema.safeParse(raw);
  if (!m.success) throw new AgroError('invalid_input', `${manifestPath}: expected "dbId" and "db" (the database path)`);
  let path: string;
  // A server's URL is written without its password: it comes from PGPASSWORD or ~/.pgpass (or give --db-root <url>).
  if (isPostgresUrl(m.data.db)) path = withoutRedactedPassword(m.data.db);
  else {
    path = resolve(dir, m.data.db);
    if (!existsSync(path)) throw new AgroError('not_found', `${manifestPath} names database ${path}, which does not exist`);
    assertReadableDatabase(path);
  }
  const entry: CatalogEntry = { dbId: m.data.dbId, path, variants: suiteVariants(join(dir, 'variants'), m.data.dbId, path) };
  return {
    describe: `factory output ${dir}`,
    resolve(dbId) {
      if (dbId !== entry.dbId) throw new AgroError('not_found', `unknown db_id "${dbId}" (this factory output has only "${entry.dbId}")`);
      return entry;
    },
  };
}

/** Several catalogs searched in order (a server over a db-root and some factory outputs). */
export function combineCatalogs(catalogs: readonly DatabaseCatalog[]): DatabaseCatalog {
  if (catalogs.length === 1) return catalogs[0];
  return {
    describe: catalogs.map((c) => c.describe).join('; '),
    resolve(dbId) {
      let last: unknown;
      for (const c of catalogs) {
        try {
          return c.resolve(dbId);
        } catch (err) {
          last = err;
        }
      }
      throw last instanceof AgroError ? last : new AgroError('not_found', `unknown db_id "${dbId}"`);
    },
  };
}
