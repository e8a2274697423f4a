import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgroError } from '../../src/errors.ts';
import { synthesize } from '../../src/search/synthesize.ts';
import { normalizeAnswer } from '../../src/search/match.ts';
import { buildMusicDb } from './fixture.ts';

const db = buildMusicDb();

test('each row becomes a prose document; foreign keys are written as the referenced title', () => {
  const { docs } = synthesize(db, { n: 1, seed: 1 });
  assert.equal(docs.length, 2 + 4 + 4 + 5);
  const byId = new Map(docs.map((d) => [d.id, d]));
  assert.deepEqual(byId.get('albums:1'), {
    id: 'albums:1',
    title: 'Night Drive',
    text: 'Night Drive is an album. The artist of Night Drive is Nadia Okafor. The release year of Night Drive is 2001.',
  });
  // A null foreign key (no genre) is left out rather than written as "null".
  assert.equal(
    byId.get('tracks:5')!.text,
    'Last Light is a track. The album of Last Light is Quiet Fields.',
  );
  assert.equal(byId.get('artists:2')!.text, 'Blue Harbor is an artist. The country of Blue Harbor is Canada.');
});

test('synthesis is deterministic for a seed and differs across seeds', () => {
  const a = synthesize(db, { n: 12, seed: 7 });
  const b = synthesize(db, { n: 12, seed: 7 });
  const c = synthesize(db, { n: 12, seed: 8 });
  assert.deepEqual(a, b);
  assert.notDeepEqual(
    a.questions.map((q) => q.question),
    c.questions.map((q) => q.question),
  );
});

test('every answer is reachable along its chain, questions are unique, ambiguous chains are skipped', () => {
  const r = synthesize(db, { n: 40, seed: 3, maxHops: 3 });
  assert.ok(r.questions.length >= 10, `only ${r.questions.length} questions`);
  const docs = new Map(r.docs.map((d) => [d.id, d]));
  const seen = new Set<string>();
  const hops = new Set<number>();
  for (const q of r.questions) {
    assert.ok(!seen.has(q.question), `duplicate: ${q.question}`);
    seen.add(q.question);
    hops.add(q.hops);
    assert.ok(q.hops >= 1 && q.hops <= 3);
    assert.equal(q.chain.length, q.chainDocIds.length);
    assert.equal(q.hops, q.kind === 'attribute' ? q.chain.length : q.chain.length - 1, q.question);
    q.chainDocIds.forEach((id, i) => {
      const d = docs.get(id);
      assert.ok(d, `missing document ${id}`);
      assert.equal(d.title, q.chain[i]);
      // Each hop's entity is named in the previous page, so searching for it is possible.
      if (i > 0) assert.ok(docs.get(q.chainDocIds[i - 1])!.text.includes(`is ${q.chain[i]}.`), `${q.chain[i]} not in ${q.chainDocIds[i - 1]}`);
    });
    const last = docs.get(q.chainDocIds[q.chainDocIds.length - 1])!;
    if (q.kind === 'attribute') assert.ok(last.text.includes(` is ${q.answer}.`), `${q.answer} not in ${last.id}`);
    else assert.equal(q.answer, last.title);
    // The anchor is named in the question; the ground-truth entities are the rest of the chain.
    assert.ok(q.question.includes(q.chain[0]));
    assert.deepEqual(
      q.entities.map((e) => e.name),
      q.chain.slice(1),
    );
    assert.ok(!` ${normalizeAnswer(q.question)} `.includes(` ${normalizeAnswer(q.answer)} `));
    // Two tracks are titled "Intro" and two artists "Nadia Okafor": neither may anchor a question or be
    // a page the agent must find (an entity answer's own page is never needed).
    assert.ok(!q.question.includes('"Intro"') && !q.question.includes('"Nadia Okafor"'), q.question);
    const mustFind = q.kind === 'attribute' ? q.chain.slice(1) : q.chain.slice(1, -1);
    assert.ok(!mustFind.includes('Nadia Okafor'), q.question);
    assert.ok(q.split === 'train' || q.split === 'heldout');
  }
  assert.deepEqual([...hops].sort(), [1, 2, 3]);
  assert.ok((r.skipped.ambiguous_anchor ?? 0) > 0);
  assert.ok((r.skipped.ambiguous_hop ?? 0) > 0);
});

test('a hand-checked 3-hop chain and its aliases', () => {
  // The tiny database allows only 25 distinct questions, so n = 60 samples all of them.
  const r = synthesize(db, { n: 60, seed: 3, maxHops: 3 });
  assert.equal(r.questions.length, 25);
  const q = r.questions.find((x) => x.question === 'What is the country of the artist of the album of the track "Slow River"?');
  assert.ok(q);
  assert.equal(q.answer, 'Canada');
  assert.deepEqual(q.chain, ['Slow River', 'Harbor Lights', 'Blue Harbor']);
  assert.deepEqual(q.chainDocIds, ['tracks:2', 'albums:2', 'artists:2']);
  assert.equal(q.hops, 3);
  // An entity answer may share its title (two artists are "Nadia Okafor"): it is read off the album page.
  const e = r.questions.find((x) => x.question === 'What is the artist of the album of the track "Signal Fire"?');
  assert.ok(e);
  assert.equal(e.answer, 'Nadia Okafor');
  assert.equal(e.hops, 2);
  const year = r.questions.find((x) => x.question === 'What is the release year of the album "Harbor Lights"?');
  assert.ok(year);
  assert.deepEqual(
    [year.answer, ...year.aliases],
    ['1999', 'one thousand nine hundred ninety-nine', 'one thousand nine hundred ninety nine', 'nineteen ninety-nine', 'nineteen ninety nine'],
  );
  assert.equal(year.hops, 1);
  assert.deepEqual(year.entities, []);
});

test('a missing or corrupt database is a one-line AgroError', () => {
  assert.throws(() => synthesize('/no/such/db.sqlite'), (e: unknown) => e instanceof AgroError && e.kind === 'not_found');
  const bad = join(mkdtempSync(join(tmpdir(), 'agro-bad-')), 'bad.sqlite');
  writeFileSync(bad, 'this is not sqlite at all, just some bytes to fill a page');
  assert.throws(() => synthesize(bad), (e: unknown) => e instanceof AgroError && e.kind === 'invalid_input' && !e.message.includes('\n'));
});
