import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs-core';
import { AgroError } from '../../src/errors.ts';
import { advantageParams, lossConfig, PRESET_NAMES, resolveAlgo } from '../../src/rl/algo-config.ts';
import { computeAdvantages } from '../../src/rl/advantages.ts';
import { computePolicyLoss } from '../../src/rl/losses.ts';
import { prepareRewards } from '../../src/rl/rewards.ts';
import { setupTf } from './tf_setup.ts';

await setupTf({ gradients: false });

test('every preset resolves to a valid config whose rewards and names are known', () => {
  for (const name of PRESET_NAMES) {
    const c = resolveAlgo(name);
    assert.ok(prepareRewards(c.rewards).length >= 1, name);
  }
  assert.equal(PRESET_NAMES.length, 48);
});

test('presets carry the defaults they claim', () => {
  const grpo = resolveAlgo('grpo');
  assert.deepEqual(
    [grpo.advantage.eps, grpo.advantage.std, grpo.loss.clipLow, grpo.loss.clipHigh, grpo.loss.dualClip, grpo.loss.logRatioClamp, grpo.kl.coef, grpo.kl.estimator],
    [1e-6, 'sample', 0.2, 0.2, 3, 20, 0.001, 'k3'],
  );
  const trl = resolveAlgo('trl_grpo');
  assert.deepEqual([trl.advantage.eps, trl.advantage.singleton, trl.loss.dualClip, trl.loss.logRatioClamp, trl.kl.coef, trl.loss.aggregation], [1e-4, 'zero', null, null, 0, 'token-mean']);
  const dapo = resolveAlgo('dapo');
  assert.deepEqual([dapo.loss.clipLow, dapo.loss.clipHigh, dapo.loss.aggregation, dapo.dynamicSampling.enabled], [0.2, 0.28, 'token-mean', true]);
  assert.ok(dapo.rewards.some((r) => r.name === 'overlong'));
  assert.equal(resolveAlgo('dr_grpo').loss.aggregation, 'seq-mean-token-sum-norm');
  assert.equal(resolveAlgo('gspo').loss.name, 'gspo');
});

test('overrides merge deeply and are validated; errors are one line', () => {
  const c = resolveAlgo('dapo', { loss: { clipHigh: 0.3 }, advantage: { eps: 1e-4 } });
  assert.equal(c.loss.clipHigh, 0.3);
  assert.equal(c.loss.clipLow, 0.2); // kept from the preset
  assert.equal(c.advantage.eps, 1e-4);
  assert.throws(
    () => resolveAlgo('ppo2'),
    (e: unknown) => e instanceof AgroError && e.kind === 'usage' && e.message === `unknown algorithm "ppo2" (known: ${PRESET_NAMES.join(', ')})` && e.message.includes('grpo, dr_grpo, dapo'),
  );
  assert.throws(
    () => resolveAlgo('grpo', { loss: { dualClip: 0.5 } }),
    (e: unknown) => e instanceof AgroError && e.kind === 'invalid_input' && /loss\.dualClip/.test(e.message) && !e.message.includes('\n'),
  );
  assert.throws(() => resolveAlgo('grpo', { advantage: { name: 'nope' } } as Record<string, unknown>), /advantage\.name/);
  assert.throws(() => resolveAlgo('grpo', { bogus: 1 } as Record<string, unknown>), /bogus/);
});

test('the same rollouts give verl numbers under grpo and TRL numbers under trl_grpo', () => {
  // rewards [1, 3, 5] in one group: σ = 2 → verl A = 2/(2 + 1e-6), TRL A = 2/(2 + 1e-4)
  const input = { rewards: [1, 3, 5], groupIds: [0, 0, 0] };
  const verl = resolveAlgo('grpo');
  const trl = resolveAlgo('trl_grpo');
  assert.ok(Math.abs(computeAdvantages(verl.advantage.name, input, advantageParams(verl)).advantages[2] - 2 / 2.000001) < 1e-12);
  assert.ok(Math.abs(computeAdvantages(trl.advantage.name, input, advantageParams(trl)).advantages[2] - 2 / 2.0001) < 1e-12);
  // a token with A = −1 and ρ = e^25: verl clamps (e^20) then dual-clips (3·1 = 3); TRL pays ρ in full
  tf.tidy(() => {
    // refLogp = logp: verl's KL term (coef 0.001) is then exactly 0
    const lossInput = { logp: tf.tensor2d([[-1]]), oldLogp: tf.tensor2d([[-26]]), advantages: tf.tensor1d([-1]), mask: tf.tensor2d([[1]]), refLogp: tf.tensor2d([[-1]]) };
    assert.ok(Math.abs(computePolicyLoss(lossInput, lossConfig(verl)).metrics.pgLoss - 3) < 1e-5);
    const t = computePolicyLoss(lossInput, lossConfig(trl)).metrics.pgLoss;
    assert.ok(Math.abs(t / Math.exp(25) - 1) < 1e-5, String(t));
  });
});
