import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs-core';
import { setupTf } from './tf_setup.ts';
import { advantages, select, signalRewards, zeroSignalGroups, type Scored } from '../../src/rl/phases.ts';
import { lossConfig, resolveAlgo } from '../../src/rl/algo-config.ts';
import { prepareRewards } from '../../src/rl/rewards.ts';
import { computePolicyLoss } from '../../src/rl/losses.ts';

/** A scored episode with just what the advantage phase reads. */
function ep(group: number, total: number, tokens = 3): Scored {
  return {
    traj: { group, mask: [0, ...Array(tokens).fill(1)] } as unknown as Scored['traj'],
    ctx: { correct: total > 0, formatOk: true } as unknown as Scored['ctx'],
    score: { total, parts: {}, vector: [total] },
  };
}

const groups: Scored[][] = [
  [ep(0, 1), ep(0, 1), ep(0, 1), ep(0, 1)], // all right: no signal
  [ep(1, 0), ep(1, 1), ep(1, 0), ep(1, 1)],
  [ep(2, 0), ep(2, 0), ep(2, 0), ep(2, 0)], // all wrong: no signal
];

test('a group whose rewards are all equal gets zero advantages under every group-relative estimator, and no gradient', async () => {
  await setupTf();
  assert.equal(zeroSignalGroups(groups), 2);
  for (const name of ['grpo', 'dr_grpo', 'rloo', 'dapo', 'gspo']) {
    const algo = resolveAlgo(name, { kl: { coef: 0 } });
    const adv = advantages({ algo, rewards: prepareRewards(algo.rewards) }, groups).advantages;
    for (const i of [0, 1, 2, 3, 8, 9, 10, 11]) assert.equal(adv[i], 0, `${name}: episode ${i} of a zero-signal group has advantage ${adv[i]}`);
    assert.ok(adv.slice(4, 8).some((a) => a !== 0), `${name}: the mixed group has a signal`);
    // The policy loss of those episodes has zero gradient with respect to the log-probs.
    const zeroAdv = tf.tensor2d([[0, 0, 0], [0, 0, 0]]);
    const mask = tf.ones([2, 3]) as tf.Tensor2D;
    const old = tf.tensor2d([[-1, -2, -0.5], [-0.3, -1.2, -2]]);
    const g = tf.grad((lp: tf.Tensor) => computePolicyLoss({ logp: lp as tf.Tensor2D, oldLogp: old, advantages: zeroAdv, mask }, lossConfig(algo)).loss)(tf.add(old, 0.1));
    assert.ok(Array.from(g.dataSync()).every((x) => x === 0), `${name}: gradient ${Array.from(g.dataSync())}`);
  }
});

test('dynamic sampling keeps only the groups with a signal', () => {
  const kept = select(resolveAlgo('dapo'), groups);
  assert.equal(kept.dropped, 2);
  assert.deepEqual(kept.keep.map((g) => g[0].traj.group), [1]);
  assert.equal(select(resolveAlgo('grpo'), groups).keep.length, 3);
});

test('egrpo_sql: a group of wrong answers ranks its near-misses by SQL overlap, so it is not zero-signal and dynamic sampling keeps it', async () => {
  await setupTf();
  const algo = resolveAlgo('egrpo_sql', { dynamicSampling: { enabled: true } });
  const rewards = prepareRewards(algo.rewards);
  assert.deepEqual(rewards.map((r) => r.label), ['execution', 'sql_overlap', 'format']);
  // vector: [execution, sql_overlap, format]; total = 1·exec + 0·overlap + 0.1·format.
  const wrong = (group: number, overlap: number): Scored => ({
    traj: { group, mask: [0, 1, 1] } as unknown as Scored['traj'],
    ctx: { correct: false, formatOk: true } as unknown as Scored['ctx'],
    score: { total: 0.1, parts: { sql_overlap: { value: overlap, reason: '' } }, vector: [0, overlap, 1] },
  });
  const near = [[wrong(0, 0.8), wrong(0, 0.4), wrong(0, 0.4), wrong(0, 0)]];
  assert.equal(zeroSignalGroups(near), 1, 'by total reward every answer scores the same');
  const c = { algo, rewards };
  const shaped = signalRewards(c, near)[0];
  // α = 0.5, γ normalized by the group's best (0.8), plus the format reward 0.1 (add_others).
  const want = [0.5 + 0.1, 0.25 + 0.1, 0.25 + 0.1, 0 + 0.1];
  shaped.forEach((x, i) => assert.ok(Math.abs(x - want[i]) < 1e-12, `response ${i}: ${x} vs ${want[i]}`));
  assert.equal(zeroSignalGroups(near, signalRewards(c, near)), 0);
  assert.equal(select(algo, near, signalRewards(c, near)).keep.length, 1);
  const adv = advantages(c, near).advantages;
  assert.ok(adv[0] > adv[1] && adv[1] === adv[2] && adv[2] > adv[3], `the nearest miss gets the largest advantage: ${adv}`);
});
