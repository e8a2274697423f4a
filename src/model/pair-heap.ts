/**
 * A binary min-heap of number pairs in lexicographic order (the first, then the second), kept in two parallel
 * arrays: the tokenizer's merge candidates by (rank, position) and BPE training's pairs by (−count, key).
 */
export class PairHeap {
  private a: number[] = [];
  private b: number[] = [];
  get size(): number {
    return this.a.length;
  }
  /** The first number of the smallest pair (the heap must not be empty). */
  topFirst(): number {
    return this.a[0];
  }
  private less(i: number, j: number): boolean {
    return this.a[i] < this.a[j] || (this.a[i] === this.a[j] && this.b[i] < this.b[j]);
  }
  private swap(i: number, j: number): void {
    const a = this.a[i]; this.a[i] = this.a[j]; this.a[j] = a;
    const b = this.b[i]; this.b[i] = this.b[j]; this.b[j] = b;
  }
  push(first: number, second: number): void {
    this.a.push(first); this.b.push(second);
    let i = this.a.length - 1;
    while (i > 0) { const up = (i - 1) >> 1; if (!this.less(i, up)) break; this.swap(i, up); i = up; }
  }
  /** The smallest pair, removed; undefined when the heap is empty. */
  pop(): [number, number] | undefined {
    if (this.a.length === 0) return undefined;
    const top: [number, number] = [this.a[0], this.b[0]];
    const la = this.a.pop() as number, lb = this.b.pop() as number;
    if (this.a.length > 0) {
      this.a[0] = la; this.b[0] = lb;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < this.a.length && this.less(l, m)) m = l;
        if (r < this.a.length && this.less(r, m)) m = r;
        if (m === i) break;
        this.swap(i, m); i = m;
      }
    }
    return top;
  }
}
