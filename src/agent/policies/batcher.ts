/**
 * Joins turn requests that arrive together into one engine call: a local engine samples a batch of
 * prompts in about the time of one (batched matmuls), so concurrent questions, or concurrent server
 * requests, share decode steps instead of queueing. Jobs with the same key (same sampling settings)
 * batch together; one batch runs at a time.
 */
export class Batcher<J, R> {
  private readonly queue: { job: J; key: string; resolve: (r: R) => void; reject: (e: unknown) => void }[] = [];
  private running = false;

  constructor(
    private readonly run: (jobs: J[]) => Promise<R[]>,
    private readonly keyOf: (job: J) => string,
    private readonly maxBatch: number,
  ) {}

  submit(job: J): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ job, key: this.keyOf(job), resolve, reject });
      // Wait one macrotask so that requests issued in the same tick join the first batch.
      if (!this.running) {
        this.running = true;
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const key = this.queue[0].key;
      const batch: typeof this.queue = [];
      for (let i = 0; i < this.queue.length && batch.length < this.maxBatch; ) {
        if (this.queue[i].key === key) batch.push(...this.queue.splice(i, 1));
        else i++;
      }
      try {
        const out = await this.run(batch.map((b) => b.job));
        batch.forEach((b, i) => b.resolve(out[i]));
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
      await new Promise((r) => setImmediate(r));
    }
    this.running = false;
  }
}
