/**
 * One question asked of a policy through the answer path: the policy's greedy episode (its turns streamed to
 * `onEvent`), `samples` more at SEARCH_TEMPERATURE, and the answerer's choice among them, the memory, their edits
 * and question-time synthesis. The one home of how ask, chat and serve turn a question into an answer (predict
 * keeps every sample's trajectory and scores them, so it drives the same parts itself).
 */
import { runEpisode, sampleSeed, type EpisodeEvent, type EpisodeOptions, type EpisodeResult } from '../agent/episode.ts';
import type { Policy } from '../agent/policies/types.ts';
import type { SqlEnvironment, SqlTask } from '../agent/sql-env.ts';
import { SEARCH_TEMPERATURE, type Answer, type AnswerConfig, type PolicyAnswer } from './answer.ts';
import type { Answerer } from './resources.ts';
import { JUDGE_DEFAULTS } from '../sql/judge.ts';
import { dialectOf } from '../sql/dialect.ts';
import { schemaSpelling } from '../sql/spelling.ts';

/**
 * The time the chosen answer is given to run again for the person to see its result (and its chart): as long as the
 * judge gives a query it scores (sql/judge.ts, the one home of that limit).
 */
export const RESULT_TIMEOUT_MS = JUDGE_DEFAULTS.timeoutMs;

/** The memories an answer path consults: those the policy's prompt contract names, then those given beside it. */
export function answerMemories(contract: { memory?: readonly string[] } | null | undefined, given: readonly string[] = []): string[] {
  return [...(contract?.memory ?? []), ...given];
}

export interface AskedAnswer {
  /** The greedy episode (what the policy alone answers). */
  episode: EpisodeResult;
  /** The answer path's choice; undefined without an answerer. */
  chosen?: Answer;
  /** The SQL to run: the chosen one, else the episode's answer; in the schema's spelling (sql/spelling.ts). */
  sql?: string;
  /** The episode's answer in the schema's spelling: what to compare the chosen SQL with. */
  policySql?: string;
}

/** A task's SQL as the schema spells its names (sql/spelling.ts): what ask, chat, serve and predict show and return. */
export function spellingFor(env: Pick<SqlEnvironment, 'schemaOf'>, task: Pick<SqlTask, 'dbPath'>): (sql: string) => string {
  return (sql) => schemaSpelling(sql, env.schemaOf(task.dbPath), dialectOf(task.dbPath));
}

/**
 * `o.seed` is the base seed (unset: 0): the episodes are numbered as predict numbers them (sampleSeed: the greedy one
 * 0, sample j j + 1), so ask and predict draw the same samples of a question.
 */
export async function askWithAnswerPath(
  env: SqlEnvironment,
  task: SqlTask,
  policy: Policy,
  answerer: Answerer | undefined,
  o: EpisodeOptions & { samples: number; onEvent?: (e: EpisodeEvent) => void; config?: Partial<AnswerConfig> },
): Promise<AskedAnswer> {
  const { samples, onEvent, config, seed, ...episodeOpts } = o;
  const episode = await runEpisode(env, task, policy, { ...episodeOpts, seed: sampleSeed(seed, 0) }, { onEvent });
  const policySql = episode.answer === undefined ? undefined : spellingFor(env, task)(episode.answer);
  const own = policySql !== undefined ? { policySql } : {};
  if (!answerer) return { episode, ...own, ...(policySql !== undefined ? { sql: policySql } : {}) };
  const sampled = await Promise.all(Array.from({ length: samples }, (_, j) => runEpisode(env, task, policy, { ...episodeOpts, temperature: SEARCH_TEMPERATURE, seed: sampleSeed(seed, j + 1) })));
  const asked: PolicyAnswer[] = [episode, ...sampled].flatMap((e, i) => (e.answer !== undefined ? [{ sql: e.answer, source: i === 0 && o.temperature === 0 ? ('greedy' as const) : ('sample' as const) }] : []));
  const chosen = await answerer.answer(task.dbPath, task.dbId, task.question, asked, answerConfigFor(task, config));
  const sql = chosen.sql ?? policySql;
  return { episode, chosen, ...own, ...(sql !== undefined ? { sql } : {}) };
}

/**
 * The answer path's settings for a task: a follow-up's candidates come from the policy alone (the memory's pairs and
 * the drafts stand alone and know nothing of the earlier turns). What ask and predict both answer with.
 */
export function answerConfigFor(task: Pick<SqlTask, 'previous'>, config?: Partial<AnswerConfig>): Partial<AnswerConfig> {
  return { ...config, ...((task.previous?.length ?? 0) > 0 ? { memoryK: 0, synth: 0 } : {}) };
}
