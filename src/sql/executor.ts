/**
 * The one place that picks an engine: a database string is a SQLite file path or a postgres:// URL, and
 * createExecutor() returns an executor that routes each query by it, so nothing above src/sql knows which
 * engine runs. Each engine's executor starts on its first query (a run on SQLite never opens a socket).
 */
import { AgroError, redactSecrets } from '../errors.ts';
import { dialectOf, type SqlDialect } from './dialect.ts';
import { SqlPool, type SqlPoolOptions } from './pool.ts';
import { PgExecutor, isPostgresUrl } from './postgres.ts';
import { introspectSchema, type IntrospectOptions } from './introspect.ts';
import { introspectPostgres } from './pg-introspect.ts';
import type { DbSchema, ExecOptions, ExecResult, SqlExecutor } from './types.ts';

export type ExecutorOptions = SqlPoolOptions & {
  /** PostgreSQL: run queries on a role that can do more than read (PgExecutorOptions.allowPrivilegedRole). */
  allowPrivilegedRole?: boolean;
  /** SQLite files go to this executor instead of a SqlPool of `size` (the environment server's laned pools). */
  sqlite?: SqlExecutor;
};

/** The engine a database string names. */
export function engineOf(db: string): SqlDialect {
  return dialectOf(db);
}

export class EngineRouter implements SqlExecutor {
  /** Starts no process until its first query (cheap to make; bad options fail here). */
  readonly sqlite: SqlExecutor;
  private pg?: PgExecutor;
  private closed = false;

  /** `size`: SQLite processes, or connections per PostgreSQL server (default: the machine's cores). */
  constructor(private readonly opts: ExecutorOptions = {}) {
    this.sqlite = opts.sqlite ?? new SqlPool(opts);
  }

  async execute(db: string, sql: string, opts?: ExecOptions): Promise<ExecResult> {
    let r: ExecResult;
    if (isPostgresUrl(db)) {
      if (this.closed) throw new AgroError('usage', 'the SQL executor is closed');
      this.pg ??= new PgExecutor({ size: this.opts.size, defaults: this.opts.defaults, allowPrivilegedRole: this.opts.allowPrivilegedRole });
      r = await this.pg.execute(db, sql, opts);
    } else r = await this.sqlite.execute(db, sql, opts);
    // An error's message becomes an observation a policy reads and a trajectory keeps: never with a password.
    return r.ok ? r : { ...r, message: redactSecrets(r.message) };
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([this.sqlite.close(), this.pg?.close()]);
  }
}

/** An executor for SQLite files and PostgreSQL URLs alike. */
export function createExecutor(opts: ExecutorOptions = {}): SqlExecutor {
  return new EngineRouter(opts);
}

/** The schema and data profile of a SQLite file or a PostgreSQL database. */
export async function introspectDatabase(db: string, opts: IntrospectOptions = {}): Promise<DbSchema> {
  return isPostgresUrl(db) ? introspectPostgres(db, opts) : introspectSchema(db, opts);
}
