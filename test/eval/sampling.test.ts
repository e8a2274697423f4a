import { test } from 'node:test';
import assert from 'node:assert/strict';
import { majorityVote, resultKey } from '../../src/eval/sampling.ts';
import type { ExecResult } from '../../src/sql/types.ts';
import { birdPredictions, NO_ANSWER_SQL, oneLineSql, spiderPredictions } from '../../src/data/predictions.ts';

const ok = (rows: (number | string | null)[][]): ExecResult => ({ ok: true, columns: rows[0]?.map((_, i) => `c${i}`) ?? [], rows, truncated: false, elapsedMs: 1 }) as ExecResult;
const fail: ExecResult = { ok: false, error: 'syntax', message: 'near x', elapsedMs: 1 };

test('self-consistency votes over result sets; failures do not vote; ties go to the earliest group', () => {
  // bird mode: set equality, so [[1],[1]] and [[1]] are one group.
  assert.equal(majorityVote([ok([[2]]), ok([[1], [1]]), fail, ok([[1]])], 'bird'), 1);
  // spider mode: multisets, so they differ; [[2]] and [[1]] tie with [[1],[1]] at one vote: the earliest wins.
  assert.equal(majorityVote([ok([[2]]), ok([[1], [1]]), fail, ok([[1]])], 'spider'), 0);
  assert.equal(majorityVote([fail, fail], 'bird'), null);
  // 1 and 1.0 are the same value (Python's ==), row order does not matter.
  assert.equal(resultKey(ok([[1, 'a'], [2, 'b']]), 'bird'), resultKey(ok([[2, 'b'], [1.0, 'a']]), 'bird'));
});

test('prediction files: one line per question, never blank, BIRD separator and db_id', () => {
  assert.equal(oneLineSql('SELECT a\nFROM t\t WHERE b = 1;'), 'SELECT a FROM t  WHERE b = 1');
  assert.equal(oneLineSql('  '), NO_ANSWER_SQL);
  const preds = [{ sql: 'SELECT 1', dbId: 'x' }, { sql: '', dbId: 'y' }, { sql: 'SELECT\n2', dbId: 'x' }];
  assert.equal(spiderPredictions(preds), `SELECT 1\n${NO_ANSWER_SQL}\nSELECT 2\n`);
  assert.deepEqual(JSON.parse(birdPredictions(preds)), { 0: 'SELECT 1\t----- bird -----\tx', 1: `${NO_ANSWER_SQL}\t----- bird -----\ty`, 2: 'SELECT 2\t----- bird -----\tx' });
});
