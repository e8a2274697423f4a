// The official evaluators' rules, one hand-made case each: what upstream Python scores is worked out
// by hand from test-suite-sql-eval exec_eval.py and bird-bench evaluation_ex.py (see src/sql/official.ts).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SqlPool } from '../../src/sql/pool.ts';
import { evaluate } from '../../src/eval/run.ts';
import { readDataset } from '../../src/data/read-dataset.ts';
import { readPredictions } from '../../src/data/read-predictions.ts';
import { birdPredictions, writeBirdFiles } from '../../src/data/bird-files.ts';
import { spiderPair, isEmptyStatement } from '../../src/sql/official.ts';
import { removeDistinct, NoStatementError } from '../../src/sql/sqlparse-compat.ts';
import { pyFloatRepr, resultsMatch } from '../../src/sql/compare.ts';
import type { Dataset } from '../../src/data/types.ts';
import { makeDb, tempDir } from '../sql/helpers.ts';

const { dir, cleanup } = tempDir('agro-official-');
const pool = new SqlPool({ size: 2 });
after(async () => {
  await pool.close();
  cleanup();
});

const ROOT = join(dir, 'db');
mkdirSync(join(ROOT, 'shop'), { recursive: true });
const SHOP = makeDb(
  join(ROOT, 'shop', 'shop.sqlite'),
  `CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, city TEXT, score INTEGER, rate REAL);
   INSERT INTO people VALUES (1, 'Bob', 'Oslo', 10, 1.5), (2, 'Ann', 'Oslo', 10, 2.0), (3, 'Cid', 'Rome', 7, 2.5), (4, 'Bob', 'Rome', 3, NULL);`,
);

function spiderSet(rows: Array<[string, string]>): Dataset {
  return { path: '(test)', format: 'spider', items: rows.map(([gold], i) => ({ index: i, dbId: 'shop', gold })) };
}

async function spider(pairs: Array<[string, string]>, opts: { keepDistinct?: boolean; root?: string } = {}) {
  const rep = await evaluate(spiderSet(pairs), pairs.map((p) => p[1]), pool, { dbRoot: opts.root ?? ROOT, mode: 'spider', keepDistinct: opts.keepDistinct });
  return rep.questions;
}

test('double-quoted string literals run as in SQLite\'s default build; a double-quoted name is still a column', async () => {
  const r = await pool.execute(SHOP, 'SELECT "name", count(*) FROM people WHERE city = "Oslo" AND name = "Bob"');
  assert.ok(r.ok, r.ok ? '' : r.message);
  assert.deepEqual(r.rows, [['Bob', 1]]);
});

test('the sandbox is unchanged: load_extension() stays disabled, writes and ATTACH are refused', async () => {
  const ext = await pool.execute(SHOP, "SELECT load_extension('/tmp/x.so')");
  assert.equal(ext.ok, false);
  assert.match(ext.ok ? '' : ext.message, /not authorized/);
  const write = await pool.execute(SHOP, 'WITH x AS (SELECT 1) DELETE FROM people');
  assert.equal(write.ok ? '' : write.error, 'refused');
  const attach = await pool.execute(SHOP, "ATTACH 'other.db' AS o");
  assert.equal(attach.ok ? '' : attach.error, 'refused');
});

test('a misspelled keyword is a syntax error, not a refusal', async () => {
  const [q] = await spider([['SELECT name FROM people', 'SELEC name FROM people']]);
  assert.equal(q.outcome, 'pred_error');
  assert.equal(q.errorKind, 'syntax');
});

test('DISTINCT is removed from both queries, inside count() too; --keep-distinct keeps it', async () => {
  const pairs: Array<[string, string]> = [
    ['SELECT count(DISTINCT name) FROM people', 'SELECT count(name) FROM people'], // 3 vs 4: equal once DISTINCT is gone
    ['SELECT DISTINCT city FROM people', 'SELECT city FROM people'],
  ];
  assert.deepEqual((await spider(pairs)).map((q) => q.outcome), ['match', 'match']);
  assert.deepEqual((await spider(pairs, { keepDistinct: true })).map((q) => q.outcome), ['mismatch', 'mismatch']);
  // Only the sqlparse token `distinct` goes: not inside strings, names or longer words.
  assert.equal(removeDistinct("SELECT count(DISTINCT x), 'distinct', \"distinct\", distinct_n FROM t"), "SELECT count( x), 'distinct', \"distinct\", distinct_n FROM t");
  assert.equal(removeDistinct('SELECT 1; SELECT DISTINCT 2'), 'SELECT 1; ');
  assert.throws(() => removeDistinct('  \n '), NoStatementError);
});

test('row order counts only when the gold text contains "order by"; ties ordered differently then fail', async () => {
  const qs = await spider([
    ['SELECT name FROM people WHERE score = 10 ORDER BY score', 'SELECT name FROM people WHERE score = 10 ORDER BY name'], // Bob, Ann vs Ann, Bob
    ['SELECT name FROM people WHERE score = 10', 'SELECT name FROM people WHERE score = 10 ORDER BY name'],
    ["SELECT name FROM people WHERE name != 'order by x' AND score = 10", 'SELECT name FROM people WHERE score = 10 ORDER BY name'], // substring in a string
  ]);
  assert.deepEqual(qs.map((q) => q.outcome), ['mismatch', 'match', 'mismatch']);
  assert.equal(spiderPair('SELECT a FROM t ORDER  BY a', 'x').ordered, false); // two spaces: not the substring
});

test('int vs float: equal by value, but quick_rej tells (1, 1.5) from (1.0, 1.5) as upstream does', async () => {
  const qs = await spider([
    ['SELECT 1, 1.5', 'SELECT 1.0, 1.5'], // keys "1<class 'int'>" > "1.5<...>" but "1.0<...>" < "1.5<...>": rows sort differently
    ['SELECT 2, 1.5', 'SELECT 2.0, 1.5'], // both sort as (1.5, 2): equal
    ['SELECT 1', 'SELECT 1.0'],
    ["SELECT '1'", 'SELECT 1'],
  ]);
  assert.deepEqual(qs.map((q) => q.outcome), ['mismatch', 'match', 'match', 'mismatch']);
  // BIRD compares by value only.
  assert.equal(resultsMatch([[1.0, 1.5]], [[1n, 1.5]], { mode: 'bird' }), true);
  assert.deepEqual([1e16, 1e15, 0.0001, 0.00001, 1.5e-7, -2.5e300, 123456789012345680, 0.1 + 0.2, Infinity].map(pyFloatRepr), [
    '1e+16', '1000000000000000.0', '0.0001', '1e-05', '1.5e-07', '-2.5e+300', '1.2345678901234568e+17', '0.30000000000000004', 'inf',
  ]);
});

test('comment-only SQL gives no rows (Python sqlite3 does so) and matches an empty gold result', async () => {
  assert.equal(isEmptyStatement('-- nothing\n;'), true);
  const qs = await spider([
    ["SELECT name FROM people WHERE city = 'Paris'", '/* none */'],
    ['SELECT name FROM people', '   '],
  ]);
  assert.deepEqual(qs.map((q) => q.outcome), ['match', 'pred_error']);
});

test('test suite as upstream: every .sqlite in the database folder must agree', async () => {
  const root = join(dir, 'suite');
  mkdirSync(join(root, 'shop'), { recursive: true });
  makeDb(join(root, 'shop', 'shop.sqlite'), 'CREATE TABLE people (name TEXT, score INTEGER); INSERT INTO people VALUES (\'Bob\', 10), (\'Ann\', 3);');
  makeDb(join(root, 'shop', 'variant-1.sqlite'), 'CREATE TABLE people (name TEXT, score INTEGER); INSERT INTO people VALUES (\'Bob\', 10), (\'Ann\', 12);');
  const qs = await spider(
    [
      ['SELECT name FROM people WHERE score > 5', "SELECT name FROM people WHERE name = 'Bob'"], // right on the original only
      ['SELECT name FROM people WHERE score > 5', 'SELECT name FROM people WHERE score >= 6'],
    ],
    { root },
  );
  assert.deepEqual(qs.map((q) => q.outcome), ['mismatch', 'match']);
  assert.match(qs[0].failedVariant ?? '', /variant-1\.sqlite$/);
  assert.equal(qs[1].variantsChecked, 1);
});

test('BIRD files round trip: dev_gold.sql and predict_dev.json out, read back, same evaluation', async () => {
  const data: Dataset = {
    path: '(test)',
    format: 'bird',
    items: [
      { index: 0, dbId: 'shop', gold: 'SELECT name, city FROM people\nWHERE score = 10' },
      { index: 1, dbId: 'shop', gold: 'SELECT count(*) FROM people' },
    ],
  };
  const preds = ['SELECT name, city FROM people WHERE score > 9', 'SELECT\tcount(id) FROM people'];
  const out = join(dir, 'bird');
  mkdirSync(out);
  const files = writeBirdFiles(out, data.items, preds);
  assert.equal(readFileSync(files.gold, 'utf8'), 'SELECT name, city FROM people WHERE score = 10\tshop\nSELECT count(*) FROM people\tshop\n');
  assert.deepEqual(JSON.parse(readFileSync(files.pred, 'utf8')), { 0: 'SELECT name, city FROM people WHERE score > 9\t----- bird -----\tshop', 1: 'SELECT count(id) FROM people\t----- bird -----\tshop' });
  const back = readDataset(files.gold);
  assert.deepEqual(back.items.map((it) => [it.dbId, it.gold, it.question]), [['shop', 'SELECT name, city FROM people WHERE score = 10', undefined], ['shop', 'SELECT count(*) FROM people', undefined]]);
  const backPreds = readPredictions(files.pred, back.items);
  assert.deepEqual(backPreds, ['SELECT name, city FROM people WHERE score > 9', 'SELECT count(id) FROM people']);
  const rep = await evaluate(back, backPreds, pool, { dbRoot: ROOT, mode: 'bird' });
  assert.deepEqual(rep.questions.map((q) => q.outcome), ['match', 'match']);
  assert.throws(() => birdPredictions(data.items, ['x']), RangeError);
});

test('BIRD: values compared in column order (mini_dev); --bird-sorted-rows sorts each row first (PR #159)', async () => {
  const data: Dataset = { path: '(test)', format: 'bird', items: [{ index: 0, dbId: 'shop', gold: "SELECT name, city FROM people WHERE city = 'Rome'" }] };
  const pred = ["SELECT city, name FROM people WHERE city = 'Rome'"];
  const cur = await evaluate(data, pred, pool, { dbRoot: ROOT, mode: 'bird' });
  const pr159 = await evaluate(data, pred, pool, { dbRoot: ROOT, mode: 'bird', birdSortedRows: true });
  assert.equal(cur.questions[0].outcome, 'mismatch');
  assert.equal(pr159.questions[0].outcome, 'match');
  // Duplicate rows collapse in both (set semantics); Spider keeps them (bag).
  const dup: Dataset = { path: '(test)', format: 'bird', items: [{ index: 0, dbId: 'shop', gold: "SELECT city FROM people WHERE city = 'Oslo'" }] };
  const once = ["SELECT DISTINCT city FROM people WHERE city = 'Oslo'"];
  assert.equal((await evaluate(dup, once, pool, { dbRoot: ROOT, mode: 'bird' })).questions[0].outcome, 'match');
});
