/**
 * An edit that compares as the question says: a remembered or drafted query compares a column with the number the
 * question names, but with another comparison ("above 12" asked, `= 12` or `>= 12` remembered: the number edit of
 * edit.ts carries the number, not how it is compared). Each comparison `column OP n` whose n the question names
 * right after a comparison phrase ("more than", "at least", "below", "at most"; text.ts's cues) or right before
 * "or more" / "or less" gets that phrase's operator. A number named without such a phrase ("in 2005", "of 3") is left
 * as compared: people say "in 2005" of `=` and of a range alike.
 */
import { tokenize } from '../sql/lexer.ts';
import type { Edit } from './edit.ts';
import { cueWords } from './text.ts';
import { memoized } from '../util/memo.ts';

const CUE_OPERATOR: Readonly<Record<string, string>> = { qgt: '>', qlt: '<', qge: '>=', qle: '<=' };
/** Operators an edit replaces: `!=` and `<>` say "other than", which no number phrase above says. */
const REPLACEABLE = new Set(['=', '==', '<', '<=', '>', '>=']);
/** Characters read before and after a number for its phrase. */
const WINDOW = 24;

/** "or more" / "or less" right after a number, or after the one word it counts ("3 tracks or more"). */
const orMore = (next: readonly string[]): string | undefined => {
  const cue = next.find((w) => w === 'qge' || w === 'qle');
  return cue && !next.slice(0, next.indexOf(cue)).some((w) => CUE_OPERATOR[w] || /^\d/.test(w)) ? CUE_OPERATOR[cue] : undefined;
};

/**
 * Each number the question names after (or before) a comparison phrase, with that phrase's operator. Read once per
 * question: the answer path asks it of every candidate query.
 */
export const askedComparisons: (question: string) => ReadonlyMap<number, string> = memoized(readComparisons, 64);

function readComparisons(question: string): Map<number, string> {
  const out = new Map<number, string>();
  for (const m of question.matchAll(/-?\d+(?:,\d{3})*(?:\.\d+)?/g)) {
    const at = m.index ?? 0;
    const n = Number(m[0].replace(/,/g, ''));
    const before = cueWords(question.slice(Math.max(0, at - WINDOW), at)).filter(Boolean);
    const after = cueWords(question.slice(at + m[0].length, at + m[0].length + WINDOW)).filter(Boolean);
    const op = CUE_OPERATOR[before[before.length - 1] ?? ''] ?? orMore(after.slice(0, 2));
    // A number named twice with two phrases ("more than 5 ... at most 5") is not one comparison: left alone.
    if (op !== undefined) out.set(n, out.has(n) && out.get(n) !== op ? '' : op);
  }
  for (const [n, op] of out) if (!op) out.delete(n);
  return out;
}

/** The query with each comparison of a named number made the question's; null when none differs. */
export function compareAsAsked(sql: string, question: string): Edit | null {
  const asked = askedComparisons(question);
  if (asked.size === 0) return null;
  const toks = tokenize(sql);
  let out = sql;
  const changes: Edit['changes'] = [];
  for (let i = toks.length - 1; i >= 2; i--) {
    const t = toks[i];
    const op = toks[i - 1];
    const col = toks[i - 2];
    if (t.kind !== 'num' || op.kind !== 'op' || !REPLACEABLE.has(op.text) || (col.kind !== 'word' && col.kind !== 'qid' && col.text !== ')')) continue;
    const want = asked.get(Number(t.text));
    if (want === undefined || want === op.text || (want === '=' && op.text === '==')) continue;
    out = `${out.slice(0, op.start)}${want}${out.slice(op.end)}`;
    changes.unshift({ from: `${op.text} ${t.text}`, to: `${want} ${t.text}` });
  }
  return changes.length ? { sql: out, changes } : null;
}
