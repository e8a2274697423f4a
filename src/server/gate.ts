/** At most `limit` requests run at once, `maxQueue` more wait in order; beyond that, enter() says no (the caller answers 429). */
export class Gate {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(
    private readonly limit: number,
    private readonly maxQueue: number,
  ) {}
  /** A slot, or null when the queue is full. */
  async enter(): Promise<(() => void) | null> {
    if (this.active >= this.limit) {
      if (this.waiting.length >= this.maxQueue) return null;
      await new Promise<void>((r) => this.waiting.push(r));
    }
    this.active++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.active--;
      this.waiting.shift()?.();
    };
  }
}
