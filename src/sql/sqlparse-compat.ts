/**
 * What the official Spider execution evaluator does to a query's text before running it, reproduced
 * exactly. test-suite-sql-eval's `remove_distinct(s)` is
 *
 *     toks = [t.value for t in list(sqlparse.parse(s)[0].flatten())]
 *     return ''.join([t for t in toks if t.lower() != 'distinct'])
 *
 * so its result depends on sqlparse's lexer (which tokens are exactly `distinct`: the keyword, but also
 * `t.distinct` or `DISTINCT(`, never a word inside a string, comment or quoted name) and on its statement
 * splitter (only the first statement survives; an empty or whitespace-only query has none and raises).
 * This module ports both from sqlparse 0.4.2 (Debian bookworm's python3-sqlparse, the one the reference
 * runs with): the regex table of sqlparse/keywords.py in its order, and engine/statement_splitter.py.
 * It is a compatibility lexer for evaluation only, not agro's SQL tokenizer (src/sql/guard.ts / lexer.ts).
 */

/** Token classes the splitter and the DISTINCT filter need (sqlparse's ttype, coarsened). */
export type SqlparseKind =
  | 'newline'
  | 'whitespace'
  | 'comment_single'
  | 'comment_other' // multi-line comments and optimizer hints
  | 'punct'
  | 'keyword'
  | 'ddl'
  | 'name'
  | 'other';

export interface SqlparseToken {
  kind: SqlparseKind;
  value: string;
}

// Python's Unicode classes (re.UNICODE): \s is str.isspace(), \w letters, numbers and '_', \d decimal digits.
const S = String.raw`[\t\n\v\f\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]`;
const NS = String.raw`[^\t\n\v\f\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]`;
const W = String.raw`[\p{L}\p{N}_]`;
const D = String.raw`\p{Nd}`;
const B = `(?!${W})`; // \b after a word character
const L = String.raw`[A-ZÀ-Ü]`;

/** Words whose keyword-ness the splitter looks at; every other word only needs to be "not one of these". */
const SPLIT_KEYWORDS = new Set(['DECLARE', 'BEGIN', 'END', 'IF', 'FOR', 'WHILE', 'CASE']);

type Action = SqlparseKind | 'word';

/** sqlparse 0.4.2 SQL_REGEX['root'], in order ('.' becomes [^\n], as Python's). */
const TABLE: Array<[string, Action]> = [
  [String.raw`(--|# )\+[^\n]*?(\r\n|\r|\n|$)`, 'comment_other'],
  [String.raw`/\*\+[\s\S]*?\*/`, 'comment_other'],
  [String.raw`(--|# )[^\n]*?(\r\n|\r|\n|$)`, 'comment_single'],
  [String.raw`/\*[\s\S]*?\*/`, 'comment_other'],
  [String.raw`(\r\n|\r|\n)`, 'newline'],
  [`${S}+?`, 'whitespace'],
  [':=', 'other'],
  ['::', 'punct'],
  [String.raw`\*`, 'other'],
  ['`(``|[^`])*`', 'name'],
  ['´(´´|[^´])*´', 'name'],
  [String.raw`((?<!${NS})\$(?:[_A-ZÀ-Ü]${W}*)?\$)[\s\S]*?\1`, 'other'],
  [String.raw`\?`, 'other'],
  [String.raw`%(\(${W}+\))?s`, 'other'],
  [String.raw`(?<!${W})[$:?]${W}+`, 'other'],
  [String.raw`\\${W}+`, 'other'],
  [`(NOT${S}+)?(IN)${B}`, 'other'],
  [`(CASE|IN|VALUES|USING|FROM|AS)${B}`, 'keyword'],
  [`(@|##|#)${L}${W}+`, 'name'],
  [String.raw`${L}${W}*(?=${S}*\.)`, 'name'],
  [String.raw`(?<=\.)${L}${W}*`, 'name'],
  [String.raw`${L}${W}*(?=\()`, 'name'],
  [String.raw`-?0x[${D}A-F]+`, 'other'],
  [String.raw`-?${D}+(\.${D}+)?E-?${D}+`, 'other'],
  [String.raw`(?![_A-ZÀ-Ü])-?(${D}+(\.${D}*)|\.${D}+)(?![_A-ZÀ-Ü])`, 'other'],
  [`(?![_A-ZÀ-Ü])-?${D}+(?![_A-ZÀ-Ü])`, 'other'],
  [String.raw`'(''|\\'|[^'])*'`, 'other'],
  [String.raw`"(""|\\"|[^"])*"`, 'other'],
  [String.raw`(""|"[^\n]*?[^\\]")`, 'other'],
  [String.raw`(?<![\p{L}\p{N}_\])])(\[[^\]\[]+\])`, 'name'],
  [`((LEFT${S}+|RIGHT${S}+|FULL${S}+)?(INNER${S}+|OUTER${S}+|STRAIGHT${S}+)?|(CROSS${S}+|NATURAL${S}+)?)?JOIN${B}`, 'keyword'],
  [`END(${S}+IF|${S}+LOOP|${S}+WHILE)?${B}`, 'keyword'],
  [`NOT${S}+NULL${B}`, 'keyword'],
  [`NULLS${S}+(FIRST|LAST)${B}`, 'keyword'],
  [`UNION${S}+ALL${B}`, 'keyword'],
  [`CREATE(${S}+OR${S}+REPLACE)?${B}`, 'ddl'],
  [`DOUBLE${S}+PRECISION${B}`, 'other'],
  [`GROUP${S}+BY${B}`, 'keyword'],
  [`ORDER${S}+BY${B}`, 'keyword'],
  [`HANDLER${S}+FOR${B}`, 'keyword'],
  [`(LATERAL${S}+VIEW${S}+)(EXPLODE|INLINE|PARSE_URL_TUPLE|POSEXPLODE|STACK)${B}`, 'keyword'],
  [`(AT|WITH')${S}+TIME${S}+ZONE${S}+'[^']+'`, 'keyword'],
  [`(NOT${S}+)?(LIKE|ILIKE|RLIKE)${B}`, 'other'],
  [String.raw`[0-9_A-ZÀ-Ü][_$#\p{L}\p{N}_]*`, 'word'],
  [String.raw`[;:()\[\],\.]`, 'punct'],
  ['[<>=~!]+', 'other'],
  ['[+/@#%^&|^-]+', 'other'],
];

const COMPILED: Array<[RegExp, Action]> = TABLE.map(([src, action]) => [new RegExp(src, 'iuy'), action]);

/** sqlparse's lexer: every character lands in exactly one token; joining the values gives the input back. */
export function sqlparseTokens(text: string): SqlparseToken[] {
  const out: SqlparseToken[] = [];
  let pos = 0;
  outer: while (pos < text.length) {
    for (const [re, action] of COMPILED) {
      re.lastIndex = pos;
      const m = re.exec(text);
      if (!m || m[0].length === 0) continue;
      const value = m[0];
      const kind: SqlparseKind = action === 'word' ? (SPLIT_KEYWORDS.has(value.toUpperCase()) ? 'keyword' : 'other') : action;
      out.push({ kind, value });
      pos += value.length;
      continue outer;
    }
    const ch = String.fromCodePoint(text.codePointAt(pos)!);
    out.push({ kind: 'other', value: ch });
    pos += ch.length;
  }
  return out;
}

/** sqlparse.parse(text): statements as token lists (engine/statement_splitter.py). */
export function sqlparseStatements(text: string): SqlparseToken[][] {
  const statements: SqlparseToken[][] = [];
  let tokens: SqlparseToken[] = [];
  let level = 0;
  let isCreate = false;
  let beginDepth = 0;
  let consumeWs = false;
  const reset = (): void => {
    tokens = [];
    level = 0;
    isCreate = false;
    beginDepth = 0;
    consumeWs = false;
  };
  const change = (t: SqlparseToken): number => {
    if (t.kind === 'punct' && t.value === '(') return 1;
    if (t.kind === 'punct' && t.value === ')') return -1;
    if (t.kind !== 'keyword' && t.kind !== 'ddl') return 0;
    const unified = t.value.toUpperCase();
    if (t.kind === 'ddl' && unified.startsWith('CREATE')) {
      isCreate = true;
      return 0;
    }
    // The in-DECLARE flag upstream sets is never read, so only the level change is kept.
    if (unified === 'DECLARE' && isCreate && beginDepth === 0) return 1;
    if (unified === 'BEGIN') {
      beginDepth++;
      return isCreate ? 1 : 0;
    }
    if (unified === 'END') {
      beginDepth = Math.max(0, beginDepth - 1);
      return -1;
    }
    if ((unified === 'IF' || unified === 'FOR' || unified === 'WHILE' || unified === 'CASE') && isCreate && beginDepth > 0) return 1;
    if (unified === 'END IF' || unified === 'END FOR' || unified === 'END WHILE') return -1;
    return 0;
  };
  for (const t of sqlparseTokens(text)) {
    if (consumeWs && t.kind !== 'whitespace' && t.kind !== 'comment_single') {
      statements.push(tokens);
      reset();
    }
    level += change(t);
    tokens.push(t);
    if (level <= 0 && t.kind === 'punct' && t.value === ';') consumeWs = true;
  }
  if (tokens.length > 0 && !tokens.every((t) => t.kind === 'whitespace' || t.kind === 'newline')) statements.push(tokens);
  return statements;
}

/** Thrown where upstream's `sqlparse.parse(s)[0]` raises IndexError: the query has no statement. */
export class NoStatementError extends Error {
  constructor() {
    super('the query is empty (no SQL statement)');
    this.name = 'NoStatementError';
  }
}

/**
 * test-suite-sql-eval's `remove_distinct`: the first statement with every `distinct` token dropped
 * (`count(DISTINCT x)` becomes `count( x)`). Throws NoStatementError for an empty query.
 */
export function removeDistinct(sql: string): string {
  const first = sqlparseStatements(sql)[0];
  if (!first) throw new NoStatementError();
  return first
    .map((t) => t.value)
    .filter((v) => v.toLowerCase() !== 'distinct')
    .join('');
}
