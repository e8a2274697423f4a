/** A question with its gold SQL, whichever file format it was read from (BIRD, Spider, agro's dataset.jsonl). */
import type { Difficulty } from './dataset-row.ts';
import type { PreviousTurn } from '../prompt/conversation.ts';

/** One question to evaluate, whichever format it was read from. */
export interface EvalItem {
  /** Position in the data file (0-based). */
  index: number;
  questionId?: number | string;
  dbId: string;
  /** Not needed to evaluate; absent in BIRD's dev_gold.sql and allowed to be absent elsewhere. */
  question?: string;
  evidence?: string;
  /** The gold query (BIRD's `SQL`, Spider's `query`). */
  gold: string;
  difficulty?: Difficulty;
  /** A follow-up question's earlier turns (agro's dataset.jsonl `previous`), oldest first. */
  previous?: PreviousTurn[];
}

export interface Dataset {
  path: string;
  /** bird: rows carry `SQL` (and usually `difficulty`); spider: rows carry `query`. */
  format: 'bird' | 'spider';
  items: EvalItem[];
}
