/**
 * Multi-turn rollouts: G episodes per task, sampled by the policy against an Environment.
 *
 * Token bookkeeping is the whole point. A trajectory is ONE token sequence: the prompt, then for each
 * turn the tokens the policy sampled (kept exactly as sampled, never re-tokenized, so the trained
 * log-probs are those of what was generated) and the environment's reply rendered with the chat
 * template's pieces. `mask` is 1 on policy tokens (trained) and 0 on everything the environment wrote.
 * The first turn of a group shares one prompt: it is sampled with `sampleGroups(model, [prompt], G)`
 * so the prompt's KV cache is computed once for all G; later turns have diverged and are batched.
 */
import { AgroError } from '../errors.ts';
import type { Environment, Episode, TaskBase, Transcript, ChatMessage } from '../agent/types.ts';
import { CHAT_TOKENS, renderPrompt } from '../model/chat.ts';
import type { Tokenizer } from '../model/tokenizer.ts';
import type { LlamaModel } from '../model/llama.ts';
import { sampleGroups, type SampleOptions, type TokenFilter } from '../model/generate.ts';
import type { RolloutEngine } from '../model/engine.ts';
import { sqlNameFilter } from '../agent/decoding/sql-names.ts';

export interface RolloutOptions {
  groupSize: number;
  /** New tokens per policy turn. */
  maxTurnTokens: number;
  /** Policy + environment tokens after the prompt; the episode ends (truncated) beyond it. */
  maxResponseTokens: number;
  temperature: number;
  topP: number;
  seed: number;
  /** Sampler; default the TF.js one on `model`. Must already hold the model's current weights (RolloutEngine.sync). */
  engine?: RolloutEngine;
  /**
   * Decode as `agro predict` does by default: the SQL a turn writes is held to SQL's words and the episode's
   * database names (Episode.names; src/agent/decoding/sql-names.ts), so RL samples only answers the deployed policy can
   * write. Off by default: on the quickstart it did not help (docs/training.md).
   */
  constrain?: boolean;
}

export interface Trajectory extends Transcript {
  taskId: string;
  /** Index of the task in the rollout batch: trajectories with the same group were sampled from the same prompt. */
  group: number;
  ids: number[];
  /** 1 = sampled by the policy (trained), 0 = prompt or environment. Same length as ids. */
  mask: number[];
  /** Number of prompt tokens at the start of ids. */
  promptLength: number;
}

interface Live {
  ep: Episode;
  ids: number[];
  mask: number[];
  messages: ChatMessage[];
  toolCalls: number;
  policyTokens: number;
  done?: Pick<Transcript, 'endReason' | 'answer' | 'truncated'>;
}


/** Roll out G episodes for each task. Deterministic for (model weights, tasks, options.seed). */
export async function rollout<T extends TaskBase>(
  env: Environment<T>,
  tasks: readonly T[],
  model: LlamaModel,
  tokenizer: Tokenizer,
  opts: RolloutOptions,
): Promise<Trajectory[]> {
  const endId = tokenizer.tokenId(CHAT_TOKENS.end);
  const eosId = tokenizer.tokenId(CHAT_TOKENS.eos);
  const toolId = tokenizer.tokenId(CHAT_TOKENS.tool);
  const asstId = tokenizer.tokenId(CHAT_TOKENS.assistant);
  const sampling = (turn: number, seedSalt: number): SampleOptions => ({
    maxNewTokens: opts.maxTurnTokens,
    temperature: opts.temperature,
    topP: opts.topP,
    stopTokenIds: [endId, eosId],
    seed: (opts.seed * 1000003 + turn * 7919 + seedSalt) >>> 0,
  });

  // Turn 1: one shared prompt per task, G samples from its cache.
  const groups: Live[][] = [];
  const prompts: number[][] = [];
  for (const task of tasks) {
    const eps = await Promise.all(Array.from({ length: opts.groupSize }, () => env.start(task)));
    const prompt = renderPrompt(tokenizer, eps[0].opening);
    prompts.push(prompt);
    groups.push(eps.map((ep) => ({ ep, ids: [...prompt], mask: prompt.map(() => 0), messages: [...ep.opening], toolCalls: 0, policyTokens: 0 })));
  }
  const promptLengths = prompts.map((p) => p.length);
  const maxPos = model.config.maxPositions;
  prompts.forEach((p, i) => {
    if (p.length + opts.maxTurnTokens > maxPos) {
      throw new AgroError('invalid_input', `task ${tasks[i].id}: the prompt has ${p.length} tokens; with ${opts.maxTurnTokens} new tokens it exceeds the model's ${maxPos} positions (shorten the schema budget or raise maxPositions)`);
    }
  });
  // One filter per row and turn: a turn's SQL block opens and closes within the turn.
  // String literals may be copied from anything the episode's conversation holds so far.
  const filterOf = (l: Live): TokenFilter | undefined => (l.ep.names ? sqlNameFilter(tokenizer, l.ep.names)?.(l.messages) : undefined);
  const constrained = (o: SampleOptions, lives: Live[]): SampleOptions => (opts.constrain ? { ...o, filter: (p) => filterOf(lives[p]) } : o);
  const sample = (ps: number[][], g: number, o: SampleOptions) => (opts.engine ? opts.engine.sampleGroups(ps, g, o) : sampleGroups(model, ps, g, o));
  let samples = (await sample(prompts, opts.groupSize, constrained(sampling(0, 0), groups.map((g) => g[0])))).flat();
  let active: Live[] = groups.flat();

  for (let turn = 0; active.length > 0; turn++) {
    // Feed each sampled turn to its episode.
    await Promise.all(
      active.map(async (live, i) => {
        const s = samples[i];
        live.ids.push(...s.tokens);
        live.mask.push(...s.tokens.map(() => 1));
        live.policyTokens += s.tokens.length;
        const stopped = s.finish === 'stop';
        const body = stopped ? s.tokens.slice(0, -1) : s.tokens;
        const text = tokenizer.decode(body);
        live.messages.push({ role: 'assistant', content: text });
        if (!stopped) {
          live.done = { endReason: 'token_budget', truncated: true };
          return;
        }
        const r = await live.ep.step(text);
        if (r.done) {
          live.done = { endReason: r.reason, answer: r.answer, truncated: false };
          return;
        }
        live.toolCalls++;
        live.messages.push({ role: 'tool', content: r.observation });
        const envIds = [toolId, ...tokenizer.encode(r.observation), endId, asstId];
        live.ids.push(...envIds);
        live.mask.push(...envIds.map(() => 0));
      }),
    );
    // Episodes still running within the response budget go on to the next turn.
    const next: Live[] = [];
    for (const live of active) {
      if (live.done) continue;
      const used = live.mask.length - live.mask.indexOf(1);
      const overBudget = used + opts.maxTurnTokens > opts.maxResponseTokens || live.ids.length + opts.maxTurnTokens > maxPos;
      if (overBudget) live.done = { endReason: 'token_budget', truncated: true };
      else next.push(live);
    }
    active = next;
    if (active.length === 0) break;
    samples = (await sample(active.map((l) => l.ids), 1, constrained(sampling(turn + 1, 1), active))).map((g) => g[0]);
  }

  return groups.flatMap((g, gi) =>
    g.map((live): Trajectory => {
      // Drop a trailing environment suffix (the next assistant header) that no policy token follows.
      let end = live.ids.length;
      while (end > promptLengths[gi] && live.mask[end - 1] === 0) end--;
      const done = live.done ?? { endReason: 'token_budget' as const, truncated: true };
      return {
        taskId: tasks[gi].id,
        group: gi,
        ids: live.ids.slice(0, end),
        mask: live.mask.slice(0, end),
        promptLength: promptLengths[gi],
        messages: live.messages,
        toolCalls: live.toolCalls,
        endReason: done.endReason,
        answer: done.answer,
        truncated: done.truncated,
        policyTokens: live.policyTokens,
      };
    }),
  );
}


/**
 * A trajectory written rather than sampled: the episode is stepped with the given assistant turns (e.g. the
 * environment's demonstration), laid out token for token as `rollout` lays out a sampled one (turn tokens + <|end|>
 * trained, observations masked). Off-policy data: its tokens are the tokenizer's encoding, not a policy sample.
 */
export async function replay<T extends TaskBase>(env: Environment<T>, task: T, turns: readonly string[], tokenizer: Tokenizer, group: number): Promise<Trajectory> {
  const endId = tokenizer.tokenId(CHAT_TOKENS.end);
  const ep = await env.start(task);
  const ids = renderPrompt(tokenizer, ep.opening);
  const promptLength = ids.length;
  const mask = ids.map(() => 0);
  const messages: ChatMessage[] = [...ep.opening];
  let toolCalls = 0;
  let policyTokens = 0;
  let done: Pick<Transcript, 'endReason' | 'answer'> = { endReason: 'turn_limit' };
  for (const [k, text] of turns.entries()) {
    const toks = [...tokenizer.encode(text), endId];
    ids.push(...toks);
    mask.push(...toks.map(() => 1));
    policyTokens += toks.length;
    messages.push({ role: 'assistant', content: text });
    const r = await ep.step(text);
    if (r.done) {
      done = { endReason: r.reason, answer: r.answer };
      break;
    }
    toolCalls++;
    messages.push({ role: 'tool', content: r.observation });
    if (k < turns.length - 1) {
      const envIds = [tokenizer.tokenId(CHAT_TOKENS.tool), ...tokenizer.encode(r.observation), endId, tokenizer.tokenId(CHAT_TOKENS.assistant)];
      ids.push(...envIds);
      mask.push(...envIds.map(() => 0));
    }
  }
  return { taskId: task.id, group, ids, mask, promptLength, messages, toolCalls, ...done, truncated: false, policyTokens };
}

/** The turn of each policy token: policy tokens come in one unbroken run per assistant turn (observations in between). */
export function policyTokenTurns(mask: readonly number[]): number[] {
  const out: number[] = [];
  let turn = -1;
  mask.forEach((m, t) => {
    if (m !== 1) return;
    if (t === 0 || mask[t - 1] !== 1) turn++;
    out.push(turn);
  });
  return out;
}

/** Where each assistant turn's policy tokens start in `ids`. */
export function turnStarts(mask: readonly number[]): number[] {
  return mask.flatMap((m, t) => (m === 1 && (t === 0 || mask[t - 1] !== 1) ? [t] : []));
}
