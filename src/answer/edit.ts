/**
 * Edits that carry a query over to the question asked: a stored or synthesized query has the right shape but
 * the values of the question it was made for. Its string literals are re-grounded to the stored values the
 * question names in the same column (the value index's matches), and a number the question names replaces the
 * one number the query has that the question does not (a threshold, a LIMIT). Pure text edits on the token
 * stream: the query is otherwise left as written.
 */
import { quoteString, tokenize, type Token } from '../sql/lexer.ts';
import { fold } from '../sql/words.ts';

/** A stored value the question names, in a column (a value-index match or a schema-link value hint). */
export interface NamedValue {
  table: string;
  column: string;
  value: string;
  score: number;
}

export interface Edit {
  sql: string;
  /** What changed, each as 'old -> new', for the answer's explanation and the ranker. */
  changes: Array<{ from: string; to: string }>;
}

const NUMBER_WORDS: Readonly<Record<string, number>> = {
  one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10,
  eleven: 11, twelve: 12, fifteen: 15, twenty: 20, hundred: 100, thousand: 1000,
};

/** The numbers a question names, as digits or number words ("three", "top 5", "in 2009"). */
export function questionNumbers(question: string): number[] {
  const out: number[] = [];
  for (const m of question.matchAll(/-?\d+(?:\.\d+)?|[A-Za-z]+/g)) {
    const w = m[0].toLowerCase();
    if (/\d/.test(w)) out.push(Number(w));
    else if (NUMBER_WORDS[w] !== undefined) out.push(NUMBER_WORDS[w]);
  }
  return out;
}

const COMPARE = new Set(['=', '==', '!=', '<>', '<', '<=', '>', '>=']);

/** The column a literal at token i is compared with (`col = 'x'`, `T1.col LIKE 'x'`, `col IN ('x', ...)`), lower-cased, or null. */
export function comparedColumn(toks: readonly Token[], i: number): string | null {
  let j = i - 1;
  // Inside an IN list: back to its opening parenthesis.
  while (j >= 0 && (toks[j].text === ',' || toks[j].kind === 'str' || toks[j].kind === 'num')) j--;
  if (toks[j]?.text === '(' && toks[j - 1]?.kind === 'word' && toks[j - 1].text.toLowerCase() === 'in') j -= 2;
  else if (toks[j]?.kind === 'op' && COMPARE.has(toks[j].text)) j--;
  else if (toks[j]?.kind === 'word' && /^(like|glob)$/i.test(toks[j].text)) j -= toks[j - 1]?.kind === 'word' && toks[j - 1].text.toLowerCase() === 'not' ? 2 : 1;
  else return null;
  const t = toks[j];
  return t && (t.kind === 'word' || t.kind === 'qid') ? t.text.toLowerCase() : null;
}

/** A LIMIT's count (LIMIT 1 is a superlative, not a number the question names). */
function isLimit(toks: readonly Token[], i: number): boolean {
  return toks[i - 1]?.kind === 'word' && toks[i - 1].text.toLowerCase() === 'limit';
}

/**
 * A number a question would name: one compared with a column (`year > 2009`, `x BETWEEN 1 AND 5` aside) or a
 * LIMIT's count other than 1; not a function's argument (ROUND(x, 2)) or arithmetic.
 */
export function isQuestionNumber(toks: readonly Token[], i: number): boolean {
  const t = toks[i];
  if (t?.kind !== 'num') return false;
  if (isLimit(toks, i)) return t.text !== '1';
  const before = toks[i - 1];
  const after = toks[i + 1];
  return (before?.kind === 'op' && COMPARE.has(before.text)) || (after?.kind === 'op' && COMPARE.has(after.text));
}

function splice(sql: string, edits: Array<{ start: number; end: number; text: string }>): string {
  let out = sql;
  for (const e of [...edits].sort((a, b) => b.start - a.start)) out = out.slice(0, e.start) + e.text + out.slice(e.end);
  return out;
}

/**
 * The query with its values carried over to the question: each string literal the question does not name is
 * replaced by the best stored value the question names in the same column; the one unnamed number (LIMIT 1
 * aside) by the one number the question names that the query lacks. Null when nothing changes.
 */
export function regroundQuery(sql: string, question: string, values: readonly NamedValue[]): Edit | null {
  const toks = tokenize(sql);
  const q = ` ${fold(question)} `;
  const named = (v: string): boolean => {
    const f = fold(v);
    return f.length > 0 && q.includes(` ${f} `);
  };
  const edits: Array<{ start: number; end: number; text: string }> = [];
  const changes: Edit['changes'] = [];
  const used = new Set<string>();
  toks.forEach((t, i) => {
    if (t.kind !== 'str') return;
    const like = /%/.test(t.text);
    const bare = t.text.replace(/%/g, '');
    if (named(bare)) {
      used.add(fold(bare));
      return;
    }
    const column = comparedColumn(toks, i);
    if (!column) return;
    const bestOf = values
      .filter((v) => v.column.toLowerCase() === column && !used.has(fold(v.value)))
      .sort((a, b) => b.score - a.score)[0];
    if (!bestOf) return;
    used.add(fold(bestOf.value));
    const text = quoteString(like ? `%${bestOf.value}%` : bestOf.value);
    edits.push({ start: t.start, end: t.end, text });
    changes.push({ from: t.text, to: like ? `%${bestOf.value}%` : bestOf.value });
  });
  const asked = questionNumbers(question);
  const nums = toks.map((t, i) => ({ t, i })).filter(({ i }) => isQuestionNumber(toks, i));
  const unnamedSql = nums.filter(({ t }) => !asked.includes(Number(t.text)));
  const sqlNumbers = new Set(nums.map(({ t }) => Number(t.text)));
  // A year or count the question names that the query's values do not already use.
  const unusedAsked = [...new Set(asked)].filter((n) => !sqlNumbers.has(n));
  if (unnamedSql.length === 1 && unusedAsked.length === 1) {
    const { t } = unnamedSql[0];
    edits.push({ start: t.start, end: t.end, text: String(unusedAsked[0]) });
    changes.push({ from: t.text, to: String(unusedAsked[0]) });
  }
  if (!edits.length) return null;
  return { sql: splice(sql, edits), changes };
}

/** The same query ordered the other way (ASC <-> DESC on its one ORDER BY), or null: "highest" read as "lowest" is a common miss. */
export function flipOrder(sql: string): string | null {
  const toks = tokenize(sql);
  const order = toks.findIndex((t, i) => t.kind === 'word' && t.text.toLowerCase() === 'order' && toks[i + 1]?.text.toLowerCase() === 'by');
  if (order < 0 || toks.filter((t) => t.kind === 'word' && t.text.toLowerCase() === 'order').length > 1) return null;
  const end = toks.findIndex((t, i) => i > order && t.depth === toks[order].depth && t.kind === 'word' && /^(limit|union|except|intersect)$/i.test(t.text));
  const stop = end < 0 ? toks.length : end;
  const dir = toks.slice(order, stop).filter((t) => t.kind === 'word' && /^(asc|desc)$/i.test(t.text));
  if (dir.length > 1) return null;
  if (dir.length === 1) return splice(sql, [{ start: dir[0].start, end: dir[0].end, text: dir[0].text.toLowerCase() === 'asc' ? 'DESC' : 'ASC' }]);
  const last = toks[stop - 1];
  return splice(sql, [{ start: last.end, end: last.end, text: ' DESC' }]);
}
