/**
 * The factory's shared contract: the item that flows through the stages and the stage interface. The row
 * it writes to dataset.jsonl is data/dataset-row.ts's (the file format, which every reader shares).
 */
import type { Rng } from '../util/rng.ts';
import type { DbSchema, SqlExecutor } from '../sql/types.ts';
import type { SqlDialect } from '../sql/dialect.ts';
import type { QueryAst } from './ast.ts';
import type { DatasetRow, Difficulty, Provenance, QuestionStyle } from '../data/dataset-row.ts';
import type { PreviousTurn } from '../prompt/conversation.ts';
import type { ProgressSink } from '../util/progress.ts';

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
  /** A follow-up's earlier turn (follow-up.ts): the question and SQL it continues. */
  previous?: PreviousTurn[];
}

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
    ...(p.previous?.length ? { previous: p.previous } : {}),
  };
}

/** Rejection counts by stage then reason. */
export type RejectionCounts = Record<string, Record<string, number>>;
