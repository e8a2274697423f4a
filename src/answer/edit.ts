/**
 * Edits that carry a query over to the question asked: a stored or synthesized query has the right shape but
 * the values of the question it was made for. Its string literals are re-grounded to the stored values the
 * question names in the same column (the value index's matches), and a number the question names replaces the
 * one number the query has that the question does not (a threshold, a LIMIT). Pure text edits on the token
 * stream: the query is otherwise left as written.
 */
import { isKeyword, quoteString, sqlName, tokenize, type Token } from '../sql/lexer.ts';
import { fold } from '../prompt/words.ts';

/** A stored value the question names, in a column (a value-index match or a schema-link value hint). */
export interface NamedValue {
  table: string;
  column: string;
  value: string;
  score: number;
}

/** Value mentions strong enough to expect in the SQL (a stored cell the question spells out, not a partial word). */
export const STRONG_VALUE = 0.9;

export interface Edit {
  sql: string;
  /** What changed, each as 'old -> new', for the answer's explanation and the ranker. */
  changes: Array<{ from: string; to: string }>;
}

/** Number words a question counts with ("one" is left out: "the one whose", "each one" name no number). */
const NUMBER_WORDS: Readonly<Record<string, number>> = {
  two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10,
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

/** The token of the column a literal at token i is compared with (`col = 'x'`, `T1.col LIKE 'x'`, `col IN ('x', ...)`), or -1. */
export function comparedColumnAt(toks: readonly Token[], i: number): number {
  let j = i - 1;
  // Inside an IN list: back to its opening parenthesis.
  while (j >= 0 && (toks[j].text === ',' || toks[j].kind === 'str' || toks[j].kind === 'num')) j--;
  if (toks[j]?.text === '(' && toks[j - 1]?.kind === 'word' && toks[j - 1].text.toLowerCase() === 'in') j -= 2;
  else if (toks[j]?.kind === 'op' && COMPARE.has(toks[j].text)) j--;
  else if (toks[j]?.kind === 'word' && /^(like|glob)$/i.test(toks[j].text)) j -= toks[j - 1]?.kind === 'word' && toks[j - 1].text.toLowerCase() === 'not' ? 2 : 1;
  else return -1;
  const t = toks[j];
  return t && (t.kind === 'word' || t.kind === 'qid') ? j : -1;
}

/** The column a literal at token i is compared with, lower-cased, or null. */
export function comparedColumn(toks: readonly Token[], i: number): string | null {
  const j = comparedColumnAt(toks, i);
  return j < 0 ? null : toks[j].text.toLowerCase();
}

const CLAUSES = /^(select|from|join|on|where|group|order|having|limit|union|except|intersect)$/i;

/** Each table a query reads, lower-cased, with the name it goes by there (its alias, else itself). */
export function tableAliases(toks: readonly Token[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i];
    const starts = t.kind === 'word' && /^(from|join)$/i.test(t.text);
    const listed = t.text === ',' && out.size > 0 && toks.slice(0, i).reverse().find((x) => x.kind === 'word' && CLAUSES.test(x.text))?.text.toLowerCase() === 'from';
    if (!starts && !listed) continue;
    const name = toks[i + 1];
    if (!name || (name.kind !== 'word' && name.kind !== 'qid') || (name.kind === 'word' && isKeyword(name.text))) continue;
    let k = i + 2;
    if (toks[k]?.kind === 'word' && toks[k].text.toLowerCase() === 'as') k++;
    const alias = toks[k] && (toks[k].kind === 'qid' || (toks[k].kind === 'word' && !isKeyword(toks[k].text))) ? toks[k].text : name.text;
    if (!out.has(name.text.toLowerCase())) out.set(name.text.toLowerCase(), alias);
  }
  return out;
}

/**
 * The query with one filter moved to the value the question names: a string filter whose value the question
 * does not name, on a column the question names no value of, becomes a filter on the column of a value it
 * does name, in a table the query reads ("ships of type 'Brig'" asked as "ships in 'Mid-Atlantic'").
 * One edit per candidate filter; null when there is none.
 */
export function moveFilters(sql: string, question: string, values: readonly NamedValue[]): Edit[] {
  const toks = tokenize(sql);
  const q = ` ${fold(question)} `;
  const named = (v: string): boolean => {
    const f = fold(v.replace(/%/g, ' '));
    return f.length > 0 && q.includes(` ${f} `);
  };
  const aliases = tableAliases(toks);
  const inSql = new Set(toks.filter((t) => t.kind === 'str').map((t) => fold(t.text.replace(/%/g, ' '))));
  const strong = values.filter((v) => v.score >= STRONG_VALUE && aliases.has(v.table.toLowerCase()) && !inSql.has(fold(v.value)));
  const out: Edit[] = [];
  toks.forEach((t, i) => {
    if (t.kind !== 'str' || named(t.text)) return;
    const j = comparedColumnAt(toks, i);
    if (j < 0) return;
    const from = toks[j - 1]?.text === '.' && toks[j - 2] ? j - 2 : j;
    for (const v of strong.slice(0, 3)) {
      if (v.column.toLowerCase() === toks[j].text.toLowerCase()) continue;
      const alias = aliases.get(v.table.toLowerCase())!;
      const column = aliases.size > 1 || from !== j ? `${sqlName(alias)}.${sqlName(v.column)}` : sqlName(v.column);
      const like = /%/.test(t.text);
      const text = quoteString(like ? `%${v.value}%` : v.value);
      out.push({ sql: splice(sql, [{ start: toks[from].start, end: toks[j].end, text: column }, { start: t.start, end: t.end, text }]), changes: [{ from: t.text, to: v.value }] });
    }
  });
  return out;
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

/** A literal passed to a function (strftime('%Y', d), substr(x, 1, 4)): a format or an argument, not a value asked for. */
export function isFunctionArgument(toks: readonly Token[], i: number): boolean {
  const d = toks[i].depth;
  if (d === 0) return false;
  for (let j = i - 1; j >= 0; j--) {
    if (toks[j].text === '(' && toks[j].depth === d - 1) {
      const f = toks[j - 1];
      return f !== undefined && (f.kind === 'word' || f.kind === 'qid') && !/^(in|exists|from|join|select|where|and|or|not|on|as|values)$/i.test(f.text);
    }
  }
  return false;
}

/** Whether a query compares with a value (a string, or a number the question would name). */
export function hasLiterals(sql: string): boolean {
  const toks = tokenize(sql);
  return toks.some((t, i) => t.kind === 'str' || isQuestionNumber(toks, i));
}

/** The column a number at token i is compared with (`col > 5` or `5 < col`), lower-cased, or null. */
function comparedNumberColumn(toks: readonly Token[], i: number): string | null {
  const before = toks[i - 1];
  if (before?.kind === 'op' && COMPARE.has(before.text)) {
    const c = toks[i - 2];
    return c && (c.kind === 'word' || c.kind === 'qid') ? c.text.toLowerCase() : null;
  }
  const after = toks[i + 2];
  return toks[i + 1]?.kind === 'op' && after && (after.kind === 'word' || after.kind === 'qid') ? after.text.toLowerCase() : null;
}

/** The largest LIMIT an edit writes: a count of rows someone asks to see. */
const MAX_LIMIT = 100;

/** Numbers a query holds as string literals ('2009'). */
export function numbersInText(toks: readonly Token[]): number[] {
  return toks.filter((t) => t.kind === 'str' && /^-?\d+(\.\d+)?$/.test(t.text)).map((t) => Number(t.text));
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
/** The stored range of a numeric column, by lower-cased column name (undefined: not known). */
export type ColumnRange = (column: string) => { min: number; max: number } | undefined;

export function regroundQuery(sql: string, question: string, values: readonly NamedValue[], range?: ColumnRange): Edit | null {
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
  // A number the query already has, as a number or as text ('2009' compared with a year's text), is named.
  const sqlNumbers = new Set([...nums.map(({ t }) => Number(t.text)), ...numbersInText(toks)]);
  const unusedAsked = [...new Set(asked)].filter((n) => !sqlNumbers.has(n));
  if (unnamedSql.length === 1 && unusedAsked.length === 1) {
    const { t, i } = unnamedSql[0];
    const n = unusedAsked[0];
    // A LIMIT takes a count people ask for ("the top 5"), not a year or a threshold; a column, a number within what it stores.
    const col = comparedNumberColumn(toks, i);
    const r = col ? range?.(col) : undefined;
    const fits = isLimit(toks, i) ? Number.isInteger(n) && n >= 2 && n <= MAX_LIMIT : !r || (n >= r.min && n <= r.max);
    if (fits) {
      edits.push({ start: t.start, end: t.end, text: String(n) });
      changes.push({ from: t.text, to: String(n) });
    }
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
