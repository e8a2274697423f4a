/**
 * Two SQL pools as one executor, so that runaway queries do not hold up quick ones: every query
 * starts in the fast lane with a short budget; one that runs past it is stopped there (inside its
 * process: no kill) and run again, with what is left of its own limit, in the slow lane, whose
 * processes run at the lowest CPU priority. Quick queries (nearly all of a reward batch) then never
 * queue behind a query that will time out, and a runaway costs the others its short budget only.
 *
 * On Linux every limit here is CPU time, not wall time: a query's verdict (answered or timed out) is
 * then the same on an idle machine and on one saturated with other requests, which is what a reward
 * must be; a quick query waiting for a core uses none of its budget. A wall-clock cap of WALL_FACTOR ×
 * the limit still bounds every query, its wait for a slow-lane process included. Elsewhere (no per-
 * process CPU clock) the limits are wall time, as in a plain pool.
 * The price: a query slower than the budget runs twice (its first fastMs are lost) and, on a saturated
 * machine, waits at low priority.
 */
import { SqlPool, EXEC_DEFAULTS } from './pool.ts';
import type { ExecOptions, ExecResult, SqlExecutor } from './types.ts';

export interface LaneOptions {
  fastSize: number;
  slowSize: number;
  /** Time a query may run in the fast lane before it moves to the slow one (CPU time on Linux, else wall time). */
  fastMs: number;
  /** Nice value of the slow lane's processes (0 = same priority as the rest; default 19, the lowest). */
  slowNice?: number;
}

/** The wall-clock cap of a CPU-limited query, as a multiple of its limit. */
export const WALL_FACTOR = 5;

const CPU_LIMITS = process.platform === 'linux';

export class LanedExecutor implements SqlExecutor {
  readonly fast: SqlPool;
  readonly slow: SqlPool;
  /** Queries that went on to the slow lane (the bench reports it). */
  movedToSlow = 0;
  /** Queries past the fast budget that were not run further because the slow lane could not take them in time. */
  shed = 0;

  constructor(private readonly opts: LaneOptions) {
    this.fast = new SqlPool({ size: opts.fastSize });
    this.slow = new SqlPool({ size: opts.slowSize, nice: opts.slowNice ?? 19 });
  }

  execute(dbPath: string, sql: string, opts: ExecOptions = {}): Promise<ExecResult> {
    return CPU_LIMITS ? this.byCpu(dbPath, sql, opts) : this.byWall(dbPath, sql, opts);
  }

  private async byCpu(dbPath: string, sql: string, opts: ExecOptions): Promise<ExecResult> {
    const limit = opts.timeoutMs ?? EXEC_DEFAULTS.timeoutMs;
    const cap = WALL_FACTOR * limit;
    const budget = Math.min(limit, this.opts.fastMs);
    const first = await this.fast.execute(dbPath, sql, { ...opts, timeoutMs: cap, cpuMs: budget });
    if (first.ok || first.error !== 'timeout') return first;
    const wallLeft = Math.floor(cap - first.elapsedMs);
    if (budget >= limit || wallLeft < 1) return this.timedOut(first, limit, first.elapsedMs);
    // Shed at once what could not start before its wall cap even if it ran at full speed: under a flood
    // of runaways the slow lane's backlog is runaways, and a query queued behind them would only hold
    // its caller (and the caller's server slot) until the cap and then time out anyway.
    const ahead = this.slow.worstWaitMs();
    if (ahead >= wallLeft) return this.shedResult(budget, ahead, wallLeft, first.elapsedMs);
    this.movedToSlow++;
    const r = await this.slow.execute(dbPath, sql, { ...opts, timeoutMs: wallLeft, cpuMs: limit - budget, maxWaitMs: wallLeft });
    const elapsedMs = r.elapsedMs + first.elapsedMs;
    return r.ok || r.error !== 'timeout' ? { ...r, elapsedMs } : this.timedOut(r, limit, elapsedMs);
  }

  /** One message for a query past its limit, whichever lane and clock stopped it. */
  private timedOut(r: Extract<ExecResult, { ok: false }>, limit: number, elapsedMs: number): ExecResult {
    const message = r.limit === 'cpu'
      ? `query used more than its ${limit} ms limit of CPU time and was stopped`
      : `query ran past ${WALL_FACTOR * limit} ms of wall time (${WALL_FACTOR}× its ${limit} ms CPU limit, on a busy machine) and was stopped`;
    return { ok: false, error: 'timeout', message, elapsedMs, limit: r.limit === 'cpu' ? 'cpu' : 'wall' };
  }

  private shedResult(budget: number, ahead: number, left: number, elapsedMs: number): ExecResult {
    this.shed++;
    const message = `query ran past its ${budget} ms fast-lane budget and the slow lane is full (up to ${Math.round(ahead)} ms of queries ahead, more than the ${left} ms its limit leaves): not run further`;
    return { ok: false, error: 'timeout', limit: 'wait', elapsedMs, message };
  }

  private async byWall(dbPath: string, sql: string, opts: ExecOptions): Promise<ExecResult> {
    const limit = opts.timeoutMs ?? EXEC_DEFAULTS.timeoutMs;
    if (limit <= this.opts.fastMs) return this.fast.execute(dbPath, sql, opts);
    const first = await this.fast.execute(dbPath, sql, { ...opts, timeoutMs: this.opts.fastMs });
    const left = Math.floor(limit - first.elapsedMs);
    if (first.ok || first.error !== 'timeout' || left < 1) return first;
    const ahead = this.slow.worstWaitMs();
    if (ahead >= left) return this.shedResult(this.opts.fastMs, ahead, left, first.elapsedMs);
    this.movedToSlow++;
    const r = await this.slow.execute(dbPath, sql, { ...opts, timeoutMs: left });
    return { ...r, elapsedMs: r.elapsedMs + first.elapsedMs };
  }

  async close(): Promise<void> {
    await Promise.all([this.fast.close(), this.slow.close()]);
  }
}
