// bench human's automatic reading of a miss, on a made-up database: an episode without an answer and a dropped
// filter are their own kinds (they used to be counted as column misses), LIMIT counts are not values, and
// Spider's double-quoted values are values.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { classifyFailure, valueLiterals } from '../../bench/human.ts';

const dir = mkdtempSync(join(tmpdir(), 'agro-classify-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const dbPath = join(dir, 'mills.sqlite');
const db = new Database(dbPath);
db.exec(`CREATE TABLE mill (id INTEGER PRIMARY KEY, name TEXT, state TEXT, output REAL);
         CREATE TABLE owner (id INTEGER PRIMARY KEY, mill_id INTEGER REFERENCES mill(id), person TEXT);`);
db.close();
const schema = introspectSchema(dbPath);
const kind = (pred: string, gold: string, outcome = 'mismatch'): string => classifyFailure(pred, gold, outcome, schema);

test('no answer, and SQL that does not run', () => {
  assert.equal(kind('SELECT NULL', 'SELECT name FROM mill'), 'no_answer');
  assert.equal(kind('  ', 'SELECT name FROM mill', 'pred_error'), 'no_answer');
  assert.equal(kind('SELECT nme FROM mill', 'SELECT name FROM mill', 'pred_error'), 'unrunnable');
});

test('a dropped filter is a value miss, also when the gold double-quotes it; a wrong value too', () => {
  assert.equal(kind('SELECT name FROM mill', 'SELECT name FROM mill WHERE state = "Idle"'), 'value');
  assert.equal(kind('SELECT name FROM mill', "SELECT name FROM mill WHERE state = 'Idle' AND output > 3"), 'value');
  assert.equal(kind("SELECT name FROM mill WHERE state = 'Busy'", "SELECT name FROM mill WHERE state = 'Idle'"), 'value');
  // Reading a table or column the gold does not is not a dropped filter.
  assert.equal(kind('SELECT person FROM owner', "SELECT name FROM mill WHERE state = 'Idle'"), 'column');
});

test('shape, columns and the rest', () => {
  assert.equal(kind('SELECT name FROM mill', 'SELECT T1.name FROM mill AS T1 JOIN owner AS T2 ON T1.id = T2.mill_id'), 'structure');
  assert.equal(kind("SELECT id FROM mill WHERE state = 'Idle'", "SELECT name FROM mill WHERE state = 'Idle'"), 'column');
  // LIMIT counts are not values: a different count is an "other" miss, not a value miss.
  assert.equal(kind('SELECT name FROM mill ORDER BY output DESC LIMIT 3', 'SELECT name FROM mill ORDER BY output DESC LIMIT 1'), 'other');
});

test('value literals: strings, numbers outside LIMIT/OFFSET, double-quoted words that name nothing', () => {
  assert.deepEqual(valueLiterals(`SELECT "name" FROM mill WHERE state = "Idle" AND output > 2.5 LIMIT 4 OFFSET 1`, schema), ['idle', '2.5']);
  assert.deepEqual(valueLiterals("SELECT name FROM mill WHERE state = 'Idle'", schema), ['idle']);
});
