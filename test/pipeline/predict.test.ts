import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startFakeOpenAI, closedPortUrl, lastUser, type FakeOpenAI, type RecordedRequest, type FakeBehavior, type Responder } from '../support/fake-openai.ts';
import { withFakeOpenAI, withPool } from '../support/with.ts';
import { EndpointPolicy } from '../../src/agent/policies/endpoint.ts';
import { openPolicy } from '../../src/agent/policies/open.ts';
import { readPredictInputs, runPredict } from '../../src/pipeline/predict.ts';
import type { ExecOptions, ExecResult, SqlExecutor } from '../../src/sql/types.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { evaluate } from '../../src/eval/run.ts';
import { readDataset } from '../../src/data/read-dataset.ts';
import { readPredictions } from '../../src/data/read-predictions.ts';
import { AgroError } from '../../src/errors.ts';
import { buildMemory } from '../../src/memory/build.ts';
import { writeMemory } from '../../src/memory/store.ts';
import { introspectSchema } from '../../src/sql/introspect.ts';

const ALL = JSON.parse(readFileSync('data/dev.json', 'utf8')) as { question: string; SQL: string; db_id: string }[];
const QS = ALL.filter((q) => q.db_id === 'music_store').slice(0, 6);
const tmp = mkdtempSync(join(tmpdir(), 'agro-predict-'));
const DATA = join(tmp, 'dev.json');
writeFileSync(DATA, JSON.stringify(QS));
const goldFor = (req: RecordedRequest): number => QS.findIndex((q) => lastUser(req).startsWith(q.question.trim()));

/**
 * A scripted agent: on questions 0, 2, 4 it first runs a query (one tool call), then answers with the
 * gold SQL; on 1 and 3 it answers a wrong query; on 5 it answers `behave(5)` (default: gold).
 */
function agent(special: (i: number, req: RecordedRequest) => FakeBehavior | null = () => null) {
  return (req: RecordedRequest): FakeBehavior => {
    const i = goldFor(req);
    const s = special(i, req);
    if (s) return s;
    const sawTool = (req.body.messages ?? []).some((m) => m.role === 'tool');
    if (i % 2 === 0 && !sawTool) return { kind: 'reply', content: '<think>look first</think>\n<sql>SELECT COUNT(*) FROM artists</sql>' };
    const sql = i === 1 || i === 3 ? 'SELECT 1' : QS[i].SQL;
    return { kind: 'reply', content: `<think>so</think>\n<answer>${sql}</answer> and more text after the action` };
  };
}

const settings = (out: string) => ({ data: DATA, dbRoot: 'data/databases', out, concurrency: 3, episodeTimeoutMs: 30_000 });

/** A scripted endpoint and a two-process SQL pool for one test, both closed after it. */
const withFakeAndPool = <T>(responder: Responder, fn: (fake: FakeOpenAI, pool: SqlPool) => Promise<T>): Promise<T> => withFakeOpenAI(responder, (fake) => withPool({ size: 2 }, (pool) => fn(fake, pool)));

test('predict: official-format files, trajectories, the same report as agro eval, resumable', async () => {
  await withFakeAndPool(agent(), async (fake, pool) => {
    const policy = await EndpointPolicy.open({ url: fake.baseUrl, model: 'fake', maxRetries: 0 });
    const out = join(tmp, 'run1');
    const progress: number[] = [];
    const res = await runPredict(settings(out), policy, pool, { onProgress: (p) => progress.push(p.done) });
    assert.equal(res.interrupted, false);
    const r = res.report!;
    assert.equal(r.summary.correct, 4, 'questions 0, 2, 4, 5 are answered with the gold query');
    assert.equal(r.predict.failed, 0);
    assert.deepEqual(progress, [0, 1, 2, 3, 4, 5, 6]);
    // Questions 0, 2, 4 made one tool call each: the trajectory keeps the SQL and the observation.
    const lines = readFileSync(res.files.trajectories, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const q0 = lines.find((l) => l.index === 0);
    assert.equal(q0.samples[0].toolCalls, 1);
    assert.equal(q0.samples[0].turns[0].sql, 'SELECT COUNT(*) FROM artists');
    assert.match(q0.samples[0].turns[0].observation, /^<observation>COUNT\(\*\)\n\d+/);
    // The text after the answer tag was cut, so the turn parsed.
    assert.equal(q0.samples[0].turns[1].text.endsWith('</answer>'), true);
    // The files are what agro eval reads, and it scores them the same.
    const spider = readFileSync(res.files.spider!, 'utf8');
    assert.equal(spider.split('\n').length, QS.length + 1);
    assert.ok(!spider.slice(0, -1).split('\n').some((l) => l.trim() === ''));
    const ds = readDataset(DATA);
    for (const f of [res.files.bird!, res.files.spider!]) {
      const ev = await evaluate(ds, readPredictions(f, ds.items), pool, { dbRoot: 'data/databases' });
      assert.deepEqual(ev.summary, r.summary);
    }
    // A rerun does nothing new.
    const before = fake.requests.length;
    const again = await runPredict(settings(out), policy, pool);
    assert.equal(fake.requests.length, before);
    assert.deepEqual(again.report!.summary, r.summary);
    // A kill mid-write leaves a torn last line: the rerun drops it and runs that question again.
    const full = readFileSync(res.files.trajectories, 'utf8').trim().split('\n');
    writeFileSync(res.files.trajectories, full.slice(0, -1).join('\n') + '\n');
    appendFileSync(res.files.trajectories, full[full.length - 1].slice(0, 40));
    const third = await runPredict(settings(out), policy, pool);
    assert.ok(fake.requests.length > before);
    assert.deepEqual(third.report!.summary, r.summary);
    assert.equal(readFileSync(res.files.trajectories, 'utf8').trim().split('\n').length, QS.length);
    // Other settings in the same run directory are refused.
    await assert.rejects(runPredict({ ...settings(out), mode: 'direct' }, policy, pool), /other settings/);
  });
});

test('predict: garbage, errors and a never-ending episode are per-question failures, retried on the rerun', async () => {
  let broken = true;
  const fake = await startFakeOpenAI(
    agent((i) => {
      if (!broken) return null;
      if (i === 1) return { kind: 'garbage', body: '<html>oops' };
      if (i === 3) return { kind: 'status', status: 400, body: 'bad' };
      if (i === 5) return { kind: 'slow', delayMs: 60_000, content: '<think>x</think><answer>SELECT 1</answer>' };
      return null;
    }),
  );
  const pool = new SqlPool({ size: 2 });
  try {
    const policy = await EndpointPolicy.open({ url: fake.baseUrl, model: 'fake', maxRetries: 0 });
    // Warm the pool (its processes start on first use) so that only the slow reply meets the deadline on a loaded machine.
    await pool.execute('data/databases/music_store/music_store.sqlite', 'SELECT 1', { timeoutMs: 30_000 });
    const out = join(tmp, 'run2');
    const res = await runPredict({ ...settings(out), episodeTimeoutMs: 10_000, search: false }, policy, pool);
    const r = res.report!;
    assert.equal(r.predict.failed, 3);
    assert.deepEqual(r.predict.endReasons, { answer: 3, error: 2, timeout: 1 });
    const lines = readFileSync(res.files.trajectories, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.match(lines.find((l) => l.index === 1).samples[0].error, /not JSON/);
    assert.equal(r.summary.correct, 3, 'questions 0, 2, 4');
    // The endpoint is fixed: the rerun runs only the questions that failed on a policy error (1 and 3).
    broken = false;
    const n = fake.requests.length;
    const again = await runPredict({ ...settings(out), episodeTimeoutMs: 10_000, search: false }, policy, pool);
    assert.equal(fake.requests.length - n, 2);
    assert.equal(again.report!.predict.failed, 1, 'the timed-out question is a model failure and stays');
  } finally {
    await pool.close();
    await fake.close();
  }
});

test('predict --samples 3 with the answer path: each gold query runs once per question, however many queries are scored', async () => {
  await withFakeAndPool(agent(), async (fake, pool) => {
    // Every query the judge runs (INTEGER and REAL cells apart), by database and text.
    const judged = new Map<string, number>();
    const counting: SqlExecutor = {
      execute(db: string, sql: string, opts?: ExecOptions): Promise<ExecResult> {
        if (opts?.safeIntegers) judged.set(`${db}\u0000${sql}`, (judged.get(`${db}\u0000${sql}`) ?? 0) + 1);
        return pool.execute(db, sql, opts);
      },
      close: async () => {},
    };
    const policy = await EndpointPolicy.open({ url: fake.baseUrl, model: 'fake', maxRetries: 0 });
    const res = await runPredict({ ...settings(join(tmp, 'run-once')), samples: 3 }, policy, counting);
    const db = resolve('data/databases/music_store/music_store.sqlite');
    const lines = readFileSync(res.files.trajectories, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    // Each question scored its three samples and its chosen answer: several scorings of one gold query.
    assert.ok(lines.every((l) => l.samples.length === 3 && l.samples.every((s: { correct?: boolean }) => typeof s.correct === 'boolean') && l.answer));
    for (const q of QS) assert.equal(judged.get(`${db}\u0000${q.SQL}`), 1, q.SQL);
    assert.ok([...judged.keys()].some((k) => !QS.some((q) => k.endsWith(q.SQL))), 'predictions other than the gold query were judged too');
  });
});

test('predict uses the questions and databases it is handed (the CLI read them): the data file is not read again', async () => {
  await withFakeAndPool(agent(), async (fake, pool) => {
    const policy = await EndpointPolicy.open({ url: fake.baseUrl, model: 'fake', maxRetries: 0 });
    const inputs = readPredictInputs({ data: DATA, dbRoot: 'data/databases' });
    const gone = join(tmp, 'read-once.json');
    const res = await runPredict({ ...settings(join(tmp, 'run-inputs')), data: gone, search: false }, policy, pool, {}, {}, inputs);
    assert.equal(res.report!.summary.correct, 4);
  });
});

test('policy paths and endpoints that are not there fail with one line', async () => {
  await assert.rejects(openPolicy({ path: join(tmp, 'nope') }), (e: unknown) => e instanceof AgroError && e.kind === 'not_found');
  await assert.rejects(openPolicy({ path: DATA }), (e: unknown) => e instanceof AgroError && e.kind === 'invalid_input' && /neither a checkpoint folder nor a GGUF/.test(e.message));
  await assert.rejects(openPolicy({ path: tmp }), /not a checkpoint: it has no config.json/);
  await assert.rejects(openPolicy({ llmUrl: await closedPortUrl() }), (e: unknown) => e instanceof AgroError && e.kind === 'not_found' && /unreachable/.test(e.message));
  await assert.rejects(openPolicy({ llmUrl: 'not a url' }), /must be a URL/);
});

test.after(() => rmSync(tmp, { recursive: true, force: true }));

test('predict: the answer path chooses a remembered query edited to the question over a wrong policy answer', async () => {
  await withFakeAndPool(agent(), async (fake, pool) => {
    const policy = await EndpointPolicy.open({ url: fake.baseUrl, model: 'fake', maxRetries: 0 });
    const db = 'data/databases/music_store/music_store.sqlite';
    // A memory that knows the shape of question 1 (asked about another country) and some distractors; the policy answers it wrong.
    const memory = await buildMemory('music_store', introspectSchema(db), [
      { sql: "SELECT first_name, last_name FROM customers WHERE country = 'France'", question: 'Give the first and last names of customers living in France.' },
      { sql: 'SELECT COUNT(*) FROM customers', question: 'How many customers are there?' },
      { sql: 'SELECT name FROM genres', question: 'List the names of all genres.' },
    ]);
    const memPath = join(tmp, 'memory.db');
    writeMemory(memPath, memory);
    const out = join(tmp, 'run-answer');
    const res = await runPredict({ ...settings(out), memory: [memPath], searchSamples: 0, oracle: true }, policy, pool);
    const a = res.report!.predict.answer!;
    assert.ok(a, 'the report has the answer path section');
    assert.equal(a.memories, 1);
    assert.equal(a.greedyEx.toFixed(1), '66.7', 'the policy alone: questions 0, 2, 4, 5');
    assert.equal(a.chosenEx.toFixed(1), '83.3', 'question 1 answered from the memory, edited to Germany');
    const q1 = readFileSync(res.files.trajectories, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).find((l) => l.index === 1);
    assert.equal(q1.prediction, "SELECT first_name, last_name FROM customers WHERE country = 'Germany'");
    assert.deepEqual(q1.answer.sources, ['edit']);
    assert.match(q1.answer.reading, /Germany/);
    assert.equal(q1.answer.greedy.correct, false);
    assert.equal(q1.answer.oracle.edit, true);
    assert.ok(q1.answer.confidence > 0 && q1.answer.confidence < 1);
    // Without the answer path the same run answers as the policy does.
    const plain = await runPredict({ ...settings(join(tmp, 'run-plain')), search: false }, policy, pool);
    assert.equal(plain.report!.summary.correct, 4);
    assert.equal(plain.report!.predict.answer, undefined);
  });
});

test('predict --samples: pass@1, pass@k and self-consistency by majority vote over result sets', async () => {
  // Question 0's samples: one wrong, two right (the vote picks right); question 1's: two wrong, one right.
  const seen = new Map<number, number>();
  const fake = await startFakeOpenAI((req) => {
    const i = goldFor(req);
    const n = seen.get(i) ?? 0;
    seen.set(i, n + 1);
    const right = i === 0 ? n > 0 : n === 2;
    return { kind: 'reply', content: `<think>t</think><answer>${right ? QS[i].SQL : 'SELECT 1'}</answer>` };
  });
  const pool = new SqlPool({ size: 2 });
  const data = join(tmp, 'two.json');
  writeFileSync(data, JSON.stringify(QS.slice(0, 2)));
  try {
    const policy = await EndpointPolicy.open({ url: fake.baseUrl, model: 'fake', maxRetries: 0 });
    const res = await runPredict({ ...settings(join(tmp, 'run3')), data, mode: 'direct', samples: 3, concurrency: 1, search: false }, policy, pool);
    const p = res.report!.predict;
    assert.equal(p.temperature, 0.7);
    assert.ok(Math.abs(p.passAt1! - 50) < 1e-9, `pass@1 ${p.passAt1}`); // (2/3 + 1/3) / 2
    assert.equal(p.passAtK, 100);
    assert.equal(p.selfConsistency, 50);
    assert.equal(res.report!.summary.correct, 1);
    await assert.rejects(runPredict({ ...settings(join(tmp, 'run4')), data, samples: 3, temperature: 0 }, policy, pool), /needs --temperature > 0/);
  } finally {
    await pool.close();
    await fake.close();
  }
});
