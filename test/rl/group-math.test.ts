import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  activePoolVisit,
  difficultyAction,
  dppoPrune,
  groupSimilarityRewards,
  gtpoEntropyFilter,
  gtpoTokenWeights,
  igpoTurnAdvantages,
  jaccard,
  mgrpoAdvantages,
  saltStepAdvantages,
  scafNextTier,
  varianceAwareSample,
  variancePromotionScores,
  withAnchors,
} from '../../src/rl/group-math.ts';
import { Rng } from '../../src/util/rng.ts';
import { scafSqlHint } from '../../src/agent/hints.ts';

function close(actual: readonly number[], expected: readonly number[], tol = 1e-6): void {
  assert.equal(actual.length, expected.length);
  actual.forEach((a, i) => assert.ok(Math.abs(a - expected[i]) <= tol, `[${i}] ${a} vs ${expected[i]}`));
}

test('GTPO: conflict tokens (same position, opposite-sign completions) skip negative updates and double positive ones', () => {
  // pos [5, 7, 9], neg [5, 8, 9, 4]: positions 0 and 2 conflict
  const w = gtpoTokenWeights([[5, 7, 9], [5, 8, 9, 4]], [1, -1], [0, 0]);
  assert.deepEqual(w, [[2, 1, 2], [0, 1, 0, 1]]);
  // another group's tokens never conflict
  assert.deepEqual(gtpoTokenWeights([[5], [5]], [1, -1], ['a', 'b']), [[1], [1]]);
  assert.deepEqual(gtpoEntropyFilter([0.5, 2.5], 2), [true, false]);
});

test('SALT: a step shared by good and bad trajectories gets their mean advantage', () => {
  // traj0 [s, a] A = 1; traj1 [s, b] A = −1; traj2 [t] A = 0.5 → s: mean(1, −1) = 0; a: 1; b: −1; t: 0.5
  const r = saltStepAdvantages([['s', 'a'], ['s', 'b'], ['t']], [1, -1, 0.5], [0, 0, 0]);
  assert.deepEqual(r, [[0, 1], [0, -1], [0.5]]);
});

test('IGPO: turn rewards are gains in the gold probability, group-normalized, then discounted sums', () => {
  // traj0 p = [0.1, 0.3, 0.6] outcome 1 → r = [0.2, 1]; traj1 p = [0.1, 0.1, 0.2] outcome 0 → r = [0, 0]
  // all turn rewards [0.2, 1, 0, 0]: μ 0.3, σ = sqrt((0.01 + 0.49 + 0.09 + 0.09)/3) = sqrt(0.68/3) = 0.4760952
  const s = Math.sqrt(0.68 / 3) + 1e-6;
  const z = [-0.1 / s, 0.7 / s, -0.3 / s, -0.3 / s];
  const r = igpoTurnAdvantages([[0.1, 0.3, 0.6], [0.1, 0.1, 0.2]], [1, 0], [0, 0], 1);
  close(r[0], [z[0] + z[1], z[1]]);
  close(r[1], [z[2] + z[3], z[3]]);
});

test('M-GRPO: main advantages per group; sub-agent calls aligned to fixed slots, inheriting the rollout reward', () => {
  // rewards [1, 0], sub-calls [3, 1], 2 slots: rollout 0 keeps calls 0,1; rollout 1 has call 0 and one duplicate
  const r = mgrpoAdvantages([1, 0], [3, 1], [0, 0], 2);
  const s = Math.SQRT1_2 + 1e-6; // sample std of [1, 0]
  close(r.main, [0.5 / s, -0.5 / s]);
  assert.deepEqual(r.sub[0].map((x) => x.source), [0, 1]);
  assert.deepEqual(r.sub[1].map((x) => x.source), [0, 0]);
  // the 4 aligned sub rewards [1, 1, 0, 0]: μ 0.5, σ = sqrt(1/3)
  const ss = Math.sqrt(1 / 3) + 1e-6;
  close(r.sub[0].map((x) => x.advantage), [0.5 / ss, 0.5 / ss]);
  close(r.sub[1].map((x) => x.advantage), [-0.5 / ss, -0.5 / ss]);
  // a rollout without sub-agent calls gets empty slots
  assert.deepEqual(mgrpoAdvantages([1, 0], [0, 1], [0, 0], 1).sub[0], [{ source: -1, advantage: 0 }]);
});

test('group similarity reward: mean Jaccard to the other outputs of the paraphrase set', () => {
  close([jaccard('the cat sat', 'the cat ran')], [2 / 4]);
  // set a: "x y", "x y", "z": r0 = (1 + 0)/2, r1 = 0.5, r2 = 0; set b alone: 0
  close(groupSimilarityRewards(['x y', 'x y', 'z', 'q'], ['a', 'a', 'a', 'b']), [0.5, 0.5, 0, 0]);
});

test('MMR1 VAS: VPS = α·p(1−p) + β·diversity; weighted draws prefer high-variance prompts', () => {
  close(variancePromotionScores([0, 0.5, 1], [0, 0.2, 0.5], 1, 1), [0, 0.45, 0.5]);
  // scores [0, 0, 1]: the only positive one is drawn first whenever the first draw is weighted
  for (let seed = 0; seed < 5; seed++) assert.equal(varianceAwareSample([0, 0, 1], 2, new Rng(seed), 1)[0], 2);
  const s = varianceAwareSample([1, 1, 1, 1], 4, new Rng(3), 0.5);
  assert.deepEqual([...s].sort(), [0, 1, 2, 3]);
});

test('active pool: unseen and mixed prompts train; a unanimous one trains only on every recheck-th visit', () => {
  assert.deepEqual(activePoolVisit(undefined, 3), { train: true, rec: undefined });
  const mixed = { correct: 2, samples: 4, skipped: 0 };
  assert.deepEqual(activePoolVisit(mixed, 3), { train: true, rec: mixed });
  // All wrong (0/4) and all right (4/4) alike: skipped twice, rolled out on the third visit, the count reset.
  for (const correct of [0, 4]) {
    let rec: { correct: number; samples: number; skipped: number } | undefined = { correct, samples: 4, skipped: 0 };
    const trained: boolean[] = [];
    for (let v = 0; v < 6; v++) {
      const r = activePoolVisit(rec, 3);
      trained.push(r.train);
      rec = r.rec;
    }
    assert.deepEqual(trained, [false, false, true, false, false, true]);
  }
  // recheck 1: no prompt is ever skipped (the plain order).
  assert.equal(activePoolVisit({ correct: 0, samples: 4, skipped: 0 }, 1).train, true);
  assert.throws(() => activePoolVisit(undefined, 0), /recheck must be an integer >= 1/);
});

test('DPPO pruning is unbiased: E[weight · kept] = 1 for every completion', () => {
  const adv = [1, -0.5, 0.1, 0];
  const rng = new Rng(7);
  const sum = new Array<number>(adv.length).fill(0);
  const N = 20000;
  for (let k = 0; k < N; k++) {
    const { keep, weights } = dppoPrune(adv, rng, 0.2);
    keep.forEach((i, j) => (sum[i] += weights[j]));
  }
  // keep probabilities [1, 0.5, 0.2, 0.2]; each estimate of 1 within a few standard errors
  sum.forEach((s, i) => assert.ok(Math.abs(s / N - 1) < 0.06, `completion ${i}: ${s / N}`));
  assert.deepEqual(dppoPrune([1, 1], new Rng(0)).weights, [1, 1]);
});

test('DaGRPO anchors, Scaf-GRPO tiers and hints, Reg-GRPO difficulty actions', () => {
  const a = withAnchors([0, 0, 1, 0], ['a', 'a', 'b', 'b']);
  assert.deepEqual(a.anchoredGroups, ['a']);
  assert.deepEqual(a.rewards, [0, 0, 1, 0, 1]);
  assert.deepEqual(a.isAnchor, [false, false, false, false, true]);
  // tiers advance only while the group stays at zero and after the exemption period
  assert.equal(scafNextTier([0, 0], 1, 5, null), null);
  assert.equal(scafNextTier([0, 0], 5, 5, null), 'knowledge');
  assert.equal(scafNextTier([0, 0], 6, 5, 'knowledge'), 'planning');
  assert.equal(scafNextTier([0, 1], 7, 5, 'planning'), 'planning');
  assert.equal(scafNextTier([0, 0], 8, 5, 'solution'), 'solution');
  const gold = 'SELECT name FROM singer JOIN concert ON singer.id = concert.sid WHERE year = 2014';
  assert.equal(scafSqlHint('knowledge', gold), 'Hint: the answer reads the tables singer, concert.');
  assert.equal(scafSqlHint('planning', gold), 'Hint: the query has the shape SELECT FROM JOIN ON WHERE.');
  assert.equal(scafSqlHint('solution', gold), 'Hint: the query starts with SELECT name FROM singer JOIN concert ON');
  assert.deepEqual([difficultyAction([1, 1]), difficultyAction([0, 0]), difficultyAction([1, 0])], ['harder', 'easier', 'keep']);
});

test('the advantages phase applies GTPO weights to the policy tokens when the preset enables it', async () => {
  const { advantages } = await import('../../src/rl/phases.ts');
  const { resolveAlgo } = await import('../../src/rl/algo-config.ts');
  const { prepareRewards } = await import('../../src/rl/rewards.ts');
  type S = Parameters<typeof advantages>[1][number][number];
  // one group: prompt token 1 (mask 0), then policy tokens; response 0 [5, 7] rewarded 1, response 1 [5, 8] rewarded 0
  const ep = (ids: number[], total: number): S =>
    ({ traj: { ids, mask: [0, 1, 1], answer: '' }, ctx: { correct: total > 0 }, score: { total, parts: {}, vector: [total] } }) as unknown as S;
  const algo = resolveAlgo('gtpo', { rewards: [{ name: 'overlong', weight: 1 }] });
  const c = { algo, rewards: prepareRewards(algo.rewards) };
  const r = advantages(c, [[ep([1, 5, 7], 1), ep([1, 5, 8], 0)]]);
  const a = 0.5 / (Math.SQRT1_2 + 1e-6); // grpo of [1, 0]
  // token 5 is shared at position 0: doubled in the positive response, zeroed in the negative one
  close(r.tokenAdvantages![0], [2 * a, a]);
  close(r.tokenAdvantages![1], [0, -a]);
  assert.equal(advantages({ ...c, algo: resolveAlgo('grpo', { rewards: [{ name: 'overlong', weight: 1 }] }) }, [[ep([1, 5, 7], 1), ep([1, 5, 8], 0)]]).tokenAdvantages, undefined);
});
