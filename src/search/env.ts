/**
 * The search agent's environment: the policy answers a multi-hop question by searching a local BM25
 * corpus and opening pages, then gives a final answer. Each turn is `<think>…</think>` followed by one
 * of `<search>query</search>`, `<open>doc id</open>`, `<answer>text</answer>` (src/agent/protocol.ts).
 * Tool results come back as observation turns (the trainer masks them from the loss).
 *
 * rewardContext() hands the reward registry (src/rl/rewards.ts) the answer, gold answers, gold entity
 * names, turns and tool calls, plus the E-GRPO signals computed here (`correct`, `formatOk`,
 * `entityRate`, from the reasoning text, not the answer) so the trainer can feed egrpoShape directly.
 * score() returns the same facts as named parts; weighting them is the reward registry's job:
 *   answer       1/0 exact match (Search-R1 normalization) against the answer and its aliases; F1 in the reason
 *   answer_f1    best token F1 against the answer and aliases (information; weight 0 unless wanted)
 *   entity_match γ: fraction of the task's ground-truth entities mentioned in the policy's reasoning
 *   format       1 when every assistant turn parsed and the episode ended with <answer>, else 0
 *   tool_calls   number of executed search/open calls (raw count, not a reward)
 */
import { z } from 'zod';
import { AgroError, parseWith } from '../errors.ts';
import { formatAction, formatObservation, parseAction, SEARCH_AGENT_ACTIONS } from '../agent/protocol.ts';
import type { ChatMessage, Entity, Environment, Episode, RewardContext, StepResult, TaskBase, Transcript } from '../agent/types.ts';
import type { SearchCorpus } from './corpus.ts';
import { bestF1, entityMatchRate, exactMatch } from './match.ts';

/** Reward components by name with reasons (raw facts, unweighted). */
export type RewardParts = Record<string, { value: number; reason: string }>;

/** The registry's context plus what E-GRPO needs, computed by this environment. */
export type SearchRewardContext = RewardContext & {
  correct: boolean;
  /** Every assistant turn parsed and the episode ended with <answer> (not truncated). */
  formatOk: boolean;
  /** γ: fraction of ground-truth entities mentioned in `reasoning` (see reasoningText). */
  entityRate: number;
  reasoning: string;
  answerF1: number;
};

export interface SearchTask extends TaskBase {
  question: string;
  answer: string;
  aliases?: string[];
  /** Ground-truth entities of the question's chain (the anchor excluded), for the entity match rate. */
  entities?: Entity[];
}

export const searchEnvConfigSchema = z.strictObject({
  /** Policy turns per episode, the answer turn included. */
  maxTurns: z.number().int().min(1).default(8),
  /** search + open calls per episode; calls past it are refused with a message (the turn still counts). */
  maxToolCalls: z.number().int().min(0).default(6),
  topK: z.number().int().min(1).max(50).default(3),
  snippetChars: z.number().int().min(20).default(240),
  openChars: z.number().int().min(50).default(1500),
  /** Hard cap on any observation's length. */
  observationChars: z.number().int().min(100).default(3000),
});
export type SearchEnvConfig = z.infer<typeof searchEnvConfigSchema>;

export function searchSystemPrompt(cfg: SearchEnvConfig): string {
  return [
    'You answer questions by searching a document collection. Each of your turns is exactly one',
    '<think>your reasoning</think> block followed by exactly one action:',
    '  <search>keywords</search>   returns the top ' + cfg.topK + ' documents as [doc id] title: snippet',
    '  <open>doc id</open>         returns the full text of one document',
    '  <answer>short answer</answer>   ends the episode; give only the answer (a name, number or date)',
    'Tool results come back inside <observation>…</observation>. Questions may need several hops: find the',
    'entity the question starts from, read which entity it points to, then search for that one.',
    `You have at most ${cfg.maxTurns} turns and ${cfg.maxToolCalls} tool calls.`,
  ].join('\n');
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : text.slice(0, max - 1) + '…';
}

/**
 * The text that counts as the policy's reasoning for the entity match rate: the <think> content of
 * every well-formed assistant turn and the query of every <search> action, joined by newlines.
 * Not counted: tool observations (retrieving a page is not mentioning it), <open> ids, the final
 * <answer>, the question, and turns that failed to parse.
 */
export function reasoningText(messages: readonly ChatMessage[]): string {
  const parts: string[] = [];
  for (const m of messages) {
    if (m.role !== 'assistant') continue;
    const a = parseAction(m.content, SEARCH_AGENT_ACTIONS);
    if (a.kind === 'invalid') continue;
    if (a.think) parts.push(a.think);
    if (a.kind === 'search') parts.push(a.content);
  }
  return parts.join('\n');
}

export class SearchEnvironment implements Environment<SearchTask> {
  readonly name = 'search';
  readonly config: SearchEnvConfig;

  constructor(
    private readonly corpus: SearchCorpus,
    config: Partial<SearchEnvConfig> = {},
  ) {
    this.config = parseWith(searchEnvConfigSchema, config, 'search environment config');
  }

  /** One answer turn with the gold answer. */
  demonstration(task: SearchTask): string[] {
    return [formatAction({ kind: 'answer', content: task.answer, think: '' })];
  }

  async start(task: SearchTask): Promise<Episode> {
    const cfg = this.config;
    const corpus = this.corpus;
    let turns = 0;
    let toolCalls = 0;
    let finished = false;
    const observe = (text: string) => formatObservation(clip(text, cfg.observationChars));

    const runTool = (kind: 'search' | 'open', arg: string): string => {
      if (kind === 'search') {
        const hits = corpus.search(arg, cfg.topK, cfg.snippetChars);
        if (hits.length === 0) return `No documents match "${arg}".`;
        return hits.map((h) => `[${h.id}] ${h.title}: ${h.snippet}`).join('\n');
      }
      const page = corpus.open(arg, cfg.openChars);
      if (!page) return `No document with id "${arg}". Use an id shown in brackets by <search>.`;
      return `[${page.id}] ${page.title}\n${page.text}`;
    };

    const step = async (policyText: string): Promise<StepResult> => {
      if (finished) throw new AgroError('internal', 'step() called after the episode ended');
      turns++;
      const action = parseAction(policyText, SEARCH_AGENT_ACTIONS);
      if (action.kind === 'invalid') {
        finished = true;
        return { done: true, reason: 'invalid_action', observation: observe(`Invalid action: ${action.reason}`) };
      }
      if (action.kind === 'answer') {
        finished = true;
        return { done: true, reason: 'answer', answer: action.content };
      }
      let text: string;
      if (action.kind === 'search' || action.kind === 'open') {
        if (toolCalls >= cfg.maxToolCalls) {
          text = `No tool calls left (limit ${cfg.maxToolCalls}). Give your final <answer> now.`;
        } else {
          toolCalls++;
          text = runTool(action.kind, action.content);
        }
      } else {
        // parseAction only returns actions from SEARCH_AGENT_ACTIONS; anything else is a protocol bug.
        throw new AgroError('internal', `unexpected action ${action.kind}`);
      }
      if (turns >= cfg.maxTurns) {
        finished = true;
        return { done: true, reason: 'turn_limit', observation: observe(text) };
      }
      return { done: false, observation: observe(text) };
    };

    return {
      opening: [
        { role: 'system', content: searchSystemPrompt(cfg) },
        { role: 'user', content: `Question: ${task.question}` },
      ],
      step,
    };
  }

  /** Everything score() and rewardContext() report, computed once from the transcript. */
  private facts(task: SearchTask, transcript: Transcript) {
    const golds = [task.answer, ...(task.aliases ?? [])];
    const answered = transcript.endReason === 'answer' && transcript.answer !== undefined;
    const answer = answered ? transcript.answer! : '';
    const em = answered && exactMatch(answer, golds);
    const f1 = answered ? bestF1(answer, golds) : 0;

    const turns = transcript.messages.filter((m) => m.role === 'assistant').map((m) => m.content);
    const parsed = turns.map((t) => parseAction(t, SEARCH_AGENT_ACTIONS));
    const badTurn = parsed.findIndex((p) => p.kind === 'invalid');
    const requested = parsed.filter((p) => p.kind === 'search' || p.kind === 'open').length;
    const executed = Math.min(requested, this.config.maxToolCalls);

    const formatOk = badTurn < 0 && answered && !transcript.truncated;
    let formatReason = 'every turn well formed, ended with <answer>';
    if (badTurn >= 0) {
      const p = parsed[badTurn];
      formatReason = `turn ${badTurn + 1}: ${p.kind === 'invalid' ? p.reason : ''}`;
    } else if (transcript.truncated) formatReason = 'generation hit the token limit';
    else if (!answered) formatReason = `no <answer> (ended by ${transcript.endReason})`;

    const entities = task.entities ?? [];
    const reasoning = reasoningText(transcript.messages);
    const { rate, matched } = entityMatchRate(reasoning, entities);
    return { golds, answered, answer, em, f1, turns, requested, executed, formatOk, formatReason, entities, reasoning, rate, matched };
  }

  async rewardContext(task: SearchTask, transcript: Transcript): Promise<SearchRewardContext> {
    const f = this.facts(task, transcript);
    return {
      response: f.turns[f.turns.length - 1] ?? '',
      turns: f.turns,
      allowedActions: SEARCH_AGENT_ACTIONS,
      answer: f.answer,
      goldAnswers: f.golds,
      goldEntities: f.entities,
      toolCalls: f.executed,
      correct: f.em,
      completionTokens: transcript.policyTokens,
      formatOk: f.formatOk,
      entityRate: f.rate,
      reasoning: f.reasoning,
      answerF1: f.f1,
    };
  }

  async score(task: SearchTask, transcript: Transcript): Promise<RewardParts> {
    const f = this.facts(task, transcript);
    return {
      answer: {
        value: f.em ? 1 : 0,
        reason: f.answered
          ? `${f.em ? 'exact match' : 'no exact match'} (F1 ${f.f1.toFixed(2)}) for ${JSON.stringify(f.answer)}`
          : 'no answer',
      },
      answer_f1: { value: f.f1, reason: 'best token F1 against the answer and aliases (information)' },
      entity_match: {
        value: f.rate,
        reason:
          f.entities.length === 0
            ? 'no ground-truth entities'
            : `${f.matched.length}/${f.entities.length} entities in reasoning${f.matched.length ? `: ${f.matched.join(', ')}` : ''}`,
      },
      format: { value: f.formatOk ? 1 : 0, reason: f.formatReason },
      tool_calls: {
        value: f.executed,
        reason: `${f.executed} executed of ${f.requested} requested (limit ${this.config.maxToolCalls})`,
      },
    };
  }
}
