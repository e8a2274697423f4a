/**
 * PostgreSQL's lexical rules, for the sandbox's guard only: where a string, a quoted name or a comment
 * begins and ends is exactly what a guard must agree on with the server, and PostgreSQL differs from
 * SQLite there (lexer.ts): dollar-quoted strings ($$...$$, $tag$...$tag$), E'...' strings with
 * backslash escapes, nested block comments, and `[` / backquote that quote nothing (`arr[1]` is a
 * subscript). A guard reading PostgreSQL with SQLite's rules would take `arr[1 + f()]` for a quoted
 * name and never see the call to f.
 * The same scanner as SQLite's (lexer.ts `scan`), with PostgreSQL's differences as data and hooks
 * (POSTGRES_LEX); never throws (an unterminated quote runs to the end; the server refuses it).
 */
import { readQuoted, scan, type LexDialect, type Token } from './lexer.ts';

/** A dollar-quote delimiter at the scan position (sticky), of any length: the server sets none (issue 47 found a 64-character window here). */
const DOLLAR_TAG = /\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/y;

function dollarTagAt(sql: string, i: number): string | undefined {
  DOLLAR_TAG.lastIndex = i;
  return DOLLAR_TAG.exec(sql)?.[0];
}

/**
 * The name a U&"..." identifier spells (PostgreSQL's Unicode escapes: `\XXXX`, `\+XXXXXX`, the escape
 * character doubled for itself), with `esc` as the escape character (UESCAPE). Undefined when the escapes
 * are malformed: the server refuses those, and the guard must not guess a name.
 */
export function decodeUnicodeIdent(raw: string, esc = '\\'): string | undefined {
  let out = '';
  for (let j = 0; j < raw.length; ) {
    if (raw[j] !== esc) {
      out += raw[j++];
      continue;
    }
    if (raw[j + 1] === esc) {
      out += esc;
      j += 2;
      continue;
    }
    const m = raw[j + 1] === '+' ? /^[0-9A-Fa-f]{6}/.exec(raw.slice(j + 2)) : /^[0-9A-Fa-f]{4}/.exec(raw.slice(j + 1));
    if (!m) return undefined;
    const cp = parseInt(m[0], 16);
    if (cp > 0x10ffff || cp === 0) return undefined;
    out += String.fromCodePoint(cp);
    j += (raw[j + 1] === '+' ? 2 : 1) + m[0].length;
  }
  return out;
}

const OP_CHARS = '+-*/<>=~!@#%^&|`?';

/**
 * PostgreSQL's lexical rules (scan.l) as the shared scanner's data: `--` comments end at \n or \r, block
 * comments nest, only `"` quotes a name (`[` is a subscript, and opens a depth level), operators are runs of
 * operator characters cut before an embedded `--` or `/*`, and numbers include PostgreSQL 16's hex, octal
 * and binary integers and digit separators (PostgreSQL 15 refuses `0x1F`: "trailing junk after numeric literal").
 */
export const POSTGRES_LEX: LexDialect = {
  lineCommentEnds: '\n\r',
  nestedComments: true,
  nameQuotes: { '"': '"' },
  opens: '([',
  closes: ')]',
  number: /^(?:0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+|\d(?:_?\d)*\.?(?:\d(?:_?\d)*)?(?:[eE][+-]?\d+)?|\.\d(?:_?\d)*(?:[eE][+-]?\d+)?)/,
  operator(sql, i) {
    if (!OP_CHARS.includes(sql[i])) return 0;
    let j = i + 1;
    while (j < sql.length && OP_CHARS.includes(sql[j]) && !(sql[j] === '-' && sql[j + 1] === '-') && !(sql[j] === '/' && sql[j + 1] === '*')) j++;
    return j - i;
  },
  special(sql, i, depth) {
    const c = sql[i];
    if ((c === 'E' || c === 'e') && sql[i + 1] === "'") {
      const q = readQuoted(sql, i + 1, "'", true);
      return { kind: 'str', text: q.text, depth, start: i, end: q.end };
    }
    if ((c === 'U' || c === 'u') && sql[i + 1] === '&' && (sql[i + 2] === "'" || sql[i + 2] === '"')) {
      // U&'d\0061t' / U&"d\0061t": Unicode escapes inside, quoted as usual. A name is decoded as the server
      // decodes it (UESCAPE, if it follows, re-decodes it: withUescape); one that does not decode keeps its
      // escapes as written and so names no known function.
      const q = readQuoted(sql, i + 2, sql[i + 2]);
      if (sql[i + 2] === "'") return { kind: 'str', text: q.text, depth, start: i, end: q.end };
      return { kind: 'qid', text: decodeUnicodeIdent(q.text) ?? `U&${q.text}`, quote: '"', depth, start: i, end: q.end, unicode: q.text };
    }
    if (c === '$') {
      const tag = dollarTagAt(sql, i);
      if (!tag) return undefined;
      const close = sql.indexOf(tag, i + tag.length);
      const end = close < 0 ? sql.length : close + tag.length;
      return { kind: 'str', text: sql.slice(i + tag.length, close < 0 ? sql.length : close), depth, start: i, end };
    }
    return undefined;
  },
  after: withUescape,
};

export function tokenizePg(sql: string): Token[] {
  return scan(sql, POSTGRES_LEX);
}

/**
 * `U&"x!0041" UESCAPE '!'`: the escape character given after the name (comments and spaces between are
 * already gone) re-decodes it; the UESCAPE clause itself is no token of the query's meaning.
 */
function withUescape(tokens: Token[]): Token[] {
  const out: Token[] = [];
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k];
    const u = tokens[k + 1];
    const e = tokens[k + 2];
    if (t.unicode !== undefined && u?.kind === 'word' && u.text.toUpperCase() === 'UESCAPE' && e?.kind === 'str') {
      const esc = e.text.length === 1 && !/[0-9A-Fa-f+'"\s]/.test(e.text) ? e.text : undefined;
      const name = esc ? decodeUnicodeIdent(t.unicode, esc) : undefined;
      out.push({ ...t, text: name ?? `U&${t.unicode}`, end: e.end });
      k += 2;
    } else out.push(t);
  }
  return out;
}
