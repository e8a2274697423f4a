/**
 * Two SQL pools as one executor, so that runaway queries do not hold up quick ones: every query
 * starts in the fast lane with a short budget; one that runs past it is stopped there and run again,
 * with what is left of its own limit, in the slow lane, whose processes run at the lowest CPU priority.
 * Quick queries (nearly all of a reward batch) then never queue behind a query that will time out.
 * On Linux the budget is CPU time (read from /proc), not wall time: on a busy machine a quick query
 * waits for a core without using its budget, so the budget can be short, and a runaway, which burns
 * CPU from its first millisecond, leaves the fast lane after about fastMs of work.
 * The price: a query slower than the budget runs twice (its first fastMs are lost).
 */
import { setPriority } from 'node:os';
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

export class LanedExecutor implements SqlExecutor {
  readonly fast: SqlPool;
  readonly slow: SqlPool;
  private readonly niced = new Set<number>();
  /** Queries that went on to the slow lane (the bench reports it). */
  movedToSlow = 0;

  constructor(private readonly opts: LaneOptions) {
    this.fast = new SqlPool({ size: opts.fastSize });
    this.slow = new SqlPool({ size: opts.slowSize });
  }

  async execute(dbPath: string, sql: string, opts: ExecOptions = {}): Promise<ExecResult> {
    const limit = opts.timeoutMs ?? EXEC_DEFAULTS.timeoutMs;
    if (limit <= this.opts.fastMs) return this.fast.execute(dbPath, sql, opts);
    const budget = process.platform === 'linux' ? { timeoutMs: limit, cpuMs: this.opts.fastMs } : { timeoutMs: this.opts.fastMs };
    const first = await this.fast.execute(dbPath, sql, { ...opts, ...budget });
    const left = Math.floor(limit - first.elapsedMs);
    if (first.ok || first.error !== 'timeout' || left < 1) return first;
    this.movedToSlow++;
    const second = this.slow.execute(dbPath, sql, { ...opts, timeoutMs: left });
    this.lowerPriority();
    const r = await second;
    return { ...r, elapsedMs: r.elapsedMs + first.elapsedMs };
  }

  /** Children start lazily and are replaced after a kill: renice the ones not seen yet. */
  private lowerPriority(): void {
    const nice = this.opts.slowNice ?? 19;
    if (nice === 0) return;
    for (const pid of this.slow.childPids()) {
      if (this.niced.has(pid)) continue;
      try {
        setPriority(pid, nice);
        this.niced.add(pid);
      } catch {
        // The child may already be gone; the next call sees its replacement.
      }
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.fast.close(), this.slow.close()]);
  }
}
