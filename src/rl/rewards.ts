/**
 * Reward functions: one registry, each a pure function of what the episode produced, returning
 * { value, reason }. Composed by a weighted sum (TRL's default) that also keeps every component, so
 * GDPO can normalize them one by one. Nothing here runs SQL: execution results come in pre-computed,
 * and the result comparison is injected (`deps.match`).
 */
import { z } from 'zod';
import { parseAction, SQL_AGENT_ACTIONS } from '../agent/protocol.ts';
import { sqlTouches } from '../sql/touches.ts';
import { setF1 } from '../util/sets.ts';
import { invalid } from './validate.ts';
import { entityMatchReward, exactMatchReward } from '../search/rewards.ts';
import type { RewardContext, RewardDeps, RewardValue } from '../agent/types.ts';
import { need } from '../agent/reward-inputs.ts';


/** Everything a reward may look at; each reward reads only its own fields and says which it misses. */
type RewardFn<P> = (ctx: RewardContext, params: P, deps: RewardDeps) => RewardValue;
interface RewardEntry<S extends z.ZodType> {
  params: S;
  formula: string;
  fn: RewardFn<z.infer<S>>;
}
function entry<S extends z.ZodType>(e: RewardEntry<S>): RewardEntry<S> {
  return e;
}

// ---- execution ----

const execParams = z.strictObject({
  /** Reward for predicted SQL that failed (refused, syntax, runtime, missing database). */
  errorPenalty: z.number().default(0),
  /** Reward for predicted SQL that ran past its time limit. */
  timeoutPenalty: z.number().default(0),
});

/** 1 if the predicted result matches gold on every database (test suite), 0 on a mismatch, penalties for errors. */
function executionReward(ctx: RewardContext, p: z.infer<typeof execParams>, deps: RewardDeps): RewardValue {
  const exec = need(ctx.exec, 'exec (pred and gold results)', 'execution');
  const match = need(deps.match, 'an injected match(pred, gold) function', 'execution');
  if (exec.pred.length === 0 || exec.pred.length !== exec.gold.length) {
    throw invalid(`reward "execution" needs one pred and one gold result per database, got ${exec.pred.length} and ${exec.gold.length}`);
  }
  for (let i = 0; i < exec.pred.length; i++) {
    const pred = exec.pred[i];
    if (!pred.ok) {
      return pred.error === 'timeout'
        ? { value: p.timeoutPenalty, reason: `timeout on db ${i}` }
        : { value: p.errorPenalty, reason: `sql error on db ${i} (${pred.error}): ${pred.message}` };
    }
  }
  for (let i = 0; i < exec.gold.length; i++) {
    const gold = exec.gold[i];
    // A broken gold query is a data problem, not the policy's fault: no signal either way.
    if (!gold.ok) return { value: 0, reason: `gold query failed on db ${i} (${gold.error})` };
    if (!match(exec.pred[i], gold)) return { value: 0, reason: exec.pred.length > 1 ? `mismatch on db ${i}` : 'mismatch' };
  }
  return { value: 1, reason: exec.pred.length > 1 ? `match on all ${exec.pred.length} databases` : 'match' };
}

// ---- format ----

const formatParams = z.strictObject({
  /** false: 1 only if every turn follows the protocol; true: the fraction of turns that do. */
  partial: z.boolean().default(false),
  /** Also require the last turn to be an <answer>. */
  requireAnswer: z.boolean().default(false),
});

function formatReward(ctx: RewardContext, p: z.infer<typeof formatParams>): RewardValue {
  const turns = ctx.turns ?? (ctx.response !== undefined ? [ctx.response] : undefined);
  const ts = need(turns, 'turns or response', 'format');
  if (ts.length === 0) return { value: 0, reason: 'no assistant turn' };
  const allowed = ctx.allowedActions ?? SQL_AGENT_ACTIONS;
  const parsed = ts.map((t) => parseAction(t, allowed));
  // The environment read the final answer and found it none it accepts (the chooser: no candidate's number).
  if (ctx.answerWellFormed === false && parsed[parsed.length - 1].kind === 'answer') parsed[parsed.length - 1] = { kind: 'invalid', reason: 'the answer is not one the environment accepts' };
  const bad = parsed.findIndex((a) => a.kind === 'invalid');
  const last = parsed[parsed.length - 1];
  if (p.requireAnswer && last.kind !== 'answer') {
    return { value: 0, reason: last.kind === 'invalid' ? `turn ${parsed.length - 1}: ${last.reason}` : 'the last turn is not an <answer>' };
  }
  if (p.partial) {
    const ok = parsed.filter((a) => a.kind !== 'invalid').length;
    return { value: ok / parsed.length, reason: `${ok}/${parsed.length} turns well formed` };
  }
  if (bad >= 0) {
    const a = parsed[bad];
    return { value: 0, reason: `turn ${bad}: ${a.kind === 'invalid' ? a.reason : ''}` };
  }
  return { value: 1, reason: 'well formed' };
}

// ---- partial credit ----

const overlapParams = z.strictObject({
  parts: z.array(z.enum(['tables', 'columns', 'values'])).min(1).default(['tables', 'columns', 'values']),
});

/** Mean F1 of the tables, columns and literal values of the predicted vs gold SQL (parts empty on both sides skipped). */
function sqlOverlapReward(ctx: RewardContext, p: z.infer<typeof overlapParams>): RewardValue {
  const pred = sqlTouches(need(ctx.predSql, 'predSql', 'sql_overlap'));
  const gold = sqlTouches(need(ctx.goldSql, 'goldSql', 'sql_overlap'));
  const scores: string[] = [];
  let sum = 0;
  let n = 0;
  for (const part of p.parts) {
    const f = setF1(pred[part], gold[part]);
    if (f === null) continue;
    sum += f;
    n++;
    scores.push(`${part} ${f.toFixed(2)}`);
  }
  if (n === 0) return { value: 0, reason: 'nothing to compare' };
  return { value: sum / n, reason: `F1 ${scores.join(', ')}` };
}

// ---- tool-use efficiency (OTC) ----

const otcParams = z.strictObject({
  /** Smoothing constant of the n = 0 branch. */
  c: z.number().positive().default(1),
  /** Multiply by correctness (OTC's α·r_tool·r_base with the weight as α). */
  gateOnCorrect: z.boolean().default(true),
});

/**
 * OTC-GRPO tool reward (arXiv 2504.14870, as stated in the project's reference notes): with m the calls made and
 * n the fewest calls among correct responses of the group, f = 0 if m = n = 0, m if n = 0, else 2nm/(m+n);
 * r = 1 if f = n = 0, cos(mπ/(2m+c)) if n = 0 (OTC-PPO's form), else sin(fπ/(2n)). Peaks at m = n.
 */
export function otcToolReward(m: number, n: number, c = 1): number {
  if (m < 0 || n < 0) throw invalid(`tool call counts must be ≥ 0, got m=${m}, n=${n}`);
  const f = m === 0 && n === 0 ? 0 : n === 0 ? m : (2 * n * m) / (m + n);
  if (n === 0) return f === 0 ? 1 : Math.cos((m * Math.PI) / (2 * m + c));
  return Math.sin((f * Math.PI) / (2 * n));
}

/** OTC's n for a group: the fewest tool calls among its correct responses, null when none is correct. */
export function otcOptimalCalls(group: readonly { toolCalls: number; correct: boolean }[]): number | null {
  const calls = group.filter((g) => g.correct).map((g) => g.toolCalls);
  return calls.length ? Math.min(...calls) : null;
}

function toolEfficiencyReward(ctx: RewardContext, p: z.infer<typeof otcParams>): RewardValue {
  const m = need(ctx.toolCalls, 'toolCalls', 'tool_efficiency');
  if (p.gateOnCorrect && !need(ctx.correct, 'correct', 'tool_efficiency')) return { value: 0, reason: 'incorrect answer' };
  // No correct response in the group: no estimate of the optimum, fall back to OTC-PPO's "fewer is better".
  const n = ctx.optimalToolCalls ?? 0;
  const r = otcToolReward(m, n, p.c);
  return { value: r, reason: `${m} tool calls (group optimum ${ctx.optimalToolCalls ?? 'unknown'})` };
}

// ---- length ----

const overlongParams = z
  .strictObject({
    /** L_max: the generation limit in tokens. */
    maxLen: z.number().int().positive().default(1024),
    /** L_cache: the soft zone before L_max where the penalty ramps from 0 to −1. */
    cache: z.number().int().positive().default(256),
  })
  .refine((p) => p.cache <= p.maxLen, { message: 'cache must be ≤ maxLen' });

/** TRL get_soft_overlong_punishment (trl/rewards/other_rewards.py): 0 up to L_max−L_cache, ((L_max−L_cache)−L)/L_cache up to L_max, −1 beyond. */
export function softOverlongPunishment(length: number, maxLen: number, cache: number): number {
  if (length <= maxLen - cache) return 0;
  if (length <= maxLen) return (maxLen - cache - length) / cache;
  return -1;
}

function overlongReward(ctx: RewardContext, p: z.infer<typeof overlongParams>): RewardValue {
  const L = need(ctx.completionTokens, 'completionTokens', 'overlong');
  const v = softOverlongPunishment(L, p.maxLen, p.cache);
  return { value: v, reason: `${L} tokens (soft limit ${p.maxLen - p.cache}, hard ${p.maxLen})` };
}

export const REWARDS = {
  execution: entry({ params: execParams, formula: '1 if pred ≡ gold on every db; 0 mismatch; errorPenalty / timeoutPenalty', fn: executionReward }),
  format: entry({ params: formatParams, formula: '1 if every turn is <think>…</think><action>…</action>', fn: formatReward }),
  sql_overlap: entry({ params: overlapParams, formula: 'mean F1 of tables, columns, literal values', fn: sqlOverlapReward }),
  entity_match: entry({ params: z.strictObject({}), formula: '#gold entities in answer / #gold entities', fn: entityMatchReward }),
  exact_match: entry({ params: z.strictObject({}), formula: '1 if normalize(answer) = normalize(some gold)', fn: exactMatchReward }),
  tool_efficiency: entry({ params: otcParams, formula: 'OTC: sin(f(m,n)π/2n), f = 2nm/(m+n); × correct', fn: toolEfficiencyReward }),
  overlong: entry({ params: overlongParams, formula: '0 | ((L_max−L_cache)−L)/L_cache | −1', fn: overlongReward }),
};

export type RewardName = keyof typeof REWARDS;
export const REWARD_NAMES = Object.keys(REWARDS) as RewardName[];

export interface RewardSpec {
  name: string;
  weight: number;
  params?: Record<string, unknown>;
  /** Key of this component in the output (default: name); lets one reward appear twice with different params. */
  label?: string;
}

export interface PreparedReward {
  label: string;
  weight: number;
  run: (ctx: RewardContext, deps: RewardDeps) => RewardValue;
}

function oneLineZod(err: z.ZodError): string {
  return err.issues.map((i) => `${i.path.join('.') || '(params)'}: ${i.message}`).join('; ');
}

/** Validate the specs once (names, params, duplicate labels); the result scores any number of episodes. */
export function prepareRewards(specs: readonly RewardSpec[]): PreparedReward[] {
  if (specs.length === 0) throw invalid('no rewards configured');
  const seen = new Set<string>();
  return specs.map((s) => {
    const e = (REWARDS as Record<string, RewardEntry<z.ZodType> | undefined>)[s.name];
    if (!e) throw invalid(`unknown reward "${s.name}" (known: ${REWARD_NAMES.join(', ')})`);
    if (!Number.isFinite(s.weight)) throw invalid(`reward "${s.name}" has weight ${s.weight}: expected a finite number`);
    const parsed = e.params.safeParse(s.params ?? {});
    if (!parsed.success) throw invalid(`reward "${s.name}" params: ${oneLineZod(parsed.error)}`);
    const label = s.label ?? s.name;
    if (seen.has(label)) throw invalid(`reward "${label}" appears twice: give one a distinct label`);
    seen.add(label);
    const params = parsed.data;
    return { label, weight: s.weight, run: (ctx, deps) => e.fn(ctx, params, deps) };
  });
}

export interface ScoredEpisode {
  /** Σ weight·value. */
  total: number;
  /** Each component's unweighted value and reason, by label. */
  parts: Record<string, RewardValue>;
  /** Unweighted values in spec order (a GDPO components row). */
  vector: number[];
}

/** Weighted sum of the named rewards (TRL's sum-then-normalize input), keeping each component. */
export function scoreEpisode(ctx: RewardContext, rewards: readonly PreparedReward[], deps: RewardDeps = {}): ScoredEpisode {
  const parts: Record<string, RewardValue> = {};
  const vector: number[] = [];
  let total = 0;
  for (const r of rewards) {
    const v = r.run(ctx, deps);
    if (!Number.isFinite(v.value)) throw invalid(`reward "${r.label}" returned ${v.value}`);
    parts[r.label] = v;
    vector.push(v.value);
    total += r.weight * v.value;
  }
  return { total, parts, vector };
}

export interface ScoredBatch {
  totals: number[];
  /** [B][K] unweighted components, for gdpo. */
  components: number[][];
  labels: string[];
  weights: number[];
  episodes: ScoredEpisode[];
}

export function scoreBatch(ctxs: readonly RewardContext[], specs: readonly RewardSpec[], deps: RewardDeps = {}): ScoredBatch {
  const rewards = prepareRewards(specs);
  const episodes = ctxs.map((c) => scoreEpisode(c, rewards, deps));
  return {
    totals: episodes.map((e) => e.total),
    components: episodes.map((e) => e.vector),
    labels: rewards.map((r) => r.label),
    weights: rewards.map((r) => r.weight),
    episodes,
  };
}
