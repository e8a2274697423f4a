import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqlPool } from '../../../src/sql/pool.ts';
import { emptySelect } from '../../../src/factory/ast.ts';
import type { Difficulty } from '../../../src/data/dataset-row.ts';
import type { SynthPair } from '../../../src/factory/types.ts';
import { Rng } from '../../../src/util/rng.ts';
import { diversityStage } from '../../../src/factory/diversity/stage.ts';
import { makeDb } from '../../sql/helpers.ts';
import { stageContext } from '../fixtures.ts';

function pair(id: string, sql: string, question: string, difficulty: Difficulty = 'simple'): SynthPair {
  return { id, dbId: 'm', sql, ast: emptySelect('singer'), question, evidence: '', style: 'formal', difficulty, provenance: { stages: ['align'], checks: [] } };
}

test('diversity stage: dedup by SQL, by skeleton+result, by question; then a sized selection at a mix', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agro-div-'));
  const dbPath = makeDb(join(dir, 'm.sqlite'), "CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT, age INTEGER); INSERT INTO singer VALUES (1,'Ann',30),(2,'Bo',41),(3,'Cy',52);");
  const pool = new SqlPool({ size: 1 });
  const rejected: Record<string, number> = {};
  const ctx = stageContext('m', dbPath, pool, { rng: new Rng(3), rejected });
  try {
    const items = [
      pair('a', 'SELECT name FROM singer WHERE age > 35', 'Which singers are older than 35?'),
      pair('b', 'select name from singer where age > 35', 'Name singers above thirty-five.'), // same SQL
      pair('c', 'SELECT name FROM singer WHERE age > 36', 'Give singers with age over 36 years.'), // same skeleton, same rows
      pair('d', 'SELECT name FROM singer WHERE age > 45', 'List the singers past 45.'), // same skeleton, other rows: kept
      pair('e', 'SELECT count(*) FROM singer', 'Which singers are older than 35?'), // same question
      pair('f', 'SELECT avg(age) FROM singer', 'What is the average singer age?', 'moderate'),
      pair('g', 'SELECT name FROM singer ORDER BY age DESC LIMIT 1', 'Who is the oldest singer?', 'moderate'),
      pair('h', 'SELECT max(age) - min(age) FROM singer', 'What is the age range of singers?', 'challenging'),
    ];
    const all = await diversityStage().run(items, ctx);
    assert.deepEqual(all.map((p) => p.id), ['a', 'd', 'f', 'g', 'h']);
    assert.deepEqual({ ...rejected }, { duplicate_exact_sql: 1, duplicate_skeleton_result: 1, duplicate_near_question: 1 });
    assert.ok(all.every((p) => p.provenance.stages.at(-1) === 'diversify'));

    for (const k of Object.keys(rejected)) delete rejected[k];
    const some = await diversityStage({ size: 3, mix: { simple: 1 / 3, moderate: 1 / 3, challenging: 1 / 3 } }).run(items, ctx);
    assert.equal(some.length, 3);
    assert.deepEqual(some.map((p) => p.difficulty).sort(), ['challenging', 'moderate', 'simple']);
    assert.equal(rejected.not_selected, 2);
  } finally {
    await pool.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
