/**
 * KL in the reward (verl `use_kl_in_reward`, REINFORCE++): each policy token's reward gets −β·KL(old ‖ ref)
 * before the advantages, instead of a KL term in the loss; β is held fixed or adapted toward a target KL.
 * Plain numbers: it runs on the log-probs the trainer already has, before any gradient.
 *
 * Source: volcengine/verl verl/trainer/ppo/core_algos.py (FixedKLController, AdaptiveKLController, kl_penalty)
 * and ray_trainer.py apply_kl_penalty.
 */
import { invalid } from './validate.ts';

export type KlRewardEstimator = 'k1' | 'k2' | 'k3' | 'abs';

/** Per-token KL estimate of d = logp − refLogp as verl's kl_penalty_forward (k3 with its clamps). */
export function klEstimate(logp: number, refLogp: number, estimator: KlRewardEstimator): number {
  const d = logp - refLogp;
  switch (estimator) {
    case 'k1':
      return d;
    case 'abs':
      return Math.abs(d);
    case 'k2':
      return 0.5 * d * d;
    case 'k3': {
      const nd = Math.min(20, Math.max(-20, -d));
      return Math.min(10, Math.max(-10, Math.exp(nd) - nd - 1));
    }
  }
}

/**
 * Token rewards −β·KL_t over each response's policy tokens (rows of old and reference log-probs of the policy
 * tokens), and the batch's KL as verl's apply_kl_penalty reads it for the adaptive controller: each response's mean
 * over its tokens, then the mean over responses (`current_kl`). Feed the rows to computeAdvantages as
 * `tokenRewards` (reinforce_pp, remax, gae).
 */
export function klTokenRewards(
  oldLogp: readonly (readonly number[])[],
  refLogp: readonly (readonly number[])[],
  beta: number,
  estimator: KlRewardEstimator = 'k1',
): { tokenRewards: number[][]; meanKl: number } {
  if (oldLogp.length !== refLogp.length) throw invalid(`oldLogp has ${oldLogp.length} rows but refLogp has ${refLogp.length}`);
  const rowMeans: number[] = [];
  const tokenRewards = oldLogp.map((row, i) => {
    if (row.length !== refLogp[i].length) throw invalid(`oldLogp[${i}] has ${row.length} tokens but refLogp[${i}] has ${refLogp[i].length}`);
    let sum = 0;
    const out = row.map((lp, t) => {
      const kl = klEstimate(lp, refLogp[i][t], estimator);
      if (!Number.isFinite(kl)) throw invalid(`KL at row ${i}, token ${t} is ${kl}`);
      sum += kl;
      return -beta * kl;
    });
    // verl's masked_mean of a row without tokens is 0/(0 + 1e-8) = 0.
    rowMeans.push(row.length ? sum / row.length : 0);
    return out;
  });
  return { tokenRewards, meanKl: rowMeans.length ? rowMeans.reduce((a, b) => a + b, 0) / rowMeans.length : 0 };
}

export interface KlController {
  readonly value: number;
  /** Called once per step with the step's mean KL and the number of samples (verl passes the batch size). */
  update(currentKl: number, nSteps: number): void;
}

/** verl FixedKLController: β never changes. */
export class FixedKlController implements KlController {
  constructor(readonly value: number) {}
  update(): void {}
}

/**
 * verl AdaptiveKLController (Ziegler et al. 2019, arXiv 1909.08593): e = clip(KL/target − 1, −0.2, 0.2),
 * β ← β·(1 + e·n/horizon).
 */
export class AdaptiveKlController implements KlController {
  value: number;
  constructor(
    init: number,
    readonly target: number,
    readonly horizon: number,
  ) {
    if (!(horizon > 0)) throw invalid(`horizon must be > 0, got ${horizon}`);
    if (!(target > 0)) throw invalid(`target KL must be > 0, got ${target}`);
    this.value = init;
  }
  update(currentKl: number, nSteps: number): void {
    const e = Math.min(0.2, Math.max(-0.2, currentKl / this.target - 1));
    this.value *= 1 + (e * nSteps) / this.horizon;
  }
}

export function klController(cfg: { type: 'fixed' | 'adaptive'; coef: number; target: number; horizon: number }): KlController {
  return cfg.type === 'fixed' ? new FixedKlController(cfg.coef) : new AdaptiveKlController(cfg.coef, cfg.target, cfg.horizon);
}
