import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgroError } from '../../src/errors.ts';
import { computeAdvantages, dynamicSamplingFilter, egrpoShape, semanticEntropy, verlMaskedReturns } from '../../src/rl/advantages.ts';
import { AdaptiveKlController, FixedKlController, klTokenRewards } from '../../src/rl/kl-reward.ts';
import { prepareRewards, scoreEpisode } from '../../src/rl/rewards.ts';

function close(actual: readonly number[], expected: readonly number[], tol = 1e-6): void {
  assert.equal(actual.length, expected.length, `length ${actual.length} vs ${expected.length}`);
  actual.forEach((a, i) => assert.ok(Math.abs(a - expected[i]) <= tol, `[${i}] ${a} vs ${expected[i]}`));
}
function rejectsInvalid(fn: () => unknown, re: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof AgroError && e.kind === 'invalid_input' && re.test(e.message));
}
/** verl masked_whiten over a flat token list: (x − mean)/sqrt(var_{N−1} + 1e-8). */
function whiten(xs: number[]): number[] {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  const v = xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1);
  return xs.map((x) => (x - m) / Math.sqrt(v + 1e-8));
}

test('reinforce_pp: agro discounts over policy tokens, verl resets the return at observation tokens (both named)', () => {
  // one episode: 2 policy tokens, 2 observation tokens, 2 policy tokens; outcome 1 on the last token, γ = 0.5
  const input = { rewards: [1], groupIds: [0], lengths: [4], responseMasks: [[1, 1, 0, 0, 1, 1]] };
  // policy: G = [γ³, γ², γ, 1] = [0.125, 0.25, 0.5, 1]
  const agro = computeAdvantages('reinforce_pp', input, { gamma: 0.5, returnReset: 'policy' });
  close(agro.tokenAdvantages![0], whiten([0.125, 0.25, 0.5, 1]));
  // verl: running return passes 0.5·0.5 into the observation token and is zeroed there: G = [0, 0, 0.5, 1]
  close(verlMaskedReturns([1, 1, 0, 0, 1, 1], [0, 0, 0, 1], 0.5), [0, 0, 0.5, 1]);
  const verl = computeAdvantages('reinforce_pp', input, { gamma: 0.5, returnReset: 'mask' });
  close(verl.tokenAdvantages![0], whiten([0, 0, 0.5, 1]));
  rejectsInvalid(() => computeAdvantages('reinforce_pp', { rewards: [1], groupIds: [0], lengths: [4] }, { returnReset: 'mask' }), /responseMasks/);
});

test('reinforce_pp with KL in the reward: token rewards −β·KL join the outcome before the returns', () => {
  // old − ref = [0.5, −1] (k1), β = 0.1 → token rewards [−0.05, 0.1]; outcome 1 on the last token → [−0.05, 1.1]
  const kl = klTokenRewards([[-1, -2]], [[-1.5, -1]], 0.1, 'k1');
  close(kl.tokenRewards[0], [-0.05, 0.1]);
  close([kl.meanKl], [-0.25]);
  // γ = 1: G = [1.05, 1.1]
  const r = computeAdvantages('reinforce_pp', { rewards: [1], groupIds: [0], lengths: [2], tokenRewards: kl.tokenRewards });
  close(r.tokenAdvantages![0], whiten([1.05, 1.1]));
  // k3 with verl's clamps: d = 0.5 → e^−0.5 + 0.5 − 1 = 0.1065307
  close(klTokenRewards([[0.5]], [[0]], 1, 'k3').tokenRewards[0], [-(Math.exp(-0.5) - 0.5)]);
});

test('KL controllers: fixed never moves; adaptive β ← β(1 + clip(KL/target − 1, ±0.2)·n/horizon)', () => {
  const f = new FixedKlController(0.1);
  f.update();
  assert.equal(f.value, 0.1);
  const a = new AdaptiveKlController(0.1, 0.05, 100);
  a.update(0.1, 10); // KL twice the target: error clipped to +0.2 → ×1.02
  close([a.value], [0.102], 1e-12);
  a.update(0.04, 10); // 0.04/0.05 − 1 = −0.2 → ×0.98
  close([a.value], [0.102 * 0.98], 1e-12);
  a.update(0.05, 10); // on target: unchanged
  close([a.value], [0.102 * 0.98], 1e-12);
  rejectsInvalid(() => new AdaptiveKlController(0.1, 0.05, 0), /horizon/);
});

test('verl apply_kl_penalty + AdaptiveKLController (ray_trainer.py, core_algos.py @ b178a3cd), transcribed', () => {
  // kld = k1(old, ref) · mask; token_level_rewards = scores − β·kld; current_kl = mean over rows of masked_mean(kld, axis=−1);
  // kl_ctrl.update(current_kl, n_steps=batch_size). Rows of 3 and 1 tokens: d = [[0.5, −1, 0], [1]].
  const r = klTokenRewards([[-1, -2, -0.5], [-1]], [[-1.5, -1, -0.5], [-2]], 0.1, 'k1');
  close(r.tokenRewards[0], [-0.05, 0.1, 0]);
  close(r.tokenRewards[1], [-0.1]);
  // Row means −1/6 and 1 → current_kl 5/12 (a token mean would give 0.125).
  close([r.meanKl], [5 / 12], 1e-12);
  // AdaptiveKLController(init 0.1, target 0.2, horizon 100): error = clip(5/12 / 0.2 − 1, −0.2, 0.2) = 0.2; ×(1 + 0.2·2/100).
  const ctl = new AdaptiveKlController(0.1, 0.2, 100);
  ctl.update(r.meanKl, 2);
  close([ctl.value], [0.1004], 1e-12);
});

test('DAPO dynamic sampling: verl keeps a group of one response, "drop" treats it as zero-signal', () => {
  const rewards = [1, 0, 1, 1, 0.5];
  const ids = ['a', 'a', 'b', 'b', 'c'];
  assert.deepEqual(dynamicSamplingFilter(rewards, ids).keep, [0, 1, 4]);
  const dropped = dynamicSamplingFilter(rewards, ids, { singleton: 'drop' });
  assert.deepEqual(dropped.keep, [0, 1]);
  assert.deepEqual(dropped.droppedGroupIds, ['b', 'c']);
});

test('egrpo: γ̂ over the whole group (paper) or over well-formed rollouts only; other components compose', () => {
  const s = { correct: [false, false, false], formatOk: [true, true, false], entityRate: [0.4, 0.2, 0.8] };
  // group max = 0.8 (the malformed rollout counts): 0.5·[0.5, 0.25] and 0 for the format error
  close(egrpoShape(s, [0, 0, 0], { alpha: 0.5, entityNorm: 'group_max' }), [0.25, 0.125, 0]);
  // well-formed max = 0.4: 0.5·[1, 0.5]
  close(egrpoShape(s, [0, 0, 0], { alpha: 0.5, entityNorm: 'group_max_well_formed' }), [0.5, 0.25, 0]);
  // other weighted components (e.g. 0.1·format) are added to the shaped reward
  close(egrpoShape({ ...s, extra: [0.1, 0, 0.1] }, [0, 0, 0], { alpha: 0.5, entityNorm: 'group_max' }), [0.35, 0.125, 0.1]);
});

test('gdpo with a single reward component is grpo (NVlabs falls back when len(reward_weights) == 1)', () => {
  const input = { rewards: [1, 0, 1], groupIds: [0, 0, 0], components: [[1], [0], [1]] };
  close(computeAdvantages('gdpo', input, { eps: 1e-4 }).advantages, computeAdvantages('grpo', input, { eps: 1e-4 }).advantages, 1e-12);
  // μ = 2/3, σ = sqrt((2·(1/3)² + (2/3)²)/2) = sqrt(1/3)
  const s = Math.sqrt(1 / 3);
  close(computeAdvantages('gdpo', input, { eps: 1e-4 }).advantages, [1 / 3 / (s + 1e-4), -2 / 3 / (s + 1e-4), 1 / 3 / (s + 1e-4)]);
});

test('remax: A_t = G_t − greedy reward (undiscounted, no whitening)', () => {
  const r = computeAdvantages('remax', { rewards: [1, 0], groupIds: [0, 0], lengths: [2, 1], baselines: [0.5, 0.5] });
  assert.deepEqual(r.tokenAdvantages, [[0.5, 0.5], [-0.5]]);
  close(r.advantages, [0.5, -0.5]);
  rejectsInvalid(() => computeAdvantages('remax', { rewards: [1], groupIds: [0] }), /baselines/);
});

test('grpo_passk: only the best response gets (r_max − r_2nd)/(σ + eps)', () => {
  // rewards [1, 3, 2]: best 3, second 2; σ = 1 (N−1)
  close(computeAdvantages('grpo_passk', { rewards: [1, 3, 2], groupIds: [0, 0, 0] }).advantages, [0, 1 / (1 + 1e-6), 0]);
  close(computeAdvantages('grpo_passk', { rewards: [1, 3, 2], groupIds: [0, 0, 0] }, { scale: 'none' }).advantages, [0, 1, 0]);
  rejectsInvalid(() => computeAdvantages('grpo_passk', { rewards: [1], groupIds: [0] }), /at least 2/);
});

test('gae: δ_t = r_t + γV_{t+1} − V_t, A_t = δ_t + γλA_{t+1}, whitened', () => {
  // V = [0.2, 0.4, 0.6], outcome 1 on the last token, γ 0.9, λ 0.8 (γλ = 0.72)
  // t2: δ = 1 − 0.6 = 0.4 → A = 0.4; t1: δ = 0.9·0.6 − 0.4 = 0.14 → A = 0.14 + 0.72·0.4 = 0.428
  // t0: δ = 0.9·0.4 − 0.2 = 0.16 → A = 0.16 + 0.72·0.428 = 0.46816
  const r = computeAdvantages('gae', { rewards: [1], groupIds: [0], lengths: [3], values: [[0.2, 0.4, 0.6]] }, { gamma: 0.9, lambda: 0.8 });
  close(r.tokenAdvantages![0], whiten([0.46816, 0.428, 0.4]));
  rejectsInvalid(() => computeAdvantages('gae', { rewards: [1], groupIds: [0], lengths: [3] }), /value head/);
});

test('seed_grpo: grpo × (1 − α·SE/ln G), SE over meaning clusters', () => {
  // clusters [a, a, b, c]: SE = −(0.5 ln 0.5 + 2·0.25 ln 0.25) = 1.0397208; ln 4 = 1.3862944 → ratio 0.75
  close([semanticEntropy(['a', 'a', 'b', 'c'])], [1.0397208]);
  // grpo on [1, 1, 0, 0]: μ 0.5, σ = sqrt(1/3) → ±0.8660254; × (1 − 0.75) = ±0.2165064
  const r = computeAdvantages('seed_grpo', { rewards: [1, 1, 0, 0], groupIds: [0, 0, 0, 0], clusters: ['a', 'a', 'b', 'c'] });
  close(r.advantages, [0.2165064, 0.2165064, -0.2165064, -0.2165064]);
  // all answers agree: SE = 0, the grpo advantage is untouched
  const same = computeAdvantages('seed_grpo', { rewards: [1, 0], groupIds: [0, 0], clusters: ['x', 'x'] });
  close(same.advantages, computeAdvantages('grpo', { rewards: [1, 0], groupIds: [0, 0] }).advantages);
});

test('dagrpo: pairs with indistinct fine-grained scores leave the pairwise sum; τ = 0 is grpo', () => {
  const input = { rewards: [1, 0, 0], groupIds: [0, 0, 0], scores: [0.9, 0.85, 0.1] };
  const s = Math.sqrt(1 / 3) + 1e-6;
  // i0: pair (0,1) masked (|0.05| < 0.1), pair (0,2) kept → 1/(3σ); i1: only (1,2): 0; i2: (2,0): −1/(3σ)
  close(computeAdvantages('dagrpo', input, { distinctThreshold: 0.1 }).advantages, [1 / (3 * s), 0, -1 / (3 * s)]);
  close(computeAdvantages('dagrpo', input, { distinctThreshold: 0 }).advantages, computeAdvantages('grpo', input).advantages);
});

test('mo_grpo: each component normalized in its group before the sum, then grpo', () => {
  // comp0 [1,0,1] → [0.57735, −1.1547, 0.57735]; comp1 [0,0,1] → [−0.57735, −0.57735, 1.1547]; S = [0, −√3, √3]
  // grpo of S: μ 0, σ = √3 → [0, −1, 1]
  const r = computeAdvantages('mo_grpo', { rewards: [0, 0, 0], groupIds: [0, 0, 0], components: [[1, 0], [0, 0], [1, 1]] }, { eps: 0 });
  close(r.shapedRewards!, [0, -Math.sqrt(3), Math.sqrt(3)]);
  close(r.advantages, [0, -1, 1]);
});

test('raft, reinforce_rej, p3o: accepted-only, r − μ on mixed groups, pairwise Σ(r_i − r_j)/(2(G−1))', () => {
  close(computeAdvantages('raft', { rewards: [1, 0.5, 0], groupIds: [0, 0, 0] }).advantages, [1, 0, 0]);
  close(computeAdvantages('reinforce_rej', { rewards: [1, 0, 1, 1], groupIds: ['a', 'a', 'b', 'b'] }).advantages, [0.5, -0.5, 0, 0]);
  close(computeAdvantages('p3o', { rewards: [1, 0, 0], groupIds: [0, 0, 0] }).advantages, [0.5, -0.25, -0.25]);
});

test('polychromic: a diverse answer gains advantage even when every reward is equal', () => {
  // rewards [1,1,1], clusters [a,a,b], sets of 2: f{0,1} = 1·1/2, f{0,2} = 1, f{1,2} = 1 → mean 5/6
  // i0: (0.5 + 1)/2 − 5/6 = −1/12; i1: −1/12; i2: 1 − 5/6 = 1/6
  const r = computeAdvantages('polychromic', { rewards: [1, 1, 1], groupIds: [0, 0, 0], clusters: ['a', 'a', 'b'] }, { setSize: 2 });
  close(r.advantages, [-1 / 12, -1 / 12, 1 / 6]);
  rejectsInvalid(() => computeAdvantages('polychromic', { rewards: [1, 1], groupIds: [0, 0] }), /clusters/);
});

test('OTC: the paper\'s product α·r_tool·r_base vs agro\'s additive gated term, both pinned', () => {
  // m = 2 calls, group optimum n = 1: f = 2nm/(m+n) = 4/3; r_tool = sin(fπ/2n) = sin(2π/3) = 0.8660254
  const ctx = { toolCalls: 2, optimalToolCalls: 1, correct: true, answer: 'x', goldAnswers: ['x'] };
  const product = prepareRewards([{ name: 'tool_efficiency', weight: 1 }]);
  const additive = prepareRewards([{ name: 'exact_match', weight: 1 }, { name: 'tool_efficiency', weight: 0.2 }]);
  close([scoreEpisode(ctx, product).total], [0.8660254]);
  close([scoreEpisode(ctx, additive).total], [1 + 0.2 * 0.8660254]);
  // a wrong answer: 0 under both
  const wrong = { ...ctx, correct: false, answer: 'y' };
  close([scoreEpisode(wrong, product).total, scoreEpisode(wrong, additive).total], [0, 0]);
});
