/**
 * Stage 5b: questions written by a served LLM, in the pair's style (formal, colloquial,
 * imperative, terse), returned as JSON {question, evidence, reasoning} and validated. Any failure
 * (endpoint down, slow, garbage) keeps the built-in question and is counted, never thrown.
 */
import { z } from 'zod';
import { LlmClient } from '../llm/client.ts';
import type { ChatMessage, LlmConfigInput } from '../llm/client.ts';
import { CircuitBreaker, failureReason } from '../llm/breaker.ts';
import { mapConcurrent } from '../util/concurrency.ts';
import { renderSchema } from '../prompt/render.ts';
import type { QuestionStyle } from '../data/dataset-row.ts';
import type { Stage, StageContext, SynthPair } from './types.ts';

export const QuestionReplySchema = z.object({
  question: z.string().trim().min(8).max(600),
  evidence: z.string().max(1000).default(''),
  reasoning: z.string().max(4000).default(''),
});
export type QuestionReply = z.output<typeof QuestionReplySchema>;

export const STYLE_GUIDE: Record<QuestionStyle, string> = {
  formal: 'a complete, polite, formal question, as an analyst would write in a report request',
  colloquial: 'a casual, conversational question, as someone would ask a colleague in chat',
  imperative: 'an instruction starting with a verb such as "List", "Show", "Give" or "Find"',
  terse: 'a very short query-like phrase of at most twelve words, no pleasantries',
};

export function questionPrompt(p: SynthPair, schemaText: string): ChatMessage[] {
  return [
    {
      role: 'system',
      content:
        'You write natural-language questions for text-to-SQL training data. Given a database schema and a SQL query, ' +
        'write the question a user would ask whose exact answer is the result of that query. Mention every filter value, ' +
        'every grouping, ordering and limit the query applies, and exactly the columns it returns; never mention SQL, ' +
        'table aliases or column names in code form. Put any domain knowledge or value mapping a reader would need into ' +
        '"evidence" (BIRD style, e.g. "adult refers to age >= 18"), or leave it empty. ' +
        'Reply with one JSON object: {"question": string, "evidence": string, "reasoning": string}, where reasoning explains ' +
        'step by step how the query answers the question.',
    },
    {
      role: 'user',
      content:
        `Schema:\n${schemaText}\n\nSQL:\n${p.sql}\n\n` +
        (p.question ? `A template-generated draft of the question (improve its wording, keep its meaning):\n${p.question}\n\n` : '') +
        `Style: ${p.style}: ${STYLE_GUIDE[p.style]}.`,
    },
  ];
}

export interface LlmQuestionsOptions {
  /** A ready client, or a config to build one. */
  client?: LlmClient;
  llm?: LlmConfigInput;
  /** Schema text budget in the prompt. */
  schemaChars?: number;
  /** Consecutive transport failures before the stage stops calling the endpoint. */
  breakerThreshold?: number;
}

export interface LlmStageStats {
  called: number;
  ok: number;
  /** Why items fell back to the built-in behavior: timeout, network, http, bad_reply, invalid_json, endpoint_down. */
  fallback: Record<string, number>;
}

export type StatsStage = Stage<SynthPair, SynthPair> & { stats: LlmStageStats };

function clientFrom(opts: { client?: LlmClient; llm?: LlmConfigInput }): LlmClient {
  if (opts.client) return opts.client;
  if (!opts.llm) throw new Error('an LLM stage needs a client or an llm config');
  return new LlmClient(opts.llm);
}

/** Each pair's decision in an LLM stage: the pair as it came, its copy with the stage in its provenance (to edit and return), or null to reject it. */
export type LlmPairStep = (p: SynthPair, next: SynthPair, ctx: StageContext) => Promise<SynthPair | null>;

/**
 * The shell both LLM stages share: the schema text their prompts show (opts.schemaChars, default 6000), a circuit
 * breaker (opts.breakerThreshold consecutive failures, default 3), one call per pair at the client's concurrency,
 * progress, and the pairs `step` keeps.
 */
export function llmStage(name: string, client: LlmClient, opts: { schemaChars?: number; breakerThreshold?: number }, setup: (schemaText: string, breaker: CircuitBreaker, stats: LlmStageStats) => LlmPairStep): StatsStage {
  const stats: LlmStageStats = { called: 0, ok: 0, fallback: {} };
  return {
    name,
    stats,
    async run(items: SynthPair[], ctx: StageContext): Promise<SynthPair[]> {
      const step = setup(renderSchema(ctx.schema, { maxChars: opts.schemaChars ?? 6000 }), new CircuitBreaker(opts.breakerThreshold ?? 3), stats);
      ctx.progress.start(name, items.length);
      const out = await mapConcurrent(items, client.config.concurrency, undefined, async (p): Promise<SynthPair | null> => {
        const next: SynthPair = { ...p, provenance: { ...p.provenance, stages: [...p.provenance.stages, name], checks: [...p.provenance.checks] } };
        try {
          return await step(p, next, ctx);
        } finally {
          ctx.progress.tick();
        }
      });
      ctx.progress.stop();
      return out.filter((x): x is SynthPair => x !== null);
    },
  };
}

/** Rewrite each pair's question with the LLM; returns how many calls succeeded in `stats`. */
export function llmQuestionsStage(opts: LlmQuestionsOptions): StatsStage {
  const client = clientFrom(opts);
  return llmStage('llm-questions', client, opts, (schemaText, breaker, stats) => {
    const count = (reason: string): void => {
      stats.fallback[reason] = (stats.fallback[reason] ?? 0) + 1;
    };
    return async (p, next) => {
      try {
        if (breaker.open) {
          count('endpoint_down');
          next.provenance.checks.push('llm_question_unavailable');
          return next;
        }
        stats.called++;
        const reply = await client.chatJson(questionPrompt(p, schemaText), QuestionReplySchema);
        breaker.success();
        stats.ok++;
        next.question = reply.question;
        next.provenance.grammar = 'llm';
        next.evidence = reply.evidence;
        next.provenance.checks.push('llm-question');
        return next;
      } catch (err) {
        breaker.failure(err);
        count(failureReason(err));
        next.provenance.checks.push('llm_question_unavailable');
        return next;
      }
    };
  });
}
