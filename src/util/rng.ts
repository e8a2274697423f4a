/**
 * Seeded pseudo-random numbers (mulberry32 over a splitmix32-scrambled seed): every stage that
 * samples takes an Rng so runs are reproducible for a seed. State is one uint32, so it can be
 * saved in a checkpoint and restored exactly.
 */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = Rng.scramble(seed >>> 0);
  }
  private static scramble(x: number): number {
    x = (x + 0x9e3779b9) >>> 0;
    x = Math.imul(x ^ (x >>> 16), 0x85ebca6b) >>> 0;
    x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35) >>> 0;
    return (x ^ (x >>> 16)) >>> 0;
  }
  /** Uniform in [0, 1). */
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('Rng.pick on an empty list');
    return items[this.int(items.length)];
  }
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [items[i], items[j]] = [items[j], items[i]];
    }
    return items;
  }
  /** Standard normal (Box-Muller). */
  normal(): number {
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }
  /** A child generator whose stream does not overlap this one's in practice. */
  fork(salt: number): Rng {
    return new Rng((this.int(0x7fffffff) ^ Math.imul(salt + 1, 0x9e3779b1)) >>> 0);
  }
  get state(): number {
    return this.s;
  }
  static fromState(state: number): Rng {
    const r = new Rng(0);
    r.s = state >>> 0;
    return r;
  }
}
