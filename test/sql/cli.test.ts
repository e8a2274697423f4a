import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeDb, tempDir } from './helpers.ts';

const BIN = fileURLToPath(new URL('../../bin/agro.js', import.meta.url));
const tmp = tempDir();
const DB = join(tmp.dir, 'people.sqlite');

function agro(...args: string[]) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 60_000 });
}

before(() => {
  makeDb(DB, `CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT NOT NULL, age INTEGER);
              INSERT INTO person VALUES (1, 'Ann', 31), (2, 'Bob', NULL), (3, 'Cyrille', 7);`);
});
after(() => tmp.cleanup());

test('agro sql prints an aligned table with the row count', () => {
  const r = agro('sql', '--db', DB, 'SELECT id, name, age FROM person ORDER BY id');
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.split('\n');
  assert.deepEqual(lines.slice(0, 5), [
    'id | name    |  age',
    '---+---------+-----',
    ' 1 | Ann     |   31',
    ' 2 | Bob     | NULL',
    ' 3 | Cyrille |    7',
  ]);
  assert.match(lines[5], /^3 rows in [\d.]+ ms$/);
});

test('agro sql --json and --max-rows report truncation', () => {
  const r = agro('sql', '--db', DB, '--json', '--max-rows', '2', 'SELECT name FROM person ORDER BY id');
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { columns: string[]; rows: unknown[][]; truncated: boolean; elapsedMs: number };
  assert.deepEqual(out.columns, ['name']);
  assert.deepEqual(out.rows, [['Ann'], ['Bob']]);
  assert.equal(out.truncated, true);
  assert.equal(typeof out.elapsedMs, 'number');
});

test('refused, failing, missing and runaway queries exit non-zero with one line', () => {
  const cases: Array<[string[], number, RegExp]> = [
    [['sql', '--db', DB, 'DELETE FROM person'], 5, /^agro: refused: writes are not allowed \(DELETE\)$/],
    [['sql', '--db', DB, 'SELECT nope FROM person'], 6, /^agro: no such column: nope$/],
    [['sql', '--db', join(tmp.dir, 'missing.sqlite'), 'SELECT 1'], 3, /^agro: database not found: /],
    [['sql', '--db', DB, '--timeout', '300', 'WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM r) SELECT count(*) FROM r'], 7, /^agro: query ran past its 300 ms limit/],
  ];
  for (const [args, code, message] of cases) {
    const r = agro(...args);
    assert.equal(r.status, code, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr.trim(), message);
  }
});

test('agro schema prints DDL; a garbage file exits 4', () => {
  const r = agro('schema', '--db', DB);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /CREATE TABLE person \(\n {2}id INTEGER, -- e\.g\. 1, 2, 3\n {2}name TEXT NOT NULL, -- e\.g\. 'Ann', 'Bob', 'Cyrille'\n/);
  assert.match(r.stdout, /PRIMARY KEY \(id\)/);
  const garbage = join(tmp.dir, 'garbage.sqlite');
  writeFileSync(garbage, 'garbage '.repeat(300));
  const g = agro('schema', '--db', garbage);
  assert.equal(g.status, 4, g.stderr);
  assert.match(g.stderr, /^agro: not a readable SQLite database/);
});

test('numeric flags reject non-integers and out-of-range values with a usage error', async () => {
  const { numberArg, timeoutArg, LIMITS } = await import('../../src/cli/options.ts');
  const maxRows = numberArg('--max-rows', { min: 0, max: LIMITS.rows });
  assert.equal(maxRows('0'), 0);
  assert.equal(timeoutArg()('250'), 250);
  assert.throws(() => timeoutArg()('0'), /--timeout must be an integer from 1 to 2147453647, got "0"/);
  // setTimeout turns anything past 2^31-1 ms into 1 ms: refused, not silently shortened.
  assert.throws(() => timeoutArg()('99999999999'), /--timeout must be an integer from 1 to/);
  assert.throws(() => maxRows('lots'), /--max-rows must be an integer from 0 to 100000000, got "lots"/);
  assert.throws(() => maxRows('1.5'), /an integer/);
});
