/**
 * Stage 8: iterative generate-then-check refinement, K cycles. Each cycle asks a predictor for
 * SQL from the current pairs' questions and compares it with the gold SQL by execution (original
 * and variant databases). Pairs where they agree are settled. Divergent pairs go to an audit: if
 * the question does say what the gold SQL does, the pair stays (a hard example the predictor
 * missed); if not, it is regenerated (re-audited, then checked again next cycle) or dropped.
 */
import type { CompareMode } from '../sql/types.ts';
import { testSuiteMatch } from '../sql/testsuite.ts';
import { renderSchema } from '../prompt/render.ts';
import type { DbSchema } from '../sql/types.ts';
import { LlmClient } from '../llm/client.ts';
import { CircuitBreaker } from '../llm/breaker.ts';
import type { AuditOutcome } from './llm-audit.ts';
import { makeLlmAuditor } from './llm-audit.ts';
import type { Predictor } from './predictors.ts';
import { FunctionPredictor, LlmPredictor } from './predictors.ts';
import { QUESTION_STYLES } from '../data/dataset-row.ts';
import type { Stage, StageContext, SynthPair } from './types.ts';

export interface CycleLog {
  cycle: number;
  /** Pairs whose questions went to the predictor this cycle. */
  checked: number;
  /** Prediction matched the gold SQL on every database. */
  agreed: number;
  diverged: number;
  /** Divergent, audit found them aligned: kept as they are (the predictor was wrong). */
  keptHard: number;
  /** Divergent, audit could not run: kept, marked audit_unavailable. */
  auditUnavailable: number;
  /** Divergent and misaligned, regenerated and re-audited as aligned: checked again next cycle. */
  repaired: number;
  dropped: number;
}

export type AuditFn = (p: SynthPair, ctx: StageContext) => Promise<AuditOutcome>;
export type RegenerateFn = (p: SynthPair, ctx: StageContext, info: { cycle: number; outcome: AuditOutcome; prediction: string }) => Promise<SynthPair | null>;

export interface RefineDeps {
  predictor: Predictor;
  audit: AuditFn;
  /** Absent: misaligned pairs are dropped. */
  regenerate?: RegenerateFn;
}

export interface RefineOptions {
  cycles: number;
  /** How predicted and gold results are compared. Default 'spider' (order when gold orders). */
  compareMode?: CompareMode;
  onCycle?: (log: CycleLog) => void;
}

const stamp = (p: SynthPair, check: string, cycle: number): SynthPair => ({
  ...p,
  provenance: { ...p.provenance, checks: [...p.provenance.checks, check], cycle },
});

export async function refinePairs(pairs: readonly SynthPair[], ctx: StageContext, deps: RefineDeps, opts: RefineOptions): Promise<{ pairs: SynthPair[]; log: CycleLog[] }> {
  const settled = new Map<number, SynthPair>();
  let pending = pairs.map((p, slot) => ({ slot, pair: p }));
  const log: CycleLog[] = [];
  const dbs = [ctx.dbPath, ...ctx.variants];
  for (let cycle = 1; cycle <= opts.cycles && pending.length > 0; cycle++) {
    const entry: CycleLog = { cycle, checked: pending.length, agreed: 0, diverged: 0, keptHard: 0, auditUnavailable: 0, repaired: 0, dropped: 0 };
    ctx.progress.start(`refine ${cycle}/${opts.cycles}`, pending.length);
    const preds = await deps.predictor.predict(pending.map(({ pair }) => ({ dbId: pair.dbId, question: pair.question, evidence: pair.evidence })));
    const next: typeof pending = [];
    for (let i = 0; i < pending.length; i++) {
      const { slot, pair } = pending[i];
      const pred = preds[i] ?? '';
      const agree =
        pred.trim() !== '' &&
        (await testSuiteMatch(ctx.executor, pred, pair.sql, dbs, { mode: opts.compareMode ?? 'spider', timeoutMs: ctx.timeoutMs })).match;
      ctx.progress.tick();
      if (agree) {
        entry.agreed++;
        settled.set(slot, stamp(pair, 'refine-agree', cycle));
        continue;
      }
      entry.diverged++;
      const outcome = await deps.audit(pair, ctx);
      if (outcome.status === 'aligned') {
        entry.keptHard++;
        settled.set(slot, stamp(pair, 'refine-audited', cycle));
        continue;
      }
      if (outcome.status === 'unavailable') {
        entry.auditUnavailable++;
        settled.set(slot, stamp(pair, 'audit_unavailable', cycle));
        continue;
      }
      const regenerated = deps.regenerate ? await deps.regenerate(pair, ctx, { cycle, outcome, prediction: pred }) : null;
      if (regenerated) {
        const again = await deps.audit(regenerated, ctx);
        if (again.status === 'aligned') {
          entry.repaired++;
          const repaired = stamp({ ...regenerated, provenance: { ...regenerated.provenance, repairedFrom: regenerated.provenance.repairedFrom ?? pair.id } }, 'refine-repaired', cycle);
          // Checked again by the predictor next cycle; kept as is after the last one.
          if (cycle < opts.cycles) next.push({ slot, pair: repaired });
          else settled.set(slot, repaired);
          continue;
        }
      }
      entry.dropped++;
      ctx.reject(pair, `refine_${outcome.reason}`);
    }
    ctx.progress.stop();
    log.push(entry);
    opts.onCycle?.(entry);
    pending = next;
  }
  // With zero cycles nothing was checked: everything passes through.
  for (const { slot, pair } of pending) settled.set(slot, pair);
  const out = [...settled.entries()].sort((a, b) => a[0] - b[0]).map(([, p]) => ({ ...p, provenance: { ...p.provenance, stages: [...p.provenance.stages, 'refine'] } }));
  return { pairs: out, log };
}

// ---------------------------------------------------------------- the pipeline's stage

/** The built-in helpers the default wiring uses, injected so this file does not depend on align's internals. */
export interface BuiltinRoundTrip {
  /** The round-trip check of stage 6: does parsing the question lead back to the pair's results? */
  roundTrip: (ctx: StageContext, p: SynthPair) => Promise<string>;
  /** Question → SQL with the built-in parser (a predictor that needs no model). */
  parse?: (question: string) => string;
  /** Re-realize a pair's question in another style/variant (mutates the pair it is given). */
  realize?: (p: SynthPair, style: SynthPair['style'], variant: number) => void;
}

export interface RefineStageOptions {
  cycles: number;
  predictor?: Predictor;
  audit?: AuditFn;
  regenerate?: RegenerateFn;
  llmUrl?: string;
  llmModel?: string;
  /** Pipeline passes these; used to build the round-trip defaults. */
  schema?: DbSchema;
  graph?: unknown;
  builtin?: BuiltinRoundTrip;
  compareMode?: CompareMode;
}

/** Round-trip outcome ('ok' or a reason) as an audit. */
export function roundTripAudit(roundTrip: BuiltinRoundTrip['roundTrip']): AuditFn {
  return async (p, ctx) => {
    try {
      const r = await roundTrip(ctx, p);
      return r === 'ok' ? { status: 'aligned' } : { status: 'misaligned', reason: r };
    } catch (e) {
      return { status: 'unavailable', reason: `roundtrip_error: ${(e as Error).message}` };
    }
  };
}

/** Regenerate by re-realizing the question in the next style, a different variant each cycle. */
export function realizeRegenerator(realize: NonNullable<BuiltinRoundTrip['realize']>): RegenerateFn {
  return async (p, _ctx, { cycle }) => {
    const copy: SynthPair = { ...p, provenance: { ...p.provenance, stages: [...p.provenance.stages], checks: [...p.provenance.checks] } };
    const style = QUESTION_STYLES[(QUESTION_STYLES.indexOf(p.style) + cycle) % QUESTION_STYLES.length];
    try {
      realize(copy, style, 2 + cycle);
    } catch {
      return null;
    }
    return copy.question && copy.question !== p.question ? copy : null;
  };
}

/** Loads the other factory helpers' round trip, parser and realizer when they are present. */
async function loadBuiltin(schema: DbSchema, graph: unknown, dialect: StageContext['dialect']): Promise<BuiltinRoundTrip | undefined> {
  try {
    const align = (await import('./align.ts')) as unknown as {
      makeParseEnv: (s: DbSchema, g: unknown) => unknown;
      roundTrip: (ctx: StageContext, env: unknown, p: SynthPair) => Promise<string>;
      parseQuestion: (q: string, env: unknown) => unknown;
    };
    const print = (await import('./print.ts')) as unknown as { printQuery: (q: unknown, d: StageContext['dialect']) => string };
    const realize = (await import('./language/realize.ts')) as unknown as { realizePair: (p: SynthPair, s: SynthPair['style'], v: number) => void };
    const env = align.makeParseEnv(schema, graph);
    return {
      roundTrip: (ctx, p) => align.roundTrip(ctx, env, p),
      parse: (q) => print.printQuery(align.parseQuestion(q, env), dialect),
      realize: realize.realizePair,
    };
  } catch {
    return undefined;
  }
}

export function refineStage(opts: RefineStageOptions): Stage<SynthPair, SynthPair> & { log: CycleLog[] } {
  const log: CycleLog[] = [];
  return {
    name: 'refine',
    log,
    async run(items: SynthPair[], ctx: StageContext): Promise<SynthPair[]> {
      const builtin = opts.builtin ?? (opts.graph ? await loadBuiltin(opts.schema ?? ctx.schema, opts.graph, ctx.dialect) : undefined);
      const llm = opts.llmUrl && opts.llmModel ? new LlmClient({ baseUrl: opts.llmUrl, model: opts.llmModel }) : undefined;
      const schemaText = llm ? renderSchema(ctx.schema, { maxChars: 6000 }) : '';
      let predictor = opts.predictor;
      if (!predictor && llm) predictor = new LlmPredictor(llm, () => schemaText);
      if (!predictor && builtin?.parse) predictor = new FunctionPredictor('roundtrip-parser', (it) => builtin.parse!(it.question));
      if (!predictor) return items; // nothing to check against: pass through unchanged

      let audit = opts.audit;
      if (!audit) {
        const fallback = builtin ? roundTripAudit(builtin.roundTrip) : undefined;
        if (llm) {
          const llmAudit = makeLlmAuditor(llm, schemaText, new CircuitBreaker());
          // The LLM judge first; when it cannot answer, the round trip decides if there is one.
          audit = async (p, c) => {
            const r = await llmAudit(p);
            return r.status === 'unavailable' && fallback ? fallback(p, c) : r;
          };
        } else if (fallback) audit = fallback;
        else audit = async () => ({ status: 'unavailable', reason: 'no_auditor' });
      }
      const regenerate = opts.regenerate ?? (builtin?.realize ? realizeRegenerator(builtin.realize) : undefined);
      const r = await refinePairs(items, ctx, { predictor, audit, regenerate }, { cycles: opts.cycles, compareMode: opts.compareMode, onCycle: (e) => log.push(e) });
      return r.pairs;
    },
  };
}
