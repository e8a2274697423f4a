import type { CompareMode } from '../sql/types.ts';
/** Questions without a difficulty (Spider data) are reported under this bucket. */
export const UNLABELED = 'all';

/** Why a question counted as right or wrong. Only `match` is correct. */
export const OUTCOMES = ['match', 'mismatch', 'pred_error', 'timeout', 'gold_error'] as const;
export type Outcome = (typeof OUTCOMES)[number];
export const PRED_ERROR_KINDS = ['syntax', 'runtime', 'refused'] as const;
export type PredErrorKind = (typeof PRED_ERROR_KINDS)[number];

export interface QuestionResult {
  index: number;
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
  pred: string;
  gold: string;
  predMs?: number;
  goldMs?: number;
}

export interface BucketScore {
  bucket: string;
  count: number;
  correct: number;
  /** Execution accuracy in percent (0 when count is 0). */
  accuracy: number;
}

export interface EvalSummary {
  count: number;
  correct: number;
  accuracy: number;
  /** Difficulty rows in a fixed order (simple, moderate, challenging, then `all`), then nothing else. */
  byDifficulty: BucketScore[];
  outcomes: Record<Outcome, number>;
  predErrors: Record<PredErrorKind, number>;
}

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
