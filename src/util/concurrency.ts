/** At most `limit` tasks run at once; the rest wait in FIFO order. */
export class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  constructor(private readonly limit: number) {
    if (!(limit >= 1)) throw new RangeError('Semaphore limit must be >= 1');
  }
  get running(): number {
    return this.active;
  }
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((r) => this.waiting.push(r));
    this.active++;
    try {
      return await task();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}

/**
 * map with at most `limit` calls in flight, results in input order (a stage's output does not depend on
 * which call finished first). Unlike Promise.all over a semaphore, each call starts only when a slot
 * frees, so it sees state (a tripped breaker) that earlier calls left behind. Once `signal` is aborted no
 * new call starts (those in flight finish): the items not reached have no result (a caller that stops
 * early keeps what it needs in `fn`, as predict does).
 */
export async function mapConcurrent<T, R>(items: readonly T[], limit: number, signal: AbortSignal | undefined, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length && !signal?.aborted) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return out;
}
