/**
 * Runs one question with a policy, the way a trained agent is used (ask, predict, the server's
 * playground): the environment's opening, then policy turns, each fed to the environment, until an
 * answer, the turn limit, the token budget or the deadline. Every step is reported through `onEvent`
 * as it happens; the caller decides what to print or stream.
 *
 * - agent mode: multi-turn with the SQL tool (the environment runs each <sql> and answers with an
 *   observation), as in training rollouts (src/rl/rollout.ts).
 * - direct mode: one turn; its <answer> or, failing that, its <sql> (or a bare/fenced query from a
 *   model that ignores the protocol) is the prediction.
 *
 * Unlike a training rollout, the conversation is kept as text and re-rendered each turn (a policy
 * behind an HTTP endpoint only sees text), and a turn is cut after its first closing action tag: a
 * model that goes on to imagine the observation still made its tool call.
 */
import { SQL_AGENT_ACTIONS, parseAction, type ParsedAction } from './protocol.ts';
import type { ChatMessage, Environment, TaskBase } from './types.ts';
import type { Policy, TurnReply } from './policies/types.ts';
import { oneLine } from '../errors.ts';

export const EPISODE_MODES = ['agent', 'direct'] as const;
export type EpisodeMode = (typeof EPISODE_MODES)[number];

export interface EpisodeOptions {
  mode: EpisodeMode;
  /** New tokens per turn. */
  maxTurnTokens: number;
  /** 0 = greedy (the default everywhere). */
  temperature: number;
  topP?: number;
  seed?: number;
  /**
   * Execution-guided decoding (Wang et al. 2018, "Robust Text-to-SQL Generation with Execution-Guided Decoding"):
   * when an answer's SQL does not run on the database, the same turn is sampled again, up to this many times, at
   * retryTemperature, and the first answer that runs is kept (none runs: the first one stays). A turn with no
   * valid action (no tags, or cut at the token budget) is sampled again the same way, and the first draft that
   * is a tool call or an answer that runs is kept. The policy never sees the failed drafts. 0 (the default)
   * turns it off.
   */
  retries?: number;
  /** Sampling temperature of those retries (default 0.7). */
  retryTemperature?: number;
  /** Wall-clock limit of the whole episode. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** An episode's wall-clock limit where the caller sets none (ask, chat, predict, /v1/ask, the Playground); unset here: none. */
export const EPISODE_TIMEOUT_MS = 120_000;

/**
 * The seed of a question's episode `s` from a run's base seed (unset: 0, as an episode without one): episode 0 is the
 * first (the greedy one where the answer path runs one; else the first sample), 1, 2, ... the next. The one
 * numbering of `agro predict` and of the answer path (ask, chat, serve), so the same question, base seed and policy
 * draw the same samples in both.
 */
export function sampleSeed(base: number | undefined, s: number): number {
  return (base ?? 0) + s * 7777;
}

export type EndReason = 'answer' | 'turn_limit' | 'invalid_action' | 'token_budget' | 'timeout' | 'error';

export interface TurnRecord {
  turn: number;
  /** The policy's text for this turn (after the cut at the first closing action tag). */
  text: string;
  action: 'sql' | 'answer' | 'invalid';
  think?: string;
  sql?: string;
  /** What the environment answered to a <sql> call. */
  observation?: string;
  /** Why the turn did not parse (invalid action). */
  invalid?: string;
  finish: 'stop' | 'length';
  /** Drafts of this turn's answer that did not run and were sampled again (execution-guided decoding). */
  retried?: number;
  ms: number;
  promptTokens?: number;
  completionTokens?: number;
}

export interface EpisodeResult {
  answer?: string;
  endReason: EndReason;
  /** For endReason 'error': the policy's or environment's one-line message. */
  error?: string;
  turns: TurnRecord[];
  messages: ChatMessage[];
  toolCalls: number;
  ms: number;
}

export type EpisodeEvent =
  | { type: 'turn_start'; turn: number }
  | { type: 'text'; turn: number; delta: string }
  | { type: 'turn'; record: TurnRecord }
  | { type: 'end'; result: EpisodeResult };

export interface EpisodeHooks {
  onEvent?: (e: EpisodeEvent) => void;
}

const ACTION_CLOSE = /<\/(sql|answer)>/i;

/** The turn up to and including its first closing action tag. */
export function cutAfterAction(text: string): string {
  const m = ACTION_CLOSE.exec(text);
  return m ? text.slice(0, m.index + m[0].length) : text;
}

/** Direct mode's reading of a reply that does not follow the protocol: a ```sql fence, else a bare SELECT/WITH. */
export function looseSql(text: string): string | undefined {
  const fence = /```(?:sql|sqlite)?\s*\n?([\s\S]*?)```/i.exec(text);
  if (fence && fence[1].trim()) return fence[1].trim();
  const bare = /^\s*((?:SELECT|WITH)\b[\s\S]*)$/i.exec(text);
  return bare ? bare[1].trim() : undefined;
}

class Deadline extends Error {}

function withDeadline<T>(p: Promise<T>, until: number, signal?: AbortSignal): Promise<T> {
  if (!Number.isFinite(until) && !signal) return p;
  return new Promise<T>((resolve, reject) => {
    const left = until - Date.now();
    const timer = Number.isFinite(until) ? setTimeout(() => reject(new Deadline()), Math.max(0, left)) : undefined;
    const onAbort = (): void => reject(new Deadline());
    signal?.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    });
  });
}

/** Run one episode. Never throws for a policy's or environment's failure: it ends with endReason 'error'. */
export async function runEpisode<T extends TaskBase>(env: Environment<T>, task: T, policy: Policy, opts: EpisodeOptions, hooks: EpisodeHooks = {}): Promise<EpisodeResult> {
  const t0 = Date.now();
  const until = opts.timeoutMs !== undefined ? t0 + opts.timeoutMs : Infinity;
  const emit = hooks.onEvent ?? (() => {});
  const turns: TurnRecord[] = [];
  let messages: ChatMessage[] = [];
  let toolCalls = 0;
  const finish = (r: Omit<EpisodeResult, 'turns' | 'messages' | 'toolCalls' | 'ms'>): EpisodeResult => {
    const result: EpisodeResult = { ...r, turns, messages, toolCalls, ms: Date.now() - t0 };
    emit({ type: 'end', result });
    return result;
  };
  const ctrl = new AbortController();
  try {
    const ep = await env.start(task);
    messages = [...ep.opening];
    for (let turn = 0; ; turn++) {
      emit({ type: 'turn_start', turn });
      const ts = Date.now();
      const draw = (attempt: number): Promise<TurnReply> =>
        withDeadline(
          policy.complete({
            messages,
            maxTokens: opts.maxTurnTokens,
            temperature: attempt === 0 ? opts.temperature : (opts.retryTemperature ?? 0.7),
            ...(opts.topP !== undefined ? { topP: opts.topP } : {}),
            ...(ep.names ? { names: ep.names } : {}),
            seed: (((opts.seed ?? 0) * 1000003) ^ (turn * 7919) ^ (attempt * 104729)) >>> 0,
            // Retries are drafts: only the first draw streams.
            ...(attempt === 0 ? { onText: (delta: string) => emit({ type: 'text', turn, delta }) } : {}),
            signal: ctrl.signal,
          }),
          until,
          opts.signal,
        );
      let reply = await draw(0);
      let text = cutAfterAction(reply.text);
      let parsed = parseAction(text, SQL_AGENT_ACTIONS);
      let retried = 0;
      const check = ep.check;
      const retries = opts.mode === 'agent' && check ? (opts.retries ?? 0) : 0;
      const runs = async (p: ParsedAction): Promise<boolean> => p.kind === 'answer' && (await check!(p.content)) === null;
      // A turn with no action at all (a small model's greedy repetition loop that runs to the token budget,
      // or text without tags) would end the episode unanswered: it is redrawn too, and then a tool call is as
      // good a way on as an answer that runs. A bad answer is only replaced by an answer that runs.
      const wasInvalid = parsed.kind === 'invalid';
      const good = async (p: ParsedAction): Promise<boolean> => (wasInvalid && p.kind === 'sql') || (await runs(p));
      if (retries > 0 && (wasInvalid || (parsed.kind === 'answer' && !(await runs(parsed))))) {
        while (retried < retries) {
          const again = await draw(++retried);
          const t = cutAfterAction(again.text);
          const p = parseAction(t, SQL_AGENT_ACTIONS);
          if (await good(p)) {
            [reply, text, parsed] = [again, t, p];
            break;
          }
        }
      }
      const rec: TurnRecord = { turn, text, action: 'invalid', finish: reply.finish, ms: Date.now() - ts, promptTokens: reply.promptTokens, completionTokens: reply.completionTokens, ...(retried ? { retried } : {}) };
      turns.push(rec);
      messages.push({ role: 'assistant', content: text });
      if (parsed.kind !== 'invalid') {
        rec.think = parsed.think;
        rec.action = parsed.kind === 'answer' ? 'answer' : 'sql';
        if (parsed.kind === 'sql') rec.sql = parsed.content;
      } else rec.invalid = parsed.reason;

      if (opts.mode === 'direct') {
        const answer = parsed.kind === 'invalid' ? looseSql(text) : parsed.content;
        emit({ type: 'turn', record: rec });
        if (answer !== undefined) return finish({ answer, endReason: 'answer' });
        return finish({ endReason: reply.finish === 'length' ? 'token_budget' : 'invalid_action' });
      }
      if (parsed.kind === 'invalid' && reply.finish === 'length') {
        emit({ type: 'turn', record: rec });
        return finish({ endReason: 'token_budget' });
      }
      const step = await withDeadline(ep.step(text, parsed), until, opts.signal);
      if (step.done) {
        emit({ type: 'turn', record: rec });
        return finish({ endReason: step.reason, ...(step.answer !== undefined ? { answer: step.answer } : {}) });
      }
      toolCalls++;
      rec.observation = step.observation;
      messages.push({ role: 'tool', content: step.observation });
      emit({ type: 'turn', record: rec });
    }
  } catch (err) {
    if (err instanceof Deadline) {
      ctrl.abort();
      return finish({ endReason: 'timeout', error: opts.signal?.aborted ? 'interrupted' : `episode ran past ${opts.timeoutMs} ms` });
    }
    return finish({ endReason: 'error', error: oneLine(err) });
  }
}
