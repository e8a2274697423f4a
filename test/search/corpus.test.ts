import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgroError } from '../../src/errors.ts';
import { bestSnippet, SearchCorpus } from '../../src/search/corpus.ts';
import { synthesize } from '../../src/search/synthesize.ts';
import { buildMusicDb } from './fixture.ts';

test('BM25 ranks a rare term above a repeated common one, unlike a plain term count (hand-computed)', () => {
  // Titles never match the query, so only the text field scores. MiniSearch measures a field's length
  // in distinct terms; every text here has 4, so length normalization is 1 and BM25 reduces to
  // idf · tf(k1+1)/(tf+k1) with k1 = 1.2, idf = ln(1 + (N − n + 0.5)/(n + 0.5)), N = 4.
  //   apple in 3 docs: idf = ln(1 + 1.5/3.5) = 0.3566749;  zebra in 1 doc: idf = ln(1 + 3.5/1.5) = 1.2039728
  //   d1 (apple ×3): 0.3566749 · 3·2.2/4.2 = 0.5604892;  d2 (zebra ×1): 1.2039728 · 2.2/2.2 = 1.2039728
  //   d3, d4 (apple ×1): 0.3566749
  // A term count for "zebra apple" ranks d1 first (3 hits vs 1); BM25 ranks d2, d1, d3, d4 (tie by id).
  const corpus = new SearchCorpus([
    { id: 'd1', title: 'd1', text: 'apple apple apple pear fig banana' },
    { id: 'd2', title: 'd2', text: 'zebra kiwi plum fig' },
    { id: 'd3', title: 'd3', text: 'apple lime date melon' },
    { id: 'd4', title: 'd4', text: 'apple grape lemon mango' },
  ]);
  const hits = corpus.search('zebra apple', 10);
  assert.deepEqual(
    hits.map((h) => h.id),
    ['d2', 'd1', 'd3', 'd4'],
  );
  const expected = [1.2039728, 0.5604892, 0.3566749, 0.3566749];
  hits.forEach((h, i) => assert.ok(Math.abs(h.score - expected[i]) < 1e-6, `${h.id}: ${h.score} vs ${expected[i]}`));
  const termCount = (text: string) => text.split(' ').filter((w) => w === 'zebra' || w === 'apple').length;
  assert.ok(termCount('apple apple apple pear fig banana') > termCount('zebra kiwi plum fig'));
});

test('length normalization: the same single hit scores higher in a shorter document', () => {
  // Text field only (titles do not match); all words distinct and none a stopword, so lengths are word
  // counts: 5, 1, 3 → avg 3. N = 3, "cat" in 2 docs: idf = ln(1 + 1.5/2.5) = ln 1.6 = 0.4700036.
  // short (len 1): tf part = 2.2 / (1 + 1.2·(0.25 + 0.75/3)) = 2.2/1.6 = 1.375 → 0.6462550
  // long (len 5):  tf part = 2.2 / (1 + 1.2·(0.25 + 0.75·5/3)) = 2.2/2.8 = 0.7857143 → 0.3692885
  const corpus = new SearchCorpus([
    { id: 'long', title: 'x', text: 'cat b c d e' },
    { id: 'short', title: 'y', text: 'cat' },
    { id: 'other', title: 'z', text: 'dog f g' },
  ]);
  const hits = corpus.search('cat', 5);
  assert.deepEqual(
    hits.map((h) => h.id),
    ['short', 'long'],
  );
  assert.ok(Math.abs(hits[0].score - 0.6462550) < 1e-6, String(hits[0].score));
  assert.ok(Math.abs(hits[1].score - 0.3692885) < 1e-6, String(hits[1].score));
});

test('an entity document ranks first for its own title words', () => {
  const { docs } = synthesize(buildMusicDb(), { n: 5, seed: 1 });
  const corpus = new SearchCorpus(docs);
  assert.equal(corpus.search('Night Drive', 3)[0].id, 'albums:1');
  assert.equal(corpus.search('harbor lights', 3)[0].id, 'albums:2');
  assert.equal(corpus.search('Signal Fire', 3)[0].id, 'tracks:1');
  assert.deepEqual(corpus.search('qqqq nothing', 3), []);
  // Stopwords alone match nothing (they are not indexed).
  assert.deepEqual(corpus.search('the of is', 3), []);
  // Scoring the title as its own field puts the page titled "Order 7" above a page that mentions it in passing.
  const orders = new SearchCorpus([
    { id: 'item', title: 'Order item 7 / 1', text: 'The order of Order item 7 / 1 is Order 7. The quantity of Order item 7 / 1 is 2.' },
    { id: 'order', title: 'Order 7', text: 'Order 7 is an order. The status of Order 7 is shipped.' },
  ]);
  assert.equal(orders.search('Order 7', 2)[0].id, 'order');
  assert.deepEqual(corpus.search('   ', 3), []);
});

test('snippets are the best-matching sentence window, bounded; open is bounded; unknown ids are undefined', () => {
  const text = 'Alpha one. Beta two. Gamma three. Delta four. Epsilon five and zebra. Zeta six.';
  assert.equal(bestSnippet(text, ['zebra'], 500), 'Gamma three. Delta four. Epsilon five and zebra.');
  assert.equal(bestSnippet(text, ['alpha'], 500), 'Alpha one. Beta two. Gamma three.');
  const cut = bestSnippet(text, ['alpha'], 12);
  // 11 characters kept ("Alpha one. "), the trailing space trimmed, then the ellipsis.
  assert.equal(cut, 'Alpha one.…');
  const corpus = new SearchCorpus([{ id: 'p', title: 'Page', text: 'x'.repeat(5000) }]);
  assert.equal(corpus.open('p', 100)!.text.length, 100);
  assert.equal(corpus.open('missing'), undefined);
  assert.throws(() => corpus.add({ id: 'p', title: 'again', text: '' }), (e: unknown) => e instanceof AgroError);
});

test('JSONL save/load round-trips and rejects bad files with one-line errors', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agro-corpus-'));
  const corpus = new SearchCorpus([
    { id: 'a', title: 'Alpha', text: 'first document about rivers' },
    { id: 'b', title: 'Beta', text: 'second document about "quoted" mountains\nwith a newline' },
  ]);
  const path = join(dir, 'corpus.jsonl');
  corpus.save(path);
  assert.equal(readFileSync(path, 'utf8').trim().split('\n').length, 2);
  const back = SearchCorpus.load(path);
  assert.deepEqual(back.all(), corpus.all());
  assert.deepEqual(back.search('mountains', 2), corpus.search('mountains', 2));
  writeFileSync(join(dir, 'bad.jsonl'), '{"id":"a","title":"A","text":"ok"}\n{not json\n');
  assert.throws(
    () => SearchCorpus.load(join(dir, 'bad.jsonl')),
    (e: unknown) => e instanceof AgroError && e.kind === 'invalid_input' && /bad\.jsonl:2/.test(e.message),
  );
  writeFileSync(join(dir, 'shape.jsonl'), '{"id":"a","title":"A"}\n');
  assert.throws(() => SearchCorpus.load(join(dir, 'shape.jsonl')), (e: unknown) => e instanceof AgroError && e.kind === 'invalid_input');
  assert.throws(() => SearchCorpus.load(join(dir, 'none.jsonl')), (e: unknown) => e instanceof AgroError && e.kind === 'not_found');
});
