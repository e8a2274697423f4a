/**
 * SqlPool: read-only SQL on database files in a few child processes, with real wall-clock timeouts.
 *
 * Why processes and not worker_threads: better-sqlite3 has no interrupt(), and a worker running a
 * query in native code cannot be terminated (worker.terminate() never resolves while an infinite
 * recursive CTE runs; even process.exit hangs). A child process can always be SIGKILLed. So each
 * slot owns one child (src/sql/pool-child.mjs); a query past its limit gets its child killed and a
 * fresh one spawned, and the queue keeps moving. Concurrency equals the pool size; results come back
 * through each caller's own promise.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import { assertSingleReadQuery } from './guard.ts';
import type { ExecErrorKind, ExecOptions, ExecResult, Row, SqlExecutor } from './types.ts';

const CHILD_SCRIPT = fileURLToPath(new URL('./pool-child.mjs', import.meta.url));
/** Extra time a query may wait for its (re)started child to load before it counts as timed out. */
const START_GRACE_MS = 30_000;

/**
 * Live children of every pool in this process. A child busy in native code never sees its parent
 * disconnect, so when the parent exits without close() we SIGKILL them rather than leave orphans.
 */
const LIVE = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(child: ChildProcess): void {
  LIVE.add(child);
  child.once('exit', () => LIVE.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const c of LIVE) c.kill('SIGKILL');
    });
  }
}

export const EXEC_DEFAULTS: Required<ExecOptions> = { timeoutMs: 5000, maxRows: 10_000, maxBytes: 8 * 1024 * 1024, safeIntegers: false };

const execOptionsSchema = z.object({
  timeoutMs: z.number().int().positive().optional(),
  maxRows: z.number().int().nonnegative().optional(),
  maxBytes: z.number().int().nonnegative().optional(),
  safeIntegers: z.boolean().optional(),
});

const poolOptionsSchema = z.object({
  size: z.number().int().positive().max(64).optional(),
  defaults: execOptionsSchema.optional(),
});

export interface SqlPoolOptions {
  /** Number of child processes (= queries running at once). Default min(2, cores). */
  size?: number;
  /** Defaults for every execute() call; per-call options override them. */
  defaults?: ExecOptions;
}

interface Job {
  id: number;
  dbPath: string;
  sql: string;
  opts: Required<ExecOptions>;
  resolve: (r: ExecResult) => void;
}

interface Slot {
  child?: ChildProcess;
  job?: Job;
  timer?: NodeJS.Timeout;
  startedAt: number;
}

type ChildReply =
  | { ready: true }
  | { id: number; ok: true; columns: string[]; rows: Row[]; truncated: boolean }
  | { id: number; ok: false; error: ExecErrorKind; message: string };

function parseExecOptions(opts: ExecOptions | undefined, where: string): ExecOptions {
  const r = execOptionsSchema.safeParse(opts ?? {});
  if (!r.success) {
    throw new AgroError('usage', `${where}: timeoutMs must be a positive integer, maxRows and maxBytes non-negative integers`);
  }
  return r.data;
}

export class SqlPool implements SqlExecutor {
  readonly size: number;
  private readonly defaults: Required<ExecOptions>;
  private readonly slots: Slot[];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;
  /** Children that have loaded better-sqlite3 and said so; a query's time limit runs from then on. */
  private readonly ready = new WeakSet<ChildProcess>();
  /**
   * A started, idle child kept in reserve once a query has timed out: the slot whose child was
   * killed takes it at once, so the next query does not wait for a process start (0.2-1 s).
   */
  private spare?: ChildProcess;
  /** Children started so far (first starts and respawns); the tests and the bench read it. */
  spawned = 0;

  constructor(options: SqlPoolOptions = {}) {
    const parsed = poolOptionsSchema.safeParse(options);
    if (!parsed.success) throw new AgroError('usage', 'SqlPool: size must be an integer from 1 to 64');
    this.size = parsed.data.size ?? Math.min(2, availableParallelism());
    this.defaults = { ...EXEC_DEFAULTS, ...parseExecOptions(options.defaults, 'SqlPool defaults') };
    this.slots = Array.from({ length: this.size }, (): Slot => ({ startedAt: 0 }));
  }

  execute(dbPath: string, sql: string, opts?: ExecOptions): Promise<ExecResult> {
    if (this.closed) return Promise.reject(new AgroError('usage', 'the SQL pool is closed'));
    let merged: Required<ExecOptions>;
    try {
      merged = { ...this.defaults, ...parseExecOptions(opts, 'execute') };
    } catch (err) {
      return Promise.reject(err);
    }
    try {
      assertSingleReadQuery(sql);
    } catch (err) {
      if (err instanceof AgroError) return Promise.resolve({ ok: false, error: err.kind === 'sql_error' ? 'syntax' : 'refused', message: err.message, elapsedMs: 0 });
      throw err;
    }
    return new Promise<ExecResult>((resolve) => {
      this.queue.push({ id: this.nextId++, dbPath, sql, opts: merged, resolve });
      this.pump();
    });
  }

  /** Kills every child; queued and running queries resolve with a runtime error. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const job of this.queue.splice(0)) {
      job.resolve({ ok: false, error: 'runtime', message: 'the SQL pool was closed before the query ran', elapsedMs: 0 });
    }
    const exits: Promise<void>[] = [];
    const kill = (child: ChildProcess | undefined): void => {
      if (child && child.exitCode === null && child.signalCode === null) {
        exits.push(new Promise((res) => child.once('exit', () => res())));
        child.ref(); // an idle child is unref'd; without this the loop could empty before 'exit' arrives
        child.kill('SIGKILL');
      }
    };
    kill(this.spare);
    this.spare = undefined;
    for (const slot of this.slots) {
      clearTimeout(slot.timer);
      const { child, job } = slot;
      slot.child = undefined;
      slot.job = undefined;
      job?.resolve({ ok: false, error: 'runtime', message: 'the SQL pool was closed while the query ran', elapsedMs: performance.now() - slot.startedAt });
      kill(child);
    }
    await Promise.all(exits);
  }

  /** Process ids of the live children (for tests that kill one from outside). */
  childPids(): number[] {
    return this.slots.flatMap((s) => (s.child?.pid ? [s.child.pid] : []));
  }

  private startChild(): ChildProcess {
    // execArgv: [] so the child does not inherit `--import tsx` from a tsx-run parent (3-5x slower start).
    const child = fork(CHILD_SCRIPT, [], { serialization: 'advanced', execArgv: [], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    this.spawned++;
    track(child);
    // The owning slot is looked up on each event: a spare changes hands after it starts.
    const owner = (): Slot | undefined => this.slots.find((sl) => sl.child === child);
    child.on('message', (msg: ChildReply) => {
      if ('ready' in msg) {
        this.ready.add(child);
        const slot = owner();
        if (slot?.job) this.startTimer(slot, slot.job);
        return;
      }
      const slot = owner();
      const job = slot?.job;
      if (!slot || !job || job.id !== msg.id) return;
      const elapsedMs = performance.now() - slot.startedAt;
      this.finish(slot, msg.ok ? { ok: true, columns: msg.columns, rows: msg.rows, truncated: msg.truncated, elapsedMs } : { ok: false, error: msg.error, message: msg.message, elapsedMs });
    });
    child.on('error', () => {
      // Spawn/IPC failures surface as an 'exit' too (or not at all when already gone); the exit handler recovers.
    });
    child.on('exit', (code, signal) => {
      if (this.spare === child) {
        this.spare = undefined;
        return;
      }
      const slot = owner();
      if (!slot) return; // killed on purpose (timeout/close): already handled
      slot.child = undefined;
      if (slot.job) {
        const how = signal ? `signal ${signal}` : `exit code ${code}`;
        this.finish(slot, { ok: false, error: 'runtime', message: `the SQL executor process died (${how}) while running the query`, elapsedMs: performance.now() - slot.startedAt });
      }
    });
    return child;
  }

  /** A child for a slot that has none: the spare when there is one (then a new spare), else a fresh start. */
  private childFor(slot: Slot): ChildProcess {
    const spare = this.spare;
    this.spare = undefined;
    slot.child = spare ?? this.startChild();
    if (spare && !this.closed) {
      this.spare = this.startChild();
      this.release(this.spare);
    }
    return slot.child;
  }

  private finish(slot: Slot, result: ExecResult): void {
    clearTimeout(slot.timer);
    slot.timer = undefined;
    const job = slot.job;
    slot.job = undefined;
    this.idle(slot);
    job?.resolve(result);
    this.pump();
  }

  /** An idle child must not keep the process alive when a caller forgets close(). */
  private idle(slot: Slot): void {
    if (slot.child) this.release(slot.child);
  }

  private release(child: ChildProcess): void {
    child.unref();
    child.channel?.unref();
  }

  private busy(child: ChildProcess): void {
    child.ref();
    child.channel?.ref();
  }

  private onTimeout(slot: Slot, job: Job): void {
    if (slot.job !== job) return;
    const child = slot.child;
    slot.child = undefined;
    child?.kill('SIGKILL');
    // Replace it now (from the spare when one is warm), and keep a spare from here on.
    if (!this.closed) {
      this.childFor(slot);
      this.idle(slot);
      if (!this.spare) {
        this.spare = this.startChild();
        this.release(this.spare);
      }
    }
    this.finish(slot, {
      ok: false,
      error: 'timeout',
      message: `query ran past its ${job.opts.timeoutMs} ms limit and was stopped`,
      elapsedMs: performance.now() - slot.startedAt,
    });
  }

  /** The limit runs from when the child is ready; until then it gets START_GRACE_MS more to start. */
  private startTimer(slot: Slot, job: Job): void {
    clearTimeout(slot.timer);
    slot.timer = setTimeout(() => this.onTimeout(slot, job), job.opts.timeoutMs + (slot.child && this.ready.has(slot.child) ? 0 : START_GRACE_MS));
  }

  private pump(): void {
    if (this.closed) return;
    for (const slot of this.slots) {
      if (this.queue.length === 0) return;
      if (slot.job) continue;
      const job = this.queue.shift()!;
      const child = slot.child ?? this.childFor(slot);
      slot.job = job;
      slot.startedAt = performance.now();
      this.busy(child);
      this.startTimer(slot, job);
      child.send({ id: job.id, dbPath: job.dbPath, sql: job.sql, maxRows: job.opts.maxRows, maxBytes: job.opts.maxBytes, safeIntegers: job.opts.safeIntegers });
    }
  }
}
