import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { learnMerges, type MergeWork } from '../../src/model/bpe-train.ts';
import { LLAMA3_SPLIT, Tokenizer, translateHfRegex } from '../../src/model/tokenizer.ts';
import { AGENT_SPECIAL_TOKENS } from '../../src/agent/protocol.ts';

/**
 * The training loop as it was before issue #47 (each merge rescans every word holding the pair and splices
 * its array: quadratic in one word's length), kept here only as the reference. `work` counts the symbol
 * positions it examines, as learnMerges counts its own.
 */
function referenceMerges(words: number[][], freqs: number[], firstId: number, maxMerges: number, minFreq: number, work: MergeWork): [number, number][] {
  const KEY = 1 << 20;
  const pairCount = new Map<number, number>();
  const pairWhere = new Map<number, Set<number>>();
  const add = (a: number, b: number, wi: number, n: number): void => {
    const k = a * KEY + b;
    pairCount.set(k, (pairCount.get(k) ?? 0) + n);
    let s = pairWhere.get(k);
    if (!s) pairWhere.set(k, (s = new Set()));
    s.add(wi);
  };
  words.forEach((w, wi) => { for (let i = 0; i + 1 < w.length; i++) add(w[i], w[i + 1], wi, freqs[wi]); });
  const heap = new MaxHeap();
  for (const [k, c] of pairCount) heap.push([c, k]);
  const popMax = (): [number, number] | undefined => heap.pop();
  const merges: [number, number][] = [];
  while (merges.length < maxMerges) {
    const top = popMax();
    if (!top) break;
    const [count, key] = top;
    const cur = pairCount.get(key) ?? 0;
    if (cur !== count) { if (cur > 0) heap.push([cur, key]); continue; }
    if (cur < minFreq) break;
    const a = Math.floor(key / KEY), b = key % KEY;
    const newId = firstId + merges.length;
    merges.push([a, b]);
    const touched = new Set<number>();
    for (const wi of [...(pairWhere.get(key) ?? [])].sort((x, y) => x - y)) {
      const w = words[wi], f = freqs[wi];
      for (let i = 0; i + 1 < w.length; i++) {
        work.visits++;
        if (w[i] !== a || w[i + 1] !== b) continue;
        const dec = (x: number, y: number): void => { const k = x * KEY + y; pairCount.set(k, (pairCount.get(k) ?? 0) - f); touched.add(k); };
        if (i > 0) dec(w[i - 1], a);
        if (i + 2 < w.length) dec(b, w[i + 2]);
        dec(a, b);
        w.splice(i, 2, newId);
        if (i > 0) { add(w[i - 1], newId, wi, f); touched.add(w[i - 1] * KEY + newId); }
        if (i + 1 < w.length) { add(newId, w[i + 1], wi, f); touched.add(newId * KEY + w[i + 1]); }
      }
    }
    pairCount.delete(key);
    pairWhere.delete(key);
    for (const k of touched) { const c = pairCount.get(k) ?? 0; if (c > 0) heap.push([c, k]); }
  }
  return merges;
}

/** Max-heap of [count, key]: the larger count first, the smaller key among equals. */
class MaxHeap {
  private items: [number, number][] = [];
  private above(x: [number, number], y: [number, number]): boolean { return x[0] > y[0] || (x[0] === y[0] && x[1] < y[1]); }
  push(item: [number, number]): void {
    const h = this.items;
    h.push(item);
    for (let i = h.length - 1; i > 0;) { const p = (i - 1) >> 1; if (!this.above(h[i], h[p])) break; [h[i], h[p]] = [h[p], h[i]]; i = p; }
  }
  pop(): [number, number] | undefined {
    const h = this.items;
    if (h.length === 0) return undefined;
    const top = h[0], last = h.pop() as [number, number];
    if (h.length > 0) {
      h[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < h.length && this.above(h[l], h[m])) m = l;
        if (r < h.length && this.above(h[r], h[m])) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]]; i = m;
      }
    }
    return top;
  }
}

/** Distinct words of a text as byte-ish ids with their counts, sorted as Tokenizer.train sorts them. */
function wordsOf(texts: string[]): { words: number[][]; freqs: number[] } {
  const counts = new Map<string, number>();
  for (const t of texts) for (const w of t.match(/ ?[^\s]+|\s+/g) ?? []) counts.set(w, (counts.get(w) ?? 0) + 1);
  const entries = [...counts].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return { words: entries.map(([w]) => [...w].map((c) => c.charCodeAt(0) % 256)), freqs: entries.map(([, c]) => c) };
}

const TEXTS = readFileSync('data/dev.json', 'utf8').split('\n');

test('BPE training: the same merges as the reference loop on a realistic corpus, with runs and repeats', () => {
  const { words, freqs } = wordsOf([...TEXTS, 'aaaaaaa bbbbbbbbbb abababab aaaa aaaa ' + 'x'.repeat(301), 'zz'.repeat(40)]);
  for (const [maxMerges, minFreq] of [[1200, 2], [300, 1], [50, 5]]) {
    const expected = referenceMerges(words.map((w) => w.slice()), freqs, 256, maxMerges, minFreq, { visits: 0 });
    assert.ok(expected.length > 40, `${expected.length} merges learned`);
    assert.deepEqual(learnMerges(words, freqs, 256, maxMerges, minFreq), expected, `maxMerges ${maxMerges}, minFreq ${minFreq}`);
  }
});

test('BPE training: a tokenizer trained on a realistic corpus has the reference merges and vocabulary', () => {
  const specials = AGENT_SPECIAL_TOKENS.length;
  const tk = Tokenizer.train(TEXTS, { vocabSize: 1500, specialTokens: AGENT_SPECIAL_TOKENS });
  const json = tk.toJSON() as { model: { vocab: Record<string, number>; merges: string[] } };
  // The same words the tokenizer trains on (its pre-tokenizer), as byte symbols, sorted as it sorts them.
  const split = translateHfRegex(LLAMA3_SPLIT);
  const counts = new Map<string, number>();
  for (const t of TEXTS) for (const w of t.match(split) ?? []) {
    const syms = [...Buffer.from(w, 'utf8')].map(byteSymbol).join('');
    counts.set(syms, (counts.get(syms) ?? 0) + 1);
  }
  const entries = [...counts].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const idOf = new Map(Array.from({ length: 256 }, (_, b) => [byteSymbol(b), specials + b] as const));
  const ref = referenceMerges(entries.map(([w]) => [...w].map((c) => idOf.get(c) as number)), entries.map(([, c]) => c), specials + 256, 1500 - specials - 256, 2, { visits: 0 });
  const names = [...AGENT_SPECIAL_TOKENS, ...Array.from({ length: 256 }, (_, b) => byteSymbol(b))];
  const refMerges = ref.map(([a, b]) => { const m = `${names[a]} ${names[b]}`; names.push(names[a] + names[b]); return m; });
  assert.ok(refMerges.length > 500, `${refMerges.length} merges`);
  assert.deepEqual(json.model.merges, refMerges);
  assert.deepEqual(json.model.vocab, Object.fromEntries(names.map((n, i) => [n, i])));
});

/** GPT-2's byte-to-symbol map, written out here so the test does not take it from the code under test. */
function byteSymbol(b: number): string {
  const printable = (x: number): boolean => (x >= 0x21 && x <= 0x7e) || (x >= 0xa1 && x <= 0xac) || (x >= 0xae && x <= 0xff);
  if (printable(b)) return String.fromCharCode(b);
  let n = 0;
  for (let x = 0; x < b; x++) if (!printable(x)) n++;
  return String.fromCharCode(256 + n);
}

test('BPE training: merge work per symbol does not grow with one word\'s length (the reference loop\'s does)', () => {
  const letters = TEXTS.join('').match(/[A-Za-z]+/g)!.join('');
  const base = wordsOf(TEXTS);
  const perSymbol = (learn: (words: number[][], freqs: number[], work: MergeWork) => void, n: number): number => {
    const word = [...letters.repeat(Math.ceil(n / letters.length)).slice(0, n)].map((c) => c.charCodeAt(0));
    const work = { visits: 0 };
    learn([...base.words.map((w) => w.slice()), word], [...base.freqs, 1], work);
    assert.ok(work.visits > 0, 'the merge work was not counted');
    return work.visits / n;
  };
  const fast = (words: number[][], freqs: number[], work: MergeWork): void => { learnMerges(words, freqs, 256, 1500, 2, work); };
  const slow = (words: number[][], freqs: number[], work: MergeWork): void => { referenceMerges(words, freqs, 256, 1500, 2, work); };
  const small = perSymbol(fast, 20_000), large = perSymbol(fast, 400_000);
  // The bound the test holds: a few visits a symbol, the same for a word 20 times longer.
  const bounded = (x: number, y: number): boolean => y <= 8 && y <= x * 1.5 + 1;
  assert.ok(bounded(small, large), `visits per symbol: ${small.toFixed(2)} at 20k, ${large.toFixed(2)} at 400k`);
  // The quadratic loop fails the same bound already at 20k characters (each merge rescans the whole word).
  const before = perSymbol(slow, 20_000);
  assert.ok(before > 8, `reference visits per symbol at 20k: ${before.toFixed(1)}`);
});
