// One judge: the same (gold, prediction) pairs get the same verdict from the RL reward and the in-training
// evaluation (SqlEnvironment.rewardContext and its execution reward), `agro eval` (evaluate) and `agro predict`
// (runPredict), in both comparison modes. The pairs include those where the paths once disagreed: a result past
// the executor's default row cap (a prefix compared), Spider's DISTINCT removal, and Spider's int/float quick_rej.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeOpenAI, lastUser } from '../support/fake-openai.ts';
import { EndpointPolicy } from '../../src/agent/policies/endpoint.ts';
import { SqlEnvironment, type SqlTask } from '../../src/agent/sql-env.ts';
import { runPredict } from '../../src/pipeline/predict.ts';
import { evaluate } from '../../src/eval/run.ts';
import { readDataset } from '../../src/data/read-dataset.ts';
import { prepareRewards, scoreEpisode } from '../../src/rl/rewards.ts';
import { SqlPool, EXEC_DEFAULTS } from '../../src/sql/pool.ts';
import { JUDGE_DEFAULTS } from '../../src/sql/judge.ts';
import type { Transcript } from '../../src/agent/types.ts';

const tmp = mkdtempSync(join(tmpdir(), 'agro-judge-'));
const ROOT = join(tmp, 'db');
const DB = join(ROOT, 'judged', 'judged.sqlite');
// More rows than the executor returns by default, so a judge that kept the default cap would compare prefixes.
const ROWS = EXEC_DEFAULTS.maxRows + 500;
mkdirSync(join(ROOT, 'judged'), { recursive: true });
{
  const db = new Database(DB);
  db.exec('CREATE TABLE t (x INTEGER, g TEXT)');
  const ins = db.prepare('INSERT INTO t VALUES (?, ?)');
  db.transaction(() => {
    for (let i = 1; i <= ROWS; i++) ins.run(i, `g${i % 3}`);
  })();
  db.close();
}

interface Pair {
  gold: string;
  pred: string;
  /** The verdict in each mode, when it is known from the official semantics. */
  bird?: boolean;
  spider?: boolean;
}

const PAIRS: Pair[] = [
  { gold: 'SELECT COUNT(*) FROM t', pred: 'SELECT COUNT(x) FROM t', bird: true, spider: true },
  { gold: 'SELECT COUNT(*) FROM t', pred: 'SELECT COUNT(*) + 1 FROM t', bird: false, spider: false },
  // The gold result is longer than the executor's default cap; the prediction is its first rows only.
  { gold: 'SELECT x FROM t', pred: `SELECT x FROM t WHERE x <= ${EXEC_DEFAULTS.maxRows}`, bird: false, spider: false },
  { gold: 'SELECT x FROM t', pred: 'SELECT x FROM t ORDER BY x DESC', bird: true, spider: true },
  // Spider removes DISTINCT from both queries: the bags are then equal. BIRD compares sets: equal too.
  { gold: 'SELECT DISTINCT g FROM t', pred: 'SELECT g FROM t', bird: true, spider: true },
  // Spider's quick_rej tells an int from an equal float when the row has another cell; BIRD compares by value.
  { gold: 'SELECT 1, 1.5', pred: 'SELECT 1.0, 1.5', bird: true, spider: false },
  { gold: 'SELECT x FROM t ORDER BY x LIMIT 3', pred: 'SELECT x FROM t ORDER BY x DESC LIMIT 3', bird: false, spider: false },
  { gold: 'SELECT g FROM t WHERE x = 1', pred: 'SELEC g FROM t', bird: false, spider: false },
];

const question = (i: number): string => `Question number ${i} about the table?`;
const DATA = join(tmp, 'dev.json');
writeFileSync(DATA, JSON.stringify(PAIRS.map((p, i) => ({ question: question(i), SQL: p.gold, db_id: 'judged' }))));

const transcript = (answer: string): Transcript => ({ messages: [{ role: 'assistant', content: `<answer>${answer}</answer>` }], toolCalls: 0, endReason: 'answer', answer, policyTokens: 1, truncated: false });

for (const mode of ['bird', 'spider'] as const) {
  test(`one judge (${mode}): the RL reward, the in-training evaluation, agro eval and agro predict agree on every pair`, async () => {
    const pool = new SqlPool({ size: 2 });
    const fake = await startFakeOpenAI((req) => {
      const i = PAIRS.findIndex((_, j) => lastUser(req).startsWith(question(j)));
      return { kind: 'reply', content: `<think>t</think><answer>${PAIRS[i].pred}</answer>` };
    });
    try {
      // The reward and the in-training evaluation: the environment's reward context and its execution reward.
      const env = new SqlEnvironment(pool, { judge: { mode } });
      const rewards = prepareRewards([{ name: 'execution', weight: 1 }]);
      const rl: boolean[] = [];
      const reward: boolean[] = [];
      for (const [i, p] of PAIRS.entries()) {
        const task: SqlTask = { id: String(i), dbId: 'judged', dbPath: DB, question: question(i), goldSql: p.gold };
        const ctx = await env.rewardContext(task, transcript(p.pred));
        rl.push(ctx.correct);
        reward.push(scoreEpisode(ctx, rewards, env.rewardDeps(task)).total === 1);
      }
      // agro eval.
      const ds = readDataset(DATA);
      const ev = await evaluate(ds, PAIRS.map((p) => p.pred), pool, { dbRoot: ROOT, mode });
      const evaluated = ev.questions.map((q) => q.outcome === 'match');
      // agro predict (the policy's answer as it is, so the verdict is the judge's alone).
      const policy = await EndpointPolicy.open({ url: fake.baseUrl, model: 'fake', maxRetries: 0 });
      const res = await runPredict({ data: DATA, dbRoot: ROOT, out: join(tmp, `predict-${mode}`), mode: 'direct', compare: mode, search: false, concurrency: 2 }, policy, pool);
      const predicted = res.report!.questions.map((q) => q.outcome === 'match');

      const expected = PAIRS.map((p) => p[mode]);
      assert.deepEqual(evaluated, expected, 'agro eval follows the official semantics');
      assert.deepEqual(rl, evaluated, 'the in-training evaluation (rewardContext.correct) agrees with agro eval');
      assert.deepEqual(reward, evaluated, 'the execution reward agrees with agro eval');
      assert.deepEqual(predicted, evaluated, 'agro predict agrees with agro eval');
      assert.equal(ev.timeoutMs, JUDGE_DEFAULTS.timeoutMs);
    } finally {
      await fake.close();
      await pool.close();
    }
  });
}

test('results are compared for correctness only by the judge, and its limits are written only in src/sql/judge.ts', () => {
  const judging = ['src/eval', 'src/pipeline', 'src/agent', 'src/rl', 'src/answer'].flatMap((d) => readdirSync(d, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts')).map((f) => join(d, f)));
  // Constrained decoding reads the database's text for literals (its own row budget), and judges nothing.
  for (const f of [...judging.filter((f) => !f.startsWith('src/agent/decoding/')), 'src/cli/commands/eval.ts', 'src/cli/commands/predict.ts', 'src/server/env-reward.ts']) {
    assert.doesNotMatch(readFileSync(f, 'utf8'), /\bresultsMatch\(|\bhasOrderBy\(|\bspiderPair\(|\b30_000\b|\b1_000_000\b|64 \* 1024 \* 1024/, f);
  }
  const home = readFileSync('src/sql/judge.ts', 'utf8');
  for (const literal of ['30_000', '1_000_000', '64 * 1024 * 1024']) assert.ok(home.includes(literal), literal);
});

test.after(() => rmSync(tmp, { recursive: true, force: true }));
