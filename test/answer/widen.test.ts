// A query returning part of what the question asks for gets an edit returning the rest: the columns the question
// names that the query leaves out, or each aggregate of its one aggregate's argument the question asks for
// (answer/widen.ts); the answer path offers it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { widenQuery } from '../../src/answer/widen.ts';
import { swapNames } from '../../src/answer/swap.ts';
import { Answerer } from '../../src/answer/resources.ts';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { SqlPool } from '../../src/sql/pool.ts';

const DB = join('data/databases', 'music_store', 'music_store.sqlite');
const NAMES = swapNames(introspectSchema(DB));
const sqls = (sql: string, q: string): string[] => widenQuery(sql, q, NAMES).map((e) => e.sql);

test('the columns the question names and the query does not return are added to what it returns', () => {
  assert.deepEqual(sqls("SELECT first_name FROM customers WHERE country = 'Brazil'", 'What are the first names, last names and emails of customers from Brazil?'), [
    "SELECT first_name, last_name, email FROM customers WHERE country = 'Brazil'",
  ]);
  assert.deepEqual(sqls('SELECT T1.title FROM albums AS T1 JOIN artists AS T2 ON T1.artist_id = T2.artist_id ORDER BY T1.release_year DESC LIMIT 1', 'The title and the artist country of the latest album by release year'), [
    'SELECT T1.title, T2.country FROM albums AS T1 JOIN artists AS T2 ON T1.artist_id = T2.artist_id ORDER BY T1.release_year DESC LIMIT 1',
  ], 'qualified by the alias; the column ordered on is not added');
});

test('each aggregate the question asks of the one aggregated expression, in the question\'s order', () => {
  assert.deepEqual(sqls('SELECT AVG(total) FROM invoices', 'What are the lowest, the average and the highest invoice totals?'), ['SELECT MIN(total), AVG(total), MAX(total) FROM invoices']);
  assert.deepEqual(sqls('SELECT SUM(quantity) FROM invoice_lines WHERE unit_price > 1', 'The total and the average quantity of invoice lines priced above 1'), ['SELECT SUM(quantity), AVG(quantity) FROM invoice_lines WHERE unit_price > 1']);
  assert.deepEqual(sqls('SELECT MAX(total) FROM invoices', 'What is the highest invoice total?'), [], 'one aggregate asked (the column\'s own name is no cue): nothing to add');
  assert.deepEqual(sqls('SELECT MAX(total) - MIN(total) FROM invoices', 'the lowest and highest totals'), [], 'not one aggregate');
});

test('the columns returned that the question does not name are dropped when one it names stays', () => {
  assert.deepEqual(sqls("SELECT country, city FROM customers WHERE first_name = 'Ann'", 'the cities of customers named Ann'), ["SELECT city FROM customers WHERE first_name = 'Ann'"]);
  assert.deepEqual(sqls('SELECT T1.title, T2.name FROM albums AS T1 JOIN artists AS T2 ON T1.artist_id = T2.artist_id', 'the album titles'), ['SELECT T1.title FROM albums AS T1 JOIN artists AS T2 ON T1.artist_id = T2.artist_id']);
  assert.deepEqual(sqls('SELECT first_name, last_name FROM employees ORDER BY birth_date LIMIT 1', 'Who is the oldest employee?'), [], 'none named: none dropped');
  assert.deepEqual(sqls('SELECT city FROM customers', 'Which places do customers live in?'), [], 'one column: nothing to drop');
  assert.deepEqual(sqls('SELECT company, first_name FROM customers', 'the first names and emails of customers'), [
    'SELECT company, first_name, email FROM customers',
    'SELECT first_name FROM customers',
    'SELECT first_name, email FROM customers',
  ], 'added, dropped, and both at once');
});

test('nothing is added that the question does not name alone, that the query filters on, beside an aggregate, a group or a set operation', () => {
  assert.deepEqual(sqls('SELECT T1.first_name FROM customers AS T1 JOIN employees AS T2 ON T1.support_rep_id = T2.employee_id', 'List the first name and the city of customers with their support rep'), [], 'both tables have a city');
  assert.deepEqual(sqls("SELECT first_name FROM customers WHERE country = 'Brazil'", 'The first names of customers whose country is Brazil'), [], 'the filter\'s column');
  assert.ok(!sqls('SELECT T1.email FROM customers AS T1 JOIN employees AS T2 ON T1.support_rep_id = T2.employee_id', 'the emails of customers with their support rep id').some((s) => s.includes('T1.support_rep_id FROM')), 'a key joined on is the joined table\'s');
  assert.deepEqual(sqls('SELECT COUNT(*) FROM customers', 'How many customers, and their cities?'), [], 'a column beside an aggregate would be one arbitrary row\'s');
  assert.deepEqual(sqls('SELECT country, COUNT(*) FROM customers GROUP BY country', 'the country and city of customers'), []);
  assert.deepEqual(sqls('SELECT city FROM customers UNION SELECT city FROM employees', 'the cities and countries'), []);
  assert.deepEqual(sqls('SELECT city, country FROM customers', 'the city and country of each customer'), [], 'all returned already');
});

const pool = new SqlPool({ size: 1 });
after(() => pool.close());

test('the answer path offers the widened query as an edit, and without edits it does not', { timeout: 120_000 }, async () => {
  const question = 'What are the first names, last names and emails of customers?';
  const part = 'SELECT first_name FROM customers';
  const whole = 'SELECT first_name, last_name, email FROM customers';
  const on = await new Answerer(pool, { config: { synth: 0, flips: 0 } }).answer(DB, 'music_store', question, [{ sql: part, source: 'greedy' }]);
  const edit = on.candidates.find((c) => c.sql === whole);
  assert.ok(edit, `widened candidate offered: ${on.candidates.map((c) => c.sql).join(' | ')}`);
  assert.ok(edit.sources.includes('edit'));
  const off = await new Answerer(pool, { config: { synth: 0, flips: 0, edits: false } }).answer(DB, 'music_store', question, [{ sql: part, source: 'greedy' }]);
  assert.ok(!off.candidates.some((c) => c.sql === whole));
});
