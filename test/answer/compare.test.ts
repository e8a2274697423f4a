// A query comparing a number the question names in another way than the question says gets an edit to the
// question's comparison (answer/compare.ts); the answer path offers it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { askedComparisons, compareAsAsked } from '../../src/answer/compare.ts';
import { Answerer } from '../../src/answer/resources.ts';
import { SqlPool } from '../../src/sql/pool.ts';

const DB = join('data/databases', 'music_store', 'music_store.sqlite');

test('the comparison phrase a number is named with, before it or after it', () => {
  assert.deepEqual([...askedComparisons('tracks longer than 300000 and cheaper than 0.99')], [], '"longer", "cheaper" say no operator by themselves');
  assert.deepEqual([...askedComparisons('albums released after 1990 with at least 12 tracks and 3,000 fans or more')], [[1990, '>'], [12, '>='], [3000, '>=']]);
  assert.deepEqual([...askedComparisons('invoices of 2009 below 5.5')], [[5.5, '<']], 'a year named plainly has no comparison');
  assert.deepEqual([...askedComparisons('more than 5 tracks and at most 5 albums')], [], 'one number, two phrases: left alone');
});

test('each comparison of a named number becomes the question\'s; other comparisons and numbers are left', () => {
  const e = compareAsAsked('SELECT name FROM tracks WHERE milliseconds = 300000 AND unit_price >= 0.99', 'tracks lasting more than 300000 ms priced at most 0.99');
  assert.deepEqual(e, { sql: 'SELECT name FROM tracks WHERE milliseconds > 300000 AND unit_price <= 0.99', changes: [{ from: '= 300000', to: '> 300000' }, { from: '>= 0.99', to: '<= 0.99' }] });
  assert.equal(compareAsAsked('SELECT title FROM albums GROUP BY title HAVING COUNT(*) > 2', 'albums with at least 2 copies')?.sql, 'SELECT title FROM albums GROUP BY title HAVING COUNT(*) >= 2');
  assert.equal(compareAsAsked('SELECT name FROM tracks WHERE milliseconds > 300000', 'tracks over 300000 ms'), null, 'already the question\'s');
  assert.equal(compareAsAsked("SELECT name FROM tracks WHERE milliseconds <> 300000", 'tracks over 300000 ms'), null, '"other than" is not a number phrase\'s to change');
  assert.equal(compareAsAsked('SELECT name FROM tracks LIMIT 5', 'more than 5 tracks'), null, 'a LIMIT is no comparison');
});

const pool = new SqlPool({ size: 1 });
after(() => pool.close());

test('the answer path offers the query compared as asked, and without edits it does not', { timeout: 120_000 }, async () => {
  const question = 'Which tracks last more than 300000 milliseconds?';
  const remembered = 'SELECT name FROM tracks WHERE milliseconds >= 300000';
  const asked = 'SELECT name FROM tracks WHERE milliseconds > 300000';
  const on = await new Answerer(pool, { config: { synth: 0, flips: 0 } }).answer(DB, 'music_store', question, [{ sql: remembered, source: 'greedy' }]);
  const edit = on.candidates.find((c) => c.sql === asked);
  assert.ok(edit, `compared as asked: ${on.candidates.map((c) => c.sql).join(' | ')}`);
  assert.ok(edit.sources.includes('edit'));
  const off = await new Answerer(pool, { config: { synth: 0, flips: 0, edits: false } }).answer(DB, 'music_store', question, [{ sql: remembered, source: 'greedy' }]);
  assert.ok(!off.candidates.some((c) => c.sql === asked));
});
