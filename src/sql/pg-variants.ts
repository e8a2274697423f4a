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
 *
 * Views (and materialized views) come too, as a SQLite variant's file keeps the original's CREATE VIEW: each
 * view's definition (`pg_get_viewdef`, read where the original's tables are visible, so it names them without
 * their schema) is made again in the variant's schema once its tables are filled, in dependency order, with the
 * variant's schema first on the search_path, so the names find the variant's tables and views (functions and
 * types the definition uses still resolve as on the original). A view that would still read a table or view of
 * the original (a name its definition had to qualify) is left out and reported, never kept reading the
 * original's rows.
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

/** A view of the original left out of a variant, and why. */
export interface SkippedView {
  view: string;
  why: string;
}

/**
 * Makes schema `schema` as a variant of the URL's database: `tables` (those on its search_path) as empty
 * copies, then `fill` writes their rows, then `views` (views and materialized views on its search_path) are
 * made again over the variant's tables (see the header), all in one transaction. The copies keep columns,
 * types, NOT NULL, primary keys and unique indexes (so a clashing row is skipped, as SQLite's INSERT OR IGNORE
 * skips it); CHECK constraints, defaults and foreign keys are left out: a variant's rows are perturbed and keys
 * are made consistent by construction (SQLite's variants do not enforce foreign keys either). The roles that
 * may read an original table or view may read its copy. Returns the views it had to leave out.
 */
export async function buildPgVariant(url: string, schema: string, tables: readonly string[], fill: (w: VariantWriter) => Promise<void>, views: readonly string[] = []): Promise<SkippedView[]> {
  const c = await connectWriter(url);
  const s = quoteIdent(schema);
  const q = (cols: string[]) => cols.map(quoteIdent).join(', ');
  const select = async (from: string, cols: string[], limit = ''): Promise<SqlValue[][]> =>
    (await c.query({ text: `SELECT ${q(cols)} FROM ${from}${limit}`, rowMode: 'array', types: READ_TYPES })).rows as SqlValue[][];
  const insertMany = async (into: string, cols: string[], rows: SqlValue[][]): Promise<void> => {
    const values = rows.map((_, r) => `(${cols.map((_c, j) => `$${r * cols.length + j + 1}`).join(', ')})`).join(', ');
    await c.query(`INSERT INTO ${into} (${q(cols)}) VALUES ${values} ON CONFLICT DO NOTHING`, rows.flat().map(param));
  };
  // Whoever may read the original table or view may read its variant (the sandboxed role the reward runs as, say).
  const grant = async (name: string, roles: readonly string[]): Promise<void> => {
    for (const role of roles) {
      await c.query(`GRANT USAGE ON SCHEMA ${s} TO ${role}`);
      await c.query(`GRANT SELECT ON ${s}.${quoteIdent(name)} TO ${role}`);
    }
  };
  let skipped: SkippedView[] = [];
  try {
    await c.query('BEGIN READ WRITE');
    await c.query(`CREATE SCHEMA ${s}`);
    for (const t of tables) {
      await c.query(`CREATE TABLE ${s}.${quoteIdent(t)} (LIKE ${quoteIdent(t)} INCLUDING INDEXES)`);
      await grant(t, await readersOf(c, t));
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
    // After the rows: a materialized view is filled when it is made.
    if (views.length > 0) skipped = await copyViews(c, schema, tables, views, grant);
    await c.query('COMMIT');
    return skipped;
  } catch (err) {
    await c.query('ROLLBACK').catch(() => undefined);
    if (err instanceof AgroError) throw err;
    throw new AgroError('invalid_input', `cannot make variant ${schema} on ${redactUrl(url)}: ${(err as Error).message}`);
  } finally {
    await c.end().catch(() => undefined);
  }
}

interface ViewDef {
  oid: number;
  name: string;
  kind: 'v' | 'm';
  def: string;
  options: string[] | null;
}

/**
 * The original's `views` made again in variant schema `schema` (its `tables` already made and filled), in
 * dependency order, on writer connection `c` inside the variant's transaction; see the header. Each view
 * under its own savepoint: one that fails, or that still reads a relation of the original, is left out
 * (those that use it then fail too, and are left out as well) and returned with the reason.
 */
async function copyViews(c: pg.Client, schema: string, tables: readonly string[], views: readonly string[], grant: (name: string, roles: readonly string[]) => Promise<void>): Promise<SkippedView[]> {
  const s = quoteIdent(schema);
  // Read while the original's search_path is in force: pg_get_viewdef names a relation it finds there unqualified.
  const defs = (
    await c.query<ViewDef>(
      `SELECT c.oid::int AS oid, c.relname AS name, c.relkind AS kind, pg_get_viewdef(c.oid) AS def, c.reloptions AS options
       FROM unnest($1::text[]) AS v(name) JOIN pg_class c ON c.oid = to_regclass(quote_ident(v.name))
       WHERE c.relkind IN ('v', 'm')`,
      [views],
    )
  ).rows;
  const skipped: SkippedView[] = views.filter((v) => !defs.some((d) => d.name === v)).map((view) => ({ view, why: 'not a view on the search_path' }));
  if (defs.length === 0) return skipped;
  // The original's relations a variant view must not read: its tables and views (their copies are in the variant).
  const originals = (await c.query<{ oid: number }>('SELECT to_regclass(quote_ident(n))::oid::int AS oid FROM unnest($1::text[]) AS n', [[...tables, ...views]])).rows
    .map((r) => r.oid)
    .filter((o): o is number => o !== null);
  const viewOids = defs.map((d) => d.oid);
  // Which of the views each view reads (through its rewrite rule's dependencies).
  const uses = (
    await c.query<{ view: number; uses: number }>(
      `SELECT DISTINCT r.ev_class::int AS view, d.refobjid::int AS uses
       FROM pg_rewrite r JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid AND d.refclassid = 'pg_class'::regclass
       WHERE r.ev_class = ANY ($1::oid[]) AND d.refobjid = ANY ($1::oid[]) AND d.refobjid <> r.ev_class`,
      [viewOids],
    )
  ).rows;
  const order: ViewDef[] = [];
  const placed = new Set<number>();
  const visit = (d: ViewDef, path: Set<number>): void => {
    if (placed.has(d.oid) || path.has(d.oid)) return;
    path.add(d.oid);
    for (const u of uses.filter((x) => x.view === d.oid)) {
      const dep = defs.find((x) => x.oid === u.uses);
      if (dep) visit(dep, path);
    }
    placed.add(d.oid);
    order.push(d);
  };
  for (const d of [...defs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) visit(d, new Set());
  // The original views' readers, while their names still find them (below, the variant's come first).
  const readers = new Map<number, string[]>();
  for (const d of defs) readers.set(d.oid, await readersOf(c, d.name));

  // The variant's schema first: unqualified names find its tables and views; anything else resolves as on the original.
  const { path, setting } = (await c.query<{ path: string[]; setting: string }>("SELECT current_schemas(false)::text[] AS path, current_setting('search_path') AS setting")).rows[0];
  await c.query(`SET LOCAL search_path = ${[schema, ...path.filter((p) => p !== schema)].map(quoteIdent).join(', ')}`);
  try {
    for (const d of order) {
      const target = `${s}.${quoteIdent(d.name)}`;
      const body = d.def.trim().replace(/;$/, '');
      const withOptions = d.kind === 'v' && d.options?.length ? ` WITH (${d.options.join(', ')})` : '';
      await c.query('SAVEPOINT view');
      try {
        await c.query(`CREATE ${d.kind === 'm' ? 'MATERIALIZED VIEW' : 'VIEW'} ${target}${withOptions} AS ${body}`);
        const made = (await c.query<{ oid: number }>('SELECT to_regclass($1)::oid::int AS oid', [target])).rows[0].oid;
        const reads = (
          await c.query<{ name: string }>(
            `SELECT DISTINCT d.refobjid::regclass::text AS name
             FROM pg_rewrite r JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid AND d.refclassid = 'pg_class'::regclass
             WHERE r.ev_class = $1 AND d.refobjid = ANY ($2::oid[]) ORDER BY 1`,
            [made, originals],
          )
        ).rows.map((r) => r.name);
        if (reads.length > 0) throw new Error(`it would read the original's ${reads.join(', ')}`);
        await grant(d.name, readers.get(d.oid) ?? []);
        await c.query('RELEASE SAVEPOINT view');
      } catch (err) {
        await c.query('ROLLBACK TO SAVEPOINT view');
        skipped.push({ view: d.name, why: (err as Error).message });
      }
    }
  } finally {
    await c.query("SELECT set_config('search_path', $1, true)", [setting]).catch(() => undefined);
  }
  return skipped.sort((a, b) => (a.view < b.view ? -1 : a.view > b.view ? 1 : 0));
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
