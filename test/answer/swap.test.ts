// A query with the question's shape but a sibling column (returned, grouped, ordered by) gets an edit to the column
// the question names, in those clauses only, of the same table and kind (answer/swap.ts); the answer path offers it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { swapColumns, swapNames } from '../../src/answer/swap.ts';
import { Answerer } from '../../src/answer/resources.ts';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { SqlPool } from '../../src/sql/pool.ts';

const DB = join('data/databases', 'music_store', 'music_store.sqlite');
const NAMES = swapNames(introspectSchema(DB));
const sqls = (sql: string, q: string): string[] => swapColumns(sql, q, NAMES).map((e) => e.sql);

test('a column the question does not name is swapped for one of its table it names, everywhere it returns, groups or orders', () => {
  assert.deepEqual(sqls('SELECT country, COUNT(*) FROM customers GROUP BY country', 'How many customers are there in each city?'), ['SELECT city, COUNT(*) FROM customers GROUP BY city']);
  assert.deepEqual(
    sqls('SELECT T1.company FROM customers AS T1 JOIN employees AS T2 ON T1.support_rep_id = T2.employee_id WHERE T2.last_name = \'Park\'', 'Which emails do the customers of Park have?'),
    ['SELECT T1.email FROM customers AS T1 JOIN employees AS T2 ON T1.support_rep_id = T2.employee_id WHERE T2.last_name = \'Park\''],
    'the qualifier is kept; the join and the filter are not touched',
  );
});

test('no swap where the question names the column, in a filter or a join, across kinds, or to a column the query already returns or filters on', () => {
  assert.deepEqual(sqls('SELECT city, COUNT(*) FROM customers GROUP BY city', 'How many customers are there in each city?'), [], 'the named column stays');
  assert.deepEqual(sqls("SELECT email FROM customers WHERE country = 'Brazil'", 'Which emails belong to customers of the city Brazil?'), [], 'a filter is the value edits\' to carry over');
  assert.deepEqual(sqls('SELECT support_rep_id FROM customers', 'What are the cities of customers?'), [], 'a number is not swapped for a text');
  assert.deepEqual(sqls('SELECT city, country FROM customers', 'List the city of each customer'), [], 'the named column is returned already');
  assert.deepEqual(sqls("SELECT company FROM customers WHERE city = 'Oslo'", 'What is the city of the customers in Oslo?'), [], 'the named column is the filter\'s');
  assert.deepEqual(sqls('SELECT COUNT(*) FROM customers', 'How many cities?'), []);
});

const pool = new SqlPool({ size: 1 });
after(() => pool.close());

test('the answer path offers the swapped query as an edit, and without edits it does not', { timeout: 120_000 }, async () => {
  const question = 'How many customers are there in each city?';
  const wrong = 'SELECT country, COUNT(*) FROM customers GROUP BY country';
  const swapped = 'SELECT city, COUNT(*) FROM customers GROUP BY city';
  const on = await new Answerer(pool, { config: { synth: 0, flips: 0 } }).answer(DB, 'music_store', question, [{ sql: wrong, source: 'greedy' }]);
  const edit = on.candidates.find((c) => c.sql === swapped);
  assert.ok(edit, `swapped candidate offered: ${on.candidates.map((c) => c.sql).join(' | ')}`);
  assert.ok(edit.sources.includes('edit'));
  assert.equal(on.sql, swapped, 'its reading names the asked column: it is chosen over the policy\'s sibling');
  const off = await new Answerer(pool, { config: { synth: 0, flips: 0, edits: false } }).answer(DB, 'music_store', question, [{ sql: wrong, source: 'greedy' }]);
  assert.ok(!off.candidates.some((c) => c.sql === swapped));
});
