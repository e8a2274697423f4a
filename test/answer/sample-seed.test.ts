// The seeds of a question's episodes have one numbering (agent/episode.ts sampleSeed), used by `agro predict` and by
// the answer path of ask, chat and serve: the same question, base seed and policy draw the same samples in both.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sampleSeed } from '../../src/agent/episode.ts';
import { SqlEnvironment, type SqlTask } from '../../src/agent/sql-env.ts';
import type { Policy, TurnRequest } from '../../src/agent/policies/types.ts';
import { askWithAnswerPath } from '../../src/answer/ask.ts';
import { Answerer } from '../../src/answer/resources.ts';
import { runPredict } from '../../src/pipeline/predict.ts';
import { SqlPool } from '../../src/sql/pool.ts';

const DB_ROOT = 'data/databases';
const DB = join(DB_ROOT, 'music_store', 'music_store.sqlite');
const tmp = mkdtempSync(join(tmpdir(), 'agro-seeds-'));
const pool = new SqlPool({ size: 1 });
after(async () => {
  await pool.close();
  rmSync(tmp, { recursive: true, force: true });
});

test('sampleSeed: predict\'s numbering (base + s * 7777, episode 0 at the base seed); unset base is 0; episodes of a question differ', () => {
  // Predict's recorded runs keep their seeds: these are the seeds it has always used.
  assert.equal(sampleSeed(0, 0), 0);
  assert.equal(sampleSeed(5, 0), 5);
  assert.equal(sampleSeed(5, 3), 5 + 3 * 7777);
  assert.equal(sampleSeed(undefined, 2), sampleSeed(0, 2));
  const seeds = Array.from({ length: 33 }, (_, s) => sampleSeed(11, s));
  assert.equal(new Set(seeds).size, seeds.length);
});

/** A policy that answers at once and records each first-turn request's temperature and seed. */
function recorder(seen: Array<{ temperature: number; seed?: number }>): Policy {
  return {
    kind: 'endpoint',
    name: 'recorder',
    description: 'records its seeds',
    promptContract: null,
    complete: async (req: TurnRequest) => {
      if (!req.messages.some((m) => m.role === 'tool')) seen.push({ temperature: req.temperature, seed: req.seed });
      return { text: '<think>ok</think><answer>SELECT COUNT(*) FROM artists</answer>', finish: 'stop' };
    },
    close: async () => {},
  };
}

const byTemperatureThenSeed = (a: { temperature: number; seed?: number }, b: { temperature: number; seed?: number }) => a.temperature - b.temperature || (a.seed ?? 0) - (b.seed ?? 0);

test('ask and predict give a question the same episodes: the greedy one and each sample with the same seed', { timeout: 120_000 }, async () => {
  const item = (JSON.parse(readFileSync('data/dev.json', 'utf8')) as Array<{ question: string; SQL: string; db_id: string }>).find((q) => q.db_id === 'music_store')!;
  const data = join(tmp, 'one.json');
  writeFileSync(data, JSON.stringify([item]));
  const samples = 3;

  const predicted: Array<{ temperature: number; seed?: number }> = [];
  await runPredict({ data, dbRoot: DB_ROOT, out: join(tmp, 'run'), concurrency: 1, searchSamples: samples, synthDrafts: 0, contractMemory: false }, recorder(predicted), pool);

  const asked: Array<{ temperature: number; seed?: number }> = [];
  const env = new SqlEnvironment(pool, {});
  await env.prepare(DB);
  const task: SqlTask = { id: 'ask', dbId: 'music_store', dbPath: DB, question: item.question, goldSql: '' };
  await askWithAnswerPath(env, task, recorder(asked), new Answerer(pool, { config: { synth: 0 } }), { mode: 'agent', maxTurnTokens: 64, temperature: 0, samples });

  assert.equal(predicted.length, 1 + samples, JSON.stringify(predicted));
  assert.equal(new Set(predicted.map((p) => p.seed)).size, 1 + samples, 'each episode its own seed');
  assert.deepEqual(asked.sort(byTemperatureThenSeed), predicted.sort(byTemperatureThenSeed));
});
