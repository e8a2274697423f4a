// Pass-rate sampling split between this process and a helper process gives exactly the counts one process
// gets (each batch's seed is its place in the task list), and falls back to this process when the helper fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { initBackend, type BackendName } from '../../src/model/backend.ts';
import { loadCheckpoint } from '../../src/model/checkpoint.ts';
import { resolveModelPath } from '../../src/model/builtin.ts';
import { createExecutor } from '../../src/sql/executor.ts';
import { SqlEnvironment, type SqlTask } from '../../src/agent/sql-env.ts';
import { readPromptContract, resolvePromptSettings } from '../../src/prompt/contract.ts';
import { resolveTaskSource, tasksFromCatalog } from '../../src/agent/tasks.ts';
import { passRateBatches, samplePassRates } from '../../src/rl/evaluate.ts';
import { rollout } from '../../src/rl/rollout.ts';
import { PassRateHelper, sharedPassRates } from '../../src/pipeline/pass-rate-helper.ts';

const DATA = fileURLToPath(new URL('../../data/dev.json', import.meta.url));
const DB_ROOT = fileURLToPath(new URL('../../data/databases', import.meta.url));
const BASE = resolveModelPath('base');
const pool = createExecutor();
let env: SqlEnvironment;
let tasks: SqlTask[];
// Four samples of 12 school questions at temperature 1, decoded constrained (runnable SQL more often): 3 batches of 4.
const opts = { samples: 4, maxTurnTokens: 96, maxResponseTokens: 320, seed: 3, temperature: 1, constrain: true };

before(async () => {
  await initBackend();
  env = new SqlEnvironment(pool, resolvePromptSettings(readPromptContract(BASE), {}).settings);
  const src = resolveTaskSource(DATA, { dbRoot: DB_ROOT });
  const dev = tasksFromCatalog(src.dataPath, src.catalog).filter((t) => t.dbId === 'school').slice(0, 12);
  // The base model rarely answers these right; its own sampled answers as the gold make the counts depend on
  // each sample, so batches sampled with other seeds would give other counts.
  const ck = loadCheckpoint(BASE);
  const own = await rollout(env, dev, ck.model, ck.tokenizer, { groupSize: 1, maxTurnTokens: opts.maxTurnTokens, maxResponseTokens: opts.maxResponseTokens, temperature: 1, topP: 1, seed: 11, constrain: true });
  ck.model.dispose();
  tasks = dev.map((t, i) => ({ ...t, goldSql: own.find((r) => r.group === i)?.answer?.trim() || t.goldSql }));
});
after(() => pool.close());

test('the helper samples every other batch, and the counts are the ones one process gets', { timeout: 300_000 }, async () => {
  const ck = loadCheckpoint(BASE);
  const alone = await samplePassRates(env, tasks, ck.model, ck.tokenizer, opts);
  assert.ok(alone.correct.some((c) => c > 0 && c < opts.samples), `some counts between 0 and ${opts.samples}: ${alone.correct}`);
  const helper = PassRateHelper.start('wasm', env.config, undefined);
  try {
    const shared = await sharedPassRates(helper, env, tasks, ck.model, ck.tokenizer, BASE, opts);
    assert.deepEqual(shared.correct, alone.correct);
    assert.deepEqual(shared.passAt, alone.passAt);
    assert.equal(helper.batches, Math.floor(passRateBatches(tasks.length, opts).length / 2), 'the helper sampled its half');
  } finally {
    await helper.close();
    ck.model.dispose();
  }
});

test('a helper that cannot start leaves the sampling to this process, with the same counts', { timeout: 300_000 }, async () => {
  const ck = loadCheckpoint(BASE);
  const alone = await samplePassRates(env, tasks.slice(0, 8), ck.model, ck.tokenizer, opts);
  const broken = PassRateHelper.start('no-such-backend' as BackendName, env.config, undefined);
  try {
    const shared = await sharedPassRates(broken, env, tasks.slice(0, 8), ck.model, ck.tokenizer, BASE, opts);
    assert.deepEqual(shared.correct, alone.correct);
    assert.equal(broken.batches, 0);
  } finally {
    await broken.close();
    ck.model.dispose();
  }
});
