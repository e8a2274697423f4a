/**
 * SqlPool: read-only SQL on database files in a few child processes, with real wall-clock timeouts.
 *
 * Why processes and not worker_threads: better-sqlite3 has no interrupt(), and a worker running a
 * query in native code cannot be terminated (worker.terminate() never resolves while an infinite
 * recursive CTE runs; even process.exit hangs). A child process can always be SIGKILLed. So each
 * slot owns one child (src/sql/pool-child.mjs); a query past its limit gets its child killed and a
 * fresh one spawned, and the queue keeps moving. Concurrency equals the pool size; results come back
 * through each caller's own promise.
 *
 * Each child runs under a data-size limit (RLIMIT_DATA, `memoryLimitMiB`): a query that would
 * materialize more (zeroblob(1e9) in eight columns) fails as that query's error instead of growing
 * the process until the machine runs out. A child that dies for any other reason (killed from
 * outside) is not the query's fault: the query runs again on a fresh child, up to MAX_ATTEMPTS times.
 * The query is timed in the child; the parent's timer only decides when to stop a child, and before
 * it does, it reads whatever the child has already sent (a busy event loop can fire the timer late).
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { availableParallelism, setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import { processCpuMs } from '../util/proc.ts';
import { assertSingleReadQuery } from './guard.ts';
import type { ExecErrorKind, ExecOptions, ExecResult, Row, SqlExecutor, TimeLimit } from './types.ts';

const CHILD_SCRIPT = fileURLToPath(new URL('./pool-child.mjs', import.meta.url));
/** Extra time a query may wait for its (re)started child to load before it counts as timed out. */
const START_GRACE_MS = 30_000;
/** Longest per-query limit: setTimeout holds at most 2^31-1 ms, and the start grace is added to it. */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1 - START_GRACE_MS;
/**
 * Runs of one query that may end in its child dying of something other than the query's own limits.
 * A child that dies before it has loaded does not count: the query never ran there.
 */
const MAX_ATTEMPTS = 3;
/** Data-size limit of each child (RLIMIT_DATA); a fresh child uses about 85 MiB of it. */
export const DEFAULT_MEMORY_LIMIT_MIB = 512;
/** How a child that hit its data-size limit in V8 (not in SQLite) says so before it aborts. */
const OUT_OF_MEMORY = /out of memory|allocation failed|heap limit/i;

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

export const EXEC_DEFAULTS: Required<ExecOptions> = { timeoutMs: 5000, maxRows: 10_000, maxBytes: 8 * 1024 * 1024, safeIntegers: false, cpuMs: 0, maxWaitMs: 0 };

const execOptionsSchema = z.object({
  timeoutMs: z.number().int().positive().max(MAX_TIMEOUT_MS).optional(),
  maxRows: z.number().int().nonnegative().optional(),
  maxBytes: z.number().int().nonnegative().optional(),
  safeIntegers: z.boolean().optional(),
  cpuMs: z.number().int().nonnegative().max(MAX_TIMEOUT_MS).optional(),
  maxWaitMs: z.number().int().nonnegative().max(MAX_TIMEOUT_MS).optional(),
});

const poolOptionsSchema = z.object({
  size: z.number().int().positive().max(64).optional(),
  defaults: execOptionsSchema.optional(),
  memoryLimitMiB: z.number().int().min(128).max(1024 * 1024).optional(),
  nice: z.number().int().min(0).max(19).optional(),
});

export interface SqlPoolOptions {
  /** Number of child processes (= queries running at once). Default min(2, cores). */
  size?: number;
  /** Defaults for every execute() call; per-call options override them. */
  defaults?: ExecOptions;
  /** Data-size limit of each child process in MiB (Linux; default 512). Results must fit in about a third of it. */
  memoryLimitMiB?: number;
  /**
   * CPU priority of the children (nice value, 0..19; default 0), set once a child has started: a child
   * that had to start at low priority on a busy machine could take seconds just to load.
   */
  nice?: number;
}

interface Job {
  id: number;
  dbPath: string;
  sql: string;
  opts: Required<ExecOptions>;
  resolve: (r: ExecResult) => void;
  /** Runs that ended with their (loaded) child dying of an outside cause; the query is repeated until MAX_ATTEMPTS. */
  attempts: number;
  /** The child has finished the query (its `done` message) and is sending the result. */
  doneMs?: number;
  /** Fails the job if it is still queued after opts.maxWaitMs. */
  waitTimer?: NodeJS.Timeout;
}

interface Slot {
  child?: ChildProcess;
  /** The query the child is running now (its time limit is the one running). */
  job?: Job;
  /** Queries sent to the child with `job` in one message, run after it in this order. */
  pending: Job[];
  timer?: NodeJS.Timeout;
  /** Polls the child's CPU time when the job has a cpuMs limit. */
  cpuTimer?: NodeJS.Timeout;
  startedAt: number;
}

type ChildReply =
  | { ready: true; limits: ChildLimits }
  | { id: number; done: true; elapsedMs: number }
  | { id: number; ok: true; columns: string[]; rows: Row[]; truncated: boolean; truncatedBy?: 'rows' | 'bytes'; elapsedMs: number }
  | { id: number; ok: false; error: ExecErrorKind; message: string; elapsedMs: number }
  /** Stopped inside the child by agro's SQLite extension; the message is made here, from the job. */
  | { id: number; ok: false; error: 'timeout'; limit: 'cpu' | 'wall'; elapsedMs: number };

/**
 * Most queries sent to one child in one message. Each message costs a write and a wake-up of the
 * child; with queries waiting, the child gets several at once and answers each as it finishes, so
 * every query still has its own time limit and result.
 */
export const MAX_BATCH = 8;

/** Which limits a child stops its own queries at (agro's SQLite extension): both, wall clock only, none. */
type ChildLimits = 'cpu+wall' | 'wall' | 'none';

/**
 * A child that stops its own queries gets this much longer before the parent kills it: the parent's
 * timers are then the backstop for what the interrupt cannot reach, not the way a runaway query ends.
 */
function backstopMs(limitMs: number): number {
  return 100 + Math.ceil(limitMs / 10);
}

/** How often a cpuMs limit is checked (/proc counts CPU time in 10 ms ticks). */
const CPU_POLL_MS = 20;

/** A query stopped by one of its limits, with the one message each limit has (every executor words it so). */
export function timedOut(opts: Required<ExecOptions>, limit: TimeLimit, elapsedMs: number): ExecResult {
  const message =
    limit === 'cpu'
      ? `query used more than its ${opts.cpuMs} ms of CPU time and was stopped`
      : limit === 'wait'
        ? `query waited ${opts.maxWaitMs} ms for a free SQL process and was not run`
        : `query ran past its ${opts.timeoutMs} ms limit and was stopped`;
  return { ok: false, error: 'timeout', message, elapsedMs, limit };
}

export function parseExecOptions(opts: ExecOptions | undefined, where: string): ExecOptions {
  const r = execOptionsSchema.safeParse(opts ?? {});
  if (!r.success) {
    throw new AgroError('usage', `${where}: timeoutMs must be an integer from 1 to ${MAX_TIMEOUT_MS}, maxRows and maxBytes non-negative integers`);
  }
  return r.data;
}

export class SqlPool implements SqlExecutor {
  readonly size: number;
  readonly memoryLimitMiB: number;
  readonly nice: number;
  private readonly defaults: Required<ExecOptions>;
  private readonly slots: Slot[];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;
  /** Children that have loaded better-sqlite3 and said so; a query's time limit runs from then on. */
  private readonly ready = new WeakSet<ChildProcess>();
  /** What each ready child enforces by itself. */
  private readonly limits = new WeakMap<ChildProcess, ChildLimits>();
  /**
   * A started, idle child kept in reserve once a query has timed out: the slot whose child was
   * killed takes it at once, so the next query does not wait for a process start (0.2-1 s).
   */
  private spare?: ChildProcess;
  /** Children started so far (first starts and respawns); the tests and the bench read it. */
  spawned = 0;
  /** Messages sent to children (a batch of queries is one); the tests read it. */
  messages = 0;

  constructor(options: SqlPoolOptions = {}) {
    const parsed = poolOptionsSchema.safeParse(options);
    if (!parsed.success) throw new AgroError('usage', 'SqlPool: size must be an integer from 1 to 64, memoryLimitMiB at least 128, nice from 0 to 19');
    this.size = parsed.data.size ?? Math.min(2, availableParallelism());
    this.memoryLimitMiB = parsed.data.memoryLimitMiB ?? DEFAULT_MEMORY_LIMIT_MIB;
    this.nice = parsed.data.nice ?? 0;
    this.defaults = { ...EXEC_DEFAULTS, ...parseExecOptions(options.defaults, 'SqlPool defaults') };
    this.slots = Array.from({ length: this.size }, (): Slot => ({ startedAt: 0, pending: [] }));
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
      const job: Job = { id: this.nextId++, dbPath, sql, opts: merged, resolve, attempts: 0 };
      if (merged.maxWaitMs > 0) {
        job.waitTimer = setTimeout(() => {
          const i = this.queue.indexOf(job);
          if (i < 0) return;
          this.queue.splice(i, 1);
          resolve(timedOut(merged, 'wait', 0));
        }, merged.maxWaitMs);
      }
      this.queue.push(job);
      this.pump();
    });
  }

  /**
   * The longest a query queued now could wait for a process if everything ahead of it used its whole
   * limit (CPU limit where it has one, else wall): the running queries' time left plus the queued ones'
   * limits, shared over the pool's processes. An upper bound for admission control, not a forecast.
   */
  worstWaitMs(): number {
    const now = performance.now();
    const limitOf = (j: Job): number => (j.opts.cpuMs > 0 ? j.opts.cpuMs : j.opts.timeoutMs);
    let total = 0;
    for (const slot of this.slots) {
      if (slot.job) total += Math.max(0, limitOf(slot.job) - (now - slot.startedAt));
      for (const j of slot.pending) total += limitOf(j);
    }
    for (const j of this.queue) total += limitOf(j);
    return total / this.size;
  }

  /** Kills every child; queued and running queries resolve with a runtime error. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const job of this.queue.splice(0)) {
      clearTimeout(job.waitTimer);
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
      this.stopTimers(slot);
      const { child, job } = slot;
      slot.child = undefined;
      slot.job = undefined;
      job?.resolve({ ok: false, error: 'runtime', message: 'the SQL pool was closed while the query ran', elapsedMs: performance.now() - slot.startedAt });
      for (const p of slot.pending.splice(0)) p.resolve({ ok: false, error: 'runtime', message: 'the SQL pool was closed before the query ran', elapsedMs: 0 });
      kill(child);
    }
    await Promise.all(exits);
  }

  /** Process ids of the live children (for tests that kill one from outside). */
  childPids(): number[] {
    return this.slots.flatMap((s) => (s.child?.pid ? [s.child.pid] : []));
  }

  /** Process ids of the children that have loaded and are running a query. */
  runningPids(): number[] {
    return this.slots.flatMap((s) => (s.child?.pid && s.job && this.ready.has(s.child) ? [s.child.pid] : []));
  }

  /**
   * A child under its data-size limit: on Linux through `sh -c 'ulimit -d'` then exec (same pid, same
   * IPC channel), elsewhere a plain fork. No execArgv, so the child does not inherit `--import tsx`
   * from a tsx-run parent (3-5x slower start). stderr is kept to tell an out-of-memory abort apart.
   */
  private spawnChild(): ChildProcess {
    const stdio: ['ignore', 'ignore', 'pipe', 'ipc'] = ['ignore', 'ignore', 'pipe', 'ipc'];
    if (process.platform !== 'linux') return fork(CHILD_SCRIPT, [], { serialization: 'advanced', execArgv: [], stdio });
    const limitKiB = this.memoryLimitMiB * 1024;
    return spawn('/bin/sh', ['-c', `ulimit -d ${limitKiB} && exec "$0" "$@"`, process.execPath, CHILD_SCRIPT], { serialization: 'advanced', stdio });
  }

  private startChild(): ChildProcess {
    const child = this.spawnChild();
    this.spawned++;
    track(child);
    let stderrTail = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      stderrTail = (stderrTail + chunk).slice(-4096);
      if (process.env.AGRO_DEBUG) process.stderr.write(chunk);
    });
    // The pipe must not keep this process alive: the IPC channel's ref decides that (busy vs idle).
    (child.stderr as (NodeJS.ReadableStream & { unref?: () => void }) | null)?.unref?.();
    // The owning slot is looked up on each event: a spare changes hands after it starts.
    const owner = (): Slot | undefined => this.slots.find((sl) => sl.child === child);
    child.on('message', (msg: ChildReply) => {
      if ('ready' in msg) {
        this.ready.add(child);
        this.limits.set(child, msg.limits);
        if (this.nice > 0 && child.pid !== undefined) {
          try {
            setPriority(child.pid, this.nice);
          } catch {
            // Gone already: its exit is handled below.
          }
        }
        const slot = owner();
        if (slot?.job) this.startTimer(slot, slot.job);
        return;
      }
      const slot = owner();
      const job = slot?.job;
      if (!slot || !job || job.id !== msg.id) return;
      if ('done' in msg) {
        // The query is over; sending its result is not query time.
        job.doneMs = msg.elapsedMs;
        this.stopTimers(slot);
        return;
      }
      const elapsedMs = msg.elapsedMs;
      if (elapsedMs > job.opts.timeoutMs) {
        // Over its limit by its own clock, though the parent was too busy to stop it in time.
        this.finish(slot, timedOut(job.opts, 'wall', elapsedMs));
        return;
      }
      if (msg.ok) this.finish(slot, { ok: true, columns: msg.columns, rows: msg.rows, truncated: msg.truncated, ...(msg.truncatedBy ? { truncatedBy: msg.truncatedBy } : {}), elapsedMs });
      else if ('limit' in msg) this.finish(slot, timedOut(job.opts, msg.limit, elapsedMs));
      else this.finish(slot, { ok: false, error: msg.error, message: msg.message, elapsedMs });
    });
    child.on('error', () => {
      // Spawn/IPC failures surface as an 'exit' too (or not at all when already gone); the exit handler recovers.
    });
    // 'close', not 'exit': by then the child's last stderr (an out-of-memory report) has been read.
    child.on('close', (code, signal) => {
      if (this.spare === child) {
        this.spare = undefined;
        return;
      }
      const slot = owner();
      if (!slot) return; // killed on purpose (timeout/close): already handled
      slot.child = undefined;
      const job = slot.job;
      if (!job) return;
      // Queries sent with it had not started: they wait for the next child, as new ones do.
      this.requeue(slot);
      const elapsedMs = performance.now() - slot.startedAt;
      if (OUT_OF_MEMORY.test(stderrTail)) {
        this.finish(slot, { ok: false, error: 'runtime', message: `the query needs more memory than the SQL executor may use (${this.memoryLimitMiB} MiB)`, elapsedMs });
        return;
      }
      const how = signal ? `signal ${signal}` : `exit code ${code}`;
      if (this.ready.has(child)) job.attempts++;
      if (job.attempts < MAX_ATTEMPTS && !this.closed) {
        // Not the query's doing: run it again from the start, on a fresh child, with its full time limit.
        this.stopTimers(slot);
        slot.job = undefined;
        job.doneMs = undefined;
        this.queue.unshift(job);
        this.pump();
        // Keep a started spare from now on, as after a timeout: the next death costs no process start.
        if (!this.spare && !this.closed) {
          this.spare = this.startChild();
          this.release(this.spare);
        }
        return;
      }
      this.finish(slot, { ok: false, error: 'runtime', message: `the SQL executor process died (${how}) while running the query, ${job.attempts} times`, elapsedMs });
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

  private stopTimers(slot: Slot): void {
    clearTimeout(slot.timer);
    clearTimeout(slot.cpuTimer);
    slot.timer = undefined;
    slot.cpuTimer = undefined;
  }

  private finish(slot: Slot, result: ExecResult): void {
    this.stopTimers(slot);
    const job = slot.job;
    slot.job = undefined;
    const next = slot.pending.shift();
    if (next && slot.child) {
      // The child moves on to the next query of its batch: that query's limit runs from now.
      slot.job = next;
      slot.startedAt = performance.now();
      this.startTimer(slot, next);
    } else this.idle(slot);
    job?.resolve(result);
    this.pump();
  }

  /** Puts a slot's not-yet-started batch back at the front of the queue, in order. */
  private requeue(slot: Slot): void {
    if (slot.pending.length) this.queue.unshift(...slot.pending.splice(0));
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

  /**
   * The timer has fired, but this event loop may have been busy past the limit while the child's reply
   * waited in the pipe. setImmediate runs after the next poll phase, which reads that reply first.
   */
  private onTimer(slot: Slot, job: Job, limit: TimeLimit = 'wall'): void {
    setImmediate(() => {
      if (slot.job === job && job.doneMs === undefined) this.onTimeout(slot, job, limit);
    });
  }

  private onTimeout(slot: Slot, job: Job, limit: TimeLimit): void {
    if (slot.job !== job) return;
    const child = slot.child;
    slot.child = undefined;
    child?.kill('SIGKILL');
    this.requeue(slot);
    // Replace it now (from the spare when one is warm), and keep a spare from here on.
    if (!this.closed) {
      this.childFor(slot);
      this.idle(slot);
      if (!this.spare) {
        this.spare = this.startChild();
        this.release(this.spare);
      }
    }
    this.finish(slot, timedOut(job.opts, limit, performance.now() - slot.startedAt));
  }

  /** The limit runs from when the child is ready; until then it gets START_GRACE_MS more to start. */
  private startTimer(slot: Slot, job: Job): void {
    this.stopTimers(slot);
    const ready = slot.child !== undefined && this.ready.has(slot.child);
    const limits = ready ? this.limits.get(slot.child!) : undefined;
    const wallGrace = !ready ? START_GRACE_MS : limits === 'none' ? 0 : backstopMs(job.opts.timeoutMs);
    slot.timer = setTimeout(() => this.onTimer(slot, job), job.opts.timeoutMs + wallGrace);
    const base = ready && job.opts.cpuMs > 0 ? processCpuMs(slot.child?.pid) : undefined;
    if (base === undefined) return;
    const cpuLimit = job.opts.cpuMs + (limits === 'cpu+wall' ? backstopMs(job.opts.cpuMs) : 0);
    const poll = (): void => {
      slot.cpuTimer = setTimeout(() => {
        if (slot.job !== job || job.doneMs !== undefined) return;
        const used = processCpuMs(slot.child?.pid);
        if (used !== undefined && used - base >= cpuLimit) this.onTimer(slot, job, 'cpu');
        else poll();
      }, CPU_POLL_MS);
    };
    poll();
  }

  private pump(): void {
    if (this.closed) return;
    for (const slot of this.slots) {
      if (this.queue.length === 0) return;
      if (slot.job) continue;
      const job = this.queue.shift()!;
      clearTimeout(job.waitTimer);
      const child = slot.child ?? this.childFor(slot);
      slot.job = job;
      // A fair share of what waits goes along (the other slots get theirs as they free up); a query
      // with a CPU-time limit goes alone, since that limit is measured on the whole child.
      const share = Math.min(MAX_BATCH - 1, Math.ceil(this.queue.length / this.size));
      while (job.opts.cpuMs === 0 && slot.pending.length < share && this.queue.length && this.queue[0].opts.cpuMs === 0) {
        const next = this.queue.shift()!;
        clearTimeout(next.waitTimer);
        slot.pending.push(next);
      }
      slot.startedAt = performance.now();
      this.busy(child);
      this.startTimer(slot, job);
      const wire = (j: Job) => ({ id: j.id, dbPath: j.dbPath, sql: j.sql, maxRows: j.opts.maxRows, maxBytes: j.opts.maxBytes, safeIntegers: j.opts.safeIntegers, timeoutMs: j.opts.timeoutMs, cpuMs: j.opts.cpuMs });
      this.messages++;
      child.send(slot.pending.length ? { batch: [job, ...slot.pending].map(wire) } : wire(job));
    }
  }
}
