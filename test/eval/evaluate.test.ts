import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SqlPool } from '../../src/sql/pool.ts';
import { evaluate } from '../../src/eval/run.ts';
import { readDataset } from '../../src/data/read-dataset.ts';
import { readPredictions } from '../../src/data/read-predictions.ts';
import { resolveDatabase } from '../../src/data/databases.ts';
import { summarize } from '../../src/eval/metrics.ts';
import { formatReport } from '../../src/eval/format.ts';

const DATA = fileURLToPath(new URL('../../data/', import.meta.url));
const DB_ROOT = join(DATA, 'databases');
const pool = new SqlPool({ size: 2 });
after(() => pool.close());

const dev = readDataset(join(DATA, 'dev.json'));

test('every gold query in data/dev.json runs and returns a non-empty, not-all-NULL result', async () => {
  for (const it of dev.items) {
    const r = await pool.execute(resolveDatabase(DB_ROOT, it.dbId), it.gold, { timeoutMs: 10_000 });
    assert.ok(r.ok, `question ${it.index}: ${r.ok ? '' : r.message}`);
    assert.ok(r.rows.length > 0, `question ${it.index} returns no rows`);
    assert.ok(r.rows.some((row) => row.some((v) => v !== null)), `question ${it.index} returns only NULLs`);
    assert.equal(r.truncated, false);
  }
});

test('gold against itself scores 100% on all three databases, in both modes', async () => {
  const gold = dev.items.map((it) => it.gold);
  for (const mode of ['bird', 'spider'] as const) {
    const rep = await evaluate(dev, gold, pool, { dbRoot: DB_ROOT, mode, timeoutMs: 10_000 });
    assert.equal(rep.summary.correct, 45, mode);
    assert.equal(rep.summary.accuracy, 100);
    assert.deepEqual(rep.summary.byDifficulty.map((b) => [b.bucket, b.count, b.correct]), [
      ['simple', 15, 15],
      ['moderate', 18, 18],
      ['challenging', 12, 12],
    ]);
    for (const db of ['music_store', 'retail', 'school']) {
      const mine = rep.questions.filter((q) => q.dbId === db);
      assert.equal(mine.length, 15, db);
      assert.ok(mine.every((q) => q.outcome === 'match'), db);
    }
  }
});

// data/predictions/partly-wrong.json, by hand: 7 of 45 are wrong.
//   simple:      #1 wrong column (mismatch), #17 missing filter (mismatch)                 -> 13/15
//   moderate:    #7 syntax error, #22 runaway recursive CTE (timeout), #38 DELETE (refused) -> 15/18
//   challenging: #44 MIN for MAX (mismatch), #28 integer overflow (runtime error)           -> 10/12
//   total 38/45. #0 is a rewrite that returns the same rows; #20 has the right rows in another order,
//   which BIRD (sets) accepts and Spider (gold has ORDER BY) rejects: spider mode gives 37/45, moderate 14/18.
test('the partly-wrong predictions give exactly the hand-computed figures (bird mode)', async () => {
  const preds = readPredictions(join(DATA, 'predictions', 'partly-wrong.json'), dev.items);
  const rep = await evaluate(dev, preds, pool, { dbRoot: DB_ROOT, timeoutMs: 4000 });
  const s = rep.summary;
  assert.equal(s.count, 45);
  assert.equal(s.correct, 38);
  assert.equal(s.accuracy, (100 * 38) / 45);
  assert.deepEqual(s.byDifficulty.map((b) => [b.bucket, b.count, b.correct]), [
    ['simple', 15, 13],
    ['moderate', 18, 15],
    ['challenging', 12, 10],
  ]);
  assert.equal(s.byDifficulty[0].accuracy, (100 * 13) / 15);
  assert.deepEqual(s.outcomes, { match: 38, mismatch: 3, pred_error: 3, timeout: 1, gold_error: 0 });
  assert.deepEqual(s.predErrors, { syntax: 1, runtime: 1, refused: 1 });
  const wrong = rep.questions.filter((q) => q.outcome !== 'match').map((q) => [q.index, q.outcome, q.errorKind ?? null]);
  assert.deepEqual(wrong, [
    [1, 'mismatch', null],
    [7, 'pred_error', 'syntax'],
    [17, 'mismatch', null],
    [22, 'timeout', null],
    [28, 'pred_error', 'runtime'],
    [38, 'pred_error', 'refused'],
    [44, 'mismatch', null],
  ]);
  const table = formatReport(rep);
  assert.match(table, /^simple\s+15\s+13\s+86\.67$/m);
  assert.match(table, /^moderate\s+18\s+15\s+83\.33$/m);
  assert.match(table, /^challenging\s+12\s+10\s+83\.33$/m);
  assert.match(table, /^total\s+45\s+38\s+84\.44$/m);
  assert.match(table, /timeout 1, gold_error 0/);
});

test('spider mode: an ORDER BY gold rejects the right rows in the wrong order', async () => {
  const preds = readPredictions(join(DATA, 'predictions', 'partly-wrong.json'), dev.items);
  const rep = await evaluate(dev, preds, pool, { dbRoot: DB_ROOT, mode: 'spider', timeoutMs: 4000 });
  assert.equal(rep.summary.correct, 37);
  assert.deepEqual(rep.summary.byDifficulty.map((b) => b.correct), [13, 14, 10]);
  assert.equal(rep.questions[20].outcome, 'mismatch');
  assert.equal(rep.questions[0].outcome, 'match');
});

// data/predictions/spider-sample.sql against data/dev_spider.json: line 3 reorders an ORDER BY result,
// line 5 filters on a department that does not exist (no rows). Spider: 4/6; BIRD sets: 5/6.
test('Spider-format data without difficulty is reported under "all"', async () => {
  const sp = readDataset(join(DATA, 'dev_spider.json'));
  const preds = readPredictions(join(DATA, 'predictions', 'spider-sample.sql'), sp.items);
  const spider = await evaluate(sp, preds, pool, { dbRoot: DB_ROOT, mode: 'spider' });
  assert.deepEqual(spider.summary.byDifficulty.map((b) => [b.bucket, b.count, b.correct]), [['all', 6, 4]]);
  assert.deepEqual(spider.questions.map((q) => q.outcome), ['match', 'match', 'mismatch', 'match', 'mismatch', 'match']);
  const bird = await evaluate(sp, preds, pool, { dbRoot: DB_ROOT, mode: 'bird' });
  assert.equal(bird.summary.correct, 5);
  assert.match(formatReport(spider), /^all\s+6\s+4\s+66\.67$/m);
});

test('a failing gold query is gold_error (wrong, not a crash); unknown db_ids fail before any query', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agro-eval-gold-'));
  const p = join(dir, 'd.json');
  writeFileSync(p, JSON.stringify([
    { question_id: 1, db_id: 'retail', question: 'ok', SQL: 'SELECT COUNT(*) FROM shippers', difficulty: 'simple' },
    { question_id: 2, db_id: 'retail', question: 'broken gold', SQL: 'SELECT nope FROM shippers', difficulty: 'simple' },
  ]));
  const ds = readDataset(p);
  const rep = await evaluate(ds, ['SELECT 4', 'SELECT 1'], pool, { dbRoot: DB_ROOT });
  assert.deepEqual(rep.questions.map((q) => q.outcome), ['match', 'gold_error']);
  assert.match(rep.questions[1].message ?? '', /gold query failed: syntax/);
  assert.equal(rep.summary.accuracy, 50);

  writeFileSync(p, JSON.stringify([{ db_id: 'hospital', question: 'q', SQL: 'SELECT 1' }]));
  await assert.rejects(evaluate(readDataset(p), ['SELECT 1'], pool, { dbRoot: DB_ROOT }), /unknown db_id "hospital"/);
});

test('summarize is a pure count over outcomes, with empty BIRD buckets kept', () => {
  const s = summarize(
    [
      { bucket: 'moderate', outcome: 'match' },
      { bucket: 'moderate', outcome: 'pred_error', errorKind: 'syntax' },
      { bucket: 'moderate', outcome: 'timeout' },
      { bucket: 'simple', outcome: 'match' },
    ],
    'bird',
  );
  assert.deepEqual(s.byDifficulty, [
    { bucket: 'simple', count: 1, correct: 1, accuracy: 100 },
    { bucket: 'moderate', count: 3, correct: 1, accuracy: 100 / 3 },
    { bucket: 'challenging', count: 0, correct: 0, accuracy: 0 },
  ]);
  assert.equal(s.accuracy, 50);
  assert.deepEqual(s.outcomes, { match: 2, mismatch: 0, pred_error: 1, timeout: 1, gold_error: 0 });
  assert.deepEqual(s.predErrors, { syntax: 1, runtime: 0, refused: 0 });
  assert.deepEqual(summarize([], 'spider').byDifficulty, []);
});
