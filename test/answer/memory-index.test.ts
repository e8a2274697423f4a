import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MemoryEntry } from '../../src/memory/entry.ts';
import { MemoryIndex, type Recall } from '../../src/answer/memory.ts';
import { cosine } from '../../src/answer/text.ts';

const WORDS = ['total', 'average', 'number', 'name', 'list', 'customers', 'tracks', 'albums', 'genre', 'invoices', 'country', 'city', 'price', 'longest', 'first', 'last', 'each', 'most', 'least', 'year'];
const pair = (i: number): MemoryEntry => ({
  id: i + 1,
  sql: `SELECT name FROM tracks WHERE track_id = ${i}`,
  questions: [0, 1].map((k) => `${WORDS[(i + k) % 20]} ${WORDS[(i * 7 + k) % 20]} ${WORDS[(i * 13) % 20]} of item ${i}`),
  source: 'factory',
});
const BASE = { dbId: 'music_store', schema: 'fp' };
const QUERIES = ['total price of item 5', 'longest tracks in each genre', 'most customers per country', 'average year of albums', 'city of item 40'];

function same(got: Recall[], want: Recall[], tol: number): void {
  assert.deepEqual(got.map((r) => r.entry.sql), want.map((r) => r.entry.sql));
  assert.deepEqual(got.map((r) => r.question), want.map((r) => r.question));
  for (let i = 0; i < got.length; i++) assert.ok(Math.abs(got[i].score - want[i].score) <= tol, `${got[i].score} vs ${want[i].score}`);
}

test('memory index: nearest() scores are the cosine of the question with each stored phrasing', () => {
  const entries = Array.from({ length: 3000 }, (_, i) => pair(i));
  const idx = new MemoryIndex({ ...BASE, entries });
  for (const q of QUERIES) {
    const qv = idx.idf.vector(q);
    const brute = entries
      .map((entry) => {
        const scored = entry.questions.map((question) => ({ entry, question, score: cosine(qv, idx.idf.vector(question)) }));
        return scored.reduce((a, b) => (b.score > a.score ? b : a));
      })
      .filter((r) => r.score > 0)
      .sort((a, b) => b.score - a.score || (a.entry.sql < b.entry.sql ? -1 : 1))
      .slice(0, 10);
    same(idx.nearest(q, 10), brute, 1e-12);
  }
});

test('memory index: pairs added and removed in place answer as a fresh build does', () => {
  const all = Array.from({ length: 3100 }, (_, i) => pair(i));
  const idx = new MemoryIndex({ ...BASE, entries: all.slice(0, 3000) });
  const removed = [3, 17, 250, 999, 1500, 2999].map((i) => all[i].id!);
  // Few changes: applied in place (under the rebuild rule), so the IDF of old vectors drifts a little.
  idx.apply(all.slice(3000, 3030), removed);
  const live = [...all.slice(0, 3030)].filter((e) => !removed.includes(e.id!));
  const fresh = new MemoryIndex({ ...BASE, entries: live });
  assert.equal(idx.memory.entries.length, live.length);
  for (const q of [...QUERIES, 'list customers of item 3']) {
    const got = idx.nearest(q, 8);
    for (const r of got) assert.ok(!removed.includes(r.entry.id!), `removed pair ${r.entry.id} recalled`);
    // Near-ties may swap with the drift the rebuild rule allows; each rank's score may not move.
    const want = fresh.nearest(q, 8);
    got.forEach((r, i) => assert.ok(Math.abs(r.score - want[i].score) <= 0.02, `rank ${i}: ${r.score} vs ${want[i].score}`));
  }
  // A removed pair asked word for word is no longer recalled; an added one is, first.
  assert.notEqual(idx.nearest(all[999].questions[0], 1)[0].entry.id, all[999].id);
  assert.equal(idx.nearest(all[3010].questions[1], 1)[0].entry.id, all[3010].id);
  // Many changes: the index is rebuilt whole, and answers exactly as a fresh build.
  const gone = all.slice(5, 45).map((e) => e.id!);
  idx.apply(all.slice(3030), gone);
  const fresh2 = new MemoryIndex({ ...BASE, entries: [...live, ...all.slice(3030)].filter((e) => !gone.includes(e.id!)) });
  for (const q of QUERIES) same(idx.nearest(q, 8), fresh2.nearest(q, 8), 1e-12);
});
