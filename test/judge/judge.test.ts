import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgroError } from '../../src/errors.ts';
import { FEATURE_DIM, listFeatures, sqlAtoms } from '../../src/judge/features.ts';
import { groupProbabilities, JudgeModel } from '../../src/judge/model.ts';
import { chooseGroup, evaluate, trainJudge } from '../../src/judge/train.ts';
import { judgeCard, readJudge, readJudgeReport, writeJudge, type JudgeReport } from '../../src/judge/checkpoint.ts';
import { builtinJudgeDir, candidateJudge, loadJudge } from '../../src/judge/load.ts';
import type { JudgeCandidate, LabelledList } from '../../src/judge/types.ts';
import { Rng } from '../../src/util/rng.ts';

const tmp = mkdtempSync(join(tmpdir(), 'agro-judge-'));

const features = (reading: number) => ({ reading, precision: reading, recall: reading, values: 1, strayValues: 0, numbers: 1, strayNumbers: 0, agreement: 0, greedy: 0, person: 0, degenerate: 0, negation: 0 });
const cand = (sql: string, reading: string, score: number, signature: string, right = false): JudgeCandidate & { right: boolean } => ({ sql, sources: ['memory'], reading, features: features(score / 10), score, rows: 1, columns: 1, signature, right });

/**
 * Lists where the transparent score is misled the same way every time: the question asks for a count ("how many"),
 * a near-miss listing the thing reads closer and scores higher, and the right candidate counts. Tables and columns
 * differ from list to list, so what can carry over is the question's words against the query's parts.
 */
function constructedList(rng: Rng, i: number): LabelledList {
  const table = `thing${i}`;
  const col = `attr${i}`;
  return {
    dbId: `db${i % 7}`,
    origin: 'factory',
    question: `How many ${table} have a ${col}?`,
    gold: `SELECT COUNT(*) FROM ${table}`,
    candidates: rng.shuffle([
      cand(`SELECT ${col} FROM ${table}`, `Show the ${col} of every ${table}.`, 9, 'list'),
      cand(`SELECT COUNT(*) FROM ${table}`, `Count the ${table}.`, 7, 'count', true),
      cand(`SELECT MAX(${col}) FROM ${table}`, `What is the highest ${col}?`, 6, 'max'),
    ]).sort((a, b) => b.score - a.score),
  };
}

test('judge features: clause roles of a query, and every slot inside the hashed space', () => {
  const atoms = sqlAtoms("SELECT T1.name, COUNT(*) FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.singer_id WHERE T2.year > 2010 AND T1.country = 'France' GROUP BY T1.name ORDER BY COUNT(*) DESC LIMIT 1");
  for (const a of ['s:c:name', 's:count', 's:count*', 'f:c:singer', 'f:join', 'w:op:>', 'w:num', 'w:str', 'g:c:name', 'o:desc', 'l:1']) assert.ok(atoms.includes(a), `${a} in ${atoms.join(' ')}`);
  assert.ok(!atoms.some((a) => /:c:t1$/.test(a)), 'an alias names nothing');
  const f = listFeatures('How many singers from France?', [cand('SELECT COUNT(*) FROM singer', 'How many singers are there?', 8, 'a')]);
  assert.ok(f.candidates[0].idx.length > 20);
  assert.ok(f.candidates[0].idx.every((i) => Number.isInteger(i) && i >= 0 && i < FEATURE_DIM));
  assert.deepEqual(listFeatures('How many singers from France?', [cand('SELECT COUNT(*) FROM singer', 'How many singers are there?', 8, 'a')]), f, 'deterministic');
});

test('judge model: a result is the mass of its candidates, beside none; a temperature only flattens', () => {
  const { groups, none } = groupProbabilities(['a', 'a', 'b'], [1, 1, 1], 1);
  assert.ok(Math.abs(groups.get('a')! - 0.5) < 1e-9 && Math.abs(groups.get('b')! - 0.25) < 1e-9 && Math.abs(none - 0.25) < 1e-9);
  const hot = groupProbabilities(['a', 'b'], [3, 0], 0, 4).groups;
  const cold = groupProbabilities(['a', 'b'], [3, 0], 0, 1).groups;
  assert.ok(hot.get('a')! < cold.get('a')! && hot.get('a')! > hot.get('b')!);
});

test('judge training: learns on constructed lists to prefer the right candidate the transparent score ranks second, on unseen tables', () => {
  const rng = new Rng(3);
  const train = Array.from({ length: 120 }, (_, i) => constructedList(rng, i));
  const val = Array.from({ length: 30 }, (_, i) => constructedList(rng, 1000 + i));
  const untrained = evaluate(new JudgeModel(), val);
  const { model, report } = trainJudge(train, val, { epochs: 3 });
  assert.equal(report.validation.transparent, 0, 'the transparent choice (the first candidate) is always the near-miss');
  assert.ok(untrained.judge < 0.5, `an untrained judge does not know (${untrained.judge})`);
  assert.equal(report.validation.judge, 1, 'the trained judge chooses the count every time');
  assert.equal(report.validation.oracle, 1);
  const c = chooseGroup(model, val[0])!;
  assert.equal(c.signature, 'count');
  assert.ok(c.probability > 0.5 && c.probability <= 1);
  // Through the answer path's port: the count's result ranks first and its calibrated probability is the confidence.
  const port = candidateJudge(model)(val[0].question, val[0].candidates);
  const best = port.rank.indexOf(Math.max(...port.rank));
  assert.equal(val[0].candidates[best].signature, 'count');
  assert.ok(Math.abs(port.confidence[best] - c.probability) < 1e-9);
});

test('judge checkpoint: written and read back the same; another featurizer or a broken file refused with exit 4; a missing built-in falls back with one line', () => {
  const rng = new Rng(5);
  const lists = Array.from({ length: 40 }, (_, i) => constructedList(rng, i));
  const { model, report } = trainJudge(lists.slice(0, 30), lists.slice(30), { epochs: 2 });
  const dir = join(tmp, 'judge');
  const full: JudgeReport = { ...report, databases: { train: 5, validation: 2 }, memoryPairs: 10, made: '2026-12-05', command: 'agro judge pretrain --spider x' };
  writeJudge(dir, model, full);
  const back = readJudge(dir);
  assert.deepEqual([...back.weights.slice(0, 1000)], [...model.weights.slice(0, 1000)]);
  assert.equal(back.temperature, model.temperature);
  assert.match(readFileSync(join(dir, 'README.md'), 'utf8'), /agro judge pretrain --spider x/);

  const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...cfg, featurizer: cfg.featurizer + 1 }));
  assert.throws(() => readJudge(dir), (e: unknown) => e instanceof AgroError && e.exitCode === 4 && /featurizer/.test(e.message) && !e.message.includes('\n'));
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...cfg, bits: cfg.bits - 1 }));
  assert.throws(() => readJudge(dir), (e: unknown) => e instanceof AgroError && e.exitCode === 4);
  writeFileSync(join(dir, 'config.json'), JSON.stringify(cfg));
  writeFileSync(join(dir, 'weights.safetensors'), 'not a tensor file');
  assert.throws(() => readJudge(dir), (e: unknown) => e instanceof AgroError && e.exitCode === 4);
  assert.throws(() => loadJudge(join(tmp, 'nowhere'), () => {}), (e: unknown) => e instanceof AgroError && e.exitCode === 3);

  const lines: string[] = [];
  assert.equal(loadJudge(undefined, (l) => lines.push(l), join(tmp, 'no-builtin')), undefined);
  assert.equal(lines.length, 1);
  assert.match(lines[0], /transparent ranker/);
  assert.equal(loadJudge(false, (l) => lines.push(l)), undefined);
  assert.equal(lines.length, 1, '--no-judge says nothing');
});

test('judge: the shipped one loads, and its card names the command that made it', () => {
  const model = readJudge(builtinJudgeDir());
  assert.ok(model.weights.some((w) => w !== 0));
  assert.match(readFileSync(join(builtinJudgeDir(), 'README.md'), 'utf8'), /agro judge pretrain --spider /);
});

test('answer path with a judge: its probability is the confidence (and the low mark its own); with chooser judge it ranks the results; the transparent score stays', async () => {
  const { SqlPool } = await import('../../src/sql/pool.ts');
  const { answerQuestion } = await import('../../src/answer/answer.ts');
  const pool = new SqlPool({ size: 1 });
  try {
    const DB = 'data/databases/music_store/music_store.sqlite';
    const policy = [
      { sql: 'SELECT COUNT(*) FROM customers', source: 'greedy' as const },
      { sql: 'SELECT first_name FROM customers', source: 'sample' as const },
    ];
    const without = await answerQuestion('How many customers are there?', policy, { executor: pool, dbPath: DB });
    assert.equal(without.sql, 'SELECT COUNT(*) FROM customers');
    // A judge (here one that prefers the longer result) decides instead of the transparent score.
    const judge = (_q: string, cs: readonly { rows: number }[]) => ({ rank: cs.map((c) => c.rows), confidence: cs.map((c) => (c.rows > 1 ? 0.9 : 0.05)) });
    // By default the transparent score still chooses and the judge's probability of that choice is the confidence.
    const confidence = await answerQuestion('How many customers are there?', policy, { executor: pool, dbPath: DB, judge });
    assert.equal(confidence.sql, 'SELECT COUNT(*) FROM customers');
    assert.equal(confidence.confidence, 0.05);
    assert.equal(confidence.low, true, 'below the judge mark');
    const withJudge = await answerQuestion('How many customers are there?', policy, { executor: pool, dbPath: DB, judge }, { chooser: 'judge' });
    assert.equal(withJudge.sql, 'SELECT first_name FROM customers');
    assert.equal(withJudge.confidence, 0.9);
    assert.equal(withJudge.low, false);
    assert.equal(withJudge.candidates[0].judge, 0.9);
    assert.deepEqual(withJudge.candidates.map((c) => c.score).sort(), without.candidates.map((c) => c.score).sort(), 'the transparent score is kept beside');
  } finally {
    await pool.close();
  }
});

test('answer path: a query that leaves out a number or value the question names is a guess, judge or not', async () => {
  const { SqlPool } = await import('../../src/sql/pool.ts');
  const { answerQuestion } = await import('../../src/answer/answer.ts');
  const { JUDGE_LOW_CONFIDENCE, LOW_CONFIDENCE } = await import('../../src/answer/rank.ts');
  const pool = new SqlPool({ size: 1 });
  try {
    const DB = 'data/databases/music_store/music_store.sqlite';
    const policy = [{ sql: 'SELECT COUNT(*) FROM tracks', source: 'greedy' as const }];
    const sure = (_q: string, cs: readonly unknown[]) => ({ rank: cs.map(() => 1), confidence: cs.map(() => 0.95) });
    const q = 'How many tracks are longer than 300000 milliseconds?';
    const judged = await answerQuestion(q, policy, { executor: pool, dbPath: DB, judge: sure });
    assert.equal(judged.sql, 'SELECT COUNT(*) FROM tracks');
    assert.equal(judged.low, true);
    assert.ok(judged.confidence <= JUDGE_LOW_CONFIDENCE, `held to the mark (${judged.confidence})`);
    const plain = await answerQuestion(q, policy, { executor: pool, dbPath: DB });
    assert.equal(plain.low, true);
    assert.ok(plain.confidence <= LOW_CONFIDENCE);
    // The same query for the question it answers is not a guess for that reason.
    const fine = await answerQuestion('How many tracks are there?', policy, { executor: pool, dbPath: DB, judge: sure });
    assert.equal(fine.low, false);
    assert.equal(fine.confidence, 0.95);
  } finally {
    await pool.close();
  }
});

test("the shipped judge's card is the one its config's report writes (what it was made from, its figures)", () => {
  const dir = builtinJudgeDir();
  assert.equal(readFileSync(join(dir, 'README.md'), 'utf8'), judgeCard(readJudgeReport(dir) as JudgeReport));
  assert.match(readFileSync(join(dir, 'README.md'), 'utf8'), /without the check on variant databases/);
});
