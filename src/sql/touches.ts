/**
 * A light, tokenizer-based extraction of what a SQL query touches (tables, columns, literal values), for
 * partial-credit rewards. It is deliberately forgiving: it must say something useful about broken SQL too,
 * which is exactly what a full parser refuses to do.
 */

import { isKeyword, tokenize, type Token } from './lexer.ts';

export interface SqlTouches {
  tables: Set<string>;
  columns: Set<string>;
  values: Set<string>;
}

/** Keywords after which a table name comes; commas keep the FROM list going. */
const TABLE_INTRO = new Set(['from', 'join']);
/** Keywords that end a FROM list. */
const FROM_END = new Set(['where', 'group', 'order', 'having', 'limit', 'union', 'except', 'intersect', 'on', 'using', 'window']);

type Kind = 'ident' | 'keyword' | 'string' | 'number' | 'punct';

/** The lexer's tokens as this analysis reads them: quoted or bare non-keyword words are names. */
function kindOf(t: Token): Kind {
  if (t.kind === 'str') return 'string';
  if (t.kind === 'num') return 'number';
  if (t.kind === 'qid') return 'ident';
  if (t.kind === 'word') return isKeyword(t.text) ? 'keyword' : 'ident';
  return 'punct';
}

/** Numbers compare by value (1.0 = 1), strings by their lower-cased text, identifiers case-insensitively. */
function normNumber(text: string): string {
  const x = Number(text);
  return Number.isFinite(x) ? String(x) : text;
}

export function sqlTouches(sql: string): SqlTouches {
  const toks = tokenize(sql).map((t) => ({ kind: kindOf(t), text: t.text }));
  const tables = new Set<string>();
  const aliases = new Set<string>();
  const columns = new Set<string>();
  const values = new Set<string>();
  const lower = (t: { text: string } | undefined): string => (t ? t.text.toLowerCase() : '');
  let inFrom = false;
  let expectTable = false;
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i];
    const w = lower(t);
    if (t.kind === 'string') values.add(w);
    else if (t.kind === 'number') values.add(normNumber(t.text));
    else if (t.kind === 'keyword') {
      if (TABLE_INTRO.has(w)) {
        inFrom = true;
        expectTable = true;
      } else if (FROM_END.has(w) || w === 'select') inFrom = false;
      if (w === 'as' && toks[i + 1]?.kind === 'ident') aliases.add(lower(toks[++i]));
    } else if (t.kind === 'punct') {
      if (t.text === ',' && inFrom) expectTable = true;
      if (t.text === '(') expectTable = false;
    } else if (t.kind === 'ident') {
      const next = toks[i + 1];
      if (expectTable) {
        tables.add(w);
        expectTable = false;
        // `FROM t x` or `JOIN t x`: x is an alias
        if (next?.kind === 'ident') aliases.add(lower(toks[++i]));
      } else if (next?.kind === 'punct' && next.text === '(') {
        // a function name
      } else if (next?.kind === 'punct' && next.text === '.') {
        // qualifier `t.`: the column comes next
      } else columns.add(w);
    }
  }
  for (const a of aliases) columns.delete(a);
  for (const tb of tables) columns.delete(tb);
  return { tables, columns, values };
}
