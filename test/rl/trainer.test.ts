import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { initBackend } from '../../src/model/backend.ts';
import { LlamaModel } from '../../src/model/llama.ts';
import { resolveModelConfig } from '../../src/model/config.ts';
import { Tokenizer } from '../../src/model/tokenizer.ts';
import { loadCheckpoint } from '../../src/model/checkpoint.ts';
import { CHAT_TOKENS } from '../../src/model/chat.ts';
import { SqlEnvironment, type SqlTask } from '../../src/agent/sql-env.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { rollout } from '../../src/rl/rollout.ts';
import { runGrpo, epochOrder } from '../../src/rl/trainer.ts';
import { planMicroBatches, type StepRecord } from '../../src/rl/phases.ts';
import { microBatchShares } from '../../src/rl/losses.ts';
import { resolveTrainConfig } from '../../src/rl/train-config.ts';
import { Rng } from '../../src/util/rng.ts';
import { evaluateLoss } from '../../src/train/sft.ts';
import { ShortAnswerEnv } from '../support/short-answer-env.ts';
import { AGENT_SPECIAL_TOKENS } from '../../src/agent/protocol.ts';

const TOK = Tokenizer.train(
  ['SELECT name FROM singer WHERE age > 30', 'How many singers are there? <think>count</think><sql>SELECT COUNT(*) FROM singer</sql>', 'abc def ghi'],
  { vocabSize: 320, specialTokens: AGENT_SPECIAL_TOKENS },
);
const tinyModel = (seed: number): LlamaModel =>
  new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: TOK.vocabSize, maxPositions: 512 }), { seed });

before(async () => {
  await initBackend();
});

const shortAlgo = {
  algo: 'grpo',
  algoOverrides: { kl: { coef: 0 }, rewards: [{ name: 'overlong', weight: 1, params: { maxLen: 9, cache: 8 } }] },
};

test('microBatchShares adds micro-batch losses up to the whole batch loss', () => {
  const share = (aggregation: 'token-mean' | 'seq-mean-token-mean' | 'seq-mean-token-sum' | 'seq-mean-token-sum-norm', tok: number, seq: number) =>
    microBatchShares({ name: 'ppo', aggregation }, tok, seq).pg;
  assert.equal(share('token-mean', 0.25, 0.5), 0.25);
  assert.equal(share('seq-mean-token-mean', 0.25, 0.5), 0.5);
  assert.equal(share('seq-mean-token-sum', 0.25, 0.5), 0.5);
  assert.equal(share('seq-mean-token-sum-norm', 0.25, 0.5), 1);
  assert.equal(share('seq-mean-token-sum-norm', 0, 0), 0);
  // gspo forces seq-mean-token-mean on its policy term; KL and entropy keep the configured token-mean
  assert.deepEqual(microBatchShares({ name: 'gspo', aggregation: 'token-mean' }, 0.25, 0.5), { pg: 0.5, aux: 0.25 });
});

test('train config: defaults, presets and one-line errors', () => {
  const { train, algo } = resolveTrainConfig({ algo: 'dapo' });
  assert.equal(train.groupSize, 4);
  assert.equal(algo.loss.clipHigh, 0.28);
  assert.throws(() => resolveTrainConfig({ algo: 'nope' }), /unknown algorithm "nope"/);
  assert.throws(() => resolveTrainConfig({ groupSize: 0 }), /train config: groupSize/);
  assert.throws(() => resolveTrainConfig({ maxTurnTokens: 500, maxResponseTokens: 100 }), /exceeds maxResponseTokens/);
});

test('easy_first curriculum orders tasks by difficulty within an epoch', () => {
  const tasks = [{ difficulty: 'challenging' }, { difficulty: 'simple' }, { difficulty: 'moderate' }, { difficulty: 'simple' }];
  const order = epochOrder(tasks, new Rng(3), 'easy_first');
  assert.deepEqual(order.map((i) => tasks[i].difficulty), ['simple', 'simple', 'moderate', 'challenging']);
  assert.deepEqual([...epochOrder(tasks, new Rng(3), 'shuffle')].sort(), [0, 1, 2, 3]);
});

const dir = mkdtempSync(join(tmpdir(), 'agro-grpo-'));
const dbPath = join(dir, 'singers.sqlite');
{
  const db = new Database(dbPath);
  db.exec('CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, age INTEGER)');
  db.exec("INSERT INTO singer VALUES (1,'Ann',30),(2,'Bob',41)");
  db.close();
}
const pool = new SqlPool({ size: 1 });
after(() => pool.close());

test('multi-turn rollouts: trained tokens are exactly the policy samples, tool turns are masked', async () => {
  const env = new SqlEnvironment(pool, { schemaChars: 300, maxTurns: 3 });
  const task: SqlTask = { id: 'q', dbId: 'singers', dbPath, question: 'How many singers?', goldSql: 'SELECT COUNT(*) FROM singer' };
  const model = tinyModel(1);
  const trajs = await rollout(env, [task], model, TOK, { groupSize: 3, maxTurnTokens: 12, maxResponseTokens: 60, temperature: 1, topP: 1, seed: 5 });
  assert.equal(trajs.length, 3);
  const stopIds = [TOK.tokenId(CHAT_TOKENS.end), TOK.tokenId(CHAT_TOKENS.eos)];
  for (const t of trajs) {
    assert.equal(t.ids.length, t.mask.length);
    assert.ok(t.mask.slice(0, t.promptLength).every((m) => m === 0), 'prompt tokens are never trained');
    const trained = t.ids.filter((_, i) => t.mask[i] === 1);
    assert.equal(trained.length, t.policyTokens);
    // The policy's text per turn = its trained tokens, minus the stop token that closes each finished turn.
    const assistantText = t.messages.filter((m) => m.role === 'assistant').map((m) => m.content).join('');
    assert.equal(TOK.decode(trained.filter((id) => !stopIds.includes(id))), assistantText);
    assert.ok(t.ids.length <= t.promptLength + 60 + 40, 'response stays near its budget');
    assert.equal(t.messages[0].role, 'system');
  }
  // Same seed, same trajectories.
  const again = await rollout(env, [task], model, TOK, { groupSize: 3, maxTurnTokens: 12, maxResponseTokens: 60, temperature: 1, topP: 1, seed: 5 });
  assert.deepEqual(again.map((t) => t.ids), trajs.map((t) => t.ids));
  model.dispose();
});

test('GRPO raises the reward of a learnable task and logs every step', async () => {
  const model = tinyModel(7);
  const out = join(dir, 'short');
  const records: StepRecord[] = [];
  await runGrpo({
    outDir: out,
    env: new ShortAnswerEnv(),
    tasks: [{ id: 'a' }, { id: 'b' }],
    model,
    tokenizer: TOK,
    config: { ...shortAlgo, steps: 30, promptsPerStep: 2, groupSize: 8, lr: 1e-2, maxTurnTokens: 9, maxResponseTokens: 9, checkpointEvery: 0, seed: 1 },
    onStep: (r) => records.push(r),
  });
  const lines = readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n');
  assert.equal(lines.length, 30);
  const first = records.slice(0, 5).reduce((a, r) => a + r.reward, 0) / 5;
  const last = records.slice(-5).reduce((a, r) => a + r.reward, 0) / 5;
  assert.ok(last > first + 0.2, `reward went from ${first.toFixed(3)} to ${last.toFixed(3)}`);
  for (const r of records) {
    assert.ok(Number.isFinite(r.loss) && Number.isFinite(r.entropy) && r.entropy > 0);
    assert.equal(r.groups, 2);
  }
  assert.ok(existsSync(join(out, 'checkpoints', 'step-30', 'model.safetensors')));
  model.dispose();
});

test('rollouts at a temperature are scored at it: old and new log-probs agree (ratio 1) and the entropy is the tempered one', async () => {
  const run = async (temperature: number): Promise<StepRecord> => {
    const model = tinyModel(9);
    const records: StepRecord[] = [];
    await runGrpo({
      outDir: join(dir, `temp-${temperature}`),
      env: new ShortAnswerEnv(),
      tasks: [{ id: 'a' }, { id: 'b' }],
      model,
      tokenizer: TOK,
      // Two PPO epochs store the old log-probs; a vanishing lr keeps the second epoch's policy the first's.
      config: { ...shortAlgo, steps: 1, promptsPerStep: 2, groupSize: 4, lr: 1e-12, ppoEpochs: 2, temperature, maxTurnTokens: 9, maxResponseTokens: 9, checkpointEvery: 0, seed: 3 },
      onStep: (r) => records.push(r),
    });
    model.dispose();
    return records[0];
  };
  const cool = await run(0.25);
  const plain = await run(1);
  for (const r of [cool, plain]) assert.ok(Math.abs(r.approx_kl) < 1e-6 && r.clip_frac_low + r.clip_frac_high === 0, `ratio off 1: ${JSON.stringify(r)}`);
  // An untrained model is near uniform at temperature 1; a quarter of it sharpens every row.
  assert.ok(cool.entropy < plain.entropy - 0.3, `entropy at 0.25 ${cool.entropy} vs at 1 ${plain.entropy}`);
});

test('an interrupted run resumes exactly where it stopped', async () => {
  const cfg = { ...shortAlgo, steps: 3, promptsPerStep: 2, groupSize: 4, lr: 1e-2, maxTurnTokens: 6, maxResponseTokens: 6, checkpointEvery: 1, seed: 2 };
  const tasks = [{ id: 'a' }, { id: 'b' }, { id: 'c' }];
  const straight = tinyModel(3);
  await runGrpo({ outDir: join(dir, 'straight'), env: new ShortAnswerEnv(), tasks, model: straight, tokenizer: TOK, config: cfg });

  const first = tinyModel(3);
  const r1 = await runGrpo({ outDir: join(dir, 'resumed'), env: new ShortAnswerEnv(), tasks, model: first, tokenizer: TOK, config: cfg, stopAfter: 1 });
  assert.equal(r1.interrupted, true);
  assert.equal(r1.steps, 1);
  const ck = loadCheckpoint(r1.checkpoint);
  const r2 = await runGrpo({
    outDir: join(dir, 'resumed'),
    env: new ShortAnswerEnv(),
    tasks,
    model: ck.model,
    tokenizer: ck.tokenizer,
    config: cfg,
    resumeFrom: { trainerState: ck.trainerState as object, optimizerState: ck.optimizerState },
  });
  assert.equal(r2.steps, 3);
  const a = straight.exportWeights();
  const b = ck.model.exportWeights();
  for (const [name, w] of a) assert.deepEqual(b.get(name)?.data, w.data, `${name} differs after resume`);
  const lines = readFileSync(join(dir, 'resumed', 'metrics.jsonl'), 'utf8').trim().split('\n');
  assert.deepEqual(lines.map((l) => JSON.parse(l).step), [1, 2, 3]);
});

test('an anchor mixes SFT samples into every step: their loss falls where RL alone leaves it, each step logs it, and a resumed run draws the same ones', async () => {
  // Answer-only masks, as the cold start's trajectories have them.
  const anchorSamples = ['How many singers are there? <think>count</think><sql>SELECT COUNT(*) FROM singer</sql>', 'SELECT name FROM singer WHERE age > 30', 'abc def ghi'].map((t) => {
    const ids = TOK.encode(t);
    return { ids, mask: ids.map((_, i) => (i >= ids.length / 2 ? 1 : 0)) };
  });
  const cfg = { ...shortAlgo, steps: 4, promptsPerStep: 2, groupSize: 4, lr: 1e-2, maxTurnTokens: 6, maxResponseTokens: 6, checkpointEvery: 1, seed: 4 };
  const tasks = [{ id: 'a' }, { id: 'b' }];
  const run = async (name: string, anchor?: { samples: typeof anchorSamples; coef: number; batch: number }, stopAfter?: number) => {
    const model = tinyModel(5);
    const records: StepRecord[] = [];
    const r = await runGrpo({ outDir: join(dir, name), env: new ShortAnswerEnv(), tasks, model, tokenizer: TOK, config: cfg, onStep: (x) => records.push(x), ...(anchor ? { anchor } : {}), ...(stopAfter ? { stopAfter } : {}) });
    return { model, records, r };
  };
  const start = tinyModel(5);
  const before = evaluateLoss(start, anchorSamples, 4, 0);
  start.dispose();
  const plain = await run('no-anchor');
  const anchored = await run('anchor', { samples: anchorSamples, coef: 1, batch: 2 });
  const lossPlain = evaluateLoss(plain.model, anchorSamples, 4, 0);
  const lossAnchored = evaluateLoss(anchored.model, anchorSamples, 4, 0);
  assert.ok(lossAnchored < before - 0.5 && lossAnchored < lossPlain - 0.5, `anchor loss ${before.toFixed(3)} → ${lossAnchored.toFixed(3)} with the anchor, ${lossPlain.toFixed(3)} without`);
  assert.ok(anchored.records.every((x) => Number.isFinite(x.anchor_loss)));
  assert.ok(plain.records.every((x) => x.anchor_loss === undefined));

  const first = await run('anchor-resumed', { samples: anchorSamples, coef: 1, batch: 2 }, 2);
  assert.equal(first.r.interrupted, true);
  const ck = loadCheckpoint(first.r.checkpoint);
  await runGrpo({ outDir: join(dir, 'anchor-resumed'), env: new ShortAnswerEnv(), tasks, model: ck.model, tokenizer: ck.tokenizer, config: cfg, anchor: { samples: anchorSamples, coef: 1, batch: 2 }, resumeFrom: { trainerState: ck.trainerState as object, optimizerState: ck.optimizerState } });
  const resumed = ck.model.exportWeights();
  for (const [name, w] of anchored.model.exportWeights()) assert.deepEqual(resumed.get(name)?.data, w.data, `${name} differs after resume`);
  for (const m of [plain.model, anchored.model, first.model, ck.model]) m.dispose();
});

test('a task set that is empty or a KL without reference is refused before training', async () => {
  const model = tinyModel(1);
  await assert.rejects(runGrpo({ outDir: join(dir, 'x'), env: new ShortAnswerEnv(), tasks: [], model, tokenizer: TOK }), /no training tasks/);
  await assert.rejects(
    runGrpo({ outDir: join(dir, 'y'), env: new ShortAnswerEnv(), tasks: [{ id: 'a' }], model, tokenizer: TOK, config: { algo: 'grpo' } }),
    /kl.coef 0.001 but no reference model/,
  );
});

test('planMicroBatches bounds sequences and padded tokens, grouping similar lengths', () => {
  // sorted 10,11,12 | 48,50: 3×12 = 36 and 2×50 = 100 fit a budget of 100; at 99 the 50 goes alone.
  assert.deepEqual(planMicroBatches([10, 50, 12, 48, 11], 8, 100), [[0, 4, 2], [3, 1]]);
  assert.deepEqual(planMicroBatches([10, 50, 12, 48, 11], 8, 99), [[0, 4, 2], [3], [1]]);
  assert.deepEqual(planMicroBatches([10, 10, 10], 2, 1000), [[0, 1], [2]]);
  assert.deepEqual(planMicroBatches([500], 4, 100), [[0]], 'a sequence longer than the budget still trains alone');
});

for (const aggregation of ['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'] as const) {
  test(`micro-batching does not change the update (${aggregation})`, async () => {
    const run = async (microBatch: number, maxBatchTokens: number) => {
      const model = tinyModel(11);
      await runGrpo({
        outDir: join(dir, `mb-${aggregation}-${microBatch}`),
        env: new ShortAnswerEnv(),
        tasks: [{ id: 'a' }, { id: 'b' }],
        model,
        tokenizer: TOK,
        config: {
          ...shortAlgo,
          algoOverrides: { ...shortAlgo.algoOverrides, loss: { aggregation } },
          steps: 1, promptsPerStep: 2, groupSize: 4, lr: 1e-2, maxTurnTokens: 9, maxResponseTokens: 9,
          microBatch, maxBatchTokens, checkpointEvery: 0, seed: 4,
        },
      });
      return model.exportWeights();
    };
    const whole = await run(64, 100_000);
    const split = await run(1, 100_000);
    for (const [name, w] of whole) {
      const other = split.get(name)?.data as Float32Array;
      let maxDiff = 0;
      for (let i = 0; i < w.data.length; i++) maxDiff = Math.max(maxDiff, Math.abs(w.data[i] - other[i]));
      assert.ok(maxDiff < 1e-5, `${name}: max difference ${maxDiff}`);
    }
  });
}

test('non-finite losses skip the update and stop the run cleanly with a checkpoint', async () => {
  const model = tinyModel(5);
  const w = model.exportWeights();
  const norm = w.get('model.norm.weight');
  assert.ok(norm);
  norm.data[0] = Number.NaN;
  model.importWeights(w);
  const out = join(dir, 'nan');
  await assert.rejects(
    runGrpo({
      outDir: out,
      env: new ShortAnswerEnv(),
      tasks: [{ id: 'a' }],
      model,
      tokenizer: TOK,
      config: { ...shortAlgo, steps: 5, promptsPerStep: 1, groupSize: 2, maxTurnTokens: 4, maxResponseTokens: 4, maxBadSteps: 2, checkpointEvery: 0 },
    }),
    /2 steps in a row had a non-finite loss or gradient \(logp contains NaN.*\); stopped at step 2/,
  );
  assert.ok(existsSync(join(out, 'checkpoints', 'step-2', 'trainer_state.json')));
  const lines = readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { skipped: boolean });
  assert.deepEqual(lines.map((l) => l.skipped), [true, true]);
});
