// The trainer hooks (src/rl/trainer-hooks.ts) through the real trainer: each run is 1–4 GRPO steps of the tiny model,
// on the bundled school database after a short SFT (so episodes call tools and answer) or on a toy environment
// where a hook's effect must be exact; every check reads what the hook should have changed in metrics.jsonl.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../../src/model/backend.ts';
import { LlamaModel } from '../../src/model/llama.ts';
import { resolveModelConfig } from '../../src/model/config.ts';
import { Tokenizer } from '../../src/model/tokenizer.ts';
import { loadCheckpoint, saveCheckpoint } from '../../src/model/checkpoint.ts';
import { renderChat } from '../../src/model/chat.ts';
import { SqlEnvironment, type SqlTask } from '../../src/agent/sql-env.ts';
import { loadSqlTasks } from '../../src/agent/tasks.ts';
import { synthesizeTrajectories } from '../../src/agent/cold-start/trajectories.ts';
import { AGENT_SPECIAL_TOKENS } from '../../src/agent/protocol.ts';
import type { Environment, Episode, TaskBase, Transcript } from '../../src/agent/types.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { runSft } from '../../src/train/sft.ts';
import { runGrpo } from '../../src/rl/trainer.ts';
import type { StepRecord } from '../../src/rl/phases.ts';
import type { TrainConfigInput } from '../../src/rl/train-config.ts';
import type { PassRecord } from '../../src/rl/group-math.ts';

const dir = mkdtempSync(join(tmpdir(), 'agro-hooks-'));
const pool = new SqlPool({ size: 1 });
const env = new SqlEnvironment(pool, { schemaChars: 300 });
const tasks = loadSqlTasks('data/dev.json', 'data/databases').filter((t) => t.dbId === 'school').slice(0, 8);
const sftDir = join(dir, 'sft');

before(async () => {
  await initBackend();
  // A policy that follows the protocol (tool call, then answer) on these tasks, so turns exist to assign credit to.
  const trajs = await synthesizeTrajectories(tasks, env, { verifyShare: 0.5, seed: 0 });
  const tk = Tokenizer.train(trajs.flatMap((t) => t.messages.map((m) => m.content)), { vocabSize: 600, specialTokens: [...AGENT_SPECIAL_TOKENS] });
  const model = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: tk.vocabSize }), { seed: 0 });
  await runSft({
    outDir: join(dir, 'sft-run'), model, tokenizer: tk, samples: trajs.map((t) => renderChat(tk, t.messages)),
    config: { steps: 200, batchSize: 4, lr: 1e-2, warmupSteps: 1, evalEvery: 0, checkpointEvery: 0, maxSeqLen: model.config.maxPositions, seed: 0 },
  });
  saveCheckpoint(sftDir, { model, tokenizer: tk });
  model.dispose();
});
after(() => pool.close());

// Partial credit so that the groups of a barely trained policy have a reward spread (as in `bench -- algos`).
const PARTIAL = [
  { name: 'execution', weight: 1 },
  { name: 'format', weight: 0.2, params: { partial: true } },
  { name: 'sql_overlap', weight: 0.5 },
];
const base = { steps: 2, promptsPerStep: 2, groupSize: 4, lr: 1e-3, maxTurnTokens: 64, maxResponseTokens: 400, temperature: 1, checkpointEvery: 0, seed: 3 };

/** A GRPO run from the SFT checkpoint on the school tasks; the metrics lines it wrote. */
async function sqlRun(name: string, config: TrainConfigInput, withReference = false, on: SqlTask[] = tasks): Promise<StepRecord[]> {
  const ck = loadCheckpoint(sftDir);
  const reference = withReference ? loadCheckpoint(sftDir).model : undefined;
  const out = join(dir, name);
  try {
    await runGrpo({ outDir: out, env, tasks: on, model: ck.model, tokenizer: ck.tokenizer, reference, config: { ...base, ...config, algoOverrides: { rewards: PARTIAL, ...config.algoOverrides } } });
  } finally {
    ck.model.dispose();
    reference?.dispose();
  }
  return readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as StepRecord);
}

const noKl = { kl: { coef: 0 } };

test('KL in the reward (adaptive): β follows verl\'s controller on the logged KL, and the KL changes the advantages', async () => {
  const cfg = { algo: 'grpo_kl_adaptive', algoOverrides: { klInReward: { coef: 0.5, target: 0.01, horizon: 20 } } };
  const kl = await sqlRun('kl-adaptive', cfg, true);
  const plain = await sqlRun('kl-plain', { algo: 'grpo', algoOverrides: noKl }, true);
  const h = kl.map((r) => r.hooks!);
  // Step 1: the policy is the reference, so the KL is exactly 0 and the error clips to −0.2: β·(1 − 0.2·8/20).
  assert.equal(h[0].kl_reward_kl, 0);
  assert.equal(h[0].kl_reward_beta, 0.5);
  assert.ok(Math.abs(h[0].kl_reward_beta_next - 0.5 * (1 - (0.2 * 8) / 20)) < 1e-12);
  assert.equal(h[1].kl_reward_beta, h[0].kl_reward_beta_next);
  // Step 2: the updated policy has moved away from the reference (k1 can be of either sign).
  assert.notEqual(h[1].kl_reward_kl, 0);
  const e = Math.min(0.2, Math.max(-0.2, h[1].kl_reward_kl / 0.01 - 1));
  assert.ok(Math.abs(h[1].kl_reward_beta_next - h[1].kl_reward_beta * (1 + (e * 8) / 20)) < 1e-12);
  // Same first update (KL 0), so the same step-2 rollouts; only the −β·ΣKL shift of the rewards differs there.
  assert.deepEqual(kl[0].adv_mean, plain[0].adv_mean);
  assert.equal(kl[1].reward, plain[1].reward);
  assert.notEqual(kl[1].adv_abs_mean, plain[1].adv_abs_mean);
});

test('KL in the reward (fixed, reinforce_pp_kl): β never moves; a run without a reference is refused', async () => {
  const recs = await sqlRun('kl-fixed', { algo: 'reinforce_pp_kl' }, true);
  assert.deepEqual(recs.map((r) => r.hooks!.kl_reward_beta), [0.001, 0.001]);
  // k1 per token can have either sign; the updated policy is no longer the reference.
  assert.notEqual(recs[1].hooks!.kl_reward_kl, 0);
  await assert.rejects(sqlRun('kl-noref', { algo: 'reinforce_pp_kl' }), /KL in the reward but no reference model/);
  await assert.rejects(sqlRun('gae', { algo: 'grpo', algoOverrides: { advantage: { name: 'gae' }, ...noKl } }), /gae needs a critic .* no value head/);
});

test('remax: a greedy rollout per prompt is the baseline, A = r − r(greedy)', async () => {
  const [r] = await sqlRun('remax', { algo: 'remax', steps: 1 });
  assert.equal(typeof r.hooks?.remax_baseline, 'number');
  // No token rewards and no whitening: each response's advantage is r − b, so the means differ by the baseline.
  assert.ok(Math.abs(r.adv_mean - (r.reward - r.hooks!.remax_baseline)) < 1e-9, `${r.adv_mean} vs ${r.reward} − ${r.hooks!.remax_baseline}`);
  assert.equal(r.trained, 8);
});

test('SALT, IGPO and M-GRPO reshape the advantages of the same rollouts by turn', async () => {
  // Two prompts of which the second's episodes check the query with a tool call and then answer (two turns).
  const run = async (algo: string) => (await sqlRun(`credit-${algo}`, { algo, algoOverrides: noKl, steps: 1, seed: 1 }, false, [tasks[0], tasks[3]]))[0];
  const [grpo, salt, igpo, mgrpo] = [await run('grpo'), await run('salt'), await run('igpo'), await run('mgrpo')];
  // Same seed, same weights: the same episodes and rewards in every run.
  for (const r of [salt, igpo, mgrpo]) assert.equal(r.reward, grpo.reward);
  assert.ok(grpo.adv_abs_mean > 0, 'the groups have a reward spread');
  // SALT: turns shared within a group pool the credit of the trajectories through them.
  assert.ok(salt.hooks!.salt_shared_turns > 0, `shared ${salt.hooks!.salt_shared_turns}`);
  assert.ok(salt.hooks!.salt_pooled > 0, 'a shared turn of a group with a reward spread got a pooled advantage');
  assert.ok(salt.adv_abs_mean < grpo.adv_abs_mean, `${salt.adv_abs_mean} vs ${grpo.adv_abs_mean}`);
  // IGPO: multi-turn episodes give information gains; the turn-normalized advantages differ from grpo's.
  assert.ok(igpo.hooks!.igpo_gains > 0);
  assert.ok(Number.isFinite(igpo.hooks!.igpo_gain));
  assert.notEqual(igpo.adv_abs_mean, grpo.adv_abs_mean);
  // M-GRPO: tool-call turns are sub-agent invocations with their own normalization.
  assert.ok(mgrpo.hooks!.mgrpo_sub_turns > 0);
  assert.notEqual(mgrpo.adv_abs_mean, grpo.adv_abs_mean);
});

test('DPPO prunes low-|A| responses from the update and reweights the rest', async () => {
  const [r] = await sqlRun('dppo', { algo: 'dppo', algoOverrides: { ...noKl, dppo: { pMin: 0.05 } }, steps: 1 });
  assert.ok(r.trained < 8, `trained ${r.trained} of 8`);
  assert.equal(r.trained, Math.round(r.hooks!.dppo_kept * 8));
});

test('DaGRPO anchors: a group with no correct response gets the demonstration (gold SQL), scored by execution', async () => {
  const [r] = await sqlRun('anchors', { algo: 'dagrpo', algoOverrides: noKl, steps: 1, temperature: 1 });
  const anchors = r.hooks!.anchors;
  assert.ok(anchors >= 1, `anchors ${anchors}`);
  assert.equal(r.trained, 8 + anchors);
  // The anchors execute to the gold result: at least that many correct responses.
  assert.ok(r.accuracy * (8 + anchors) >= anchors - 1e-9);
});

test('Scaf-GRPO rolls out hinted prompts for unsolved groups on the school database', async () => {
  const [r] = await sqlRun('scaf-sql', { algo: 'scaf_grpo', algoOverrides: noKl, steps: 1, temperature: 1 });
  assert.ok(r.hooks!.scaf_failing >= 1);
  assert.ok(r.hooks!.scaf_hinted >= r.hooks!.scaf_failing, 'each unsolved group tried at least the first tier');
});

// ---------------------------------------------------------------- toy environments (exact effects)

interface Toy extends TaskBase {
  hinted?: boolean;
}

/**
 * Rewards by task id: `zero-*` is never correct, `mixed-*` is correct when the response has an even number of
 * characters, `hint-*` only with a hint in its prompt (withHint). Exact outcomes, whatever the policy samples.
 */
class ToyEnv implements Environment<Toy> {
  readonly name = 'toy';
  async start(task: Toy): Promise<Episode> {
    return {
      opening: [{ role: 'system', content: 'abc' }, { role: 'user', content: task.hinted ? 'def hint' : 'def' }],
      step: async (text: string) => ({ done: true as const, reason: 'answer' as const, answer: text }),
    };
  }
  async rewardContext(task: Toy, t: Transcript) {
    const text = t.messages.filter((m) => m.role === 'assistant').map((m) => m.content).join('');
    const correct = task.id.startsWith('mixed') ? text.length % 2 === 0 : task.id.startsWith('hint') ? task.hinted === true : false;
    return { correct, answer: correct ? 'yes' : 'no', goldAnswers: ['yes'] };
  }
  withHint(task: Toy, level: number): Toy | null {
    return level < 3 ? { ...task, hinted: true } : null;
  }
}

const TOY_TK = Tokenizer.train(['abc def ghi hint', 'jkl mno'], { vocabSize: 300, specialTokens: AGENT_SPECIAL_TOKENS });
const toyRewards = { rewards: [{ name: 'exact_match', weight: 1 }] };

async function toyRun(name: string, tasksOf: Toy[], config: TrainConfigInput, stopAfter?: number, resume?: string, passRates?: Map<string, PassRecord>): Promise<StepRecord[]> {
  const out = join(dir, name);
  const ck = resume ? loadCheckpoint(resume) : undefined;
  const model = ck?.model ?? new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: TOY_TK.vocabSize }), { seed: 2 });
  try {
    await runGrpo({
      outDir: out, env: new ToyEnv(), tasks: tasksOf, model, tokenizer: TOY_TK, stopAfter, passRates,
      ...(ck ? { resumeFrom: { trainerState: ck.trainerState as object, optimizerState: ck.optimizerState } } : {}),
      config: { groupSize: 6, promptsPerStep: 2, maxTurnTokens: 6, maxResponseTokens: 6, lr: 1e-3, checkpointEvery: 1, seed: 1, ...config },
    });
  } finally {
    model.dispose();
  }
  return readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as StepRecord);
}

test('MMR1: after one pass over the prompts, steps draw only prompts with outcome variance', async () => {
  const toy = [{ id: 'zero-a' }, { id: 'mixed-a' }, { id: 'zero-b' }, { id: 'mixed-b' }];
  const steps = 5;
  const mmr1 = await toyRun('mmr1', toy, { algo: 'mmr1', algoOverrides: { ...toyRewards, ...noKl, sampler: { mix: 1, beta: 0 } }, steps });
  // Steps 1–2 cover all four prompts (the estimation pass); then VPS = p(1−p) is 0 for the zero-* prompts.
  assert.deepEqual(mmr1.slice(0, 2).flatMap((r) => r.task_ids).sort(), ['mixed-a', 'mixed-b', 'zero-a', 'zero-b']);
  for (const r of mmr1.slice(2)) {
    assert.deepEqual([...r.task_ids].sort(), ['mixed-a', 'mixed-b'], `step ${r.step}`);
    assert.ok(r.hooks!.mmr1_vps > 0);
  }
  // The run's own order keeps visiting the zero-* prompts.
  const plain = await toyRun('mmr1-plain', toy, { algo: 'grpo', algoOverrides: { ...toyRewards, ...noKl }, steps });
  assert.ok(plain.slice(2).some((r) => r.task_ids.some((id) => id.startsWith('zero'))));
  // A resumed run restores the sampler's statistics and RNG: the same prompts as the straight run.
  const first = await toyRun('mmr1-resume', toy, { algo: 'mmr1', algoOverrides: { ...toyRewards, ...noKl, sampler: { mix: 1, beta: 0 } }, steps }, 3);
  assert.equal(first.length, 3);
  const resumed = await toyRun('mmr1-resume', toy, { algo: 'mmr1', algoOverrides: { ...toyRewards, ...noKl, sampler: { mix: 1, beta: 0 } }, steps }, undefined, join(dir, 'mmr1-resume', 'checkpoints', 'step-3'));
  assert.deepEqual(resumed.map((r) => r.task_ids), mmr1.map((r) => r.task_ids));
});

test('active pool: prompts a prior pass count or a group shows unanimous sit out until their recheck visit', async () => {
  const toy = [{ id: 'zero-a' }, { id: 'mixed-a' }, { id: 'zero-b' }, { id: 'mixed-b' }];
  const cfg = (recheck: number) => ({ algo: 'grpo', algoOverrides: { ...toyRewards, ...noKl, sampler: { name: 'active', recheck } }, steps: 6 });
  // No prior: the first pass (steps 1–2) rolls out every prompt; the zero-* groups come out all wrong, so they
  // sit out the next two passes (steps 3–4, two mixed prompts each) and are rolled out again on the third.
  const run = await toyRun('active', toy, cfg(3));
  assert.deepEqual(run.slice(0, 2).flatMap((r) => r.task_ids).sort(), ['mixed-a', 'mixed-b', 'zero-a', 'zero-b']);
  for (const r of run.slice(2, 4)) assert.deepEqual([...r.task_ids].sort(), ['mixed-a', 'mixed-b'], `step ${r.step}`);
  assert.ok(run[2].hooks!.active_skipped + run[3].hooks!.active_skipped >= 2);
  assert.ok(run.slice(4).some((r) => r.task_ids.some((id) => id.startsWith('zero'))), 'rechecked on the third visit');
  // A prior pass count (the quickstart's filter) counts as the latest group: zero-* sit out from the start.
  const prior = new Map([['zero-a', { correct: 0, samples: 4 }], ['zero-b', { correct: 0, samples: 4 }]]);
  const primed = await toyRun('active-prior', toy, cfg(3), undefined, undefined, prior);
  for (const r of primed.slice(0, 2)) assert.deepEqual([...r.task_ids].sort(), ['mixed-a', 'mixed-b'], `step ${r.step}`);
  assert.ok(primed.slice(2, 4).some((r) => r.task_ids.some((id) => id.startsWith('zero'))), 'rechecked on the third visit');
  // recheck 1 is the run's own order.
  const plain = await toyRun('active-plain', toy, cfg(1));
  assert.ok(plain.every((r) => r.hooks!.active_skipped === 0));
  assert.ok(plain.slice(2, 4).some((r) => r.task_ids.some((id) => id.startsWith('zero'))));
  // A resumed run restores the pool: the same prompts as the straight run.
  await toyRun('active-resume', toy, cfg(3), 3);
  const resumed = await toyRun('active-resume', toy, cfg(3), undefined, join(dir, 'active-resume', 'checkpoints', 'step-3'));
  assert.deepEqual(resumed.map((r) => r.task_ids), run.map((r) => r.task_ids));
});

test('Scaf-GRPO: an unsolved group gets a hinted rollout that solves it in place of a failure', async () => {
  const toy = [{ id: 'hint-a' }, { id: 'hint-b' }];
  const cfg = { algoOverrides: { ...toyRewards, ...noKl }, steps: 1 };
  const [plain] = await toyRun('scaf-plain', toy, { algo: 'grpo', ...cfg });
  assert.equal(plain.accuracy, 0);
  assert.equal(plain.adv_abs_mean, 0, 'all-wrong groups teach nothing');
  const [scaf] = await toyRun('scaf', toy, { algo: 'scaf_grpo', ...cfg });
  assert.deepEqual([scaf.hooks!.scaf_failing, scaf.hooks!.scaf_hinted, scaf.hooks!.scaf_rescued], [2, 2, 2]);
  // One hinted success replaces one of the six failures in each group.
  assert.ok(Math.abs(scaf.accuracy - 1 / 6) < 1e-12);
  assert.ok(scaf.adv_abs_mean > 0);
  assert.equal(scaf.zero_signal, 0);
  // The exemption period leaves the first steps unhinted.
  const [exempt] = await toyRun('scaf-exempt', toy, { algo: 'scaf_grpo', algoOverrides: { ...toyRewards, ...noKl, scaffold: { exemptSteps: 1 } }, steps: 1 });
  assert.equal(exempt.hooks!.scaf_hinted, 0);
});
