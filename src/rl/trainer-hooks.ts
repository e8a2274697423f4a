/**
 * Trainer hooks: the seams where the group-relative variants that are more than an advantage or a loss plug into a
 * step. The trainer (trainer.ts) calls each seam of every active hook in order:
 *
 *   sample           → which prompts the step rolls out                  MMR1 variance-aware sampling
 *   scored           → a scored round of groups, before selection        Scaf-GRPO hints, DaGRPO anchors (+ MMR1 stats)
 *   advantageInputs  → what the estimator needs beyond the rewards       KL in the reward, ReMax's greedy baseline
 *   advantages       → reshape the advantages, choose what trains        SALT, IGPO, M-GRPO token credit; DPPO pruning
 *
 * The hooks of a run come from its algorithm config (`activeHooks`); each keeps its own state (saved in the
 * checkpoint's trainer state, so a resumed run continues exactly) and reports its figures into the step's
 * metrics line under `hooks`. The math is in pure functions (group-math.ts, kl-reward.ts); this file only feeds them.
 */
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import { Rng } from '../util/rng.ts';
import type { TaskBase } from '../agent/types.ts';
import { CHAT_TOKENS } from '../model/chat.ts';
import { sequenceLogProbs } from '../model/generate.ts';
import type { AlgoConfig } from './algo-config.ts';
import { mean, type AdvantageResult } from './advantages.ts';
import { activePoolVisit, dppoPrune, igpoTurnAdvantages, type PassRecord, type PoolRecord, mgrpoAdvantages, saltStepAdvantages, varianceAwareSample, variancePromotionScores, withAnchors } from './group-math.ts';
import { klController, klTokenRewards } from './kl-reward.ts';
import { collect, score, type AdvantageExtras, type Scored, type StepContext } from './phases.ts';
import { policyTokenTurns, replay, turnStarts, type Trajectory } from './rollout.ts';

/** A step's prompts and their scored groups, index for index. */
export interface Batch<T extends TaskBase> {
  tasks: T[];
  groups: Scored[][];
}

/** Per-token log-probs (sequenceLogProbs rows) of the batch's trajectories under the policy before the update and the reference. */
export interface BatchLogProbs {
  old: number[][] | null;
  ref: number[][] | null;
}

export interface TrainerHook<T extends TaskBase> {
  readonly name: string;
  /** The next n prompts; `next` is the run's own order. At most one active hook samples. */
  sample?(n: number, next: (n: number) => T[]): T[];
  /** A scored round (one rollout of `batch.tasks`), before dynamic sampling selects from it. */
  scored?(c: StepContext<T>, batch: Batch<T>, step: number): Promise<Batch<T>>;
  /** Inputs the advantage estimator takes beyond the rewards, for the batch that trains. */
  advantageInputs?(c: StepContext<T>, batch: Batch<T>, lp: BatchLogProbs): Promise<AdvantageExtras>;
  /** New advantages and, optionally, the responses (indices into batch.groups.flat()) that train, with weights already applied. */
  advantages?(c: StepContext<T>, batch: Batch<T>, result: AdvantageResult, step: number): Promise<{ result: AdvantageResult; keep?: number[] }>;
  /** This step's figures for the metrics line (`hooks`), then reset. */
  metrics(): Record<string, number>;
  state?(): unknown;
  restore?(state: unknown): void;
}

/** Every hook a config turns on, in the order their seams run. Refuses an environment that lacks what a hook needs. */
export function activeHooks<T extends TaskBase>(c: StepContext<T>, tasks: readonly T[], opts: { passRates?: ReadonlyMap<string, PassRecord> } = {}): TrainerHook<T>[] {
  const a = c.algo;
  const need = (what: 'demonstration' | 'withHint', who: string): void => {
    if (typeof c.env[what] !== 'function') throw new AgroError('invalid_input', `train: ${who} needs an environment with ${what}() (the "${c.env.name}" environment has none)`);
  };
  const hooks: TrainerHook<T>[] = [];
  if (a.sampler.name === 'mmr1') hooks.push(mmr1Sampler(tasks, a.sampler, c.cfg.seed));
  if (a.sampler.name === 'active') hooks.push(activePoolSampler(a.sampler.recheck, opts.passRates));
  if (a.scaffold.enabled) {
    need('withHint', 'Scaf-GRPO (scaffold)');
    hooks.push(scaffoldHook(a.scaffold.exemptSteps));
  }
  if (a.anchors.enabled) {
    need('demonstration', 'DaGRPO anchors');
    hooks.push(anchorHook());
  }
  if (a.klInReward.enabled) hooks.push(klRewardHook(a.klInReward));
  if (a.advantage.name === 'remax') hooks.push(remaxHook());
  if (a.credit.name === 'salt') hooks.push(saltHook());
  if (a.credit.name === 'igpo') {
    need('demonstration', 'IGPO');
    hooks.push(igpoHook(a.credit.gamma));
  }
  if (a.credit.name === 'mgrpo') hooks.push(mgrpoHook(a.credit.slots, c.cfg.seed));
  if (a.dppo.enabled) hooks.push(dppoHook(a.dppo.pMin, c.cfg.seed));
  return hooks;
}

// ---------------------------------------------------------------- helpers

function groupIdsOf(groups: readonly Scored[][]): number[] {
  return groups.flatMap((g, gi) => g.map(() => gi));
}

/** A response's turn values spread over its policy tokens. */
function perTurnTokens(traj: Trajectory, turnValues: readonly number[]): number[] {
  return policyTokenTurns(traj.mask).map((k) => turnValues[Math.min(k, turnValues.length - 1)] ?? 0);
}

const solved = (g: readonly Scored[]): boolean => g.some((s) => s.ctx.correct);

// ---------------------------------------------------------------- sample: MMR1

const mmr1State = z.object({ stats: z.array(z.tuple([z.string(), z.number(), z.number()])), rng: z.number().int() });

/**
 * MMR1's variance-aware sampling: the first pass follows the run's order so every prompt gets an estimate; after
 * that each step draws `mix` of its prompts ∝ VPS = α·p(1−p) + β·diversity (p the prompt's last pass rate,
 * diversity its last share of distinct answers) and the rest uniformly. The paper refreshes VPS every few
 * epochs; here each prompt's figures are those of its latest rollout.
 */
function mmr1Sampler<T extends TaskBase>(tasks: readonly T[], o: AlgoConfig['sampler'], seed: number): TrainerHook<T> {
  const stats = new Map<string, { pass: number; diversity: number }>();
  let rng = new Rng((seed * 2654435761 + 0x3d1) >>> 0);
  let vps: number[] = [];
  return {
    name: 'mmr1',
    sample(n, next) {
      if (stats.size < new Set(tasks.map((t) => t.id)).size || n > tasks.length) return next(n);
      const scores = variancePromotionScores(
        tasks.map((t) => stats.get(t.id)!.pass),
        tasks.map((t) => stats.get(t.id)!.diversity),
        o.alpha,
        o.beta,
      );
      const picked = varianceAwareSample(scores, n, rng, o.mix);
      vps.push(...picked.map((i) => scores[i]));
      return picked.map((i) => tasks[i]);
    },
    async scored(_c, batch) {
      batch.groups.forEach((g, gi) => {
        if (!g.length) return;
        stats.set(batch.tasks[gi].id, {
          pass: mean(g.map((s) => (s.ctx.correct ? 1 : 0))),
          diversity: new Set(g.map((s) => (s.traj.answer ?? '').trim())).size / g.length,
        });
      });
      return batch;
    },
    metrics() {
      const m = { mmr1_seen: stats.size, ...(vps.length ? { mmr1_vps: mean(vps) } : {}) };
      vps = [];
      return m;
    },
    state: () => ({ stats: [...stats].map(([id, s]) => [id, s.pass, s.diversity]), rng: rng.state }),
    restore(s) {
      const p = mmr1State.parse(s);
      for (const [id, pass, diversity] of p.stats) stats.set(id, { pass, diversity });
      rng = Rng.fromState(p.rng);
    },
  };
}

// ---------------------------------------------------------------- sample: active pool

const activeState = z.array(z.tuple([z.string(), z.number().int().min(0), z.number().int().min(1), z.number().int().min(0)]));

/**
 * The active pool: the run's order, skipping each prompt whose latest group (or prior pass count) was unanimous
 * except on every `recheck`-th visit (group-math.ts activePoolVisit). A pass-rate filter done once before RL goes
 * stale as the policy learns: questions it now always gets right still cost a rollout each visit and teach nothing.
 * Here they leave the pool as soon as a group shows it, and questions once never solved get re-probed.
 */
function activePoolSampler<T extends TaskBase>(recheck: number, prior?: ReadonlyMap<string, PassRecord>): TrainerHook<T> {
  const pool = new Map<string, PoolRecord>();
  for (const [id, p] of prior ?? []) pool.set(id, { ...p, skipped: 0 });
  let skipped = 0;
  let visited = 0;
  return {
    name: 'active',
    sample(n, next) {
      const out: T[] = [];
      // Each visit of a unanimous prompt brings it closer to its recheck, so this ends within recheck passes.
      while (out.length < n) {
        const [t] = next(1);
        const v = activePoolVisit(pool.get(t.id), recheck);
        if (v.rec) pool.set(t.id, v.rec);
        visited++;
        if (v.train) out.push(t);
        else skipped++;
      }
      return out;
    },
    async scored(_c, batch) {
      batch.groups.forEach((g, gi) => {
        if (g.length) pool.set(batch.tasks[gi].id, { correct: g.filter((s) => s.ctx.correct).length, samples: g.length, skipped: 0 });
      });
      return batch;
    },
    metrics() {
      let signal = 0;
      for (const r of pool.values()) if (r.correct > 0 && r.correct < r.samples) signal++;
      const m = { active_signal: signal, active_known: pool.size, active_skipped: skipped, active_visited: visited };
      skipped = visited = 0;
      return m;
    },
    state: () => [...pool].map(([id, r]) => [id, r.correct, r.samples, r.skipped]),
    restore(s) {
      pool.clear();
      for (const [id, correct, samples, sk] of activeState.parse(s)) pool.set(id, { correct, samples, skipped: sk });
    },
  };
}

// ---------------------------------------------------------------- scored: Scaf-GRPO, DaGRPO anchors

/**
 * Scaf-GRPO: once past `exemptSteps`, each group with no correct response is rolled out again with the
 * environment's hint of tier 0, 1, 2 in its prompt, stopping at the first tier where some response is correct;
 * that response (hint and all, as the paper trains it) replaces the group's last failed one.
 */
function scaffoldHook<T extends TaskBase>(exemptSteps: number): TrainerHook<T> {
  let failing = 0;
  let rescued = 0;
  let tries = 0;
  return {
    name: 'scaffold',
    async scored(c, batch, step) {
      if (step < exemptSteps) return batch;
      let open = batch.groups.flatMap((g, gi) => (g.length && !solved(g) ? [gi] : []));
      failing += open.length;
      for (let level = 0; open.length; level++) {
        const hinted = open.flatMap((gi) => {
          const t = c.env.withHint!(batch.tasks[gi], level);
          return t ? [{ gi, t }] : [];
        });
        if (!hinted.length) break;
        tries += hinted.length;
        const tasks = hinted.map((h) => h.t);
        const groups = await score(c, tasks, await collect(c, tasks, (step * 7349 + level * 31 + 17) >>> 0));
        const still: number[] = [];
        hinted.forEach(({ gi }, k) => {
          const ok = groups[k].find((s) => s.ctx.correct);
          if (!ok) return still.push(gi);
          const g = batch.groups[gi];
          g[g.length - 1] = { ...ok, traj: { ...ok.traj, group: gi } };
          rescued++;
        });
        open = still;
      }
      return batch;
    },
    metrics() {
      const m = { scaf_failing: failing, scaf_hinted: tries, scaf_rescued: rescued };
      failing = rescued = tries = 0;
      return m;
    },
  };
}

/**
 * DaGRPO's off-policy anchors: a group with no correct response gets one more response, the environment's
 * demonstration (for SQL: the gold query as the answer), scored by the same reward as the rest and trained
 * with them. It enters the loss as if sampled (ratio 1 on the first epoch); the paper's other off-policy
 * corrections are left out.
 */
function anchorHook<T extends TaskBase>(): TrainerHook<T> {
  let added = 0;
  return {
    name: 'anchors',
    async scored(c, batch) {
      const { anchoredGroups } = withAnchors(
        batch.groups.flat().map((s) => (s.ctx.correct ? 1 : 0)),
        groupIdsOf(batch.groups),
      );
      const gis = anchoredGroups.map(Number).filter((gi) => batch.groups[gi].length > 0);
      if (!gis.length) return batch;
      const trajs = await Promise.all(gis.map((gi) => replay(c.env, batch.tasks[gi], c.env.demonstration!(batch.tasks[gi]), c.tokenizer, gi)));
      const scored = await score(c, batch.tasks, trajs);
      for (const gi of gis) batch.groups[gi].push(...scored[gi]);
      added += gis.length;
      return batch;
    },
    metrics() {
      const m = { anchors: added };
      added = 0;
      return m;
    },
  };
}

// ---------------------------------------------------------------- advantage inputs: KL in the reward, ReMax

const klState = z.object({ beta: z.number() });

/**
 * KL in the reward (verl use_kl_in_reward): −β·KL(policy ‖ reference) on each policy token. Estimators with token
 * rewards (reinforce_pp, remax, gae) take them per token; the outcome estimators get their sum added to the
 * sequence reward, as verl's do (token_level_rewards.sum(-1)). β is updated after each step by the controller
 * with the step's mean KL per token and the number of responses.
 */
function klRewardHook<T extends TaskBase>(o: AlgoConfig['klInReward']): TrainerHook<T> {
  const controller = (coef: number) => klController({ type: o.controller, coef, target: o.target, horizon: o.horizon });
  let ctl = controller(o.coef);
  let last: { beta: number; kl: number } | null = null;
  return {
    name: 'kl_in_reward',
    async advantageInputs(c, batch, lp) {
      if (!lp.old || !lp.ref) throw new AgroError('internal', 'KL in the reward needs the policy and reference log-probs');
      const at = (rows: number[][]) => batch.groups.flat().map((s, b) => s.traj.mask.flatMap((m, t) => (m === 1 && t > 0 ? [rows[b][t - 1]] : [])));
      const beta = ctl.value;
      const { tokenRewards, meanKl } = klTokenRewards(at(lp.old), at(lp.ref), beta, o.estimator);
      ctl.update(meanKl, tokenRewards.length);
      last = { beta, kl: meanKl };
      return TOKEN_REWARD_ESTIMATORS.has(c.algo.advantage.name) ? { tokenRewards } : { rewardShift: tokenRewards.map((r) => r.reduce((a, b) => a + b, 0)) };
    },
    metrics() {
      const m: Record<string, number> = last ? { kl_reward_beta: last.beta, kl_reward_kl: last.kl, kl_reward_beta_next: ctl.value } : {};
      last = null;
      return m;
    },
    state: () => ({ beta: ctl.value }),
    restore(s) {
      ctl = controller(klState.parse(s).beta);
    },
  };
}

/** The estimators that take per-token rewards (the outcome on the last policy token plus these). */
export const TOKEN_REWARD_ESTIMATORS: ReadonlySet<string> = new Set(['reinforce_pp', 'remax', 'gae']);

/** ReMax: one greedy rollout per prompt, scored by the same rewards; its reward is the baseline of the prompt's responses. */
function remaxHook<T extends TaskBase>(): TrainerHook<T> {
  let baselines: number[] = [];
  return {
    name: 'remax',
    async advantageInputs(c, batch) {
      const greedy = await score(c, batch.tasks, await rollOutGreedy(c, batch.tasks));
      const b = greedy.map((g) => g[0].score.total);
      baselines.push(...b);
      return { baselines: batch.groups.flatMap((g, gi) => g.map(() => b[gi])) };
    },
    metrics() {
      const m: Record<string, number> = baselines.length ? { remax_baseline: mean(baselines) } : {};
      baselines = [];
      return m;
    },
  };
}

function rollOutGreedy<T extends TaskBase>(c: StepContext<T>, tasks: readonly T[]): Promise<Trajectory[]> {
  return collect({ ...c, cfg: { ...c.cfg, groupSize: 1, temperature: 0 } }, tasks, 0);
}

// ---------------------------------------------------------------- advantages: SALT, IGPO, M-GRPO, DPPO

/** A result whose token rows replace the advantages (the response-level ones stay as the first token's). */
function withTokenRows(result: AdvantageResult, rows: number[][]): AdvantageResult {
  return { ...result, advantages: rows.map((r, b) => (r.length ? r[0] : result.advantages[b])), tokenAdvantages: rows };
}

/** SALT: each turn gets the mean response-level advantage of the group's trajectories through its node (same turns so far). */
function saltHook<T extends TaskBase>(): TrainerHook<T> {
  let shared = 0;
  let turns = 0;
  let pooled = 0;
  return {
    name: 'salt',
    async advantages(_c, batch, result) {
      const flat = batch.groups.flat();
      const steps = flat.map((s) => s.traj.messages.filter((m) => m.role === 'assistant').map((m) => m.content));
      const ids = groupIdsOf(batch.groups);
      const stepAdv = saltStepAdvantages(steps, result.advantages, ids);
      // Turns whose node other trajectories of the group pass through too, and how far pooling moved their credit.
      flat.forEach((_, i) => steps[i].forEach((_, t) => {
        turns++;
        pooled += Math.abs(stepAdv[i][t] - result.advantages[i]);
        const key = JSON.stringify(steps[i].slice(0, t + 1));
        if (flat.some((_, j) => j !== i && ids[j] === ids[i] && JSON.stringify(steps[j].slice(0, t + 1)) === key)) shared++;
      }));
      return { result: withTokenRows(result, flat.map((s, i) => perTurnTokens(s.traj, stepAdv[i]))) };
    },
    metrics() {
      const m = { salt_shared_turns: turns ? shared / turns : 0, salt_pooled: turns ? pooled / turns : 0 };
      shared = turns = pooled = 0;
      return m;
    },
  };
}

/**
 * IGPO: p_k = the policy's probability of the gold answer (the demonstration's last turn) given the episode up to
 * turn k, as the geometric mean of its token probabilities (the product underflows on long answers); turn k's
 * reward is p_k − p_{k−1}, the last turn's the outcome reward; normalized over the group's turns, then discounted
 * sums. Contexts that leave no room for the answer within the model's positions keep the previous p.
 */
function igpoHook<T extends TaskBase>(gamma: number): TrainerHook<T> {
  let gains: number[] = [];
  return {
    name: 'igpo',
    async advantages(c, batch, result) {
      const flat = batch.groups.flat();
      const endId = c.tokenizer.tokenId(CHAT_TOKENS.end);
      const gold = batch.tasks.map((t) => [...c.tokenizer.encode(c.env.demonstration!(t).at(-1) ?? ''), endId]);
      const ids = groupIdsOf(batch.groups);
      const seqs: number[][] = [];
      const where: { b: number; k: number; from: number; n: number }[] = [];
      flat.forEach((s, b) => {
        const g = gold[ids[b]];
        turnStarts(s.traj.mask).forEach((start, k) => {
          if (start + g.length > c.model.config.maxPositions) return;
          where.push({ b, k, from: start, n: g.length });
          seqs.push([...s.traj.ids.slice(0, start), ...g]);
        });
      });
      const lps = seqs.length ? await sequenceLogProbs(c.model, seqs) : [];
      const probs = flat.map((s) => new Array<number>(turnStarts(s.traj.mask).length).fill(Number.NaN));
      where.forEach((w, q) => (probs[w.b][w.k] = Math.exp(mean(lps[q].slice(w.from - 1, w.from - 1 + w.n)))));
      for (const row of probs) for (let k = 0; k < row.length; k++) if (Number.isNaN(row[k])) row[k] = k > 0 ? row[k - 1] : 0;
      // goldProbs = [p_0 … p_{T−1}, placeholder]: the last turn's reward is the outcome, so p_T is never read.
      const turnAdv = igpoTurnAdvantages(probs.map((p, b) => [...p, flat[b].score.total]), flat.map((s) => s.score.total), ids, gamma);
      for (const p of probs) for (let k = 1; k < p.length; k++) gains.push(p[k] - p[k - 1]);
      return { result: withTokenRows(result, flat.map((s, b) => perTurnTokens(s.traj, turnAdv[b]))) };
    },
    metrics() {
      const m = { igpo_gain: gains.length ? mean(gains) : 0, igpo_gains: gains.length };
      gains = [];
      return m;
    },
  };
}

/**
 * M-GRPO with one policy: the tool-call turns are the sub-agent invocations (aligned to `slots` per rollout:
 * the first ones kept, missing slots duplicating random existing ones, so a turn trains once per slot it fills
 * and turns past the slots do not train), normalized over the prompt's invocations; the remaining turns (the
 * answer) are the main agent, normalized over the prompt's rollouts. The decoupled two-server training is left out.
 */
function mgrpoHook<T extends TaskBase>(slots: number, seed: number): TrainerHook<T> {
  let subTurns: number[] = [];
  return {
    name: 'mgrpo',
    async advantages(_c, batch, result, step) {
      const flat = batch.groups.flat();
      const turnsOf = (t: Trajectory) => turnStarts(t.mask).length;
      const subCounts = flat.map((s) => Math.min(s.traj.toolCalls, turnsOf(s.traj)));
      const m = mgrpoAdvantages(flat.map((s) => s.score.total), subCounts, groupIdsOf(batch.groups), slots, (seed * 131 + step) >>> 0);
      subTurns.push(...subCounts);
      const rows = flat.map((s, b) => {
        const perTurn = Array.from({ length: turnsOf(s.traj) }, (_, k) => {
          if (k >= subCounts[b]) return m.main[b];
          const filled = m.sub[b].filter((x) => x.source === k);
          return filled.length ? filled[0].advantage * filled.length : 0;
        });
        return perTurnTokens(s.traj, perTurn);
      });
      return { result: withTokenRows(result, rows) };
    },
    metrics() {
      const m = { mgrpo_sub_turns: subTurns.length ? mean(subTurns) : 0 };
      subTurns = [];
      return m;
    },
  };
}

/** DPPO: responses kept with p = clamp(|A|/max|A|, pMin, 1) and their advantages scaled by 1/p; the pruned ones skip the update. */
function dppoHook<T extends TaskBase>(pMin: number, seed: number): TrainerHook<T> {
  let kept = 0;
  let total = 0;
  return {
    name: 'dppo',
    async advantages(_c, _batch, result, step) {
      const { keep, weights } = dppoPrune(result.advantages, new Rng((seed * 92821 + step * 68917 + 5) >>> 0), pMin);
      const w = new Array<number>(result.advantages.length).fill(0);
      keep.forEach((i, k) => (w[i] = weights[k]));
      kept += keep.length;
      total += w.length;
      return {
        result: {
          ...result,
          advantages: result.advantages.map((a, i) => a * w[i]),
          ...(result.tokenAdvantages ? { tokenAdvantages: result.tokenAdvantages.map((row, i) => row.map((a) => a * w[i])) } : {}),
        },
        keep,
      };
    },
    metrics() {
      const m = { dppo_kept: total ? kept / total : 1 };
      kept = total = 0;
      return m;
    },
  };
}
