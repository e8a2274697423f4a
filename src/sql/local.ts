/**
 * LocalSqlite: read-only SQL on SQLite files in this process, for callers that run their own SQL in bulk
 * (the data factory asks tens of thousands of small queries per database). Each query is answered by the
 * same code as in the pool's executor processes (run-query.mjs: the same row, byte and time limits, the
 * same errors), without the pool's message round trip: serializing a query and its rows both ways cost
 * the factory about as much CPU as SQLite's own work on a small database (docs/benchmarks.md, factory).
 *
 * Only where agro's SQLite extension can stop a query past its limit from inside (agro_limit): without it
 * a runaway query could not be stopped without killing this process, so `LocalSqlite.create` gives null and
 * the caller keeps its pool. The queries run on this thread, one at a time; every ~20 ms of them the
 * answer waits for the event loop's next turn, so timers (progress bars) and signals are still served.
 * Not for other people's SQL: the pool's processes also cap a query's memory (RLIMIT_DATA), this does not.
 */
import { randomBytes } from 'node:crypto';
import { AgroError } from '../errors.ts';
import { assertSingleReadQuery } from './guard.ts';
import { openDatabase } from './open-database.mjs';
import { EXEC_DEFAULTS, parseExecOptions, timedOut } from './pool.ts';
import { makeRunner } from './run-query.mjs';
import type { ExecOptions, ExecResult, SqlExecutor } from './types.ts';

/** Longest run of queries between two turns of the event loop. */
const YIELD_MS = 20;

type Limits = 'cpu+wall' | 'wall' | 'none';
let processLimits: { token: string; limits: Limits } | undefined;

/**
 * The limit token of this process and what the extension enforces with it. The extension reads
 * AGRO_SQL_LIMIT_TOKEN once, at the first load that finds it set, so the token is one per process; it is
 * removed from the environment again so that processes started later do not inherit it.
 */
function limitsOfProcess(): { token: string; limits: Limits } {
  if (processLimits) return processLimits;
  const inherited = process.env.AGRO_SQL_LIMIT_TOKEN;
  const token = inherited || randomBytes(16).toString('hex');
  process.env.AGRO_SQL_LIMIT_TOKEN = token;
  let probe = 0;
  try {
    const db = openDatabase(':memory:');
    try {
      probe = db.prepare('SELECT agro_limit(?, 0, 0)').pluck().get(token) as number;
    } finally {
      db.close();
    }
  } catch {
    probe = 0; // no extension, or one without limits
  } finally {
    if (!inherited) delete process.env.AGRO_SQL_LIMIT_TOKEN;
  }
  processLimits = { token, limits: probe === 2 ? 'cpu+wall' : probe === 1 ? 'wall' : 'none' };
  return processLimits;
}

export class LocalSqlite implements SqlExecutor {
  private readonly runner: ReturnType<typeof makeRunner>;
  private readonly limits: Limits;
  private lastTurn = performance.now();
  private closed = false;
  /** Queries answered here; the tests read it. */
  executed = 0;

  private constructor(
    token: string,
    limits: Limits,
    /** Runs what this executor cannot bound itself (a CPU-time limit where the extension has none). */
    private readonly fallback: SqlExecutor,
  ) {
    this.runner = makeRunner(token);
    this.limits = limits;
  }

  /** An in-process executor, or null when a query past its limit could not be stopped here. */
  static create(fallback: SqlExecutor): LocalSqlite | null {
    const { token, limits } = limitsOfProcess();
    return limits === 'none' ? null : new LocalSqlite(token, limits, fallback);
  }

  execute(dbPath: string, sql: string, opts?: ExecOptions): Promise<ExecResult> {
    if (this.closed) return Promise.reject(new AgroError('usage', 'the SQL executor is closed'));
    let o: Required<ExecOptions>;
    try {
      o = { ...EXEC_DEFAULTS, ...parseExecOptions(opts, 'execute') };
    } catch (err) {
      return Promise.reject(err);
    }
    if (o.cpuMs > 0 && this.limits !== 'cpu+wall') return this.fallback.execute(dbPath, sql, opts);
    try {
      assertSingleReadQuery(sql);
    } catch (err) {
      if (err instanceof AgroError) return Promise.resolve({ ok: false, error: err.kind === 'sql_error' ? 'syntax' : 'refused', message: err.message, elapsedMs: 0 });
      throw err;
    }
    this.executed++;
    const t0 = performance.now();
    const reply = this.runner.answer({ dbPath, sql, maxRows: o.maxRows, maxBytes: o.maxBytes, safeIntegers: o.safeIntegers, timeoutMs: o.timeoutMs, cpuMs: o.cpuMs }, t0);
    const elapsedMs = performance.now() - t0;
    // As the pool words it (pool.ts, a child's reply).
    let result: ExecResult;
    if (elapsedMs > o.timeoutMs) result = timedOut(o, 'wall', elapsedMs);
    else if (reply.ok) result = { ok: true, columns: reply.columns, rows: reply.rows, truncated: reply.truncated, ...(reply.truncatedBy ? { truncatedBy: reply.truncatedBy } : {}), elapsedMs };
    else if ('limit' in reply) result = timedOut(o, reply.limit, elapsedMs);
    else result = { ok: false, error: reply.error, message: reply.message, elapsedMs };
    const now = performance.now();
    if (now - this.lastTurn < YIELD_MS) return Promise.resolve(result);
    this.lastTurn = now;
    return new Promise((resolve) => setImmediate(() => resolve(result)));
  }

  /** Closes this executor's connections; the fallback belongs to whoever made it. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.runner.close();
  }
}
