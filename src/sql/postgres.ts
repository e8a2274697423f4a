/**
 * PgExecutor: read-only SQL on PostgreSQL servers, with the same contract as SqlPool (types.ts).
 * The "database" is a postgres:// URL; one connection pool (npm `pg`) per URL.
 *
 * The sandbox, outermost first (docs/postgres.md says what the server's role must be):
 *  - the guard refuses anything but one read query before it is sent (guard.ts, PostgreSQL dialect): a
 *    fast first refusal with a clear message, not the enforcement;
 *  - every query runs inside a transaction agro opens `READ ONLY` and rolls back, its limit set with
 *    `SET LOCAL statement_timeout` (the server stops its own runaway): whatever a query sets is undone;
 *  - before a connection goes back to the pool its session is reset (RESET_SESSION: what DISCARD ALL
 *    covers — settings, role, prepared statements, cursors, advisory locks, temporary objects); a
 *    connection whose reset fails is closed, never reused. Sessions also start read-only;
 *  - the query is sent with the extended protocol, which refuses several statements in one string;
 *  - agro's own clock (and, on the same machine, the backend's CPU time from /proc) cancels a runaway
 *    with pg_cancel_backend from a separate connection, and terminates it if the cancel is not heard;
 *  - the server sends at most maxRows + 1 rows (Execute's row limit); maxBytes bounds what is kept;
 *  - the role should have SELECT grants only (the server's own last line).
 *
 * Cells come back as SQLite's would (types.ts SqlValue): integers as numbers (bigint with safeIntegers),
 * numeric/real as numbers, booleans as 1/0, bytea as bytes, everything else (dates, times, json, arrays)
 * as PostgreSQL's text form, so results compare across engines.
 */
import { availableParallelism } from 'node:os';
import pg from 'pg';
import { AgroError, redactSecrets } from '../errors.ts';
import { processCpuMs } from '../util/proc.ts';
import { assertSingleReadQuery } from './guard.ts';
import { CappedQuery } from './pg-capped-query.ts';
import { privilegedRoleError, rolePrivileges } from './pg-role.ts';
import { EXEC_DEFAULTS, parseExecOptions, timedOut } from './pool.ts';
import type { ExecErrorKind, ExecOptions, ExecResult, SqlExecutor, SqlValue, TimeLimit } from './types.ts';

/** A database string names a PostgreSQL database when it is a postgres:// (or postgresql://) URL. */
export function isPostgresUrl(db: string): boolean {
  return /^postgres(?:ql)?:\/\//i.test(db);
}

/**
 * A URL as written again after an edit: WHATWG serialization percent-encodes the braces of a database root's
 * `{db_id}` placeholder (`postgres://u:p@host/bird_{db_id}`, data/databases.ts), which then names no placeholder.
 */
function serialize(u: URL, original: string): string {
  const s = u.toString();
  return original.includes('{db_id}') ? s.replaceAll('%7Bdb_id%7D', '{db_id}') : s;
}

/**
 * The URL without its password, for messages and reports: errors.ts redactSecrets, the one redaction (it
 * holds for URLs that do not parse, unknown schemes and typos too).
 */
export function redactUrl(url: string): string {
  return redactSecrets(url);
}

/**
 * A URL agro wrote redacted (`***`: a factory manifest, a report) as one without a password, which `pg`
 * then reads from PGPASSWORD or ~/.pgpass. Anything else is returned as it is.
 */
export function withoutRedactedPassword(url: string): string {
  if (!isPostgresUrl(url)) return url;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return url;
  }
  if (u.password !== '***') return url;
  u.password = '';
  return serialize(u, url);
}

/** Session settings every connection starts with (libpq `options`): read-only, plain strings, ISO dates in UTC. */
export const SESSION_OPTIONS = ['default_transaction_read_only=on', 'standard_conforming_strings=on', 'DateStyle=ISO', 'TimeZone=UTC', 'IntervalStyle=postgres', 'idle_in_transaction_session_timeout=60000']
  .map((s) => `-c ${s}`)
  .join(' ');

/**
 * A pg client's settings for a URL: its libpq `options` (`?options=-c%20search_path%3Dx`, how a variant
 * database names its schema: pg-variants.ts) first, then `session` (default SESSION_OPTIONS), whose later
 * `-c` wins. pg would otherwise let the URL's `options` replace the session's, read-only setting included.
 */
export function pgClientConfig(url: string, application_name: string, session: string = SESSION_OPTIONS): pg.ClientConfig {
  let connectionString = url;
  let own = '';
  try {
    const u = new URL(url);
    own = u.searchParams.get('options') ?? '';
    if (u.searchParams.has('options')) {
      u.searchParams.delete('options');
      connectionString = u.toString();
    }
  } catch {
    // not a parsable URL: pg reports it when it connects
  }
  return { connectionString, options: own ? `${own} ${session}` : session, application_name } as pg.ClientConfig;
}

/**
 * statement_timeout is the limit itself: the server stops its own runaway with no other process to wake
 * (which matters on a saturated machine). agro's clock, AGRO_STOP_AFTER_MS later, is the backstop for
 * what statement_timeout does not count (the transfer of a large result after the statement ended, a
 * server that does not keep its own limit).
 */
const AGRO_STOP_AFTER_MS = 25;
/** How often a cpuMs limit is checked (/proc counts CPU time in 10 ms ticks). */
const CPU_POLL_MS = 10;
/** How long after its limit a query that does not answer the cancel is given before its backend is terminated. */
const TERMINATE_AFTER_MS = 1000;

const OID = { bool: 16, bytea: 17, int8: 20, int2: 21, int4: 23, oid: 26, float4: 700, float8: 701, numeric: 1700 } as const;

function intParser(safe: boolean): (s: string) => SqlValue {
  return safe ? (s) => BigInt(s) : (s) => Number(s);
}

const asText = (s: string): SqlValue => s;

function makeTypeParsers(safeIntegers: boolean): pg.CustomTypesConfig {
  const int = intParser(safeIntegers);
  const parsers: Record<number, (s: string) => SqlValue> = {
    [OID.int2]: int,
    [OID.int4]: int,
    [OID.int8]: int,
    [OID.oid]: int,
    [OID.float4]: Number,
    [OID.float8]: Number,
    // SUM of integers and AVG are numeric in PostgreSQL: an integral one is an integer, else a float.
    [OID.numeric]: (s) => (/^-?\d+$/.test(s) ? int(s) : Number(s)),
    [OID.bool]: (s) => int(s === 't' ? '1' : '0'),
    [OID.bytea]: (s) => pg.types.getTypeParser(OID.bytea, 'text')(s) as Uint8Array,
  };
  return { getTypeParser: ((oid: number) => parsers[oid] ?? asText) as pg.CustomTypesConfig['getTypeParser'] };
}

/** The two sets, made once: they hold no state, and making them per query showed in a point lookup's profile. */
const TYPE_PARSERS = { safe: makeTypeParsers(true), plain: makeTypeParsers(false) };

/** pg's type parsers for a query: SQLite-like cells (see the header), everything else as text. */
export function typeParsers(safeIntegers: boolean): pg.CustomTypesConfig {
  return safeIntegers ? TYPE_PARSERS.safe : TYPE_PARSERS.plain;
}

/** The SQLSTATE classes and codes that map to each ExecErrorKind (www.postgresql.org/docs/current/errcodes-appendix.html). */
export function errorKindOf(code: string | undefined): ExecErrorKind {
  if (!code) return 'runtime';
  if (code === '3D000') return 'no_database'; // invalid_catalog_name: no such database
  if (code === '42501' || code === '25006' || code === '0A000') return 'refused'; // insufficient_privilege, read_only_sql_transaction, feature_not_supported (multi-statement)
  if (code.startsWith('42')) return 'syntax'; // syntax errors, unknown tables, columns and functions, ambiguous names
  if (code.startsWith('28') || code.startsWith('08')) return 'bad_database'; // authentication, connection
  return 'runtime';
}

/**
 * What DISCARD ALL does (www.postgresql.org/docs/current/sql-discard.html), after ending the query's
 * transaction, in one round trip. DISCARD ALL itself refuses to run inside the implicit transaction a
 * multi-statement string opens, so its parts are written out: a request's session-level changes (an
 * advisory lock, a setting or role it managed to keep) never reach the next request on this connection.
 * RESET ALL returns every setting to the session's start (SESSION_OPTIONS and the URL's own `options`).
 */
export const RESET_SESSION =
  'ROLLBACK; SET SESSION AUTHORIZATION DEFAULT; RESET ROLE; RESET ALL; DEALLOCATE ALL; CLOSE ALL; UNLISTEN *; SELECT pg_advisory_unlock_all(); DISCARD PLANS; DISCARD TEMP; DISCARD SEQUENCES';

/** The statements agro runs before each query, in its round trip: the READ ONLY transaction and its limit. */
export function queryPrelude(timeoutMs: number): string[] {
  return ['BEGIN READ ONLY', `SET LOCAL statement_timeout = ${Math.max(0, Math.floor(timeoutMs))}`];
}

/** Clients given a no-op 'error' listener (once each). */
const QUIET = new WeakSet<pg.PoolClient>();

export interface PgExecutorOptions {
  /** Connections per server URL (= its queries running at once). Default: the machine's cores, at least 2. */
  size?: number;
  /** Defaults for every execute() call; per-call options override them. */
  defaults?: ExecOptions;
  /**
   * The first, lexical refusal (default: the guard in PostgreSQL's dialect). Tests replace it with a no-op
   * to check that the connection's own layers (READ ONLY transaction, rollback, session reset) hold alone.
   */
  guard?: (sql: string) => void;
  /**
   * Run queries on a role that can do more than read (superuser, server-file roles, owner or writer of a
   * table: pg-role.ts). Default false: the first query on such a URL throws AgroError('refused'). The
   * factory, whose queries are its own, sets it; untrusted SQL only with --allow-privileged-role.
   */
  allowPrivilegedRole?: boolean;
}

interface Server {
  pool: pg.Pool;
  /** A connection of the same role kept for pg_cancel_backend / pg_terminate_backend. */
  control?: Promise<pg.Client>;
  /** The backends run on this machine (loopback or a socket): their CPU time can be read from /proc. */
  local: boolean;
  /** The role's privileges beyond reading (pg-role.ts), read on the first connection. */
  privileges?: Promise<{ role: string; reasons: string[] }>;
}

function isLocal(url: string): boolean {
  try {
    const u = new URL(url);
    const host = u.hostname.replace(/^\[|\]$/g, '');
    return host === '' || host === 'localhost' || host === '127.0.0.1' || host === '::1' || (u.searchParams.get('host') ?? '').startsWith('/');
  } catch {
    return false;
  }
}

export class PgExecutor implements SqlExecutor {
  readonly size: number;
  private readonly defaults: Required<ExecOptions>;
  private readonly guard: (sql: string) => void;
  private readonly allowPrivilegedRole: boolean;
  private readonly servers = new Map<string, Server>();
  private closed = false;
  /** Queries stopped by agro's own clock or CPU watch (not by the server's statement_timeout); tests read it. */
  cancels = 0;
  terminations = 0;
  /** The last query stopped by a limit: its backend, the limit, and how much of it (wall ms from the start of the run, or the backend's CPU ms) it had used when it ended. */
  lastStop?: { limit: TimeLimit; usedMs: number; pid: number };

  constructor(options: PgExecutorOptions = {}) {
    if (options.size !== undefined && (!Number.isInteger(options.size) || options.size < 1 || options.size > 256)) {
      throw new AgroError('usage', 'PgExecutor: size must be an integer from 1 to 256');
    }
    this.size = options.size ?? Math.max(2, availableParallelism());
    this.defaults = { ...EXEC_DEFAULTS, ...parseExecOptions(options.defaults, 'PgExecutor defaults') };
    this.guard = options.guard ?? ((sql) => assertSingleReadQuery(sql, 'postgres'));
    this.allowPrivilegedRole = options.allowPrivilegedRole ?? false;
  }

  private server(url: string): Server {
    let s = this.servers.get(url);
    if (!s) {
      const pool = new pg.Pool({ ...pgClientConfig(url, 'agro'), max: this.size, idleTimeoutMillis: 30_000 } as pg.PoolConfig);
      // An idle connection the server drops (restart, terminate) must not crash the process.
      pool.on('error', () => undefined);
      s = { pool, local: isLocal(url) };
      this.servers.set(url, s);
      // Open the cancel connection now, so that stopping the first runaway does not wait for a login.
      this.control(url, s).catch(() => undefined);
    }
    return s;
  }

  private control(url: string, s: Server): Promise<pg.Client> {
    if (!s.control) {
      const c = new pg.Client(pgClientConfig(url, 'agro-control'));
      c.on('error', () => {
        s.control = undefined;
      });
      s.control = c.connect().then(() => c);
      s.control.catch(() => {
        s.control = undefined;
      });
    }
    return s.control;
  }

  /** Asks the server to stop what backend `pid` is running (or to end it): the same role may signal its own sessions. */
  private async signal(url: string, s: Server, pid: number, fn: 'pg_cancel_backend' | 'pg_terminate_backend'): Promise<void> {
    try {
      const c = await this.control(url, s);
      await c.query(`SELECT ${fn}($1)`, [pid]);
    } catch {
      // The backend may be gone already; the query's own error path reports what happened.
    }
  }

  async execute(url: string, sql: string, opts?: ExecOptions): Promise<ExecResult> {
    if (this.closed) throw new AgroError('usage', 'the PostgreSQL executor is closed');
    const o: Required<ExecOptions> = { ...this.defaults, ...parseExecOptions(opts, 'execute') };
    try {
      this.guard(sql);
    } catch (err) {
      if (err instanceof AgroError) return { ok: false, error: err.kind === 'sql_error' ? 'syntax' : 'refused', message: err.message, elapsedMs: 0 };
      throw err;
    }
    const s = this.server(url);
    const t0 = performance.now();
    let client: pg.PoolClient;
    try {
      const connecting = s.pool.connect();
      if (o.maxWaitMs > 0) {
        let timer: NodeJS.Timeout | undefined;
        const waited = new Promise<'wait'>((res) => (timer = setTimeout(() => res('wait'), o.maxWaitMs)));
        const first = await Promise.race([connecting, waited]);
        clearTimeout(timer);
        if (first === 'wait') {
          connecting.then((c) => c.release(), () => undefined);
          return timedOut(o, 'wait', performance.now() - t0);
        }
        client = first;
      } else client = await connecting;
    } catch (err) {
      const e = err as { code?: string; message?: string };
      const kind = e.code ? errorKindOf(e.code) : 'bad_database';
      return { ok: false, error: kind === 'syntax' ? 'bad_database' : kind, message: `cannot connect to ${redactUrl(url)}: ${e.message ?? String(err)}`, elapsedMs: performance.now() - t0 };
    }
    if (!this.allowPrivilegedRole) {
      // Before the query reaches the server: a role that can write or reach files is refused whole.
      let privileges: { role: string; reasons: string[] };
      try {
        s.privileges ??= rolePrivileges(client);
        privileges = await s.privileges;
      } catch (err) {
        s.privileges = undefined;
        client.release(true);
        const e = err as { code?: string; message?: string };
        return { ok: false, error: 'bad_database', message: `cannot read the role's privileges on ${redactUrl(url)}: ${e.message ?? String(err)}`, elapsedMs: performance.now() - t0 };
      }
      if (privileges.reasons.length > 0) {
        client.release();
        throw privilegedRoleError(privileges.role, privileges.reasons, redactUrl(url));
      }
    }
    return this.run(url, s, client, sql, o);
  }

  private async run(url: string, s: Server, client: pg.PoolClient, sql: string, o: Required<ExecOptions>): Promise<ExecResult> {
    // Limits count from here, as SqlPool's do: the wait for a connection is maxWaitMs's.
    const t0 = performance.now();
    const pid = (client as unknown as { processID: number }).processID;
    // A checked-out client reports a dropped connection as an 'error' event: without a listener it would end the process.
    if (!QUIET.has(client)) {
      QUIET.add(client);
      client.on('error', () => undefined);
    }
    let stoppedBy: TimeLimit | undefined;
    let broken = false;
    let cpu0: number | undefined;
    let cancelled: Promise<void> | undefined;
    const timers: NodeJS.Timeout[] = [];
    const stop = (limit: TimeLimit): void => {
      if (stoppedBy) return;
      stoppedBy = limit;
      this.cancels++;
      cancelled = this.signal(url, s, pid, 'pg_cancel_backend');
      timers.push(
        setTimeout(() => {
          this.terminations++;
          void this.signal(url, s, pid, 'pg_terminate_backend');
        }, TERMINATE_AFTER_MS),
      );
    };
    const finish = (r: ExecResult): ExecResult => {
      if (!r.ok && r.error === 'timeout') {
        const usedMs = r.limit === 'cpu' && cpu0 !== undefined ? (processCpuMs(pid) ?? cpu0) - cpu0 : performance.now() - t0;
        this.lastStop = { pid, limit: r.limit ?? 'wall', usedMs };
      }
      return r;
    };
    try {
      timers.push(setTimeout(() => stop('wall'), Math.max(0, t0 + o.timeoutMs + AGRO_STOP_AFTER_MS - performance.now())));
      if (o.cpuMs > 0 && s.local) {
        cpu0 = processCpuMs(pid);
        if (cpu0 !== undefined) {
          const base = cpu0;
          timers.push(
            setInterval(() => {
              const now = processCpuMs(pid);
              if (now !== undefined && now - base > o.cpuMs) stop('cpu');
            }, CPU_POLL_MS),
          );
        }
      }
      const started = performance.now();
      // The READ ONLY transaction, its limit and the query in one round trip, the row cap enforced by the
      // server (pg-capped-query.ts); the transaction is rolled back by the reset below, never committed.
      const parsers = typeParsers(o.safeIntegers);
      const q = new CappedQuery(sql, { maxRows: o.maxRows, maxBytes: o.maxBytes, prelude: queryPrelude(o.timeoutMs), parserFor: (oid) => parsers.getTypeParser(oid, 'text') as (t: string) => SqlValue });
      client.query(q);
      const { columns, rows, truncated, truncatedBy } = await q.done;
      const elapsedMs = performance.now() - started;
      if (stoppedBy) {
        // It ended before our cancel reached it: the cancel could still hit the connection's next query.
        broken = true;
        return finish(timedOut(o, stoppedBy, elapsedMs));
      }
      return { ok: true, columns, rows, truncated, ...(truncatedBy ? { truncatedBy } : {}), elapsedMs };
    } catch (err) {
      const e = err as { code?: string; message?: string };
      const elapsedMs = performance.now() - t0;
      if (e.code === '57014' || stoppedBy) {
        // query_canceled, by our cancel ("due to user request") or by statement_timeout. When ours ended
        // it, its signal is spent and the connection may be reused; when we sent one but the server's
        // timer ended the query first, ours could still land on the next query: the connection goes.
        // Any other end of a stopped query (its backend terminated) leaves it broken too.
        if (e.code !== '57014' || (stoppedBy && !/user request/i.test(e.message ?? ''))) broken = true;
        await cancelled;
        return finish(timedOut(o, stoppedBy ?? 'wall', elapsedMs));
      }
      if (!e.code) broken = true;
      return { ok: false, error: errorKindOf(e.code), message: e.message ?? String(err), elapsedMs };
    } finally {
      for (const t of timers) clearTimeout(t);
      await this.reset(client, broken);
    }
  }

  /**
   * Ends the query's transaction and resets the session (RESET_SESSION) before the connection goes back
   * to the pool; a connection that is broken, or whose reset fails, is closed instead (pg's release(err)).
   */
  private async reset(client: pg.PoolClient, broken: boolean): Promise<void> {
    if (broken) {
      client.release(true);
      return;
    }
    try {
      await client.query(RESET_SESSION);
      client.release();
    } catch (err) {
      client.release(err instanceof Error ? err : true);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(
      [...this.servers.values()].map(async (s) => {
        const c = await s.control?.catch(() => undefined);
        await c?.end().catch(() => undefined);
        await s.pool.end().catch(() => undefined);
      }),
    );
    this.servers.clear();
  }
}
