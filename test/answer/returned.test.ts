// An answer that returns another thing than the question asks for (a country for "which artist"), drops a value or a
// number the question names, or counts another thing answers another question: never above the low mark. The same
// rule must not mark the right answers low (answer/returned.ts, answer/answer.ts).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { askedThings, returnedColumns, returnedNames, returnsAnotherThing } from '../../src/answer/returned.ts';
import { Answerer } from '../../src/answer/resources.ts';
import { LOW_CONFIDENCE } from '../../src/answer/rank.ts';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { SqlPool } from '../../src/sql/pool.ts';

const DB = join('data/databases', 'music_store', 'music_store.sqlite');
const NAMES = returnedNames(introspectSchema(DB));

test('the asked thing is a table or a column of the schema after the opening, or nothing', () => {
  assert.deepEqual(askedThings('Which artist has the most albums?', NAMES), [{ table: 'artists' }]);
  assert.deepEqual(askedThings('What are the titles of albums from 1999?', NAMES), [{ column: ['titl'] }]);
  assert.deepEqual(askedThings('Give me the email and city of every customer', NAMES), [{ column: ['email'] }, { column: ['citi'] }]);
  assert.deepEqual(askedThings('What is the biggest spend of a customer?', NAMES), [], 'a word no column or table has: nothing is said');
  assert.deepEqual(askedThings('How many tracks are there?', NAMES), [], 'a count asks for no returned column');
  assert.deepEqual(askedThings('For each genre, the track count', NAMES), []);
});

test('the returned columns are plain columns of the first SELECT, or nothing is judged', () => {
  assert.deepEqual(returnedColumns('SELECT DISTINCT T1.name AS n, T2.title FROM artists AS T1 JOIN albums AS T2 ON T1.artist_id = T2.artist_id'), ['name', 'title']);
  assert.equal(returnedColumns('SELECT COUNT(*) FROM tracks'), null);
  assert.equal(returnedColumns('SELECT * FROM tracks'), null);
  assert.equal(returnedColumns('SELECT name, milliseconds / 1000 FROM tracks'), null);
});

test('another returned column contradicts the question; the asked one, an identifier or a column the question says does not', () => {
  const no = (q: string, sql: string): void => assert.equal(returnsAnotherThing(q, sql, NAMES), false, `${q} / ${sql}`);
  const yes = (q: string, sql: string): void => assert.equal(returnsAnotherThing(q, sql, NAMES), true, `${q} / ${sql}`);
  yes('Which artist has the most albums?', 'SELECT country FROM artists GROUP BY country ORDER BY COUNT(*) DESC LIMIT 1');
  yes('What is the name of the shortest track?', 'SELECT milliseconds FROM tracks ORDER BY milliseconds LIMIT 1');
  yes('Which employee was hired first?', 'SELECT birth_date FROM employees ORDER BY hire_date LIMIT 1');
  yes('List the emails of customers from Oslo.', "SELECT company FROM customers WHERE city = 'Oslo'");
  no('Which artist has the most albums?', 'SELECT T1.name FROM artists AS T1 JOIN albums AS T2 ON T1.artist_id = T2.artist_id GROUP BY T1.artist_id ORDER BY COUNT(*) DESC LIMIT 1');
  no('Which artist has the most albums?', 'SELECT artist_id FROM albums GROUP BY artist_id ORDER BY COUNT(*) DESC LIMIT 1');
  no('What is the name of the shortest track?', 'SELECT name FROM tracks ORDER BY milliseconds LIMIT 1');
  no('Which employee was hired first?', 'SELECT first_name, last_name FROM employees ORDER BY hire_date LIMIT 1');
  no('List the first and last names of customers.', 'SELECT first_name, last_name FROM customers');
  no('What are the names of albums from 1999?', 'SELECT title FROM albums WHERE release_year = 1999');
  no('What country is each artist from?', 'SELECT name, country FROM artists');
  no('Show the titles and release years of albums.', 'SELECT release_year FROM albums');
  no('Which artist has the most albums?', 'SELECT COUNT(*) FROM albums GROUP BY artist_id ORDER BY COUNT(*) DESC LIMIT 1');
  no('How many artists are from Norway?', 'SELECT country FROM artists');
  no('What is the biggest spend of a customer?', 'SELECT company FROM customers');
});

const pool = new SqlPool({ size: 1 });
after(() => pool.close());

/** The answer path on one policy query alone (no memory, no synthesis): what it marks. */
async function answered(question: string, sql: string): Promise<{ low: boolean; confidence: number; sql: string | null }> {
  const answerer = new Answerer(pool, { config: { synth: 0, edits: false, flips: 0 } });
  return answerer.answer(DB, 'music_store', question, [{ sql, source: 'greedy' }]);
}

test('the answer path holds a wrong candidate low: another returned column, another counted thing, a dropped filter or number', { timeout: 120_000 }, async () => {
  const wrong: Array<[string, string]> = [
    ['Which artist has the most albums?', 'SELECT country FROM artists GROUP BY country ORDER BY COUNT(*) DESC LIMIT 1'],
    ['What is the name of the shortest track?', 'SELECT milliseconds FROM tracks ORDER BY milliseconds LIMIT 1'],
    // The asked column returned, but another table's rows counted (intent.ts).
    ['Which country has the most artists?', 'SELECT country FROM customers GROUP BY country ORDER BY COUNT(*) DESC LIMIT 1'],
    // A value the question names (a stored country) left out: the filter is dropped.
    ['How many customers live in Brazil?', 'SELECT COUNT(*) FROM customers'],
    // A number compared in the question, no WHERE at all.
    ['How many tracks are longer than 5 minutes?', 'SELECT COUNT(*) FROM tracks'],
  ];
  for (const [q, sql] of wrong) {
    const a = await answered(q, sql);
    assert.equal(a.sql, sql);
    assert.equal(a.low, true, `${q} / ${sql} should be marked low (confidence ${a.confidence})`);
    assert.ok(a.confidence <= LOW_CONFIDENCE, `${q}: confidence ${a.confidence}`);
  }
});

test('the returned-thing rule does not mark right candidates low', { timeout: 120_000 }, async () => {
  const right: Array<[string, string]> = [
    ['Which artist has the most albums?', 'SELECT T1.name FROM artists AS T1 JOIN albums AS T2 ON T1.artist_id = T2.artist_id GROUP BY T1.artist_id ORDER BY COUNT(*) DESC LIMIT 1'],
    ['What is the name of the shortest track?', 'SELECT name FROM tracks ORDER BY milliseconds LIMIT 1'],
    ['List the first and last names of all employees.', 'SELECT first_name, last_name FROM employees'],
    ['Which country has the most customers?', 'SELECT country FROM customers GROUP BY country ORDER BY COUNT(*) DESC LIMIT 1'],
    ['Which country has the most artists?', 'SELECT country FROM artists GROUP BY country ORDER BY COUNT(*) DESC LIMIT 1'],
  ];
  for (const [q, sql] of right) {
    assert.equal(returnsAnotherThing(q, sql, NAMES), false, q);
    // Nothing else in the answer is read as a contradiction either: a lone candidate is low only by its confidence.
    const a = await answered(q, sql);
    assert.equal(a.sql, sql);
    assert.equal(a.low, a.confidence < LOW_CONFIDENCE, `${q}: low ${a.low} at confidence ${a.confidence}`);
  }
});
