import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqlPool } from '../../src/sql/pool.ts';
import { emptySelect } from '../../src/factory/ast.ts';
import type { StageContext, SynthPair } from '../../src/factory/types.ts';
import { refinePairs, refineStage } from '../../src/factory/refine.ts';
import type { AuditFn, RegenerateFn, CycleLog } from '../../src/factory/refine.ts';
import { PredictionsFilePredictor, LlmPredictor, extractSql } from '../../src/factory/predictors.ts';
import { LlmClient } from '../../src/llm/client.ts';
import { stageContext } from './fixtures.ts';
import { startFakeOpenAI, lastUser } from '../support/fake-openai.ts';

let dir = '';
let pool: SqlPool;
let base: StageContext;
let rejected: Record<string, number> = {};

const DDL = 'CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT, age INTEGER);';
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'agro-refine-'));
  const mk = (name: string, rows: string): string => {
    const p = join(dir, name);
    const db = new Database(p);
    db.exec(DDL + `INSERT INTO singer VALUES ${rows};`);
    db.close();
    return p;
  };
  const dbPath = mk('music.sqlite', "(1,'Ann',30),(2,'Bo',41)");
  // Same schema, other data: Bo is 50 and Cy is 41, so "age = 41" no longer finds Bo.
  mk('variant-1.sqlite', "(1,'Ann',30),(2,'Bo',50),(3,'Cy',41)");
  pool = new SqlPool({ size: 2 });
  base = stageContext('music', dbPath, pool, { reject: (_i, reason) => void (rejected[reason] = (rejected[reason] ?? 0) + 1) });
});
after(async () => {
  await pool.close();
  rmSync(dir, { recursive: true, force: true });
});

function pair(id: string, sql: string, question: string): SynthPair {
  return { id, dbId: 'music', sql, ast: emptySelect('singer'), question, evidence: '', style: 'formal', difficulty: 'simple', provenance: { stages: ['align'], checks: ['exec'] } };
}

const PAIRS = [
  pair('agree', 'SELECT name FROM singer WHERE age > 35', 'Q1 singers over 35'),
  pair('hard', 'SELECT count(*) FROM singer', 'Q2 how many singers'),
  pair('fixme', 'SELECT name FROM singer ORDER BY age DESC LIMIT 1', 'Q3 bad'),
  pair('drop', "SELECT age FROM singer WHERE name = 'Ann'", 'Q4 no prediction'),
  pair('unavail', 'SELECT max(age) FROM singer', 'Q5 judge is down'),
  pair('accidental', 'SELECT name FROM singer WHERE id = 2', 'Q6 singer number two'),
];

function writePredictions(): string {
  const path = join(dir, 'preds.jsonl');
  const lines = [
    { db_id: 'music', question: 'Q1 singers over 35', SQL: 'SELECT name FROM singer WHERE age >= 36' },
    { db_id: 'music', question: 'Q2 how many singers', SQL: 'SELECT count(*) FROM singer WHERE age > 100' },
    { db_id: 'music', question: 'Q3 bad', SQL: 'SELECT name FROM singer ORDER BY age ASC LIMIT 1' },
    { db_id: 'music', question: 'Q3 good', SQL: 'SELECT name FROM singer WHERE age = (SELECT max(age) FROM singer)' },
    { db_id: 'music', question: 'Q5 judge is down', SQL: 'SELECT min(age) FROM singer' },
    // Right on the original database only by accident; the variant exposes it.
    { db_id: 'music', question: 'Q6 singer number two', SQL: 'SELECT name FROM singer WHERE age = 41' },
  ];
  writeFileSync(path, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  return path;
}

const audit: AuditFn = async (p) => {
  if (p.question === 'Q5 judge is down') return { status: 'unavailable', reason: 'timeout' };
  if (p.question === 'Q3 bad' || p.question === 'Q4 no prediction') return { status: 'misaligned', reason: 'audit_conditions' };
  return { status: 'aligned' };
};
const regenerate: RegenerateFn = async (p) => (p.question === 'Q3 bad' ? { ...p, question: 'Q3 good' } : null);

test('refine: K cycles with a predictions file, variant databases, audit, regeneration and drops', async () => {
  rejected = {};
  const predictor = PredictionsFilePredictor.fromFile(writePredictions());
  const ctx = { ...base, variants: [join(dir, 'variant-1.sqlite')] };
  const { pairs, log } = await refinePairs(PAIRS, ctx, { predictor, audit, regenerate }, { cycles: 3 });
  const row = (l: CycleLog) => [l.cycle, l.checked, l.agreed, l.diverged, l.keptHard, l.auditUnavailable, l.repaired, l.dropped];
  assert.deepEqual(log.map(row), [
    [1, 6, 1, 5, 2, 1, 1, 1], // agree; hard+accidental kept by audit; unavail; fixme repaired; drop dropped
    [2, 1, 1, 0, 0, 0, 0, 0], // the repaired question now gets the right SQL from the predictor
  ]);
  assert.deepEqual(pairs.map((p) => p.id), ['agree', 'hard', 'fixme', 'unavail', 'accidental']);
  const fixed = pairs[2];
  assert.equal(fixed.question, 'Q3 good');
  assert.equal(fixed.provenance.repairedFrom, 'fixme');
  assert.equal(fixed.provenance.cycle, 2);
  assert.ok(fixed.provenance.checks.includes('refine-repaired') && fixed.provenance.checks.includes('refine-agree'));
  assert.ok(pairs[3].provenance.checks.includes('audit_unavailable'));
  assert.ok(pairs[4].provenance.checks.includes('refine-audited'));
  assert.ok(pairs.every((p) => p.provenance.stages.at(-1) === 'refine'));
  assert.deepEqual(rejected, { refine_audit_conditions: 1 });
  assert.equal(predictor.missing, 1); // Q4
});

test('refine: without variants the accidental prediction agrees; one cycle keeps repaired pairs unchecked', async () => {
  rejected = {};
  const predictor = PredictionsFilePredictor.fromFile(writePredictions());
  const { pairs, log } = await refinePairs(PAIRS, base, { predictor, audit, regenerate }, { cycles: 1 });
  assert.equal(log.length, 1);
  assert.equal(log[0].agreed, 2); // agree + accidental
  assert.equal(log[0].keptHard, 1);
  assert.equal(pairs.find((p) => p.id === 'fixme')!.question, 'Q3 good');
  const zero = await refinePairs(PAIRS, base, { predictor, audit, regenerate }, { cycles: 0 });
  assert.equal(zero.pairs.length, PAIRS.length);
  assert.deepEqual(zero.log, []);
});

test('refine: no regenerator → misaligned pairs are dropped', async () => {
  rejected = {};
  const predictor = PredictionsFilePredictor.fromFile(writePredictions());
  const { pairs, log } = await refinePairs(PAIRS, base, { predictor, audit }, { cycles: 2 });
  assert.equal(log[0].dropped, 2);
  assert.ok(!pairs.some((p) => p.id === 'fixme' || p.id === 'drop'));
});

test('refineStage wires a predictor with the built-in round trip as audit and realizer as regenerator', async () => {
  rejected = {};
  const predictor = PredictionsFilePredictor.fromFile(writePredictions());
  const stage = refineStage({
    cycles: 2,
    predictor,
    builtin: {
      roundTrip: async (_ctx, p) => (p.question.startsWith('Q3 bad') || p.question.startsWith('Q4') ? 'roundtrip_mismatch' : 'ok'),
      realize: (p, style) => {
        p.question = p.question === 'Q3 bad' ? 'Q3 good' : `${p.question} (${style})`;
      },
    },
  });
  const out = await stage.run(PAIRS.slice(0, 4), base);
  assert.deepEqual(out.map((p) => p.id), ['agree', 'hard', 'fixme']);
  assert.equal(stage.log[0].repaired, 1);
  assert.equal(stage.log[1].agreed, 1);
  assert.deepEqual(rejected, { refine_roundtrip_mismatch: 1 });
});

test('predictions file formats: JSON array, object map, errors', async () => {
  const a = join(dir, 'a.json');
  writeFileSync(a, JSON.stringify([{ question: 'How many?', query: 'SELECT 1' }]));
  assert.deepEqual(await PredictionsFilePredictor.fromFile(a).predict([{ dbId: 'x', question: '  how   MANY? ', evidence: '' }]), ['SELECT 1']);
  const m = join(dir, 'm.json');
  writeFileSync(m, JSON.stringify({ 'Q?': 'SELECT 2' }));
  assert.deepEqual(await PredictionsFilePredictor.fromFile(m).predict([{ dbId: 'x', question: 'Q?', evidence: '' }, { dbId: 'x', question: 'other', evidence: '' }]), ['SELECT 2', '']);
  const bad = join(dir, 'bad.jsonl');
  writeFileSync(bad, '{"question": "q"}\n');
  assert.throws(() => PredictionsFilePredictor.fromFile(bad), (e: unknown) => e instanceof Error && /line 1/.test(e.message) && (e as { kind?: string }).kind === 'invalid_input');
  assert.throws(() => PredictionsFilePredictor.fromFile(join(dir, 'nope.json')), /not found/);
});

test('LLM predictor against the fake server: SQL pulled from a fenced reply; failures give empty SQL', async () => {
  assert.equal(extractSql('{"sql": "SELECT 1"}'), 'SELECT 1');
  assert.equal(extractSql('Here:\n```sql\nSELECT a FROM t;\n```'), 'SELECT a FROM t');
  assert.equal(extractSql('I think SELECT b FROM u;'), 'SELECT b FROM u');
  assert.equal(extractSql('no idea'), '');
  const fake = await startFakeOpenAI((req) => (/Question: broken/.test(lastUser(req)) ? { kind: 'status', status: 400 } : { kind: 'reply', content: '```sql\nSELECT name FROM singer WHERE age > 35\n```' }));
  try {
    const p = new LlmPredictor(new LlmClient({ baseUrl: fake.baseUrl, model: 'm', maxRetries: 0 }), () => 'CREATE TABLE singer(...)');
    const out = await p.predict([
      { dbId: 'music', question: 'Q1 singers over 35', evidence: '' },
      { dbId: 'music', question: 'broken', evidence: '' },
    ]);
    assert.deepEqual(out, ['SELECT name FROM singer WHERE age > 35', '']);
    assert.equal(p.failures, 1);
    assert.match(lastUser(fake.requests[0]), /CREATE TABLE singer/);
  } finally {
    await fake.close();
  }
});
