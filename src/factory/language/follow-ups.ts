/**
 * How people continue a conversation after an answer: short turns that lean on the last query ("and only
 * those with ...", "now sort them by ...", "just the top 3", "what about ...?", "also show ..."). One list of
 * frames per edit a follow-up makes (factory/follow-up.ts), picked by style and variant as the first questions'
 * frames are (frames.ts). `{x}` stands for the edit's words: a filter, a value, a count, a column.
 */
import type { FollowUpEdit, QuestionStyle } from '../../data/dataset-row.ts';
import { pickFrame, type Frame } from './frames.ts';

const frame = (text: string, end: '?' | '.', ...styles: QuestionStyle[]): Frame => ({ text, end, styles });

/** The words an edit is said with, as the edit module fills them in. */
export type FollowUpWords =
  /** A filter said after "with": "genre 'Rock'", "unit price above 1.5". */
  | { kind: 'filter-add'; cond: string }
  /** The new value of a filter that keeps its column: "'Jazz'". */
  | { kind: 'filter-change'; value: string }
  | { kind: 'limit'; k: number }
  /** A column to sort by, its direction, and how its values are ordered (numbers, dates, text). */
  | { kind: 'order'; column: string; dir: 'ASC' | 'DESC'; scale: 'number' | 'date' | 'text' }
  | { kind: 'column-add'; column: string }
  | { kind: 'column-replace'; column: string };

/** Frames per edit; `{x}` is replaced by the edit's words. */
export const FOLLOW_UP_FRAMES: Record<FollowUpEdit, readonly Frame[]> = {
  'filter-add': [
    frame('And only those with {x}', '?', 'formal', 'colloquial', 'terse'),
    frame('Only the ones with {x}', '.', 'imperative', 'terse'),
    frame('Keep just those with {x}', '.', 'imperative'),
    frame('Now limit that to the ones with {x}', '.', 'colloquial', 'imperative'),
    frame('Only those that have {x}', '?', 'formal', 'colloquial'),
  ],
  'filter-change': [
    frame('What about {x}', '?', 'formal', 'colloquial', 'terse'),
    frame('And for {x}', '?', 'colloquial', 'terse'),
    frame('Same thing for {x}', '.', 'imperative', 'colloquial'),
    frame('How about {x} instead', '?', 'formal', 'colloquial'),
    frame('Now do it for {x}', '.', 'imperative'),
  ],
  limit: [
    frame('Just the top {x}', '.', 'terse', 'imperative'),
    frame('Only the first {x}', '?', 'formal', 'colloquial', 'terse'),
    frame('Give me only the top {x}', '.', 'colloquial', 'imperative'),
    frame('Can you cut that down to the first {x}', '?', 'colloquial', 'formal'),
  ],
  order: [
    frame('Now sort them by {x}', '.', 'imperative', 'terse', 'colloquial'),
    frame('Sort those by {x}', '.', 'imperative', 'terse'),
    frame('Can you order them by {x}', '?', 'formal', 'colloquial'),
    frame('Put them in order of {x}', '.', 'imperative', 'colloquial'),
  ],
  'column-add': [
    frame('Also show their {x}', '.', 'imperative', 'terse', 'colloquial'),
    frame('And their {x} too', '?', 'formal', 'colloquial', 'terse'),
    frame('Include the {x} as well', '.', 'imperative'),
    frame('Could you add the {x} to that', '?', 'colloquial', 'formal'),
  ],
  'column-replace': [
    frame('Show their {x} instead', '.', 'imperative', 'terse', 'colloquial'),
    frame('Actually, I want the {x} instead', '.', 'colloquial', 'formal'),
    frame('Give me the {x} instead', '.', 'imperative', 'colloquial'),
    frame('Could I see the {x} instead', '?', 'formal', 'colloquial'),
    frame('Swap that for the {x}', '.', 'imperative', 'terse'),
  ],
};

/** How a sort direction is said of a column's values: a number's highest, a date's latest, text by its letters. */
function direction(dir: 'ASC' | 'DESC', scale: 'number' | 'date' | 'text'): string {
  if (scale === 'date') return dir === 'DESC' ? 'newest first' : 'oldest first';
  if (scale === 'text') return dir === 'DESC' ? 'in reverse alphabetical order' : 'in alphabetical order';
  return dir === 'DESC' ? 'highest first' : 'lowest first';
}

/** The edit's words for `{x}`. */
function fill(w: FollowUpWords): string {
  switch (w.kind) {
    case 'filter-add':
      return w.cond;
    case 'filter-change':
      return w.value;
    case 'limit':
      return w.k === 1 ? 'one' : String(w.k);
    case 'order':
      return `${w.column}, ${direction(w.dir, w.scale)}`;
    case 'column-add':
    case 'column-replace':
      return w.column;
  }
}

/** The follow-up question of an edit in a style; `variant` picks among the frames that fit the style. */
export function followUpQuestion(w: FollowUpWords, style: QuestionStyle, variant: number): string {
  const f = pickFrame(FOLLOW_UP_FRAMES[w.kind], style, variant);
  return `${f.text.replace('{x}', fill(w))}${f.end}`;
}
