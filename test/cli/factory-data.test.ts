// Issue #36: a factory output's dataset.jsonl names its database through the manifest.json beside it,
// for export and every command that takes a dataset (sft, train), as the output folder itself does.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { agro, tempDir } from '../adversarial/support.ts';
import { saveTinyCheckpoint } from '../support/tiny-checkpoint.ts';

const tmp = tempDir();
after(() => tmp.cleanup());
/** A database outside any db-root (data/databases knows no "pets"): only the manifest names it. */
const db = join(tmp.dir, 'pets.sqlite');
const out = join(tmp.dir, 'synth');
const dataset = join(out, 'dataset.jsonl');
const ck = join(tmp.dir, 'ck');

before(async () => {
  const d = new Database(db);
  d.exec('CREATE TABLE pets (id INTEGER PRIMARY KEY, name TEXT, kind TEXT, age INTEGER)');
  const ins = d.prepare('INSERT INTO pets (name, kind, age) VALUES (?, ?, ?)');
  for (let i = 0; i < 40; i++) ins.run(`pet${i}`, ['cat', 'dog', 'bird'][i % 3], 1 + ((i * 7) % 15));
  d.close();
  const r = agro(['synth', '--db', db, '--out', out, '--n', '12', '--variants', '1', '--json']);
  assert.equal(r.status, 0, r.stderr);
  await saveTinyCheckpoint(ck, ['SELECT name FROM pets', 'pets kind age'], { maxPositions: 2048 });
});

test('export --data <factory output>/dataset.jsonl finds the manifest beside it (no --db-root needed)', () => {
  const exp = join(tmp.dir, 'verl');
  const r = agro(['export', '--format', 'verl', '--data', dataset, '--out', exp, '--json']);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(existsSync(join(exp, 'train.parquet')));
  const trl = agro(['export', '--format', 'trl', '--data', dataset, '--out', join(tmp.dir, 'trl'), '--json']);
  assert.equal(trl.status, 0, trl.stderr);
  assert.equal((JSON.parse(trl.stdout) as { train: number; val: number }).train + (JSON.parse(trl.stdout) as { val: number }).val, 12);
});

test('sft and train take a factory output dataset.jsonl (or its folder) without --db-root', { timeout: 300_000 }, () => {
  const sft = agro(['sft', '--data', dataset, '--out', join(tmp.dir, 'sft'), '--preset', 'tiny', '--vocab-size', '400', '--backend', 'wasm', '--steps', '1', '--json']);
  assert.equal(sft.status, 0, sft.stderr);
  assert.equal((JSON.parse(sft.stdout) as { samples: number }).samples, 12);
  const sftDir = agro(['sft', '--data', out, '--out', join(tmp.dir, 'sft2'), '--preset', 'tiny', '--vocab-size', '400', '--backend', 'wasm', '--steps', '1', '--json']);
  assert.equal(sftDir.status, 0, sftDir.stderr);
  const train = agro(['train', '--data', dataset, '--init', ck, '--out', join(tmp.dir, 'train'), '--algo', 'dr_grpo', '--steps', '1', '--group-size', '2', '--prompts', '1', '--schema-chars', '300', '--json']);
  assert.equal(train.status, 0, train.stderr);
});

test('predict takes a factory output dataset.jsonl without --db-root', { timeout: 120_000 }, () => {
  const r = agro(['predict', '--policy', ck, '--data', dataset, '--out', join(tmp.dir, 'pred'), '--max-turns', '1', '--max-turn-tokens', '4', '--json']);
  assert.equal(r.status, 0, r.stderr);
  const report = JSON.parse(r.stdout) as { dbRoot: string; questions: unknown[] };
  assert.equal(report.questions.length, 12);
  assert.equal(report.dbRoot, out);
});

test('eval --gold takes a factory output dataset.jsonl (or its folder) without --db-root: every gold query matches', () => {
  for (const data of [dataset, out]) {
    const r = agro(['eval', '--gold', '--data', data, '--json']);
    assert.equal(r.status, 0, r.stderr);
    const report = JSON.parse(r.stdout) as { questions: Array<{ outcome: string }> };
    assert.equal(report.questions.length, 12);
    assert.ok(report.questions.every((q) => q.outcome === 'match'));
  }
});
