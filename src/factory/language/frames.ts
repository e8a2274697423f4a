/**
 * The ways people open a question of one intent ("How many ...", "Find the number of ...", "Give me
 * the ..."): one list per intent, which the sentence writer (intents.ts) picks from by style and variant
 * and the parser (intent-parse.ts) builds its openers from, so a frame added here is parsed back.
 */
import type { QuestionStyle } from '../../data/dataset-row.ts';

export interface Frame {
  /** The words that open the question, without the space after them. */
  text: string;
  end: '?' | '.';
  /** The styles that open questions so. */
  styles: readonly QuestionStyle[];
}

const frame = (text: string, end: '?' | '.', ...styles: QuestionStyle[]): Frame => ({ text, end, styles });

/** A count followed by the rows and what they do: "How many tracks are longer than ...?". */
export const COUNT_CLAUSE_FRAMES: readonly Frame[] = [
  frame('How many', '?', 'formal', 'terse'),
  frame('Tell me how many', '.', 'colloquial', 'imperative'),
  frame('Could you tell me how many', '?', 'colloquial'),
];

/** A count followed by the rows as a noun phrase: "Find the number of tracks that ...". */
export const COUNT_NOUN_FRAMES: readonly Frame[] = [
  frame('Find the number of', '.', 'imperative', 'terse'),
  frame('Count the number of', '.', 'imperative'),
  frame('Return the number of', '.', 'imperative', 'terse'),
  frame('Show the number of', '.', 'imperative'),
  frame('Give me the number of', '.', 'colloquial', 'imperative'),
  frame('What is the number of', '?', 'formal', 'colloquial'),
  frame('What is the total number of', '?', 'formal'),
];

/** A list of columns: "Give me the names of all tracks.". */
export const LIST_FRAMES: readonly Frame[] = [
  frame('Find the', '.', 'imperative', 'terse'),
  frame('Give me the', '.', 'colloquial', 'imperative'),
  frame('Return the', '.', 'imperative', 'terse'),
  frame('Show me the', '.', 'colloquial', 'imperative'),
  frame('Tell me the', '.', 'colloquial'),
  frame('What are the', '?', 'formal'),
  frame('Which are the', '?', 'formal'),
];

/** One value of the rows: "Give me the average unit price of all tracks.". */
export const VALUE_FRAMES: readonly Frame[] = [
  frame('What is the', '?', 'formal', 'colloquial'),
  frame('Find the', '.', 'imperative', 'terse'),
  frame('Give me the', '.', 'colloquial', 'imperative'),
  frame('Tell me the', '.', 'colloquial'),
  frame('Return the', '.', 'imperative', 'terse'),
  frame('Show the', '.', 'imperative'),
  frame('Calculate the', '.', 'imperative'),
];

/** How many different values a column has: "How many different composers are there?", "Find the number of distinct composers.". */
export const DISTINCT_COUNT_FRAMES: readonly Frame[] = [
  frame('How many different', '?', 'formal', 'colloquial', 'terse'),
  frame('What is the number of different', '?', 'formal', 'colloquial'),
  frame('Find the number of distinct', '.', 'imperative', 'terse'),
  frame('Count the number of different', '.', 'imperative'),
  frame('Give me the number of different', '.', 'colloquial', 'imperative'),
];

/** The group with the most or the highest: "Which genre has the most tracks?", "What is the genre with the most tracks?". */
export const GROUP_TOP_FRAMES: readonly Frame[] = [
  frame('Which', '?', 'formal', 'colloquial', 'terse'),
  frame('What is the', '?', 'formal', 'colloquial'),
  frame('Find the', '.', 'imperative', 'terse'),
  frame('Give me the', '.', 'colloquial', 'imperative'),
  frame('Return the', '.', 'imperative'),
  frame('Tell me the', '.', 'colloquial'),
];

/** The frame a question of `style` opens with, the `variant`th of those that fit it. */
export function pickFrame(frames: readonly Frame[], style: QuestionStyle, variant: number): Frame {
  const fit = frames.filter((f) => f.styles.includes(style));
  const from = fit.length ? fit : frames;
  return from[variant % from.length];
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A regular expression source matching any of the frames' openers and the space after, longest first. */
export function openers(frames: readonly Frame[]): string {
  return `(?:${[...new Set(frames.map((f) => f.text))]
    .sort((a, b) => b.length - a.length)
    .map(escape)
    .join('|')}) `;
}
