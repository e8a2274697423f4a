/**
 * The one SQL lexer core (`scan`) every part of agro uses (the sandbox's guard, structure features, the
 * partial-credit rewards, evaluation's DISTINCT rule, the cold start's plan notes), read in SQLite's rules
 * (`tokenize`) or PostgreSQL's (pg-lexer.ts: the same scanner with POSTGRES_LEX), with the one keyword list
 * and the one way to quote an identifier or a string.
 *
 * It is forgiving on purpose: it never throws, so it says something useful about broken SQL too
 * (a model's half-written query), which is exactly what a parser refuses to do. Comments are dropped;
 * an unterminated quote runs to the end (SQLite refuses it at prepare time).
 */

export type TokenKind = 'word' | 'qid' | 'str' | 'num' | 'op' | 'punct';

export interface Token {
  kind: TokenKind;
  /**
   * word: as written (keywords and bare names); qid: the name without its quotes; str: the value without
   * its quotes (doubled quotes undone); num/op/punct: the raw text.
   */
  text: string;
  /** The quote a qid was written with: `"x"` may also be a string literal under SQLite's lenient rule. */
  quote?: '"' | '`' | '[';
  /** Parenthesis depth the token sits at (0 = top level; a parenthesis sits at its outer depth). */
  depth: number;
  /** A U&"..." name (PostgreSQL): its text between the quotes, escapes undecoded (text holds the decoded name). */
  unicode?: string;
  /** Offsets in the source: sql.slice(start, end) is the token as written. */
  start: number;
  end: number;
}

/**
 * SQLite's keywords (sqlite.org/lang_keywords.html) plus the words that read as literals (TRUE, FALSE,
 * CURRENT_DATE, ...), lower case: never a bare name in SQL agro writes, never a column in SQL it reads.
 */
export const SQL_KEYWORDS: ReadonlySet<string> = new Set(
  (
    'abort action add after all alter analyze and as asc attach autoincrement before begin between by ' +
    'cascade case cast check collate column commit conflict constraint create cross current current_date ' +
    'current_time current_timestamp database default deferrable deferred delete desc detach distinct do ' +
    'drop each else end escape except exclusive exists explain fail false filter first for foreign from ' +
    'full glob group groups having if ignore immediate in index indexed initially inner insert instead ' +
    'intersect into is isnull join key last left like limit match natural no not nothing notnull null ' +
    'nulls of offset on or order outer over partition plan pragma primary query raise range recursive ' +
    'references regexp reindex release rename replace restrict right rollback row rows savepoint select ' +
    'set table temp temporary then to transaction trigger true union unique update using vacuum values ' +
    'view virtual when where window with without'
  ).trim().split(' '),
);

export function isKeyword(word: string): boolean {
  return SQL_KEYWORDS.has(word.toLowerCase());
}

/** Multi-character operators first, so `<>` is one token and not `<` then `>`. */
const OPS = ['<>', '!=', '<=', '>=', '==', '||', '<<', '>>', '->>', '->', '=', '<', '>', '+', '-', '*', '/', '%', '&', '|', '~'].sort((a, b) => b.length - a.length);
/** Where a bare word starts and what continues it: the same in SQLite and PostgreSQL. */
export const WORD_START = /[A-Za-z_\u0080-\uffff]/;
export const WORD_PART = /[A-Za-z0-9_$\u0080-\uffff]/;

/**
 * What one SQL dialect's lexer does differently, as data and small hooks (sqlglot's shape): one scanner
 * (`scan`) reads every dialect, so a rule fixed once holds in all of them, and a dialect's differences are
 * the few lines of its LexDialect (SQLITE_LEX below, POSTGRES_LEX in pg-lexer.ts).
 */
export interface LexDialect {
  /** Characters that end a `--` comment (SQLite: newline only; PostgreSQL: newline or carriage return). */
  lineCommentEnds: string;
  /** Whether block comments nest (PostgreSQL: `/* a /* b *\/ still *\/`). */
  nestedComments: boolean;
  /** Characters that quote a name, each with its closing character. */
  nameQuotes: Readonly<Record<string, string>>;
  /** Punctuation that opens / closes a parenthesis depth level. */
  opens: string;
  closes: string;
  /** A number at the start of the text given (a slice from the token's first character). */
  number: RegExp;
  /** The length of the operator at `i`, or 0 when none starts there. */
  operator(sql: string, i: number): number;
  /** Tokens only this dialect has (PostgreSQL: E'', U&"", $tag$ strings), tried before the shared rules. */
  special?(sql: string, i: number, depth: number): Token | undefined;
  /** A last pass over the tokens (PostgreSQL: a U&"" name's UESCAPE clause). */
  after?(tokens: Token[]): Token[];
}

/**
 * A quoted run whose opening quote is at `open`: `close` doubled stands for itself (not for `]`, which
 * cannot be escaped); with `backslash` (PostgreSQL's E'') a backslash escapes the next character. An
 * unterminated one runs to the end (the engine refuses it).
 */
export function readQuoted(sql: string, open: number, close: string, backslash = false): { text: string; end: number } {
  const n = sql.length;
  let j = open + 1;
  let text = '';
  while (j < n) {
    const c = sql[j];
    if (backslash && c === '\\' && j + 1 < n) {
      text += sql[j + 1];
      j += 2;
      continue;
    }
    if (c === close) {
      if (close !== ']' && sql[j + 1] === close) {
        text += close;
        j += 2;
        continue;
      }
      return { text, end: j + 1 };
    }
    text += c;
    j++;
  }
  return { text, end: n };
}

/** The one scanner: whitespace, comments, strings, quoted names, numbers, words, operators, punctuation. */
export function scan(sql: string, d: LexDialect): Token[] {
  const out: Token[] = [];
  const n = sql.length;
  let depth = 0;
  let i = 0;
  while (i < n) {
    const c = sql[i];
    if (c === ' ' || c === '\n' || c === '\t' || c === '\r' || /\s/.test(c)) {
      i++;
      continue;
    }
    if (c === '-' && sql[i + 1] === '-') {
      let j = i + 2;
      while (j < n && !d.lineCommentEnds.includes(sql[j])) j++;
      i = j;
      continue;
    }
    if (c === '/' && sql[i + 1] === '*') {
      if (!d.nestedComments) {
        const end = sql.indexOf('*/', i + 2);
        i = end < 0 ? n : end + 2;
        continue;
      }
      let level = 1;
      let j = i + 2;
      while (j < n && level > 0) {
        if (sql[j] === '/' && sql[j + 1] === '*') {
          level++;
          j += 2;
        } else if (sql[j] === '*' && sql[j + 1] === '/') {
          level--;
          j += 2;
        } else j++;
      }
      i = j;
      continue;
    }
    const special = d.special?.(sql, i, depth);
    if (special) {
      out.push(special);
      i = special.end;
      continue;
    }
    if (c === "'") {
      const q = readQuoted(sql, i, "'");
      out.push({ kind: 'str', text: q.text, depth, start: i, end: q.end });
      i = q.end;
    } else if (d.nameQuotes[c] !== undefined) {
      const q = readQuoted(sql, i, d.nameQuotes[c]);
      out.push({ kind: 'qid', text: q.text, quote: c as Token['quote'], depth, start: i, end: q.end });
      i = q.end;
    } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(sql[i + 1] ?? ''))) {
      const m = d.number.exec(sql.slice(i, i + 128));
      const len = m ? m[0].length : 1;
      out.push({ kind: 'num', text: sql.slice(i, i + len), depth, start: i, end: i + len });
      i += len;
    } else if (WORD_START.test(c)) {
      let j = i + 1;
      while (j < n && WORD_PART.test(sql[j])) j++;
      out.push({ kind: 'word', text: sql.slice(i, j), depth, start: i, end: j });
      i = j;
    } else {
      const len = d.operator(sql, i);
      if (len > 0) {
        out.push({ kind: 'op', text: sql.slice(i, i + len), depth, start: i, end: i + len });
        i += len;
        continue;
      }
      if (d.closes.includes(c)) depth = Math.max(0, depth - 1);
      out.push({ kind: 'punct', text: c, depth, start: i, end: i + 1 });
      if (d.opens.includes(c)) depth++;
      i++;
    }
  }
  return d.after ? d.after(out) : out;
}

/** SQLite's lexical rules (sqlite3's tokenize.c): `"`, backquotes and brackets quote names, comments do not nest. */
export const SQLITE_LEX: LexDialect = {
  lineCommentEnds: '\n',
  nestedComments: false,
  nameQuotes: { '"': '"', '`': '`', '[': ']' },
  opens: '(',
  closes: ')',
  number: /^(?:0[xX][0-9a-fA-F]+|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)/,
  operator: (sql, i) => OPS.find((o) => sql.startsWith(o, i))?.length ?? 0,
};

export function tokenize(sql: string): Token[] {
  return scan(sql, SQLITE_LEX);
}

/** True when the token is the keyword `kw` (case-insensitive). */
export function isWord(t: Token | undefined, kw: string): boolean {
  return t !== undefined && t.kind === 'word' && t.text.toUpperCase() === kw;
}

/** An identifier as SQL: always double-quoted, inner quotes doubled (safe for any name). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** The name as written in SQL: bare when that is unambiguous (a plain word, not a keyword), else double-quoted. */
export function sqlName(name: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && !SQL_KEYWORDS.has(name.toLowerCase()) ? name : quoteIdent(name);
}

/** A string literal as SQL: single-quoted, inner quotes doubled. */
export function quoteString(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

/** Keywords that end a FROM list. */
const FROM_END = new Set(['select', 'where', 'group', 'order', 'having', 'limit', 'union', 'except', 'intersect', 'on', 'using', 'window']);

/** The tables a query reads (the names after FROM and JOIN, and after commas in a FROM list), in order of first use. */
export function tablesRead(sql: string): string[] {
  const toks = tokenize(sql);
  const out: string[] = [];
  let fromDepth = -1;
  let expect = false;
  for (let k = 0; k < toks.length; k++) {
    const t = toks[k];
    if (isWord(t, 'FROM') || isWord(t, 'JOIN')) {
      fromDepth = t.depth;
      expect = true;
      continue;
    }
    if (expect && (t.kind === 'qid' || (t.kind === 'word' && !isKeyword(t.text)))) {
      if (!out.includes(t.text)) out.push(t.text);
      expect = false;
      continue;
    }
    if (t.kind === 'punct' && t.text === ',' && t.depth === fromDepth) {
      expect = true;
      continue;
    }
    if (t.kind === 'word' && FROM_END.has(t.text.toLowerCase()) && t.depth <= fromDepth) fromDepth = -1;
    expect = false;
  }
  return out;
}
