/**
 * The RL algorithm configuration: one zod schema whose defaults are verl's GRPO, and named presets that
 * override it. `resolveAlgo('dapo', { loss: { clipHigh: 0.3 } })` gives a validated config.
 */
import { z } from 'zod';
import { AgroError, parseWith } from '../errors.ts';
import { ADVANTAGE_NAMES, type AdvantageParams } from './advantages.ts';
import { AGGREGATIONS, KL_ESTIMATORS, POLICY_LOSS_NAMES, type LossConfig, type PolicyLossParams } from './losses.ts';

const advantageSchema = z.strictObject({
  name: z.enum(ADVANTAGE_NAMES).default('grpo'),
  eps: z.number().min(0).default(1e-6),
  std: z.enum(['sample', 'population']).default('sample'),
  scale: z.enum(['group', 'batch', 'none']).default('group'),
  singleton: z.enum(['identity', 'zero']).default('identity'),
  gamma: z.number().min(0).max(1).default(1),
  lambda: z.number().min(0).max(1).default(1),
  returnReset: z.enum(['policy', 'mask']).default('policy'),
  alpha: z.number().min(0).default(0.5),
  entityNorm: z.enum(['group_max', 'group_max_well_formed', 'none']).default('group_max'),
  /** egrpo: 'paper' = the shaped reward alone; 'add_others' adds the other weighted reward components (format, tool use...). */
  egrpoCompose: z.enum(['paper', 'add_others']).default('paper'),
  seedAlpha: z.number().min(0).max(1).default(1),
  distinctThreshold: z.number().min(0).default(0.1),
  setSize: z.number().int().min(1).default(2),
  acceptThreshold: z.number().default(1),
});

const lossSchema = z.strictObject({
  name: z.enum(POLICY_LOSS_NAMES).default('ppo'),
  clipLow: z.number().min(0).max(1).default(0.2),
  clipHigh: z.number().min(0).default(0.2),
  dualClip: z.number().gt(1).nullable().default(3),
  logRatioClamp: z.number().positive().nullable().default(20),
  aggregation: z.enum(AGGREGATIONS).default('token-mean'),
  aggNormalizer: z.number().positive().nullable().default(null),
  /**
   * seq-mean-token-sum-norm's constant when aggNormalizer is null: 'step_longest' the longest prompt+response
   * sequence of the step (agro's historical choice), 'padded_response' the longest response of the step (verl,
   * loss_mask.shape[-1]), 'max_completion' B·maxResponseTokens (TRL dr_grpo: fixed max_completion_length).
   */
  aggNormalizerMode: z.enum(['step_longest', 'padded_response', 'max_completion']).default('padded_response'),
  seqLogRatioMax: z.number().default(10),
  emptySeqs: z.enum(['skip', 'count']).default('skip'),
  cispoClip: z.enum(['both', 'upper']).default('both'),
  delta: z.number().gt(1).nullable().default(null),
  tauPos: z.number().positive().default(1),
  tauNeg: z.number().positive().default(1.05),
  vespoKPos: z.number().default(2),
  vespoLambdaPos: z.number().positive().default(3),
  vespoKNeg: z.number().default(3),
  vespoLambdaNeg: z.number().positive().default(2),
  clipCovRatio: z.number().gt(0).max(1).default(2e-4),
  clipCovLb: z.number().default(1),
  clipCovUb: z.number().default(5),
  klCovRatio: z.number().gt(0).max(1).default(2e-4),
  klCovCoef: z.number().min(0).default(1),
  covSeed: z.number().int().min(0).default(0),
  topEntropyQuantile: z.number().min(0).max(1).nullable().default(null),
  r2vpoBeta: z.number().min(0).default(1),
  discoDelta: z.number().min(0).default(1e-4),
  discoBeta: z.number().min(0).default(1e3),
  regScale: z.number().positive().default(1),
});

const klSchema = z.strictObject({
  coef: z.number().min(0).default(0.001),
  estimator: z.enum(KL_ESTIMATORS).default('k3'),
  clamp: z.boolean().default(true),
});

const rewardSpecSchema = z.strictObject({
  name: z.string().min(1),
  weight: z.number().default(1),
  params: z.record(z.string(), z.unknown()).default({}),
  label: z.string().min(1).optional(),
});

export const algoConfigSchema = z.strictObject({
  advantage: advantageSchema.prefault({}),
  loss: lossSchema.prefault({}),
  kl: klSchema.prefault({}),
  entropyCoef: z.number().default(0),
  /** GTPO conflict-token weights on the advantages (group-math.ts gtpoTokenWeights); posBoost amplifies positive ones. */
  gtpo: z.strictObject({ enabled: z.boolean().default(false), posBoost: z.number().min(1).default(2) }).prefault({}),
  /** TRL mask_truncated_completions: truncated episodes leave the loss mask but still count in group statistics. */
  maskTruncated: z.boolean().default(false),
  /** LLDS likelihood-preserving regularizer (losses.ts lldsPenalty); 0 = off. */
  lldsCoef: z.number().min(0).default(0),
  /**
   * KL in the reward instead of (or beside) the loss (verl use_kl_in_reward): each policy token's reward gets
   * −β·KL(policy ‖ reference) before the advantages; β fixed or adapted toward `target` (verl kl_ctrl).
   */
  klInReward: z
    .strictObject({
      enabled: z.boolean().default(false),
      coef: z.number().min(0).default(0.001),
      estimator: z.enum(['k1', 'k2', 'k3', 'abs']).default('k1'),
      controller: z.enum(['fixed', 'adaptive']).default('fixed'),
      target: z.number().positive().default(0.1),
      horizon: z.number().positive().default(10000),
    })
    .prefault({}),
  /**
   * Which prompts a step trains on: the run's shuffled order; MMR1's variance-aware sampling after one pass; or
   * 'active', the run's order minus the prompts whose latest group was unanimous (all right or all wrong, so no
   * signal), each of which is rolled out again only on every `recheck`-th visit.
   */
  sampler: z
    .strictObject({
      name: z.enum(['order', 'mmr1', 'active']).default('order'),
      /** active: a prompt whose latest group was unanimous sits out recheck − 1 visits, then is rolled out again. */
      recheck: z.number().int().min(1).default(4),
      /** VPS = alpha·p(1−p) + beta·diversity; `mix` of each step's prompts drawn ∝ VPS, the rest uniformly. */
      alpha: z.number().min(0).default(1),
      beta: z.number().min(0).default(1),
      mix: z.number().min(0).max(1).default(0.5),
    })
    .prefault({}),
  /** Step- and turn-level credit on top of the advantages: SALT (trajectory graph), IGPO (information gain), M-GRPO (roles). */
  credit: z
    .strictObject({
      name: z.enum(['none', 'salt', 'igpo', 'mgrpo']).default('none'),
      /** igpo: discount over turns. */
      gamma: z.number().min(0).max(1).default(1),
      /** mgrpo: fixed sub-agent (tool-call turn) slots per rollout. */
      slots: z.number().int().min(1).default(2),
    })
    .prefault({}),
  /** DPPO's unbiased dynamic pruning: keep a response with p = clamp(|A|/max|A|, pMin, 1), weight 1/p. */
  dppo: z.strictObject({ enabled: z.boolean().default(false), pMin: z.number().gt(0).max(1).default(0.2) }).prefault({}),
  /** DaGRPO's off-policy anchors: a group without a correct response gets the environment's demonstration. */
  anchors: z.strictObject({ enabled: z.boolean().default(false) }).prefault({}),
  /** Scaf-GRPO: after `exemptSteps`, a group without a correct response is retried with hints of rising tiers. */
  scaffold: z.strictObject({ enabled: z.boolean().default(false), exemptSteps: z.number().int().min(0).default(0) }).prefault({}),
  rewards: z.array(rewardSpecSchema).min(1).default([
    { name: 'execution', weight: 1, params: {} },
    { name: 'format', weight: 0.1, params: {} },
  ]),
  dynamicSampling: z
    .strictObject({
      enabled: z.boolean().default(false),
      /** Extra generation rounds to refill dropped groups before training on what there is. */
      maxRounds: z.number().int().min(0).default(3),
      /** A group of one response: kept (verl's recipe, `std > 0 or len == 1`) or dropped as zero-signal. */
      singleton: z.enum(['keep', 'drop']).default('keep'),
    })
    .prefault({}),
});

export type AlgoConfig = z.infer<typeof algoConfigSchema>;
export type AlgoConfigInput = z.input<typeof algoConfigSchema>;

type DeepPartial<T> = T extends readonly unknown[] ? T : T extends object ? { [K in keyof T]?: DeepPartial<T[K]> } : T;
export type AlgoOverrides = DeepPartial<AlgoConfigInput>;

const SQL_REWARDS = [
  { name: 'execution', weight: 1 },
  { name: 'format', weight: 0.1 },
];

/** Each preset is a set of overrides on the schema defaults (= verl GRPO). */
export const PRESETS = {
  /** verl GRPO: eps 1e-6, sample std, ε 0.2/0.2, dual clip 3, ±20 clamp, token-mean, k3 KL loss 0.001. */
  grpo: {},
  /** Dr.GRPO: no std division, constant-normalizer aggregation, no KL. */
  dr_grpo: { advantage: { name: 'dr_grpo' }, loss: { aggregation: 'seq-mean-token-sum-norm' }, kl: { coef: 0 } },
  /** DAPO: clip-higher 0.2/0.28, token-mean, dynamic sampling, soft overlong punishment, no KL. */
  dapo: {
    loss: { clipLow: 0.2, clipHigh: 0.28, aggregation: 'token-mean' },
    kl: { coef: 0 },
    dynamicSampling: { enabled: true },
    rewards: [...SQL_REWARDS, { name: 'overlong', weight: 1, params: { maxLen: 1024, cache: 256 } }],
  },
  /** GSPO: sequence-level ratio, clip 3e-4/4e-4 (the paper's), seq-mean-token-mean, no KL. */
  gspo: { loss: { name: 'gspo', clipLow: 3e-4, clipHigh: 4e-4, dualClip: null, aggregation: 'seq-mean-token-mean' }, kl: { coef: 0 } },
  rloo: { advantage: { name: 'rloo' } },
  reinforce_pp: { advantage: { name: 'reinforce_pp' } },
  reinforce_pp_baseline: { advantage: { name: 'reinforce_pp_baseline' } },
  /** GDPO: per-reward group normalization then batch whitening; eps 1e-4 as NVlabs/GDPO and TRL. */
  gdpo: { advantage: { name: 'gdpo', eps: 1e-4 }, rewards: [{ name: 'execution', weight: 1 }, { name: 'format', weight: 1 }] },
  /** E-GRPO for search agents: entity-aware rewards for wrong answers, then GRPO. */
  egrpo: { advantage: { name: 'egrpo', alpha: 0.5, entityNorm: 'group_max' }, rewards: [{ name: 'exact_match', weight: 1 }] },
  /**
   * E-GRPO's shaping for the SQL agent: a wrong answer earns α·γ/max_group γ with γ = sql_overlap (F1 of the
   * tables, columns and literal values against the gold SQL), so a group where every answer is wrong still
   * ranks its near-misses (right query, one literal off) above unrelated SQL. The format reward is added.
   */
  egrpo_sql: {
    advantage: { name: 'egrpo', alpha: 0.5, entityNorm: 'group_max', egrpoCompose: 'add_others' },
    rewards: [{ name: 'execution', weight: 1 }, { name: 'sql_overlap', weight: 0 }, { name: 'format', weight: 0.1 }],
  },
  gpg: { advantage: { name: 'gpg' }, loss: { name: 'gpg' }, kl: { coef: 0 } },
  /** TRL GRPOTrainer defaults: eps 1e-4, a group of one gets 0, ε 0.2, no dual clip, no log-ratio clamp, loss_type dapo (token-mean), β = 0. */
  trl_grpo: {
    advantage: { eps: 1e-4, singleton: 'zero' },
    loss: { dualClip: null, logRatioClamp: null, aggregation: 'token-mean' },
    kl: { coef: 0, clamp: false },
  },
  /** TRL loss_type="grpo": per-sequence token mean, averaged over all B rows (fully masked rows count). */
  trl_grpo_loss: {
    advantage: { eps: 1e-4, singleton: 'zero' },
    loss: { dualClip: null, logRatioClamp: null, aggregation: 'seq-mean-token-mean', emptySeqs: 'count' },
    kl: { coef: 0, clamp: false },
  },
  /** TRL loss_type="dr_grpo": Σ loss / (B · max_completion_length). */
  trl_dr_grpo: {
    advantage: { name: 'dr_grpo', eps: 1e-4, singleton: 'zero' },
    loss: { dualClip: null, logRatioClamp: null, aggregation: 'seq-mean-token-sum-norm', aggNormalizerMode: 'max_completion' },
    kl: { coef: 0, clamp: false },
  },
  /** verl's REINFORCE++ loop: the running return resets at observation tokens. */
  reinforce_pp_verl: { advantage: { name: 'reinforce_pp', returnReset: 'mask' } },
  /** CISPO as the paper and TRL: clip the detached IS weight from above only (TRL recommends ε_max = 5 → clipHigh 4). */
  cispo: { loss: { name: 'cispo', cispoClip: 'upper', clipHigh: 4 }, kl: { coef: 0 } },
  /** GMPO (verl geo_mean): geometric-mean sequence ratio, log-ratio clip ±0.4 as the paper. */
  gmpo: { loss: { name: 'geo_mean', clipLow: 0.4, clipHigh: 0.4, dualClip: null }, kl: { coef: 0 } },
  sapo: { loss: { name: 'sapo', aggregation: 'seq-mean-token-mean' }, kl: { coef: 0 } },
  clip_cov: { loss: { name: 'clip_cov', dualClip: null }, kl: { coef: 0 } },
  kl_cov: { loss: { name: 'kl_cov' }, kl: { coef: 0 } },
  vespo: { loss: { name: 'vespo', aggregation: 'token-mean' }, kl: { coef: 0 } },
  luspo: { loss: { name: 'luspo', clipLow: 3e-4, clipHigh: 4e-4, dualClip: null }, kl: { coef: 0 } },
  /** TRL top_entropy_quantile 0.8: the policy loss on the 20% highest-entropy tokens only ("80/20"). */
  top_entropy: { loss: { topEntropyQuantile: 0.8 }, kl: { coef: 0 } },
  /** TRL delta = 4 (INTELLECT-2 two-sided clipping). */
  delta_clip: { loss: { delta: 4, dualClip: null }, kl: { coef: 0 } },
  grpo_passk: { advantage: { name: 'grpo_passk' } },
  /** OTC-GRPO's product reward α·r_tool·r_base (α = the weight): the tool reward replaces the base reward. */
  otc: { rewards: [{ name: 'tool_efficiency', weight: 1, params: { gateOnCorrect: true } }, { name: 'format', weight: 0.1 }] },
  seed_grpo: { advantage: { name: 'seed_grpo', seedAlpha: 1 } },
  /** DaGRPO: distinctiveness-masked pairwise advantages and off-policy anchors (the demonstration) for groups with no correct response. */
  dagrpo: { advantage: { name: 'dagrpo', distinctThreshold: 0.1 }, anchors: { enabled: true } },
  mo_grpo: { advantage: { name: 'mo_grpo' } },
  raft: { advantage: { name: 'raft' }, loss: { name: 'gpg' }, kl: { coef: 0 } },
  /** Reinforce-Rej: r − mean, groups that are all right or all wrong dropped (no refill). */
  reinforce_rej: { advantage: { name: 'reinforce_rej' }, kl: { coef: 0 }, dynamicSampling: { enabled: true, maxRounds: 0 } },
  p3o: { advantage: { name: 'p3o' }, loss: { name: 'gspo', clipLow: 3e-4, clipHigh: 4e-4, dualClip: null, aggregation: 'seq-mean-token-mean' }, kl: { coef: 0 } },
  polychromic: { advantage: { name: 'polychromic', setSize: 2 } },
  r2vpo: { loss: { name: 'r2vpo', r2vpoBeta: 1 }, kl: { coef: 0 } },
  /** Off-policy group REINFORCE (REC one-side): −A·logp with PPO-clipped tokens masked. */
  rec: { advantage: { name: 'grpo' }, loss: { name: 'rec' }, kl: { coef: 0 } },
  disco: { loss: { name: 'disco' }, kl: { coef: 0 } },
  reg_grpo: { loss: { name: 'reg_grpo' }, kl: { coef: 0 } },
  /** GTPO: conflict tokens protected from negative updates, positive ones doubled; no KL (the paper drops the reference). */
  gtpo: { gtpo: { enabled: true, posBoost: 2 }, kl: { coef: 0 } },
  /** GRPO with the LLDS likelihood-preserving regularizer (Search-R1 collapse guard). */
  llds: { lldsCoef: 0.1 },
  /** ReMax: A = G_t − r(greedy rollout of the same prompt); the trainer rolls out the greedy baseline. */
  remax: { advantage: { name: 'remax' }, kl: { coef: 0 } },
  /** verl's REINFORCE++ recipe: k1 KL in the reward (fixed β 0.001), no KL loss. */
  reinforce_pp_kl: { advantage: { name: 'reinforce_pp' }, kl: { coef: 0 }, klInReward: { enabled: true, coef: 0.001 } },
  /** GRPO with KL in the reward under verl's adaptive controller (target 0.1, horizon 10000), no KL loss. */
  grpo_kl_adaptive: { kl: { coef: 0 }, klInReward: { enabled: true, coef: 0.001, controller: 'adaptive' } },
  /** SALT: each turn's advantage is the mean over the group's trajectories through its node of the trajectory graph. */
  salt: { credit: { name: 'salt' } },
  /** IGPO: turn rewards = gain in the policy's probability of the gold answer; outcome on the last turn. */
  igpo: { credit: { name: 'igpo' } },
  /** M-GRPO: tool-call turns as sub-agent invocations (2 slots, own normalization), the answer turn as the main agent. */
  mgrpo: { credit: { name: 'mgrpo', slots: 2 } },
  /** MMR1 variance-aware prompt sampling (after one pass over the prompts), half ∝ VPS, half uniform. */
  mmr1: { sampler: { name: 'mmr1' } },
  /** DPPO unbiased dynamic pruning of low-|A| responses (p ≥ 0.2, weight 1/p). */
  dppo: { dppo: { enabled: true } },
  /** Scaf-GRPO: hints (tables, skeleton, first half of the gold SQL) for groups with no correct response. */
  scaf_grpo: { scaffold: { enabled: true } },
} satisfies Record<string, AlgoOverrides>;

export type PresetName = keyof typeof PRESETS;
export const PRESET_NAMES = Object.keys(PRESETS) as PresetName[];

function isPlainObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** Objects merge key by key; arrays and scalars in `b` replace those in `a`. */
export function deepMerge(a: unknown, b: unknown): unknown {
  if (b === undefined) return a;
  if (isPlainObject(a) && isPlainObject(b)) {
    const out: Record<string, unknown> = { ...a };
    for (const [k, v] of Object.entries(b)) out[k] = deepMerge(a[k], v);
    return out;
  }
  return b;
}

/** Validate a config object (defaults filled in); errors are one line, kind invalid_input. */
export function parseAlgoConfig(raw: unknown): AlgoConfig {
  return parseWith(algoConfigSchema, raw, 'algorithm config');
}

/** The named preset with `overrides` merged on top, validated. Unknown name: a one-line usage error listing the known ones. */
export function resolveAlgo(name: string, overrides: AlgoOverrides | Record<string, unknown> = {}): AlgoConfig {
  const preset = (PRESETS as Record<string, AlgoOverrides | undefined>)[name];
  if (!preset) throw new AgroError('usage', `unknown algorithm "${name}" (known: ${PRESET_NAMES.join(', ')})`);
  return parseAlgoConfig(deepMerge(deepMerge({}, preset), overrides));
}

/** The parts of a config the advantage estimator takes. */
export function advantageParams(cfg: AlgoConfig): AdvantageParams {
  const { name: _name, egrpoCompose: _compose, ...p } = cfg.advantage;
  return p;
}

/** The parts of a config computePolicyLoss takes. */
export function lossConfig(cfg: AlgoConfig): LossConfig & { loss: PolicyLossParams & AlgoConfig['loss'] } {
  return { loss: cfg.loss, kl: cfg.kl, entropyCoef: cfg.entropyCoef, lldsCoef: cfg.lldsCoef };
}
