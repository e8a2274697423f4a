import type { CompareMode } from '../sql/types.ts';
/** Questions without a difficulty (Spider data) are reported under this bucket. */
export const UNLABELED = 'all';

export { OUTCOMES, PRED_ERROR_KINDS, type Outcome, type PredErrorKind } from '../sql/judge.ts';
import type { Outcome, PredErrorKind } from '../sql/judge.ts';

/** One question's verdict, in the report's `questions`. */
export interface QuestionResult {
  /** Position in the data file (0-based). */
  index: number;
  /** The data's own question_id, when it has one. */
  questionId?: number | string;
  dbId: string;
  /** A difficulty, or UNLABELED. */
  bucket: string;
  outcome: Outcome;
  /** For pred_error: what went wrong with the predicted query. */
  errorKind?: PredErrorKind;
  /** The executor's message for errors and timeouts; for a suite mismatch, which variant. */
  message?: string;
  /** Test-suite mode: the variant database on which the prediction first disagreed or failed. */
  failedVariant?: string;
  /** Test-suite mode: variant databases the question was checked on (beyond the original). */
  variantsChecked?: number;
  /** The predicted and gold SQL as evaluated. */
  pred: string;
  gold: string;
  /** Execution time of each query on the original database, in milliseconds. */
  predMs?: number;
  goldMs?: number;
}

/** Execution accuracy of one difficulty bucket. */
export interface BucketScore {
  bucket: string;
  count: number;
  correct: number;
  /** Execution accuracy in percent (0 when count is 0). */
  accuracy: number;
}

/** Execution accuracy overall and by difficulty, with outcome counts. */
export interface EvalSummary {
  count: number;
  correct: number;
  /** Execution accuracy in percent. */
  accuracy: number;
  /** Difficulty rows in a fixed order (simple, moderate, challenging, then `all`), then nothing else. */
  byDifficulty: BucketScore[];
  outcomes: Record<Outcome, number>;
  predErrors: Record<PredErrorKind, number>;
}

/** What `evaluate` returns and `agro eval --out` writes. */
export interface EvalReport {
  version: 1;
  data: string;
  pred: string;
  dbRoot: string;
  mode: CompareMode;
  timeoutMs: number;
  suite?: string;
  summary: EvalSummary;
  questions: QuestionResult[];
}
