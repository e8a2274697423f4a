/**
 * Stage 6b: a multi-dimensional semantic audit by a served LLM. The judge checks, dimension by
 * dimension, that the question asks for exactly what the SQL computes, and may propose a fixed
 * question. Misaligned pairs are repaired (fix re-audited once) or rejected; when the endpoint is
 * down, slow or talks garbage, the pair is kept and marked 'audit_unavailable', with the reason
 * counted.
 */
import { z } from 'zod';
import { LlmClient } from '../llm/client.ts';
import type { ChatMessage, LlmConfigInput } from '../llm/client.ts';
import { CircuitBreaker, failureReason } from '../llm/breaker.ts';
import { llmStage, type StatsStage } from './llm-questions.ts';
import type { SynthPair } from './types.ts';

export const AUDIT_DIMENSIONS = ['entities', 'conditions', 'aggregation', 'grouping', 'ordering', 'output_columns'] as const;
export type AuditDimension = (typeof AUDIT_DIMENSIONS)[number];

const DimensionSchema = z.object({ ok: z.boolean(), note: z.string().default('') });
export const AuditVerdictSchema = z.object({
  aligned: z.boolean(),
  dimensions: z.object(Object.fromEntries(AUDIT_DIMENSIONS.map((d) => [d, DimensionSchema])) as Record<AuditDimension, typeof DimensionSchema>),
  fix: z.string().trim().min(1).optional().nullable(),
});
export type AuditVerdict = z.output<typeof AuditVerdictSchema>;

export function auditPrompt(question: string, evidence: string, sql: string, schemaText: string): ChatMessage[] {
  return [
    {
      role: 'system',
      content:
        'You audit text-to-SQL training pairs. Decide whether the SQL answers exactly the question (with its evidence), ' +
        'checking each dimension: entities (the tables/things referred to), conditions (every filter and value, none ' +
        'missing or extra), aggregation (count/sum/avg/min/max and DISTINCT), grouping ("for each ..."), ordering ' +
        '(sort direction, top-k and limit), output_columns (the question asks for exactly the columns returned). ' +
        'Reply with one JSON object: {"aligned": boolean, "dimensions": {"entities": {"ok": boolean, "note": string}, ' +
        '"conditions": {...}, "aggregation": {...}, "grouping": {...}, "ordering": {...}, "output_columns": {...}}, ' +
        '"fix": string or null}. aligned is true only when every dimension is ok. When not aligned, "fix" is a rewritten ' +
        'question that the SQL answers exactly.',
    },
    {
      role: 'user',
      content: `Schema:\n${schemaText}\n\nQuestion: ${question}\nEvidence: ${evidence || '(none)'}\n\nSQL:\n${sql}`,
    },
  ];
}

/** One audit call; throws LlmError when the endpoint fails or the reply stays invalid. */
export async function llmAudit(client: LlmClient, p: Pick<SynthPair, 'question' | 'evidence' | 'sql'>, schemaText: string): Promise<AuditVerdict> {
  const v = await client.chatJson(auditPrompt(p.question, p.evidence, p.sql, schemaText), AuditVerdictSchema, { temperature: 0 });
  // A verdict that calls itself aligned while failing a dimension is not aligned.
  const allOk = AUDIT_DIMENSIONS.every((d) => v.dimensions[d].ok);
  return { ...v, aligned: v.aligned && allOk };
}

/** What the refine stage (and anyone else) gets back from an audit. */
export type AuditOutcome =
  | { status: 'aligned'; verdict?: AuditVerdict }
  | { status: 'misaligned'; verdict?: AuditVerdict; reason: string }
  | { status: 'unavailable'; reason: string };

export interface LlmAuditOptions {
  client?: LlmClient;
  llm?: LlmConfigInput;
  /** Pipeline shorthand: endpoint base URL and model name. */
  url?: string;
  model?: string;
  seed?: number;
  schemaChars?: number;
  breakerThreshold?: number;
  /** Apply the judge's `fix` question (re-audited once) instead of rejecting. Default true. */
  applyFix?: boolean;
}

function clientOf(opts: LlmAuditOptions): LlmClient {
  if (opts.client) return opts.client;
  if (opts.llm) return new LlmClient(opts.llm);
  if (opts.url && opts.model) return new LlmClient({ baseUrl: opts.url, model: opts.model });
  throw new Error('llm audit needs a client, an llm config, or url and model');
}

/** An auditor bound to one client and schema, with a breaker: never throws. */
export function makeLlmAuditor(client: LlmClient, schemaText: string, breaker = new CircuitBreaker()): (p: SynthPair) => Promise<AuditOutcome> {
  return async (p) => {
    if (breaker.open) return { status: 'unavailable', reason: 'endpoint_down' };
    try {
      const verdict = await llmAudit(client, p, schemaText);
      breaker.success();
      if (verdict.aligned) return { status: 'aligned', verdict };
      const bad = AUDIT_DIMENSIONS.filter((d) => !verdict.dimensions[d].ok);
      return { status: 'misaligned', verdict, reason: `audit_${bad[0] ?? 'misaligned'}` };
    } catch (err) {
      breaker.failure(err);
      return { status: 'unavailable', reason: failureReason(err) };
    }
  };
}

export function llmAuditStage(opts: LlmAuditOptions): StatsStage {
  const client = clientOf(opts);
  return llmStage('llm-audit', client, opts, (schemaText, breaker, stats) => {
    const audit = makeLlmAuditor(client, schemaText, breaker);
    return async (p, next, ctx) => {
      stats.called++;
      let r = await audit(next);
      if (r.status === 'misaligned' && (opts.applyFix ?? true) && r.verdict?.fix) {
        const fixed: SynthPair = { ...next, question: r.verdict.fix, provenance: { ...next.provenance, repairedFrom: p.id, grammar: 'llm' } };
        const again = await audit(fixed);
        if (again.status === 'aligned') {
          fixed.provenance.checks.push('llm-audit-fixed');
          stats.ok++;
          return fixed;
        }
        if (again.status === 'unavailable') r = again;
      }
      if (r.status === 'aligned') {
        stats.ok++;
        next.provenance.checks.push('llm-audit');
        return next;
      }
      if (r.status === 'unavailable') {
        stats.fallback[r.reason] = (stats.fallback[r.reason] ?? 0) + 1;
        next.provenance.checks.push('audit_unavailable');
        return next;
      }
      ctx.reject(p, r.reason);
      return null;
    };
  });
}
