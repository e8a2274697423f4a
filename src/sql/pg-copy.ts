/**
 * Copies a SQLite database into PostgreSQL, so the same databases run on both engines (`agro db copy`).
 *
 * Types follow the values, not only the declared type, because SQLite stores any value in any column:
 * a column holding only integers becomes integer (bigint past 32 bits), reals (with or without
 * integers) numeric, text (alone or mixed with numbers) text, blobs bytea; an empty column maps its
 * declared affinity. numeric rather than double precision because ROUND(x, 2), in most SQL written for
 * SQLite, exists for numeric only; each REAL arrives as its shortest decimal form, so it is the same
 * number, but arithmetic on it is then decimal (SUM(0.1, 0.2) = 0.3 exactly, where SQLite gives
 * 0.30000000000000004). Dates stay text, as SQLite keeps them (ISO strings compare, sort and LIKE the same way).
 * Names are folded to lower case by default, so SQL written for SQLite with unquoted mixed-case names
 * (`SELECT Name FROM Artist`) finds them on PostgreSQL, which folds unquoted names to lower case.
 * Primary and foreign keys are added after the data, each on its own: one the data breaks (SQLite does
 * not enforce foreign keys, and lets NULLs into non-integer primary keys) is skipped and reported.
 * The whole copy is one transaction: the target ends complete or unchanged; a database the copy creates is
 * made under a temporary name and renamed at the end (dropped when the copy fails).
 */
import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import pg from 'pg';
import { AgroError } from '../errors.ts';
import { openReadOnly } from './introspect.ts';
import { quoteIdent } from './lexer.ts';
import { readerRoleProblems } from './pg-role.ts';
import { redactUrl } from './postgres.ts';
import type { SqlValue } from './types.ts';

export interface CopyOptions {
  /** Drop tables of the same names first (default: refuse when one exists). */
  replace?: boolean;
  /** Keep names' case as in SQLite instead of folding to lower case. */
  keepCase?: boolean;
  /** Rows per INSERT (bounded by PostgreSQL's 65535 parameters). Default 1000. */
  batchRows?: number;
}

export interface CopyReport {
  tables: Array<{ name: string; rows: number; columns: Array<{ name: string; type: string }> }>;
  /** Keys the data did not allow, and other things not copied (views), in words. */
  skipped: string[];
  elapsedMs: number;
}

interface Col {
  name: string;
  declared: string;
  pk: number;
}

const INT4 = 2 ** 31;

/** PostgreSQL's type for a column, from the storage classes its values use (see the header). */
export function pgTypeFor(classes: Map<string, number>, declared: string, fitsInt4: boolean): string {
  const has = (c: string): boolean => (classes.get(c) ?? 0) > 0;
  if (has('text') || (has('blob') && (has('integer') || has('real')))) return 'text';
  if (has('blob')) return 'bytea';
  // numeric, not double precision: ROUND(x, 2), in most SQL written for SQLite, exists for numeric only.
  if (has('real')) return 'numeric';
  if (has('integer')) return fitsInt4 ? 'integer' : 'bigint';
  const t = declared.toUpperCase();
  if (t.includes('INT')) return 'bigint';
  if (t.includes('CHAR') || t.includes('CLOB') || t.includes('TEXT') || t.includes('DATE') || t.includes('TIME')) return 'text';
  if (t.includes('BLOB')) return 'bytea';
  if (t.includes('REAL') || t.includes('FLOA') || t.includes('DOUB')) return 'numeric';
  return t.trim() === '' ? 'text' : 'numeric';
}

/** A SQLite cell as a parameter for a column of PostgreSQL type `type`. */
function param(v: SqlValue, type: string): unknown {
  if (v === null) return null;
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Uint8Array) return type === 'text' ? Buffer.from(v).toString('utf8').replace(/\0/g, '') : Buffer.from(v);
  if (typeof v === 'number' && type === 'text') return String(v);
  if (typeof v === 'number' && !Number.isFinite(v)) return v > 0 ? 'Infinity' : v < 0 ? '-Infinity' : 'NaN';
  // PostgreSQL text cannot hold NUL characters; SQLite's can.
  if (typeof v === 'string') return v.replace(/\0/g, '');
  return v;
}

/** A connection to the copy's target, and what to do with the database once the copy ends. */
interface Target {
  client: pg.Client;
  /** Ends the client; when the database was made by this copy, renames it into place (ok) or drops it. */
  finish(ok: boolean): Promise<void>;
}

/** The URL with another database name (the server's `postgres` database, a temporary one). */
function onDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(name)}`;
  return u.toString();
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: onDatabase(url, 'postgres') });
  admin.on('error', () => undefined);
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end().catch(() => undefined);
  }
}

/**
 * Connects to the URL's database. When it does not exist the copy goes into a new database under a temporary
 * name (`agro_copy_<8 hex>`), renamed to the URL's name only once the copy has committed: CREATE DATABASE runs
 * outside any transaction, so a failed copy drops it, and a killed one leaves the URL's name unused
 * (issue 47: a failed copy left an empty database behind). A leftover temporary one holds nothing agro reads.
 */
async function connectCreating(url: string): Promise<Target> {
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return { client: c, finish: async () => void (await c.end().catch(() => undefined)) };
  } catch (err) {
    if ((err as { code?: string }).code !== '3D000') throw err;
  }
  const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
  const temp = `agro_copy_${randomBytes(4).toString('hex')}`;
  await adminQuery(url, `CREATE DATABASE ${quoteIdent(temp)}`);
  const drop = (): Promise<void> => adminQuery(url, `DROP DATABASE IF EXISTS ${quoteIdent(temp)}`).catch(() => undefined);
  const again = new pg.Client({ connectionString: onDatabase(url, temp) });
  again.on('error', () => undefined);
  try {
    await again.connect();
  } catch (err) {
    await drop();
    throw err;
  }
  return {
    client: again,
    finish: async (ok) => {
      await again.end().catch(() => undefined);
      if (!ok) return drop();
      try {
        await adminQuery(url, `ALTER DATABASE ${quoteIdent(temp)} RENAME TO ${quoteIdent(name)}`);
      } catch (err) {
        await drop();
        throw err;
      }
    },
  };
}

function readColumns(db: Database.Database, table: string): Col[] {
  return (db.prepare('SELECT name, type, pk FROM pragma_table_info(?)').all(table) as Array<{ name: string; type: string; pk: number }>).map((c) => ({ name: c.name, declared: c.type, pk: c.pk }));
}

export async function copySqliteToPostgres(sqlitePath: string, url: string, opts: CopyOptions = {}): Promise<CopyReport> {
  const t0 = performance.now();
  const batchRows = opts.batchRows ?? 1000;
  const fold = (n: string): string => (opts.keepCase ? n : n.toLowerCase());
  const src = openReadOnly(sqlitePath);
  let target: Target;
  try {
    target = await connectCreating(url);
  } catch (err) {
    src.close();
    throw new AgroError('invalid_input', `cannot connect to ${redactUrl(url)}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const c = target.client;
  const report: CopyReport = { tables: [], skipped: [], elapsedMs: 0 };
  let ok = false;
  try {
    const objects = src.prepare(`SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name`).all() as Array<{ name: string; type: string }>;
    const tables = objects.filter((o) => o.type === 'table').map((o) => o.name);
    for (const v of objects.filter((o) => o.type === 'view')) report.skipped.push(`view ${v.name}: views are SQLite SQL and are not copied`);
    const seen = new Map<string, string>();
    for (const t of tables) {
      const prev = seen.get(fold(t));
      if (prev) throw new AgroError('invalid_input', `tables ${prev} and ${t} have the same lower-case name; copy with --keep-case`);
      seen.set(fold(t), t);
    }
    await c.query('BEGIN');
    if (!opts.replace) {
      const existing = await c.query({ text: `SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND relname = ANY ($1)`, values: [tables.map(fold)] });
      if (existing.rows.length > 0) throw new AgroError('invalid_input', `${redactUrl(url)} already has table ${existing.rows[0].relname}; copy with --replace to drop it first`);
    } else {
      for (const t of tables) await c.query(`DROP TABLE IF EXISTS ${quoteIdent(fold(t))} CASCADE`);
    }
    const colsOf = new Map<string, Col[]>();
    for (const t of tables) {
      const cols = readColumns(src, t);
      colsOf.set(t, cols);
      const q = quoteIdent(t);
      const types = cols.map((col) => {
        const cq = quoteIdent(col.name);
        const classes = new Map((src.prepare(`SELECT typeof(${cq}), count(*) FROM ${q} GROUP BY 1`).raw(true).all() as Array<[string, number]>).map(([k, n]) => [k, n]));
        const [lo, hi] = src.prepare(`SELECT min(${cq}), max(${cq}) FROM ${q} WHERE typeof(${cq}) = 'integer'`).raw(true).safeIntegers(true).get() as [bigint | null, bigint | null];
        const fits = lo === null || hi === null || (lo >= -INT4 && hi < INT4);
        return pgTypeFor(classes, col.declared, fits);
      });
      await c.query(`CREATE TABLE ${quoteIdent(fold(t))} (${cols.map((col, i) => `${quoteIdent(fold(col.name))} ${types[i]}`).join(', ')})`);
      const per = Math.max(1, Math.min(batchRows, Math.floor(65535 / Math.max(1, cols.length))));
      const insertHead = `INSERT INTO ${quoteIdent(fold(t))} (${cols.map((col) => quoteIdent(fold(col.name))).join(', ')}) VALUES `;
      let rows = 0;
      let batch: unknown[][] = [];
      const flush = async (): Promise<void> => {
        if (batch.length === 0) return;
        const values: unknown[] = [];
        const tuples = batch.map((r) => `(${r.map((v) => (values.push(v), `$${values.length}`)).join(', ')})`);
        await c.query(insertHead + tuples.join(', '), values);
        rows += batch.length;
        batch = [];
      };
      // Numbers going into a text column are written as SQLite writes them (CAST(1.0 AS TEXT) is '1.0').
      const select = cols.map((col, i) => {
        const cq = quoteIdent(col.name);
        return types[i] === 'text' ? `CASE WHEN typeof(${cq}) IN ('integer', 'real') THEN CAST(${cq} AS TEXT) ELSE ${cq} END` : cq;
      });
      for (const r of src.prepare(`SELECT ${select.join(', ')} FROM ${q}`).raw(true).safeIntegers(true).iterate() as Iterable<SqlValue[]>) {
        batch.push(r.map((v, i) => param(v, types[i])));
        if (batch.length >= per) await flush();
      }
      await flush();
      report.tables.push({ name: fold(t), rows, columns: cols.map((col, i) => ({ name: fold(col.name), type: types[i] })) });
    }
    // Keys after the data, each under a savepoint so one the data breaks is skipped, not fatal.
    const tryKey = async (what: string, sql: string): Promise<void> => {
      await c.query('SAVEPOINT k');
      try {
        await c.query(sql);
        await c.query('RELEASE SAVEPOINT k');
      } catch (err) {
        await c.query('ROLLBACK TO SAVEPOINT k');
        report.skipped.push(`${what}: ${err instanceof Error ? err.message : String(err)}`);
      }
    };
    for (const t of tables) {
      const pk = colsOf.get(t)!.filter((col) => col.pk > 0).sort((a, b) => a.pk - b.pk).map((col) => quoteIdent(fold(col.name)));
      if (pk.length > 0) await tryKey(`primary key of ${fold(t)}`, `ALTER TABLE ${quoteIdent(fold(t))} ADD PRIMARY KEY (${pk.join(', ')})`);
    }
    for (const t of tables) {
      const fks = src.prepare('SELECT id, seq, "table", "from", "to" FROM pragma_foreign_key_list(?) ORDER BY id, seq').all(t) as Array<{ id: number; table: string; from: string; to: string | null }>;
      const ids = [...new Set(fks.map((f) => f.id))];
      for (const id of ids) {
        const parts = fks.filter((f) => f.id === id);
        const parent = parts[0].table;
        const parentTable = tables.find((x) => x.toLowerCase() === parent.toLowerCase()) ?? parent;
        const parentPk = (colsOf.get(parentTable) ?? []).filter((col) => col.pk > 0).sort((a, b) => a.pk - b.pk).map((col) => col.name);
        const to = parts.map((p, i) => p.to ?? parentPk[i] ?? '');
        const what = `foreign key ${fold(t)}(${parts.map((p) => fold(p.from)).join(', ')}) -> ${fold(parentTable)}(${to.map(fold).join(', ')})`;
        if (!colsOf.has(parentTable)) {
          report.skipped.push(`${what}: no table ${parent}`);
          continue;
        }
        await tryKey(
          what,
          `ALTER TABLE ${quoteIdent(fold(t))} ADD FOREIGN KEY (${parts.map((p) => quoteIdent(fold(p.from))).join(', ')}) REFERENCES ${quoteIdent(fold(parentTable))} (${to.map((x) => quoteIdent(fold(x))).join(', ')})`,
        );
      }
    }
    await c.query('COMMIT');
    await c.query('ANALYZE');
    ok = true;
  } catch (err) {
    await c.query('ROLLBACK').catch(() => undefined);
    if (err instanceof AgroError) throw err;
    throw new AgroError('invalid_input', `copy of ${sqlitePath} into ${redactUrl(url)} failed: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    src.close();
    // A database this copy made is renamed into place, or dropped if the copy failed.
    await target.finish(ok).catch((err: unknown) => {
      if (ok) throw new AgroError('invalid_input', `copy of ${sqlitePath} into ${redactUrl(url)} failed: ${err instanceof Error ? err.message : String(err)}`);
    });
  }
  report.elapsedMs = performance.now() - t0;
  return report;
}

/** Runs statements one by one on the URL's database (setup SQL such as sandboxRoleSql, as its owner). */
export async function runAdminSql(url: string, statements: readonly string[]): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => undefined);
  try {
    await c.connect();
    for (const s of statements) await c.query(s);
  } catch (err) {
    throw new AgroError('invalid_input', `setup on ${redactUrl(url)} failed: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    await c.end().catch(() => undefined);
  }
}

/**
 * Refuses `--reader <role>` before anything changes when the role cannot be agro's reader (pg-role.ts
 * readerRoleProblems): the login role itself, or one with privileges beyond reading.
 */
export async function assertReaderRoleFit(url: string, role: string): Promise<void> {
  let c = new pg.Client({ connectionString: url });
  c.on('error', () => undefined);
  try {
    try {
      await c.connect();
    } catch (err) {
      if ((err as { code?: string }).code !== '3D000') throw err;
      // The database is yet to be made: the roles are the server's, read them from its postgres database.
      c = new pg.Client({ connectionString: onDatabase(url, 'postgres') });
      c.on('error', () => undefined);
      await c.connect();
    }
    const problems = await readerRoleProblems(c, role);
    if (problems.length > 0) throw new AgroError('usage', `--reader ${role}: refused, nothing changed: the role is ${problems.join(', ')}; name a new role (agro creates it) or one that may only read`);
  } catch (err) {
    if (err instanceof AgroError) throw err;
    throw new AgroError('invalid_input', `cannot check --reader ${role} on ${redactUrl(url)}: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    await c.end().catch(() => undefined);
  }
}
