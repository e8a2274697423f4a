/**
 * Ranking candidates by a checked reading. Every candidate that ran is scored by what can be checked against
 * the question without knowing the answer: how close its reading is to the question (the factory's own
 * question for the query: the stored questions of a remembered pair, or the query realized back into words),
 * whether it uses the values and numbers the question names and no others, and how many candidates from
 * independent sources reach the same result. A transparent linear score: the weights are one object here,
 * measured on the factory's held-out synthetic questions (docs/answering.md), never on human questions.
 */
import { tokenize } from '../sql/lexer.ts';
import { fold } from '../prompt/words.ts';
import { isFunctionArgument, isQuestionNumber, numbersInText, questionNumbers, STRONG_VALUE, type NamedValue } from './edit.ts';

export const RANK_WEIGHTS = {
  /** Cosine of the question with the candidate's closest reading. */
  reading: 6,
  /** The reading of a policy's answer the factory cannot read back into words: a neutral prior, not a zero (a query of the factory's own making it cannot read has 0). */
  unread: 0.5,
  /** Share of the reading's weight on words the question has (a reading that says more than was asked loses). */
  precision: 1,
  /** Share of the question's weight on words the reading has (a reading that leaves out what was asked loses). */
  recall: 1.5,
  /** Share of the values the question names (strong matches) that the query uses. */
  values: 1.5,
  /** Each string literal the question does not name. */
  strayValue: 0.8,
  /** Share of the question's numbers the query uses. */
  numbers: 0.3,
  /** Each number in the query (LIMIT 1 aside) the question does not name. */
  strayNumber: 0.4,
  /** log2(1 + the distinct queries the policy wrote with the same result, beyond the candidate's own). */
  agreement: 0.5,
  /** The policy's own greedy answer. */
  greedy: 0.3,
  /**
   * A pair a person stored (a correction), × the cosine of the question with its closest reading: what people verified
   * outranks what the factory did and what the policy guessed (agreement and greedy add at most 1.5).
   */
  person: 2,
  /** A result that says nothing: one row of only NULL or 0 (a count or sum over no rows), as the factory never keeps. */
  degenerate: 1,
  /**
   * A query that negates (`<>`, `!=`, NOT, EXCEPT) where the question says no "not" in any of its ways: the edits and
   * the memory's neighbours offer "other than 'X'" for a question about 'X', and their readings differ by one word.
   */
  negation: 1,
};
export type RankWeights = typeof RANK_WEIGHTS;

/** Where a candidate came from: the policy (greedy or a sample), the memory (as stored; `person` too for a person's pair; or edited), or question-time synthesis. */
export const CANDIDATE_SOURCES = ['greedy', 'sample', 'memory', 'person', 'edit', 'synth'] as const;
export type CandidateSource = (typeof CANDIDATE_SOURCES)[number];

export interface Features {
  reading: number;
  precision: number;
  recall: number;
  values: number;
  strayValues: number;
  numbers: number;
  strayNumbers: number;
  agreement: number;
  greedy: number;
  person: number;
  degenerate: number;
  negation: number;
}

/** One row of only NULL or 0: what an aggregate over no rows returns. */
export function isDegenerate(rows: readonly (readonly unknown[])[]): boolean {
  return rows.length === 1 && rows[0].every((v) => v === null || v === 0 || v === 0n);
}


/** Whether a query negates a condition or a set: `<>`, `!=`, NOT (NOT IN, NOT LIKE, IS NOT, NOT EXISTS) or EXCEPT. */
export function negates(sql: string): boolean {
  return tokenize(sql).some((t) => (t.kind === 'op' && (t.text === '<>' || t.text === '!=')) || (t.kind === 'word' && /^(not|except)$/i.test(t.text)));
}

export function literalFeatures(sql: string, question: string, values: readonly NamedValue[]): Pick<Features, 'values' | 'strayValues' | 'numbers' | 'strayNumbers'> {
  const toks = tokenize(sql);
  const q = ` ${fold(question)} `;
  const valueAt = (i: number): boolean => !isFunctionArgument(toks, i);
  const lits = toks.filter((t, i) => (t.kind === 'str' || (t.kind === 'qid' && t.quote === '"')) && valueAt(i)).map((t) => fold(t.text.replace(/%/g, ' ')));
  const strong = [...new Set(values.filter((v) => v.score >= STRONG_VALUE).map((v) => fold(v.value)))];
  const litSet = new Set(lits);
  const covered = strong.filter((v) => litSet.has(v) || lits.some((l) => l.length > 0 && (v.includes(l) || l.includes(v)))).length;
  const stray = toks.filter((t, i) => t.kind === 'str' && valueAt(i)).filter((t) => {
    const f = fold(t.text.replace(/%/g, ' '));
    return f.length > 0 && !q.includes(` ${f} `) && !strong.some((v) => v.includes(f) || f.includes(v));
  }).length;
  const asked = questionNumbers(question);
  const nums = toks.filter((_, i) => isQuestionNumber(toks, i)).map((t) => Number(t.text));
  const text = numbersInText(toks);
  const usedAsked = asked.filter((n) => nums.includes(n) || text.includes(n)).length;
  return {
    values: strong.length ? covered / strong.length : 1,
    strayValues: stray,
    numbers: asked.length ? usedAsked / asked.length : 1,
    strayNumbers: nums.filter((n) => !asked.includes(n)).length,
  };
}

export function score(f: Features, w: RankWeights = RANK_WEIGHTS): number {
  return w.reading * f.reading + w.precision * f.precision + w.recall * f.recall + w.values * f.values - w.strayValue * f.strayValues + w.numbers * f.numbers - w.strayNumber * f.strayNumbers + w.agreement * f.agreement + w.greedy * f.greedy + w.person * f.person - w.degenerate * f.degenerate - w.negation * f.negation;
}

/**
 * Confidence: the softmax share of the chosen result among all results, beside a "none of these" option of
 * score NONE_SCORE, so one weak candidate alone is not sure of itself.
 */
export const NONE_SCORE = 7;
/**
 * Below this confidence an answer is marked as a guess (the Playground, `agro ask`, `/v1/ask`'s `low_confidence`):
 * on the factory's held-out questions few such answers were right (7%: docs/answering.md#ranking).
 */
export const LOW_CONFIDENCE = 0.2;
/**
 * The mark for a judge's confidence, a calibrated probability: below even odds an answer is more likely wrong than
 * right. On the judge's held-out Spider training databases 81% of the answers above it were right (models/judge).
 */
export const JUDGE_LOW_CONFIDENCE = 0.5;
export function confidenceOf(scores: readonly number[], chosen: number): number {
  const top = Math.max(NONE_SCORE, ...scores);
  const z = Math.exp(NONE_SCORE - top) + scores.reduce((a, s) => a + Math.exp(s - top), 0);
  return Math.exp(scores[chosen] - top) / z;
}
