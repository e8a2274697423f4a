import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { SqlPool } from '../../src/sql/pool.ts';
import { ChooserEnvironment, parseChoice, type ChooserTask } from '../../src/rl/chooser/env.ts';
import { formatColdStart, informative, labelledTask, shownCandidates, shuffledTask } from '../../src/rl/chooser/tasks.ts';
import { Rng } from '../../src/util/rng.ts';
import { prepareRewards, scoreEpisode } from '../../src/rl/rewards.ts';
import { resolveAlgo } from '../../src/rl/algo-config.ts';
import type { RankedCandidate } from '../../src/answer/answer.ts';
import type { Transcript } from '../../src/agent/types.ts';

// The bundled database and candidates written here: one right (the gold's count), two wrong.
const DB = resolve('data/databases/music_store/music_store.sqlite');
const pool = new SqlPool({ size: 1 });
after(() => pool.close());
const env = new ChooserEnvironment(pool);

const base: ChooserTask = {
  id: 't1',
  dbId: 'music_store',
  dbPath: DB,
  question: 'How many artists are there?',
  goldSql: 'SELECT COUNT(*) FROM artists',
  candidates: [
    { sql: 'SELECT COUNT(*) FROM genres', reading: 'How many genres are there?' },
    { sql: 'SELECT count(artist_id) FROM artists', reading: 'How many artists are there?' },
    { sql: 'SELECT name FROM artists ORDER BY name LIMIT 2', reading: null },
  ],
};

const task = base;

/** One episode of the environment with the policy's text, scored by the GRPO preset's rewards (execution, format). */
async function play(text: string, task: ChooserTask = base) {
  const ep = await env.start(task);
  const r = await ep.step(text);
  assert.equal(r.done, true);
  const t: Transcript = {
    messages: [...ep.opening, { role: 'assistant', content: text }],
    toolCalls: 0,
    endReason: r.done ? r.reason : 'turn_limit',
    ...(r.done && r.answer !== undefined ? { answer: r.answer } : {}),
    policyTokens: 5,
    truncated: false,
  };
  const ctx = await env.rewardContext(task, t);
  const scored = scoreEpisode(ctx, prepareRewards(resolveAlgo('grpo', {}).rewards), env.rewardDeps(task));
  return { r, ctx, parts: scored.parts };
}

test('the observation shows the question, the schema and every candidate with its reading and first rows', async () => {
  const ep = await env.start(task);
  const [system, user] = ep.opening;
  assert.equal(system.role, 'system');
  assert.match(system.content, /number of the candidate/);
  assert.match(system.content, /artists/);
  assert.match(user.content, /^How many artists are there\?/);
  for (const [i, c] of task.candidates.entries()) assert.ok(user.content.includes(`[${i + 1}] ${c.sql}`), `candidate ${i + 1} shown`);
  assert.match(user.content, /reads: How many genres are there\?/);
  assert.match(user.content, /reads: \(no reading\)/);
  // Each candidate's result: the counts the two first return, two names of the third.
  assert.match(user.content, /\[1\][^[]*result: COUNT\(\*\)\n12\n\(1 rows\)/);
  assert.match(user.content, /\[2\][^[]*result: count\(artist_id\)\n40\n/);
});

test('a choice is rewarded by execution against the gold: the right candidate 1, a wrong one 0', async () => {
  const right = await play('<think>it counts artists</think>\n<answer>2</answer>');
  assert.equal(right.r.done && right.r.reason, 'answer');
  assert.equal(right.ctx.correct, true);
  assert.equal(right.parts.execution.value, 1);
  assert.equal(right.parts.format.value, 1);
  for (const wrong of ['<think></think><answer>1</answer>', '<think></think><answer>[3]</answer>']) {
    const w = await play(wrong);
    assert.equal(w.ctx.correct, false, wrong);
    assert.equal(w.parts.execution.value, 0, wrong);
    assert.equal(w.parts.format.value, 1, wrong);
  }
});

test('a malformed choice gets the format penalty and no execution reward', async () => {
  for (const bad of ['2', '<answer>2</answer>', '<think></think><answer>7</answer>', '<think></think><answer>SELECT COUNT(*) FROM artists</answer>', '<think></think><sql>SELECT 1</sql>']) {
    const m = await play(bad);
    assert.equal(m.r.done && m.r.reason, 'invalid_action', bad);
    assert.equal(m.ctx.correct, false, bad);
    assert.equal(m.parts.format.value, 0, bad);
    assert.equal(m.parts.execution.value, 0, bad);
  }
  assert.deepEqual(parseChoice(' 3 ', 3), { index: 2 });
  assert.ok('invalid' in parseChoice('0', 3));
});

const zero = { reading: 0, precision: 0, recall: 0, values: 1, strayValues: 0, numbers: 1, strayNumbers: 0, agreement: 0, greedy: 0, person: 0, degenerate: 0, negation: 0 };
const candidate = (sql: string, group: number): RankedCandidate => ({ sql, sources: ['memory'], reading: null, features: zero, score: 0, group, rows: 1, columns: 1, signature: `g${group}` });

test('tasks show one candidate per result group, are labelled by execution, and only mixed lists are kept', async () => {
  const q = { id: 'q', dbId: 'music_store', dbPath: DB, question: task.question, goldSql: task.goldSql };
  const mixed = { candidates: [candidate('SELECT COUNT(*) FROM genres', 0), candidate('SELECT COUNT(genre_id) FROM genres', 0), candidate('SELECT COUNT(*) FROM artists', 1)] };
  assert.deepEqual(shownCandidates(mixed, 4), [0, 2]);
  const allWrong = { candidates: [candidate('SELECT COUNT(*) FROM genres', 0), candidate('SELECT COUNT(*) FROM albums', 1)] };
  const allRight = { candidates: [candidate('SELECT COUNT(*) FROM artists', 0)] };
  // Right, but beyond the candidates shown (k = 1).
  const hidden = { candidates: [candidate('SELECT COUNT(*) FROM albums', 0), candidate('SELECT COUNT(*) FROM artists', 1)] };
  const lists = await Promise.all([mixed, allWrong, allRight].map((a, i) => labelledTask(env, { ...q, id: `q${i}` }, a)));
  const [m, w, r] = lists;
  assert.deepEqual(m!.right, [false, true]);
  assert.deepEqual(m!.task.candidates.map((c) => c.sql), ['SELECT COUNT(*) FROM genres', 'SELECT COUNT(*) FROM artists']);
  assert.deepEqual(w!.right, [false, false]);
  assert.equal(w!.anyRight, false);
  assert.deepEqual(r!.right, [true]);
  const h = await labelledTask(env, { ...q, id: 'h' }, hidden, { k: 1 });
  assert.deepEqual(h!.right, [false]);
  assert.equal(h!.anyRight, true);
  assert.deepEqual(informative(lists.map((l) => l!)).map((l) => l.task.id), ['q0']);
  assert.equal(await labelledTask(env, q, { candidates: [] }), null);
});

test('the format cold start answers each opening with a well-formed number, drawn at random, not the right one', async () => {
  const tasks = Array.from({ length: 40 }, (_, i) => ({ ...task, id: `c${i}` }));
  const convs = await formatColdStart(env, tasks, new Rng(1));
  const picked = new Set<string>();
  for (const c of convs) {
    assert.deepEqual(c.slice(0, 2), await env.opening(task));
    const turn = c[2].content;
    const m = await play(turn);
    assert.equal(m.parts.format.value, 1, turn);
    picked.add(turn);
  }
  // Every number appears: the right one (2) is not singled out.
  assert.equal(picked.size, 3);
});

test('a shuffled list rewards the number that now names the right candidate 1 and any other 0', async () => {
  const labelled = { task, right: [false, true, false], anyRight: true, judge: 1 };
  // Some seed moves the right candidate off position 2: the order a rollout sees is part of its task.
  const moved = [0, 1, 2, 3, 4, 5, 6, 7].map((s) => shuffledTask(labelled, new Rng(s))).find((l) => !l.right[1]);
  assert.ok(moved, 'some seed moves the right candidate');
  const k = moved.right.indexOf(true);
  assert.equal(moved.task.candidates[k].sql, 'SELECT count(artist_id) FROM artists');
  assert.equal(moved.judge, k, 'the judge\'s choice moves with its candidate');
  assert.deepEqual([...moved.task.candidates].map((c) => c.sql).sort(), task.candidates.map((c) => c.sql).sort());
  const right = await play(`<think></think><answer>${k + 1}</answer>`, moved.task);
  assert.equal(right.parts.execution.value, 1);
  const w = await play(`<think></think><answer>${k === 0 ? 2 : 1}</answer>`, moved.task);
  assert.equal(w.parts.execution.value, 0);
  assert.equal(w.parts.format.value, 1);
  // The same seed shuffles alike: a run's order is reproducible.
  assert.deepEqual(shuffledTask(labelled, new Rng(3)).right, shuffledTask(labelled, new Rng(3)).right);
});
