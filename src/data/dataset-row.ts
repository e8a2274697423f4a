/**
 * A row of dataset.jsonl, the file the factory writes and every reader (predict, eval, sft, train, the
 * dashboard) reads: BIRD's field names, so `agro eval` reads it as it reads BIRD, and what the factory
 * adds on top (how the question was worded, which checks the pair passed). Upstream of the factory, which
 * is one producer of the format.
 */
import { z } from 'zod';
// An earlier turn (a follow-up row carries the turns it continues) has its home where the prompt writes it.
import type { PreviousTurn } from '../prompt/conversation.ts';

/**
 * How a follow-up edits the query it continues (factory/follow-up.ts): a filter added, a filter's value
 * changed, a limit, an order, a column added, a column replaced.
 */
export const FOLLOW_UP_EDITS = ['filter-add', 'filter-change', 'limit', 'order', 'column-add', 'column-replace'] as const;
export const followUpEditSchema = z.enum(FOLLOW_UP_EDITS);
export type FollowUpEdit = z.infer<typeof followUpEditSchema>;

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
  /** A follow-up pair: how its query edits the previous turn's. */
  followUp?: FollowUpEdit;
  /** Id of the pair a follow-up continues. */
  followsUp?: string;
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
  /** A follow-up question: the earlier turns it continues, oldest first (the factory writes one). */
  previous?: PreviousTurn[];
}
