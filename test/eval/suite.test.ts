import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { SqlPool } from '../../src/sql/pool.ts';
import { evaluate } from '../../src/eval/run.ts';
import { readDataset } from '../../src/data/read-dataset.ts';

const DB_ROOT = fileURLToPath(new URL('../../data/databases/', import.meta.url));
const pool = new SqlPool({ size: 2 });
after(() => pool.close());

// On music_store every customer's support rep is a Sales Support Agent, so dropping the title filter
// from question 12's gold query gives the same rows: right only by accident. The variant database
// gives one customer the Sales Manager (employee 2) as rep, which exposes it.
const GOLD_12 = "SELECT E.first_name, E.last_name, ROUND(SUM(I.total), 2) AS revenue FROM employees AS E JOIN customers AS C ON C.support_rep_id = E.employee_id JOIN invoices AS I ON I.customer_id = C.customer_id WHERE E.title = 'Sales Support Agent' GROUP BY E.employee_id ORDER BY revenue DESC";
const ACCIDENTAL = 'SELECT E.first_name, E.last_name, ROUND(SUM(I.total), 2) AS revenue FROM employees AS E JOIN customers AS C ON C.support_rep_id = E.employee_id JOIN invoices AS I ON I.customer_id = C.customer_id GROUP BY E.employee_id ORDER BY revenue DESC';
const GOLD_0 = "SELECT COUNT(*) FROM tracks AS T JOIN genres AS G ON T.genre_id = G.genre_id WHERE G.name = 'Jazz'";
const REWRITE_0 = "SELECT COUNT(track_id) FROM tracks WHERE genre_id IN (SELECT genre_id FROM genres WHERE name = 'Jazz')";

function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'agro-eval-suite-'));
  const suite = join(dir, 'suite');
  mkdirSync(join(suite, 'music_store'), { recursive: true });
  const variant = join(suite, 'music_store', 'v1.sqlite');
  copyFileSync(join(DB_ROOT, 'music_store', 'music_store.sqlite'), variant);
  const db = new Database(variant);
  db.prepare('UPDATE customers SET support_rep_id = 2 WHERE customer_id = (SELECT customer_id FROM invoices ORDER BY invoice_id LIMIT 1)').run();
  db.close();
  const data = join(dir, 'd.json');
  writeFileSync(data, JSON.stringify([
    { question_id: 0, db_id: 'music_store', question: 'jazz tracks', SQL: GOLD_0, difficulty: 'simple' },
    { question_id: 12, db_id: 'music_store', question: 'agent revenue', SQL: GOLD_12, difficulty: 'challenging' },
  ]));
  return { suite, variant, ds: readDataset(data) };
}

test('test-suite mode counts a query right only when it matches on the original and every variant', async () => {
  const { suite, variant, ds } = setup();
  const preds = [REWRITE_0, ACCIDENTAL];
  const plain = await evaluate(ds, preds, pool, { dbRoot: DB_ROOT });
  assert.deepEqual(plain.questions.map((q) => q.outcome), ['match', 'match'], 'on the original alone both look right');

  const rep = await evaluate(ds, preds, pool, { dbRoot: DB_ROOT, suiteDir: suite });
  assert.equal(rep.suite, suite);
  assert.deepEqual(rep.questions.map((q) => q.outcome), ['match', 'mismatch']);
  assert.equal(rep.questions[1].failedVariant, variant);
  assert.deepEqual(rep.questions.map((q) => q.variantsChecked), [1, 1]);
  assert.deepEqual(rep.summary.byDifficulty.map((b) => [b.bucket, b.count, b.correct]), [
    ['simple', 1, 1],
    ['moderate', 0, 0],
    ['challenging', 1, 0],
  ]);

  const gold = await evaluate(ds, [GOLD_0, GOLD_12], pool, { dbRoot: DB_ROOT, suiteDir: suite });
  assert.equal(gold.summary.accuracy, 100, 'gold stays right on every variant');
});

test('a database with no variant folder is checked on the original only', async () => {
  const { ds } = setup();
  const empty = mkdtempSync(join(tmpdir(), 'agro-eval-nosuite-'));
  const rep = await evaluate(ds, [REWRITE_0, ACCIDENTAL], pool, { dbRoot: DB_ROOT, suiteDir: empty });
  assert.deepEqual(rep.questions.map((q) => [q.outcome, q.variantsChecked]), [['match', 0], ['match', 0]]);
});
