import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rowSqls, skeletonKey, splitBySkeleton } from '../../src/data/splits.ts';

const rows = [
  ...['Rock', 'Jazz', 'Pop', 'Blues'].map((g) => ({ sql: `SELECT name FROM genres WHERE name = '${g}'` })),
  ...[1, 2, 3].map((n) => ({ sql: `SELECT count(*) FROM tracks WHERE genre_id = ${n}` })),
  ...[5, 9].map((n) => ({ sql: `SELECT title FROM albums ORDER BY title LIMIT ${n}` })),
  { sql: 'SELECT max(price) FROM tracks' },
  { sql: 'SELECT avg(price) FROM tracks' },
  { sql: 'SELECT artist_id, count(*) FROM albums GROUP BY artist_id' },
];

test('splits are disjoint by SQL skeleton: no held-out skeleton in SFT or RL, none shared by SFT and RL', () => {
  const s = splitBySkeleton(rows, (r) => r.sql, { sft: 0.5, rl: 0.3, heldOut: 0.2 }, 7);
  assert.equal(s.sft.length + s.rl.length + s.heldOut.length, rows.length);
  const keys = (xs: typeof rows) => new Set(xs.map((r) => skeletonKey(r.sql)));
  const [a, b, c] = [keys(s.sft), keys(s.rl), keys(s.heldOut)];
  for (const k of c) assert.ok(!a.has(k) && !b.has(k), `held-out skeleton ${k} leaked`);
  for (const k of b) assert.ok(!a.has(k), `RL skeleton ${k} is also in SFT`);
  // A literal swap shares the skeleton, so the four genre filters stay together.
  const genre = [s.sft, s.rl, s.heldOut].filter((xs) => xs.some((r) => r.sql.includes('genres')));
  assert.equal(genre.length, 1);
  assert.equal(genre[0].filter((r) => r.sql.includes('genres')).length, 4);
  assert.ok(s.heldOut.length >= 1 && s.rl.length >= 1 && s.sft.length >= 1);
});

test('splits are deterministic for a seed and change with it', () => {
  const f = (seed: number) => JSON.stringify(splitBySkeleton(rows, (r) => r.sql, { sft: 0.5, rl: 0.3, heldOut: 0.2 }, seed));
  assert.equal(f(1), f(1));
  assert.ok([2, 3, 4, 5].some((s) => f(s) !== f(1)));
  assert.throws(() => splitBySkeleton(rows, (r) => r.sql, { sft: 0, rl: 0, heldOut: 0 }, 1), /shares/);
});

test("a conversation's turns stay on one side: a follow-up goes with the query it continues (and with its own skeleton's rows)", () => {
  // Each base query's follow-up has a skeleton of its own (a filter added, a LIMIT), which the base alone would not pull along.
  const conv = Array.from({ length: 12 }, (_, i) => {
    const base = `SELECT name FROM table_${i}`;
    return [
      { SQL: base, question: `list ${i}` },
      { SQL: `${base} WHERE kind = 'x' ORDER BY name LIMIT 3`, question: 'just the top 3', previous: [{ question: `list ${i}`, sql: base }] },
    ];
  }).flat();
  const sideOf = (s: { sft: typeof conv; rl: typeof conv; heldOut: typeof conv }, r: (typeof conv)[number]): string => (s.sft.includes(r) ? 'sft' : s.rl.includes(r) ? 'rl' : 'heldOut');
  let apartWithoutTurns = 0;
  for (let seed = 0; seed < 20; seed++) {
    const shares = { sft: 0.5, rl: 0.25, heldOut: 0.25 };
    const s = splitBySkeleton(conv, rowSqls, shares, seed);
    assert.equal(s.sft.length + s.rl.length + s.heldOut.length, conv.length);
    for (const f of conv.filter((r) => r.previous)) {
      const base = conv.find((r) => r.SQL === f.previous![0].sql)!;
      assert.equal(sideOf(s, f), sideOf(s, base), `seed ${seed}: "${f.SQL}" split from the turn it continues`);
    }
    // Split by their own SQL alone, the turns part for some seed: what the test would catch.
    const own = splitBySkeleton(conv, (r) => r.SQL, shares, seed);
    if (conv.some((f) => f.previous && sideOf(own, f) !== sideOf(own, conv.find((r) => r.SQL === f.previous![0].sql)!))) apartWithoutTurns++;
  }
  assert.ok(apartWithoutTurns > 0, 'the rows never came apart even without their earlier turns: the test shows nothing');
});

test('an item of one SQL splits as before: its group is its skeleton', () => {
  const s1 = splitBySkeleton(rows, (r) => r.sql, { sft: 0.5, rl: 0.3, heldOut: 0.2 }, 3);
  const s2 = splitBySkeleton(rows, (r) => [r.sql], { sft: 0.5, rl: 0.3, heldOut: 0.2 }, 3);
  assert.deepEqual(s1, s2);
});
