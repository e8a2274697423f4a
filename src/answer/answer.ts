/**
 * The answer path: gather candidate queries for a question from every source agro has (the policy's greedy
 * answer and samples, the memory's nearest pairs, those pairs and the policy's answers edited to the
 * question's values, numbers and order), run each distinct one in the sandbox, group them by result, and
 * choose by a checked reading (rank.ts). Pure orchestration over injected parts: the executor, the memory,
 * the value lookup and the reader, so every stage is tested alone and the CLI, predict, serve and the
 * quickstart share one path.
 */
import { z } from 'zod';
import type { SqlExecutor } from '../sql/types.ts';
import { swapColumns, type SwapNames } from './swap.ts';
import { widenQuery } from './widen.ts';
import { compareAsAsked } from './compare.ts';
import { flipOrder, hasLiterals, moveFilters, regroundQuery, type ColumnRange, type NamedValue } from './edit.ts';
import { resultSignature } from '../memory/entry.ts';
import type { MemoryIndex } from './memory.ts';
import { confidenceOf, isDegenerate, JUDGE_LOW_CONFIDENCE, LOW_CONFIDENCE, literalFeatures, negates, score, RANK_WEIGHTS, type CandidateSource, type Features, type RankWeights } from './rank.ts';
import type { Reader } from './reading.ts';
import { intentWeights, type QuestionSynth } from './synth.ts';
import { asksNegation, cosine, covered, Idf } from './text.ts';
import { countsAnotherThing } from './intent.ts';
import { returnsAnotherThing, type ReturnedNames } from './returned.ts';

/** Sampled episodes (at SEARCH_TEMPERATURE) beside the greedy one that the policy adds as candidates (predict, ask, serve). */
export const SEARCH_SAMPLES = 4;
export const SEARCH_TEMPERATURE = 0.7;
/** Queries question-time synthesis drafts for a question. */
export const SYNTH_DRAFTS = 40;

export const answerConfigSchema = z.strictObject({
  /** Nearest remembered pairs taken as candidates (0: the memory is not asked). */
  memoryK: z.number().int().min(0).max(200).default(20),
  /** Re-ground candidates to the question's values and numbers. */
  edits: z.boolean().default(true),
  /** Also try the other ORDER BY direction of the best few candidates. */
  flips: z.number().int().min(0).max(50).default(5),
  /** Queries drawn by question-time synthesis over the tables the question is about (0: none). */
  synth: z.number().int().min(0).max(500).default(SYNTH_DRAFTS),
  /** Draw them more often from the templates the question's words ask for (synth.ts intentWeights). Off by default: on, a predict test's edited memory answer lost to a steered draft. */
  steer: z.boolean().default(false),
  /** Per candidate query. */
  execTimeoutMs: z.number().int().positive().default(5000),
  /** Rows kept per candidate result (a candidate cut there still answers; its signature is of what was kept). */
  maxRows: z.number().int().positive().default(10_000),
  /** Wall-clock budget for running candidates: those not started by then are skipped. */
  budgetMs: z.number().int().positive().default(8000),
  /**
   * Who chooses when a judge is given: the transparent score (the judge then gives the confidence), or the judge. On
   * people's questions the judge's choice measured level with the transparent one, and it has not yet seen a policy's
   * candidates (docs/answering.md#judge): it gives the confidence by default.
   */
  chooser: z.enum(['transparent', 'judge']).default('transparent'),
});
export type AnswerConfig = z.output<typeof answerConfigSchema>;

export interface AnswerResources {
  executor: SqlExecutor;
  dbPath: string;
  memory?: MemoryIndex;
  /** Stored values the question names (the value index's matches), best first. */
  values?: (question: string) => NamedValue[];
  reader?: Reader;
  synth?: QuestionSynth;
  /** Numeric columns' stored ranges: a number edit stays within them. */
  ranges?: ColumnRange;
  weights?: RankWeights;
  /** A learned judge (src/judge): when given, its probability is the confidence, and with `chooser: 'judge'` it chooses. */
  judge?: CandidateJudge;
  /** The tables by the words a question counts them in (intent.ts countedNames): a reading counting another is held low. */
  counted?: ReadonlyMap<string, string>;
  /** The schema's tables and columns as a question asks for them (returned.ts): a query returning another thing is held low. */
  returned?: ReturnedNames;
  /** Each table's columns by their words (swap.ts): a column the question names swapped in for one it does not, or added (widen.ts). */
  swaps?: SwapNames;
}

/** What a judge reads of a candidate. */
export type JudgedCandidate = Pick<RankedCandidate, 'sql' | 'sources' | 'reading' | 'features' | 'score' | 'rows' | 'columns' | 'signature'>;

/**
 * A judge of a question's candidates, injected by the caller: for each candidate, the score its result is ranked by
 * (one value per result), and the calibrated probability that its result answers the question.
 */
export type CandidateJudge = (question: string, candidates: readonly JudgedCandidate[]) => { rank: number[]; confidence: number[] };

/** A query the policy gave, in order of sampling: the first greedy one, the rest samples (a repeat is the same vote again, not another). */
export interface PolicyAnswer {
  sql: string;
  source: 'greedy' | 'sample';
}

export interface RankedCandidate {
  sql: string;
  sources: CandidateSource[];
  /** The factory's reading closest to the question. */
  reading: string | null;
  features: Features;
  score: number;
  /** With a judge: the probability it gives the candidate's result. */
  judge?: number;
  /** Index of its result group (0: the chosen one). */
  group: number;
  rows: number;
  /** Columns of its result, and the result's order-free signature (`columns:hash`): what its group shares. */
  columns: number;
  signature: string;
  /** How the query was edited from the one it came from. */
  changes?: Array<{ from: string; to: string }>;
}

export interface Answer {
  sql: string | null;
  columns: string[];
  rows: unknown[][];
  truncated: boolean;
  reading: string | null;
  confidence: number;
  /**
   * A guess to check: the confidence is below the mark of its kind (LOW_CONFIDENCE, or JUDGE_LOW_CONFIDENCE for a judge's),
   * or the query leaves out a value or number the question names, its reading counts another table's rows than the
   * question, or it returns another thing than the question asks for (its confidence is then held to the mark).
   */
  low: boolean;
  /** Every candidate that ran and returned rows, best first. */
  candidates: RankedCandidate[];
  /** Candidates tried (distinct queries), and how many failed to run or returned nothing. */
  tried: number;
  failed: number;
  empty: number;
  ms: number;
}

interface Draft {
  sql: string;
  sources: Set<CandidateSource>;
  readings: string[];
  changes?: Array<{ from: string; to: string }>;
}

/** Whether the policy wrote the query (its greedy answer or a sample). */
const byPolicy = (d: Draft): boolean => d.sources.has('greedy') || d.sources.has('sample');

const norm = (sql: string): string => sql.trim().replace(/;\s*$/, '').replace(/\s+/g, ' ');

/** Replaces each edited literal in a stored question, so a remembered wording reads as the edited query. */
function substitute(question: string, changes: ReadonlyArray<{ from: string; to: string }>): string | null {
  let out = question;
  for (const c of changes) {
    const from = c.from.replace(/%/g, '');
    const to = c.to.replace(/%/g, '');
    const i = out.toLowerCase().indexOf(from.toLowerCase());
    if (!from || i < 0) return null;
    out = out.slice(0, i) + to + out.slice(i + from.length);
  }
  return out;
}

export async function answerQuestion(question: string, policy: readonly PolicyAnswer[], res: AnswerResources, config: Partial<AnswerConfig> = {}): Promise<Answer> {
  const cfg = answerConfigSchema.parse(config);
  const t0 = performance.now();
  const values = res.values?.(question) ?? [];
  const drafts = new Map<string, Draft>();
  const add = (sql: string, source: CandidateSource, readings: string[], changes?: Draft['changes']): void => {
    const key = norm(sql);
    if (!key || /^select\s+null$/i.test(key)) return;
    let d = drafts.get(key);
    if (!d) drafts.set(key, (d = { sql: key, sources: new Set(), readings: [], ...(changes ? { changes } : {}) }));
    d.sources.add(source);
    for (const r of readings) if (!d.readings.includes(r)) d.readings.push(r);
  };
  // A column the question names in place of a sibling it does not (swap.ts): the reader words the result.
  const swapped = (sql: string): void => {
    if (res.swaps) for (const e of swapColumns(sql, question, res.swaps)) add(e.sql, 'edit', [], e.changes);
    // What the question asks for besides what the query returns (widen.ts): the reader words it too.
    if (res.swaps) for (const e of widenQuery(sql, question, res.swaps)) add(e.sql, 'edit', [], e.changes);
  };
  /**
   * `grounded`: the query is a remembered one or the policy's, made for a question like this one. A draft is a random
   * shape: swapping the question's columns into it makes a query that reads like the question and answers another
   * (it beat the policy's right answer in test/pipeline/predict), so its columns are left as drafted.
   */
  const edited = (sql: string, readings: string[], grounded = true): void => {
    if (!cfg.edits) return;
    const e = regroundQuery(sql, question, values, res.ranges);
    if (e) {
      const stored = readings.map((q) => substitute(q, e.changes)).filter((q): q is string => q !== null);
      add(e.sql, 'edit', stored, e.changes);
    }
    // The question's comparison for a number it names (compare.ts), on the query as regrounded (its number carried over).
    const c = compareAsAsked(e?.sql ?? sql, question);
    if (c) add(c.sql, 'edit', [], [...(e?.changes ?? []), ...c.changes]);
    if (grounded) swapped(e?.sql ?? sql);
  };
  // A filter moved to a value the question names has no stored wording: the reader words it.
  const moved = (sql: string): void => {
    if (cfg.edits) for (const e of moveFilters(sql, question, values)) add(e.sql, 'edit', [], e.changes);
  };
  for (const p of policy) add(p.sql, p.source, []);
  for (const p of new Set(policy.map((x) => x.sql))) edited(p, []);
  const recalled = res.memory && cfg.memoryK > 0 ? res.memory.nearest(question, cfg.memoryK) : [];
  for (const r of recalled) {
    add(r.entry.sql, 'memory', r.entry.questions);
    if (r.entry.source === 'person') add(r.entry.sql, 'person', []);
    edited(r.entry.sql, r.entry.questions);
    moved(r.entry.sql);
  }
  if (res.synth && cfg.synth > 0) {
    // A drafted query's literals come from a random row: only its edits to the question's values, and the drafts
    // with no literal at all, are candidates.
    for (const sql of await res.synth(question, cfg.synth, cfg.steer ? intentWeights(question) : {})) {
      if (!hasLiterals(sql)) add(sql, 'synth', []);
      edited(sql, [], false);
      moved(sql);
    }
  }
  const flipFrom = [...policy.slice(0, 1).map((p) => p.sql), ...recalled.slice(0, cfg.flips).map((r) => r.entry.sql)];
  for (const sql of flipFrom.slice(0, cfg.flips + 1)) {
    const f = flipOrder(sql);
    if (f) add(f, 'edit', []);
  }

  // Run every distinct candidate once, within the budget.
  type Ran = Draft & { columns: string[]; rows: unknown[][]; truncated: boolean; signature: string };
  const ran: Ran[] = [];
  let failed = 0;
  let empty = 0;
  const deadline = t0 + cfg.budgetMs;
  for (const d of drafts.values()) {
    if (performance.now() > deadline) break;
    const r = await res.executor.execute(res.dbPath, d.sql, { timeoutMs: Math.max(1, Math.floor(Math.min(cfg.execTimeoutMs, deadline - performance.now()))), maxRows: cfg.maxRows });
    if (!r.ok) failed++;
    else if (r.rows.length === 0) empty++;
    else ran.push({ ...d, columns: r.columns, rows: r.rows, truncated: r.truncated, signature: `${r.columns.length}:${resultSignature(r.rows)}` });
  }
  const tried = ran.length + failed + empty;

  // Every query is also read as the factory reads any query (its 16 phrasings), a stored pair beside its stored
  // questions: a pair stored in words the person does not use would otherwise lose to one whose wording is near but
  // whose query is not. Then one IDF for the comparison.
  if (res.reader) for (const c of ran) for (const r of res.reader(c.sql)) if (!c.readings.includes(r)) c.readings.push(r);
  const idf = res.memory?.idf ?? new Idf();
  if (!res.memory) for (const c of ran) for (const r of c.readings) idf.add(r);
  const qv = idf.vector(question);

  // Result groups: candidates that agree on the answer support each other. One vote per distinct query the policy
  // wrote: a policy sharpened by RL writes its mode again and again at any temperature, so a repeated sample is no
  // new evidence; a different query reaching the same result is.
  const groupOf = new Map<string, number>();
  const support: number[] = [];
  for (const c of ran) {
    if (!groupOf.has(c.signature)) groupOf.set(c.signature, groupOf.size);
    const g = groupOf.get(c.signature)!;
    support[g] = (support[g] ?? 0) + (byPolicy(c) ? 1 : 0);
  }
  const w = res.weights ?? RANK_WEIGHTS;
  const negatesQuestion = asksNegation(question);
  const scored = ran.map((c) => {
    let best = 0;
    let reading: string | null = null;
    let rv = new Map<string, number>();
    for (const r of c.readings) {
      const v = idf.vector(r);
      const s = cosine(qv, v);
      if (s > best || reading === null) [best, reading, rv] = [s, r, v];
    }
    const g = groupOf.get(c.signature)!;
    const prior = byPolicy(c) ? w.unread : 0;
    const features: Features = {
      reading: c.readings.length ? best : prior,
      precision: c.readings.length ? covered(rv, qv) : prior,
      recall: c.readings.length ? covered(qv, rv) : prior,
      ...literalFeatures(c.sql, question, values),
      // The policy's other queries with the same result (self-consistency; a repeated query is one vote); remembered
      // pairs that share a result do not vote: neighbours often agree by accident (a count, a common single row).
      agreement: Math.log2(1 + support[g] - (byPolicy(c) ? 1 : 0)),
      greedy: c.sources.has('greedy') ? 1 : 0,
      // A person's pair counts as much as its question is the one asked: the same question again outranks even a
      // unanimous policy, a merely related one does not take over.
      person: c.sources.has('person') && c.readings.length ? best : 0,
      degenerate: isDegenerate(c.rows) ? 1 : 0,
      negation: !negatesQuestion && negates(c.sql) ? 1 : 0,
    };
    return { c, g, reading, features, score: score(features, w) };
  });
  const judged = res.judge && scored.length ? res.judge(question, scored.map((s) => ({ sql: s.c.sql, sources: [...s.c.sources], reading: s.reading, features: s.features, score: s.score, rows: s.c.rows.length, columns: s.c.columns.length, signature: s.c.signature }))) : undefined;
  const groupScore = new Map<number, number>();
  scored.forEach((s, i) => groupScore.set(s.g, Math.max(groupScore.get(s.g) ?? -Infinity, judged && cfg.chooser === 'judge' ? judged.rank[i] : s.score)));
  const judgeOf = new Map<number, number>();
  if (judged) scored.forEach((s, i) => judgeOf.set(s.g, judged.confidence[i]));
  const groups = [...groupScore.entries()].sort((a, b) => b[1] - a[1]);
  const rank = new Map(groups.map(([g], i) => [g, i]));
  // Within a group (one result) the query shown is the policy's own when it wrote one: the answer is the same, and
  // the person (and the next turn's prompt) sees the SQL their model wrote; else the member that reads best.
  const written = (c: Draft): number => (c.sources.has('greedy') ? 0 : c.sources.has('sample') ? 1 : 2);
  scored.sort((a, b) => rank.get(a.g)! - rank.get(b.g)! || written(a.c) - written(b.c) || b.score - a.score);
  const candidates: RankedCandidate[] = scored.map((s) => ({
    sql: s.c.sql,
    sources: [...s.c.sources],
    reading: s.reading,
    features: s.features,
    score: Math.round(s.score * 1000) / 1000,
    ...(judged ? { judge: Math.round(judgeOf.get(s.g)! * 1000) / 1000 } : {}),
    group: rank.get(s.g)!,
    rows: s.c.rows.length,
    columns: s.c.columns.length,
    signature: s.c.signature,
    ...(s.c.changes ? { changes: s.c.changes } : {}),
  }));
  const top = scored[0];
  const ms = Math.round(performance.now() - t0);
  if (!top) return { sql: null, columns: [], rows: [], truncated: false, reading: null, confidence: 0, low: true, candidates, tried, failed, empty, ms };
  const mark = judged ? JUDGE_LOW_CONFIDENCE : LOW_CONFIDENCE;
  // A query that leaves out a value or a number the question names, whose reading counts another thing than the
  // question does, or that returns another thing than the question asks for, answers another question, however well
  // the rest reads: never above the mark.
  const contradicts =
    top.features.values < 1 ||
    top.features.numbers < 1 ||
    (res.counted !== undefined && countsAnotherThing(question, top.reading, res.counted)) ||
    (res.returned !== undefined && returnsAnotherThing(question, top.c.sql, res.returned));
  const sure = judged ? judgeOf.get(top.g)! : confidenceOf(groups.map(([, s]) => s), 0);
  const confidence = Math.round((contradicts ? Math.min(sure, mark) : sure) * 1000) / 1000;
  return {
    sql: top.c.sql,
    columns: top.c.columns,
    rows: top.c.rows,
    truncated: top.c.truncated,
    reading: top.reading,
    confidence,
    low: contradicts || confidence < mark,
    candidates,
    tried,
    failed,
    empty,
    ms,
  };
}
