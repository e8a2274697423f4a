import { DIFFICULTIES } from '../data/dataset-row.ts';
import { OUTCOMES, PRED_ERROR_KINDS, UNLABELED, type BucketScore, type EvalSummary, type Outcome, type PredErrorKind } from './types.ts';

export interface Scored {
  bucket: string;
  outcome: Outcome;
  errorKind?: PredErrorKind;
}

/** `correct` of `count` in percent; 0 when there is nothing to count (not NaN). */
export function percent(correct: number, count: number): number {
  return count === 0 ? 0 : (100 * correct) / count;
}

/**
 * Execution accuracy overall and per bucket. BIRD data always lists simple/moderate/challenging
 * (even when empty, so reports line up across runs); unlabeled questions go under `all`.
 */
export function summarize(results: readonly Scored[], format: 'bird' | 'spider'): EvalSummary {
  const buckets: string[] = format === 'bird' ? [...DIFFICULTIES] : [];
  for (const r of results) if (!buckets.includes(r.bucket)) buckets.push(r.bucket);
  const rank = (b: string) => {
    const i = (DIFFICULTIES as readonly string[]).indexOf(b);
    return i >= 0 ? i : b === UNLABELED ? DIFFICULTIES.length : DIFFICULTIES.length + 1;
  };
  buckets.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  const byDifficulty: BucketScore[] = buckets.map((bucket) => {
    const mine = results.filter((r) => r.bucket === bucket);
    const correct = mine.filter((r) => r.outcome === 'match').length;
    return { bucket, count: mine.length, correct, accuracy: percent(correct, mine.length) };
  });
  const outcomes = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;
  const predErrors = Object.fromEntries(PRED_ERROR_KINDS.map((k) => [k, 0])) as Record<PredErrorKind, number>;
  for (const r of results) {
    outcomes[r.outcome]++;
    if (r.outcome === 'pred_error' && r.errorKind) predErrors[r.errorKind]++;
  }
  const correct = outcomes.match;
  return { count: results.length, correct, accuracy: percent(correct, results.length), byDifficulty, outcomes, predErrors };
}
