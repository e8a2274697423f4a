/**
 * Variant databases on a PostgreSQL server: each a schema of the original database (`agro_variant_<tag>_<i>`)
 * holding tables of the same names and columns, filled by factory/augment.ts through a VariantWriter, and
 * named by the original's URL with libpq's `options=-c search_path=<schema>` (variantUrl), which every agro
 * connection honours (postgres.ts pgClientConfig) and psql too.
 *
 * Schemas rather than databases: CREATE on the one database is all it needs (CREATE DATABASE needs CREATEDB,
 * and copying a database as a template needs no one else connected to it, while the factory's pool is);
 * `INSERT ... SELECT` and the tables' definitions stay on one connection; and DDL is transactional, so each
 * variant is made in one transaction: one that fails or is interrupted (even a killed process) leaves nothing.
 *
 * Writing needs its own connection by the URL the user gave, read-write, with CREATE on the database: the
 * sandboxed role (pg-setup.ts) has none, so there the factory goes on without variants (canCreateSchemas).
 * What is read from a variant afterwards is read as from any database: through the sandboxed executor.
 */
import pg from 'pg';
import { AgroError } from '../errors.ts';
import { quoteIdent } from './lexer.ts';
import { SESSION_OPTIONS, pgClientConfig, redactUrl, typeParsers } from './postgres.ts';
import type { SqlValue, VariantWriter } from './types.ts';

/** Every variant schema's name starts so (what `dropVariantSchemas` without names drops). */
export const VARIANT_SCHEMA_PREFIX = 'agro_variant_';

/** A variant's schema: the run's tag (letters, digits) and its number from 1. */
export function variantSchemaName(tag: string, i: number): string {
  if (!/^[a-z0-9]{1,32}$/.test(tag) || !Number.isInteger(i) || i < 1) throw new AgroError('usage', `bad variant tag or number: ${tag} ${i}`);
  return `${VARIANT_SCHEMA_PREFIX}${tag}_${i}`;
}

/** The URL of a variant: the database's URL whose search_path is the variant's schema alone (any options it had kept before). */
export function variantUrl(url: string, schema: string): string {
  const u = new URL(url);
  const own = u.searchParams.get('options');
  u.searchParams.delete('options');
  // encodeURIComponent, not URLSearchParams: libpq reads %20 as a space but not '+'.
  const options = encodeURIComponent(`${own ? `${own} ` : ''}-c search_path=${schema}`);
  u.search = `${u.search ? `${u.search}&` : '?'}options=${options}`;
  return u.toString();
}

// Read-write, otherwise the session every agro connection has (ISO dates, UTC, plain strings).
const WRITE_SESSION = SESSION_OPTIONS.replace('default_transaction_read_only=on', 'default_transaction_read_only=off');

async function connectWriter(url: string): Promise<pg.Client> {
  const c = new pg.Client(pgClientConfig(url, 'agro-variants', WRITE_SESSION));
  c.on('error', () => undefined);
  try {
    await c.connect();
  } catch (err) {
    throw new AgroError('invalid_input', `cannot connect to ${redactUrl(url)}: ${(err as Error).message}`);
  }
  return c;
}

/** Whether the URL's role may create schemas in its database (and the session is not forced read-only), or why not. */
export async function canCreateSchemas(url: string): Promise<{ ok: true } | { ok: false; why: string }> {
  const c = await connectWriter(url);
  try {
    const r = await c.query<{ role: string; db: string; create: boolean }>("SELECT current_user AS role, current_database() AS db, has_database_privilege(current_database(), 'CREATE') AS create");
    const { role, db, create } = r.rows[0];
    return create ? { ok: true } : { ok: false, why: `role ${role} may not CREATE schemas in database ${db}` };
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** The variant schemas (of `names`) that exist on the server. */
export async function existingSchemas(url: string, names: readonly string[]): Promise<Set<string>> {
  const c = await connectWriter(url);
  try {
    const r = await c.query<{ nspname: string }>('SELECT nspname FROM pg_namespace WHERE nspname = ANY ($1)', [names]);
    return new Set(r.rows.map((x) => x.nspname));
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** Booleans stay 't'/'f' (written back as they are, never taken for numbers to perturb); the rest as the executor reads cells. */
const READ_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format: 'text') => (oid === 16 ? (s: string) => s : typeParsers(false).getTypeParser(oid, format))) as pg.CustomTypesConfig['getTypeParser'],
};

const param = (v: SqlValue): unknown => (typeof v === 'bigint' ? v.toString() : v instanceof Uint8Array ? Buffer.from(v) : v);

/** The roles granted SELECT on a table (as GRANT names them: quoted, or PUBLIC), from its ACL. */
async function readersOf(c: pg.Client, table: string): Promise<string[]> {
  const r = await c.query<{ role: string }>(
    `SELECT DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END AS role
     FROM pg_class t CROSS JOIN LATERAL aclexplode(t.relacl) a LEFT JOIN pg_roles r ON r.oid = a.grantee
     WHERE t.oid = to_regclass(quote_ident($1)) AND a.privilege_type = 'SELECT' AND a.grantee <> t.relowner ORDER BY 1`,
    [table],
  );
  return r.rows.map((x) => x.role);
}

/** Parameters per INSERT statement (the protocol allows 65,535). */
const MAX_PARAMS = 30_000;

/**
 * Makes schema `schema` as a variant of the URL's database: `tables` (those on its search_path) as empty
 * copies, then `fill` writes their rows, all in one transaction. The copies keep columns, types, NOT NULL,
 * primary keys and unique indexes (so a clashing row is skipped, as SQLite's INSERT OR IGNORE skips it);
 * CHECK constraints, defaults, foreign keys and views are left out: a variant's rows are perturbed and keys
 * are made consistent by construction (SQLite's variants do not enforce foreign keys either). The roles that
 * may read an original table may read its copy.
 */
export async function buildPgVariant(url: string, schema: string, tables: readonly string[], fill: (w: VariantWriter) => Promise<void>): Promise<void> {
  const c = await connectWriter(url);
  const s = quoteIdent(schema);
  const q = (cols: string[]) => cols.map(quoteIdent).join(', ');
  const select = async (from: string, cols: string[], limit = ''): Promise<SqlValue[][]> =>
    (await c.query({ text: `SELECT ${q(cols)} FROM ${from}${limit}`, rowMode: 'array', types: READ_TYPES })).rows as SqlValue[][];
  const insertMany = async (into: string, cols: string[], rows: SqlValue[][]): Promise<void> => {
    const values = rows.map((_, r) => `(${cols.map((_c, j) => `$${r * cols.length + j + 1}`).join(', ')})`).join(', ');
    await c.query(`INSERT INTO ${into} (${q(cols)}) VALUES ${values} ON CONFLICT DO NOTHING`, rows.flat().map(param));
  };
  try {
    await c.query('BEGIN READ WRITE');
    await c.query(`CREATE SCHEMA ${s}`);
    for (const t of tables) {
      await c.query(`CREATE TABLE ${s}.${quoteIdent(t)} (LIKE ${quoteIdent(t)} INCLUDING INDEXES)`);
      // Whoever may read the original table may read its variant (the sandboxed role the reward runs as, say).
      for (const role of await readersOf(c, t)) {
        await c.query(`GRANT USAGE ON SCHEMA ${s} TO ${role}`);
        await c.query(`GRANT SELECT ON ${s}.${quoteIdent(t)} TO ${role}`);
      }
    }
    await fill({
      readOriginal: (table, cols, limit) => select(quoteIdent(table), cols, ` LIMIT ${Math.floor(limit)}`),
      readVariant: (table, cols) => select(`${s}.${quoteIdent(table)}`, cols),
      async insert(table, cols, rows) {
        const into = `${s}.${quoteIdent(table)}`;
        const per = Math.max(1, Math.floor(MAX_PARAMS / Math.max(1, cols.length)));
        for (let i = 0; i < rows.length; i += per) {
          const batch = rows.slice(i, i + per);
          await c.query('SAVEPOINT batch');
          try {
            await insertMany(into, cols, batch);
            await c.query('RELEASE SAVEPOINT batch');
          } catch {
            // A value the column refuses (a perturbed number past a numeric's precision): row by row, skipping it.
            await c.query('ROLLBACK TO SAVEPOINT batch');
            for (const r of batch) {
              await c.query('SAVEPOINT row');
              try {
                await insertMany(into, cols, [r]);
                await c.query('RELEASE SAVEPOINT row');
              } catch {
                await c.query('ROLLBACK TO SAVEPOINT row');
              }
            }
          }
        }
      },
    });
    await c.query('COMMIT');
  } catch (err) {
    await c.query('ROLLBACK').catch(() => undefined);
    if (err instanceof AgroError) throw err;
    throw new AgroError('invalid_input', `cannot make variant ${schema} on ${redactUrl(url)}: ${(err as Error).message}`);
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** Drops the named variant schemas (or, with none named, every `agro_variant_*` schema of the database); returns those dropped. */
export async function dropVariantSchemas(url: string, names?: readonly string[]): Promise<string[]> {
  const c = await connectWriter(url);
  try {
    const r = await c.query<{ nspname: string }>('SELECT nspname FROM pg_namespace WHERE left(nspname, length($1)) = $1 AND ($2::text[] IS NULL OR nspname = ANY ($2)) ORDER BY nspname', [VARIANT_SCHEMA_PREFIX, names ?? null]);
    for (const { nspname } of r.rows) await c.query(`DROP SCHEMA IF EXISTS ${quoteIdent(nspname)} CASCADE`);
    return r.rows.map((x) => x.nspname);
  } catch (err) {
    throw new AgroError('invalid_input', `cannot drop variant schemas on ${redactUrl(url)}: ${(err as Error).message}`);
  } finally {
    await c.end().catch(() => undefined);
  }
}
