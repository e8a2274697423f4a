// An answer whose reading counts another thing than the question asks for answers another question, however close its
// other words: it is never above the low mark (answer/intent.ts).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { countedNames, countedTables, countsAnotherThing } from '../../src/answer/intent.ts';
import { Answerer } from '../../src/answer/resources.ts';
import { LOW_CONFIDENCE } from '../../src/answer/rank.ts';
import { SqlPool } from '../../src/sql/pool.ts';

// A schema of this test's own: a multi-word table, two tables sharing a head noun, and one whose head noun is its own.
const NAMES = countedNames(['harbour', 'ship_crew', 'crew_log', 'voyage_log', 'berth']);

test('a counted thing is the longest table name after a counting phrase, singular or plural', () => {
  assert.deepEqual(countedTables('How many ship crews sail from each harbour?', NAMES), ['ship_crew']);
  assert.deepEqual(countedTables('Which harbour has the most berths?', NAMES), ['berth']);
  assert.deepEqual(countedTables('the number of crews per harbour', NAMES), ['ship_crew'], 'a head noun no other table shares names its table');
  assert.deepEqual(countedTables('How many logs are there?', NAMES), [], 'a head noun two tables share names neither');
  assert.deepEqual(countedTables('the number of voyage logs', NAMES), ['voyage_log']);
  assert.deepEqual(countedTables('Which ship is the most expensive?', NAMES), [], 'words after "most" that are no table name nothing');
  assert.deepEqual(countedTables('List every harbour', NAMES), [], 'no counting phrase');
});

test('a reading contradicts the question only when both count tables and none is shared', () => {
  assert.equal(countsAnotherThing('Which harbour has the most berths?', 'Which harbour has the most crew logs?', NAMES), true);
  assert.equal(countsAnotherThing('Which harbour has the most berths?', 'What is the harbour with the most berths?', NAMES), false);
  assert.equal(countsAnotherThing('Which harbour has the most berths?', 'Which harbour is the largest?', NAMES), false, 'a reading that counts nothing says nothing');
  assert.equal(countsAnotherThing('Which harbour is the busiest?', 'How many berths are there?', NAMES), false, 'a question that counts nothing says nothing');
  assert.equal(countsAnotherThing('Which harbour has the most berths?', null, NAMES), false);
});

const DB = join('data/databases', 'music_store', 'music_store.sqlite');
const pool = new SqlPool({ size: 1 });
after(() => pool.close());

test('the answer path holds a choice that counts another table to the low mark', { timeout: 120_000 }, async () => {
  const answerer = new Answerer(pool, { config: { synth: 0 } });
  // The only query offered counts artists per country; the question counts albums.
  const wrong = 'SELECT country FROM artists GROUP BY country ORDER BY COUNT(*) DESC LIMIT 1';
  const a = await answerer.answer(DB, 'music_store', 'Which artist has the most albums?', [{ sql: wrong, source: 'greedy' }]);
  assert.ok(a.sql !== null && a.reading !== null);
  const names = countedNames(['albums', 'artists', 'customers', 'employees', 'genres', 'invoice_lines', 'invoices', 'media_types', 'tracks']);
  assert.ok(countsAnotherThing('Which artist has the most albums?', a.reading, names), `the chosen reading should count another thing: ${a.reading}`);
  assert.equal(a.low, true);
  assert.ok(a.confidence <= LOW_CONFIDENCE, `confidence ${a.confidence}`);
});
