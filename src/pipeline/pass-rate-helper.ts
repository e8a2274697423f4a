/**
 * Pass-rate sampling on both cores. Sampling a checkpoint's episodes (the quickstart's headroom and its RL
 * pool) keeps about one core busy: the decoding steps are too small to share out. A helper process with the
 * same environment takes every other rollout batch while this process does the rest; a batch's seed is its
 * place in the task list (rl/evaluate.ts passRateBatches), so the counts are the ones one process would get.
 * If the helper cannot start or dies, this process samples its batches too: slower, never different.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { DbDocs } from '../prompt/docs-types.ts';
import type { SqlEnvConfig, SqlTask, SqlEnvironment } from '../agent/sql-env.ts';
import type { BackendName } from '../model/backend.ts';
import type { LlamaModel } from '../model/llama.ts';
import type { Tokenizer } from '../model/tokenizer.ts';
import { passRateBatches, passRatesOf, sampleBatches, type PassRateOptions, type PassRates } from '../rl/evaluate.ts';
import type { HelperReply, HelperRequest } from './pass-rate-child.ts';

const CHILD_SCRIPT = fileURLToPath(new URL('./pass-rate-child.ts', import.meta.url));
/** The child runs the TypeScript sources through tsx's loader, found from here (not from the user's working folder). */
const TSX_LOADER = import.meta.resolve('tsx');

export class PassRateHelper {
  /** Batches the helper has sampled so far. */
  batches = 0;
  private nextId = 0;
  private alive = true;
  private readonly pending = new Map<number, { resolve: (counts: number[][] | null) => void }>();
  private readonly ready: Promise<boolean>;

  private constructor(private readonly child: ChildProcess, setup: HelperRequest) {
    this.ready = new Promise((resolve) => {
      child.on('message', (m: HelperReply) => {
        if (m.kind === 'ready') resolve(true);
        else if (m.kind === 'sampled') {
          this.batches += m.counts.length;
          this.settle(m.id, m.counts);
        }
        else if (m.id !== undefined) this.settle(m.id, null);
        else this.fail(resolve);
      });
      child.once('exit', () => this.fail(resolve));
      child.once('error', () => this.fail(resolve));
    });
    child.send(setup);
  }

  /** Starts the helper now, so that its start-up overlaps the parent's work; its first request waits for it. */
  static start(backend: BackendName, config: SqlEnvConfig, docs: DbDocs | undefined): PassRateHelper {
    // Only tsx's loader: none of the parent's flags (an inspector port, a test runner's) carry over.
    const child = fork(CHILD_SCRIPT, [], { execArgv: ['--import', TSX_LOADER], serialization: 'advanced', stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
    return new PassRateHelper(child, { kind: 'setup', backend, config, ...(docs ? { docs } : {}) });
  }

  /** Correct counts of the batches at `starts` (passRateBatches), or null when the helper could not sample them. */
  async sample(checkpoint: string, tasks: readonly SqlTask[], opts: PassRateOptions, starts: readonly number[]): Promise<number[][] | null> {
    if (!(await this.ready) || !this.alive) return null;
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, { resolve });
      const req: HelperRequest = { kind: 'sample', id, checkpoint, tasks: [...tasks], opts, starts: [...starts] };
      this.child.send(req, (err) => { if (err) this.settle(id, null); });
    });
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    if (this.child.connected) this.child.send({ kind: 'close' } satisfies HelperRequest);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }

  private settle(id: number, counts: number[][] | null): void {
    this.pending.get(id)?.resolve(counts);
    this.pending.delete(id);
  }

  private fail(resolveReady: (ok: boolean) => void): void {
    this.alive = false;
    resolveReady(false);
    for (const id of [...this.pending.keys()]) this.settle(id, null);
  }
}

/**
 * samplePassRates (rl/evaluate.ts) of the checkpoint saved at `checkpoint` (whose weights `model` holds), with
 * every other batch sampled by the helper when there is one: the same PassRates, in about half the time.
 */
export async function sharedPassRates(
  helper: PassRateHelper | null,
  env: SqlEnvironment,
  tasks: readonly SqlTask[],
  model: LlamaModel,
  tokenizer: Tokenizer,
  checkpoint: string,
  opts: PassRateOptions,
): Promise<PassRates> {
  const starts = passRateBatches(tasks.length, opts);
  const theirs = helper && !opts.engine ? starts.filter((_, k) => k % 2 === 1) : [];
  const mine = starts.filter((s) => !theirs.includes(s));
  const [own, remote] = await Promise.all([sampleBatches(env, tasks, model, tokenizer, opts, mine), theirs.length ? helper!.sample(checkpoint, tasks, opts, theirs) : Promise.resolve([])]);
  // What the helper could not do, this process does now.
  const helped = remote ?? (await sampleBatches(env, tasks, model, tokenizer, opts, theirs));
  const byStart = new Map<number, number[]>([...mine.map((s, k) => [s, own[k]] as const), ...theirs.map((s, k) => [s, helped[k]] as const)]);
  return passRatesOf(starts.flatMap((s) => byStart.get(s)!), opts);
}
