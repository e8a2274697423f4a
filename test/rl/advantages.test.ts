import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgroError } from '../../src/errors.ts';
import { computeAdvantages, dynamicSamplingFilter, egrpoShape, type AdvantageName } from '../../src/rl/advantages.ts';
import { Rng } from '../../src/util/rng.ts';

function close(actual: readonly number[], expected: readonly number[], tol = 1e-9): void {
  assert.equal(actual.length, expected.length, `length ${actual.length} vs ${expected.length}`);
  actual.forEach((a, i) => assert.ok(Math.abs(a - expected[i]) <= tol, `[${i}] ${a} vs ${expected[i]}`));
}

function rejectsInvalid(fn: () => unknown, re: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof AgroError && e.kind === 'invalid_input' && re.test(e.message));
}

const g3 = { rewards: [1, 3, 5], groupIds: [0, 0, 0] };

test('grpo: (r − μ)/(σ + eps) with the sample std and verl eps 1e-6 by default', () => {
  // μ = 3; sample var = ((1−3)² + 0 + (5−3)²)/(3−1) = 8/2 = 4 → σ = 2
  const a = computeAdvantages('grpo', g3).advantages;
  close(a, [-2 / (2 + 1e-6), 0, 2 / (2 + 1e-6)]);
  // TRL's eps 1e-4 gives a visibly different number: 2/2.0001 = 0.99995 vs verl 0.9999995
  const trl = computeAdvantages('grpo', g3, { eps: 1e-4 }).advantages;
  close(trl, [-2 / 2.0001, 0, 2 / 2.0001]);
  assert.ok(Math.abs(a[2] - trl[2]) > 4e-5);
});

test('grpo: population std is an option (σ = sqrt(8/3))', () => {
  const a = computeAdvantages('grpo', g3, { std: 'population' }).advantages;
  const sigma = Math.sqrt(8 / 3); // 1.63299
  close(a, [-2 / (sigma + 1e-6), 0, 2 / (sigma + 1e-6)]);
});

test('grpo normalizes each group on its own, whatever the order of the responses', () => {
  // group a = [1, 3]: μ 2, σ = sqrt(((−1)² + 1²)/1) = √2; group b = [10, 20]: μ 15, σ = sqrt(50) = 5√2
  const a = computeAdvantages('grpo', { rewards: [1, 10, 3, 20], groupIds: ['a', 'b', 'a', 'b'] }).advantages;
  close(a, [-1 / (Math.SQRT2 + 1e-6), -5 / (Math.sqrt(50) + 1e-6), 1 / (Math.SQRT2 + 1e-6), 5 / (Math.sqrt(50) + 1e-6)]);
});

test('grpo scale "batch" divides by the batch std (TRL scale_rewards="batch")', () => {
  // batch [1, 10, 3, 20]: mean 8.5, deviations −7.5, 1.5, −5.5, 11.5 → Σ² = 56.25+2.25+30.25+132.25 = 221; σ = sqrt(221/3)
  const sb = Math.sqrt(221 / 3);
  const a = computeAdvantages('grpo', { rewards: [1, 10, 3, 20], groupIds: ['a', 'b', 'a', 'b'] }, { scale: 'batch', eps: 1e-4 }).advantages;
  close(a, [-1 / (sb + 1e-4), -5 / (sb + 1e-4), 1 / (sb + 1e-4), 5 / (sb + 1e-4)]);
});

test('edge cases: identical rewards give 0; a group of one follows verl (μ=0, σ=1) or TRL (0)', () => {
  close(computeAdvantages('grpo', { rewards: [0.5, 0.5, 0.5], groupIds: [1, 1, 1] }).advantages, [0, 0, 0]);
  close(computeAdvantages('grpo', { rewards: [0.7], groupIds: [1] }).advantages, [0.7 / (1 + 1e-6)]);
  close(computeAdvantages('grpo', { rewards: [0.7], groupIds: [1] }, { singleton: 'zero' }).advantages, [0]);
  // rloo keeps r for a group of one (verl rloo); rloo_vectorized's behaviour is singleton 'zero'
  close(computeAdvantages('rloo', { rewards: [0.7], groupIds: [1] }).advantages, [0.7]);
  close(computeAdvantages('rloo', { rewards: [0.7], groupIds: [1] }, { singleton: 'zero' }).advantages, [0]);
  close(computeAdvantages('dr_grpo', { rewards: [0.7], groupIds: [1] }).advantages, [0.7]);
});

test('dr_grpo: r − μ, no std', () => {
  close(computeAdvantages('dr_grpo', g3).advantages, [-2, 0, 2]);
});

test('rloo: n/(n−1)(r − μ) = r − mean of the others', () => {
  // 1 − mean(3, 5) = −3; 3 − mean(1, 5) = 0; 5 − mean(1, 3) = 3; and 3/2·(r − 3) gives the same
  close(computeAdvantages('rloo', g3).advantages, [-3, 0, 3]);
});

test('invariant: grpo, dr_grpo and rloo advantages sum to zero within every group', () => {
  const rng = new Rng(7);
  const rewards = Array.from({ length: 24 }, () => rng.next());
  const groupIds = rewards.map((_, i) => Math.floor(i / 6));
  for (const name of ['grpo', 'dr_grpo', 'rloo'] as AdvantageName[]) {
    const a = computeAdvantages(name, { rewards, groupIds }).advantages;
    for (let g = 0; g < 4; g++) {
      const s = a.slice(g * 6, g * 6 + 6).reduce((x, y) => x + y, 0);
      assert.ok(Math.abs(s) < 1e-9, `${name} group ${g} sums to ${s}`);
    }
  }
});

test('opo: length-weighted baseline', () => {
  // b = (2·1 + 6·0)/(2 + 6) = 0.25 → A = [0.75, −0.25]
  close(computeAdvantages('opo', { rewards: [1, 0], groupIds: [0, 0], lengths: [2, 6] }).advantages, [0.75, -0.25]);
  rejectsInvalid(() => computeAdvantages('opo', { rewards: [1, 0], groupIds: [0, 0] }), /lengths/);
});

test('gpg: α = B / #nonzero, A = α(r − μ)', () => {
  // B = 4, nonzero = 2 → α = 2; group a [1, 0] μ 0.5; group b [0, 1] μ 0.5
  close(computeAdvantages('gpg', { rewards: [1, 0, 0, 1], groupIds: ['a', 'a', 'b', 'b'] }).advantages, [1, -1, -1, 1]);
});

test('reinforce_pp_baseline: group-centred, then whitened over tokens (Bessel over the token count)', () => {
  // centred: a [1,0] → [0.5, −0.5]; b [1,1] → [0, 0]; one token each: mean 0, var = 0.5/4 · 4/3 = 1/6
  const input = { rewards: [1, 0, 1, 1], groupIds: ['a', 'a', 'b', 'b'] };
  const s = Math.sqrt(1 / 6 + 1e-8);
  close(computeAdvantages('reinforce_pp_baseline', input).advantages, [0.5 / s, -0.5 / s, 0, 0], 1e-9);
  // lengths [3,1,1,1]: tokens [.5,.5,.5,−.5,0,0], mean 1/6; Σ(x−m)² = 3·(1/3)² + (2/3)² + 2·(1/6)² = 5/6;
  // var = 5/6/6 · 6/5 = 1/6 → first response (1/3)/σ, second (−2/3)/σ
  const r = computeAdvantages('reinforce_pp_baseline', { ...input, lengths: [3, 1, 1, 1] });
  close(r.advantages, [1 / 3 / s, -2 / 3 / s, -1 / 6 / s, -1 / 6 / s], 1e-9);
  assert.equal(r.tokenAdvantages?.[0].length, 3);
});

test('reinforce_pp: discounted returns whitened over all tokens', () => {
  // rewards [1, 0], lengths [2, 1], γ = 0.5: returns [[0.5, 1], [0]]; mean 0.5; Σ(x−m)² = 0.5; var = 0.5/3 · 3/2 = 0.25
  const r = computeAdvantages('reinforce_pp', { rewards: [1, 0], groupIds: [0, 0], lengths: [2, 1] }, { gamma: 0.5 });
  const s = Math.sqrt(0.25 + 1e-8);
  close(r.tokenAdvantages![0], [0, 0.5 / s]);
  close(r.tokenAdvantages![1], [-0.5 / s]);
  rejectsInvalid(() => computeAdvantages('reinforce_pp', { rewards: [1], groupIds: [0] }), /at least 2 policy tokens/);
});

test('gdpo: each component normalized in its group, weighted sum, batch whitening (eps 1e-4)', () => {
  // group a: comp0 [1,0] → ±0.5/(√0.5+1e-4) = ±k, comp1 [0,0] → 0; group b: comp0 [1,1] → 0, comp1 [1,0] → ±k
  // S = [k, −k, k, −k], mean 0, sample std = k·sqrt(4/3) → A = ±k/(k·sqrt(4/3) + 1e-4)
  const k = 0.5 / (Math.sqrt(0.5) + 1e-4);
  const sd = k * Math.sqrt(4 / 3);
  const a = computeAdvantages(
    'gdpo',
    { rewards: [1, 0, 2, 1], groupIds: ['a', 'a', 'b', 'b'], components: [[1, 0], [0, 0], [1, 1], [1, 0]] },
    { eps: 1e-4 },
  ).advantages;
  close(a, [k / (sd + 1e-4), -k / (sd + 1e-4), k / (sd + 1e-4), -k / (sd + 1e-4)]);
  // weights scale the components before the sum: weight 0 on comp1 leaves only group a's signal
  // S = [k, −k, 0, 0]: mean 0, sample std = k·sqrt(2/3)
  const w = computeAdvantages(
    'gdpo',
    { rewards: [1, 0, 2, 1], groupIds: ['a', 'a', 'b', 'b'], components: [[1, 0], [0, 0], [1, 1], [1, 0]], componentWeights: [1, 0] },
    { eps: 1e-4 },
  ).advantages;
  const sd2 = k * Math.sqrt(2 / 3);
  close(w, [k / (sd2 + 1e-4), -k / (sd2 + 1e-4), 0, 0]);
  rejectsInvalid(() => computeAdvantages('gdpo', { rewards: [1, 0], groupIds: [0, 0] }), /components/);
});

test('egrpo: 1 correct, α·γ/max γ wrong, 0 format error, then grpo', () => {
  const signals = { correct: [true, false, false, false], formatOk: [true, true, true, false], entityRate: [1, 0.5, 0.25, 0.9] };
  // max γ over well-formed = 1 → [1, 0.5·0.5, 0.5·0.25, 0] = [1, 0.25, 0.125, 0]
  close(egrpoShape(signals, [0, 0, 0, 0], { alpha: 0.5, entityNorm: 'group_max' }), [1, 0.25, 0.125, 0]);
  // no correct answer: rates [0.4, 0.2] → group_max: [0.5·1, 0.5·0.5]; none: [0.5·0.4, 0.5·0.2]
  const wrong = { correct: [false, false], formatOk: [true, true], entityRate: [0.4, 0.2] };
  close(egrpoShape(wrong, [0, 0], { alpha: 0.5, entityNorm: 'group_max' }), [0.5, 0.25]);
  close(egrpoShape(wrong, [0, 0], { alpha: 0.5, entityNorm: 'none' }), [0.2, 0.1]);
  // grpo on [0.5, 0.25]: μ 0.375, σ = sqrt(2·0.125²/1) = 0.125√2
  const r = computeAdvantages('egrpo', { rewards: [0, 0], groupIds: [0, 0], egrpo: wrong });
  const sigma = 0.125 * Math.SQRT2;
  close(r.advantages, [0.125 / (sigma + 1e-6), -0.125 / (sigma + 1e-6)]);
  close(r.shapedRewards!, [0.5, 0.25]);
});

test('dynamic sampling drops groups with equal rewards and reports how many', () => {
  const d = dynamicSamplingFilter([1, 1, 0, 1, 0, 0], ['a', 'a', 'b', 'b', 'c', 'c']);
  assert.deepEqual(d.keep, [2, 3]);
  assert.equal(d.keptGroups, 1);
  assert.equal(d.droppedGroups, 2);
  assert.deepEqual(d.droppedGroupIds, ['a', 'c']);
});

test('NaN, Inf, length mismatches and unknown names are rejected with invalid_input', () => {
  rejectsInvalid(() => computeAdvantages('grpo', { rewards: [1, Number.NaN], groupIds: [0, 0] }), /rewards\[1\] is NaN/);
  rejectsInvalid(() => computeAdvantages('rloo', { rewards: [Infinity, 1], groupIds: [0, 0] }), /Infinity/);
  rejectsInvalid(() => computeAdvantages('grpo', { rewards: [1, 2], groupIds: [0] }), /2 entries but groupIds has 1/);
  rejectsInvalid(() => computeAdvantages('grpo', { rewards: [], groupIds: [] }), /empty/);
  rejectsInvalid(() => computeAdvantages('ppo', g3), /unknown advantage estimator "ppo" \(known: grpo, dr_grpo/);
  rejectsInvalid(() => dynamicSamplingFilter([Number.NaN], [0]), /NaN/);
});
