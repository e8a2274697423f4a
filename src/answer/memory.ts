/**
 * A database's memory ready to search: one TF-IDF vector per stored question (text.ts), over the pairs the store
 * holds (src/memory). A reader keeps one index and applies the store's changes to it (a correction added, a pair
 * removed) instead of building it again, so a correction is used at once also with a memory of 40k pairs.
 */
import { memoryOrder, type MemoryEntry, type MemoryFile } from '../memory/entry.ts';
import { cueWords, Idf } from './text.ts';

export interface Recall {
  entry: MemoryEntry;
  /** Cosine of the question with the closest of the entry's questions. */
  score: number;
  /** That closest question. */
  question: string;
}

/**
 * Changes applied in place before the index is rebuilt whole: the IDF of an added question counts its words,
 * but the vectors already made keep the weights of when they were made, so many changes drift from a fresh build.
 */
const REBUILD_SHARE = 0.02;
const REBUILD_MIN = 50;

export class MemoryIndex {
  idf = new Idf();
  /** Per slot (one stored question), its pair and the question; its vector lives only in the postings. */
  private slots: Array<{ entry: MemoryEntry; question: string }> = [];
  /** Per stem, the slots whose vector has it and its weight there: nearest() sums these instead of comparing whole vectors. */
  private postings = new Map<string, { ids: number[]; ws: number[] }>();
  /** Vector slots of pairs removed since the last build. */
  private dead = new Set<number>();
  private slotsOf = new Map<number, number[]>();
  private entries: MemoryEntry[] = [];
  private sorted = true;
  private drift = 0;

  constructor(private readonly base: Pick<MemoryFile, 'dbId' | 'schema'> & { entries: readonly MemoryEntry[] }) {
    this.build(base.entries);
  }

  private build(entries: readonly MemoryEntry[]): void {
    this.idf = new Idf();
    this.slots = [];
    this.postings = new Map();
    this.dead = new Set();
    this.slotsOf = new Map();
    this.entries = [...entries];
    this.sorted = false;
    this.drift = 0;
    // Each question read once (cueWords) for both its IDF count and, once every count is in, its vector.
    const read = entries.map((e) => e.questions.map(cueWords));
    for (const qs of read) for (const w of qs) this.idf.addWords(w);
    entries.forEach((e, i) => this.insert(e, read[i]));
  }

  private insert(e: MemoryEntry, read: readonly string[][] = e.questions.map(cueWords)): void {
    const slots: number[] = [];
    for (const [j, q] of e.questions.entries()) {
      const id = this.slots.length;
      const vec = this.idf.vectorOfWords(read[j]);
      this.slots.push({ entry: e, question: q });
      slots.push(id);
      for (const [s, w] of vec) {
        const p = this.postings.get(s);
        if (p) {
          p.ids.push(id);
          p.ws.push(w);
        } else this.postings.set(s, { ids: [id], ws: [w] });
      }
    }
    if (e.id !== undefined) this.slotsOf.set(e.id, slots);
  }

  /** The memory as the index holds it now: its live pairs, in the store's order (people's newest first). */
  get memory(): MemoryFile {
    if (!this.sorted) {
      this.entries.sort(memoryOrder);
      this.sorted = true;
    }
    return { dbId: this.base.dbId, schema: this.base.schema, entries: this.entries };
  }

  /** Applies a store's changes (memory/store.ts changes()): pairs added, ids removed or replaced. */
  apply(added: readonly MemoryEntry[], removed: readonly number[]): void {
    if (!added.length && !removed.length) return;
    const gone = new Set(removed);
    const entries = this.entries.filter((e) => e.id === undefined || !gone.has(e.id));
    this.drift += added.length + removed.length;
    if (this.drift > Math.max(REBUILD_MIN, REBUILD_SHARE * this.slots.length)) {
      this.build([...entries, ...added]);
      return;
    }
    for (const id of removed) for (const slot of this.slotsOf.get(id) ?? []) this.dead.add(slot);
    for (const id of removed) this.slotsOf.delete(id);
    for (const e of added) for (const q of e.questions) this.idf.add(q);
    for (const e of added) this.insert(e);
    this.entries = [...entries, ...added];
    this.sorted = false;
  }

  /** The k entries whose questions are closest to the question, best first. */
  nearest(question: string, k: number): Recall[] {
    const qv = this.idf.vector(question);
    // The cosine of unit vectors summed term by term over the postings: a common stem ("of") lists most slots, and
    // comparing each of them whole cost ~100 ms at 40k pairs. Slots are visited in the order they are first reached,
    // as before, so an entry's ties keep the same closest question.
    const dots = new Float64Array(this.slots.length);
    // Marked apart from the sums: a sum still 0 after a term (were a weight ever 0) would list its slot twice.
    const seen = new Uint8Array(this.slots.length);
    const reached: number[] = [];
    for (const [s, qw] of qv) {
      const p = this.postings.get(s);
      if (!p) continue;
      for (let i = 0; i < p.ids.length; i++) {
        const id = p.ids[i];
        if (!seen[id]) {
          seen[id] = 1;
          reached.push(id);
        }
        dots[id] += qw * p.ws[i];
      }
    }
    const best = new Map<MemoryEntry, Recall>();
    for (const id of reached) {
      if (this.dead.has(id)) continue;
      const v = this.slots[id];
      const score = dots[id];
      const cur = best.get(v.entry);
      if (!cur || score > cur.score) best.set(v.entry, { entry: v.entry, score, question: v.question });
    }
    // The k best kept in order while scanning: sorting every reached entry (most of 40k) to keep k cost ~20 ms.
    const before = (a: Recall, b: Recall) => b.score - a.score || (a.entry.sql < b.entry.sql ? -1 : 1);
    const top: Recall[] = [];
    for (const r of best.values()) {
      if (top.length >= k && (k <= 0 || before(r, top[k - 1]) >= 0)) continue;
      let i = top.length;
      while (i > 0 && before(r, top[i - 1]) < 0) i--;
      top.splice(i, 0, r);
      if (top.length > k) top.pop();
    }
    return top;
  }
}
