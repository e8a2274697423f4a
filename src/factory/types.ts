/**
 * The factory's shared contract: the item that flows through the stages, the stage interface,
 * and the dataset row written to dataset.jsonl (BIRD field names, so `agro eval` reads it).
 */
import type { Rng } from '../util/rng.ts';
import type { DbSchema, SqlExecutor } from '../sql/types.ts';
import type { SqlDialect } from '../sql/dialect.ts';
import type { QueryAst } from './ast.ts';

/** BIRD's difficulty buckets, which the factory assigns from a query's structure. */
export const DIFFICULTIES = ['simple', 'moderate', 'challenging'] as const;
export type Difficulty = (typeof DIFFICULTIES)[number];
export type QuestionStyle = 'formal' | 'colloquial' | 'imperative' | 'terse';
export const QUESTION_STYLES: readonly QuestionStyle[] = ['formal', 'colloquial', 'imperative', 'terse'];

export interface Provenance {
  /** Stage names the pair went through, in order. */
  stages: string[];
  /** Checks it passed, e.g. 'exec', 'non_degenerate', 'variants:3', 'unambiguous', 'roundtrip', 'llm-audit'. */
  checks: string[];
  /** Refinement cycle that produced it (stage 8). */
  cycle?: number;
  /** Id of the pair this one was repaired from (re-realized or refined). */
  repairedFrom?: string;
  /** Structural template that produced the SQL (e.g. 'group-agg', 'in-subquery'). */
  template?: string;
  /**
   * How the question was worded: 'intent', a sentence as people ask it (language/intents.ts); 'general', the
   * general grammar's template sentence ("... where the X is Y"); 'llm', rewritten by an LLM.
   */
  grammar?: 'intent' | 'general' | 'llm';
  /** The intent sentence was asked in people's variety (frames, adjectives, values as typed, synonyms: language/). */
  people?: boolean;
  /** Train-time noise put on the question after its round trip (language/noise.ts): what was changed. */
  noise?: string[];
}

/** A question/SQL pair under construction. question/evidence are '' until realization. */
export interface SynthPair {
  id: string;
  dbId: string;
  sql: string;
  ast: QueryAst;
  question: string;
  evidence: string;
  style: QuestionStyle;
  difficulty: Difficulty;
  provenance: Provenance;
  /** Row count of the result on the original database (set by verify). */
  resultRows?: number;
  /** The result on the original database as a few rows of JSON (set by verify), for later stages not to run it again. */
  result?: string;
  /** Other questions for the same query (realize), each parsed back to it on every database (align). */
  paraphrases?: string[];
}

/** One line of dataset.jsonl. */
export interface DatasetRow {
  question_id: number;
  db_id: string;
  question: string;
  evidence: string;
  SQL: string;
  difficulty: Difficulty;
  source: 'agro-synth';
  style: QuestionStyle;
  provenance: Provenance;
  /** Other questions people might ask for the same SQL, each checked as the question is; absent when none were asked for. */
  paraphrases?: string[];
}

export interface ProgressSink {
  start(stage: string, total: number): void;
  tick(n?: number): void;
  stop(): void;
}

export const silentProgress: ProgressSink = { start() {}, tick() {}, stop() {} };

export interface StageContext {
  dbId: string;
  /** Original database: a SQLite file or a postgres:// URL. */
  dbPath: string;
  /** The engine dbPath names, whose SQL the stages print (absent: SQLite). */
  dialect?: SqlDialect;
  schema: DbSchema;
  executor: SqlExecutor;
  rng: Rng;
  progress: ProgressSink;
  /** Variant database files (filled after augmentation; empty before). */
  variants: string[];
  /** Count a dropped item under a reason (short snake_case, e.g. 'empty_result'). */
  reject(item: unknown, reason: string): void;
  /** Per-query execution limit. */
  timeoutMs: number;
  /** True when a query would read too much of a big database to run (cost.ts, from its plan); absent: everything may run. */
  tooCostly?: (sql: string) => Promise<boolean>;
}

/**
 * Items a stage checks at once. More than the SQL pool's two children: while a child runs one
 * query the next ones wait in the pool's queue and go to it in one message (pool.ts batches them),
 * instead of each child idling through a round trip per query. Results keep input order.
 */
export const STAGE_CONCURRENCY = 16;

export interface Stage<I, O> {
  name: string;
  run(items: I[], ctx: StageContext): Promise<O[]>;
}

export function toDatasetRow(p: SynthPair, questionId: number): DatasetRow {
  return {
    question_id: questionId,
    db_id: p.dbId,
    question: p.question,
    evidence: p.evidence,
    SQL: p.sql,
    difficulty: p.difficulty,
    source: 'agro-synth',
    style: p.style,
    provenance: p.provenance,
    ...(p.paraphrases?.length ? { paraphrases: p.paraphrases } : {}),
  };
}

/** Rejection counts by stage then reason. */
export type RejectionCounts = Record<string, Record<string, number>>;
