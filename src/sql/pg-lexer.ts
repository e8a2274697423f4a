/**
 * PostgreSQL's lexical rules, for the sandbox's guard only: where a string, a quoted name or a comment
 * begins and ends is exactly what a guard must agree on with the server, and PostgreSQL differs from
 * SQLite there (lexer.ts): dollar-quoted strings ($$...$$, $tag$...$tag$), E'...' strings with
 * backslash escapes, nested block comments, and `[` / backquote that quote nothing (`arr[1]` is a
 * subscript). A guard reading PostgreSQL with SQLite's rules would take `arr[1 + f()]` for a quoted
 * name and never see the call to f.
 * Same token shape as lexer.ts; never throws (an unterminated quote runs to the end; the server refuses it).
 */
import { WORD_PART, WORD_START, type Token } from './lexer.ts';

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

export function tokenizePg(sql: string): Token[] {
  const out: Token[] = [];
  const n = sql.length;
  let depth = 0;
  let i = 0;
  /** A quoted run from `i` (the opening quote at `open`) with `close` doubled to escape it; `backslash`: E'' rules. */
  const quoted = (open: number, close: string, backslash: boolean): { text: string; end: number } => {
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
        if (sql[j + 1] === close) {
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
  };
  while (i < n) {
    const c = sql[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '-' && sql[i + 1] === '-') {
      // PostgreSQL ends a line comment at a carriage return as well as a newline (scan.l's non_newline).
      let j = i + 2;
      while (j < n && sql[j] !== '\n' && sql[j] !== '\r') j++;
      i = j;
    } else if (c === '/' && sql[i + 1] === '*') {
      // Block comments nest in PostgreSQL: /* a /* b */ still a comment */.
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
    } else if (c === "'") {
      const q = quoted(i, "'", false);
      out.push({ kind: 'str', text: q.text, depth, start: i, end: q.end });
      i = q.end;
    } else if ((c === 'E' || c === 'e') && sql[i + 1] === "'") {
      const q = quoted(i + 1, "'", true);
      out.push({ kind: 'str', text: q.text, depth, start: i, end: q.end });
      i = q.end;
    } else if ((c === 'U' || c === 'u') && sql[i + 1] === '&' && (sql[i + 2] === "'" || sql[i + 2] === '"')) {
      // U&'d\0061t' / U&"d\0061t": Unicode escapes inside, quoted as usual. A name is decoded as the server
      // decodes it (UESCAPE, if it follows, re-decodes it below); one that does not decode keeps its escapes
      // as written and so names no known function.
      const q = quoted(i + 2, sql[i + 2], false);
      if (sql[i + 2] === "'") out.push({ kind: 'str', text: q.text, depth, start: i, end: q.end });
      else out.push({ kind: 'qid', text: decodeUnicodeIdent(q.text) ?? `U&${q.text}`, quote: '"', depth, start: i, end: q.end, unicode: q.text });
      i = q.end;
    } else if (c === '"') {
      const q = quoted(i, '"', false);
      out.push({ kind: 'qid', text: q.text, quote: '"', depth, start: i, end: q.end });
      i = q.end;
    } else if (c === '$' && dollarTagAt(sql, i)) {
      const tag = dollarTagAt(sql, i)!;
      const close = sql.indexOf(tag, i + tag.length);
      const end = close < 0 ? n : close + tag.length;
      out.push({ kind: 'str', text: sql.slice(i + tag.length, close < 0 ? n : close), depth, start: i, end });
      i = end;
    } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(sql[i + 1] ?? ''))) {
      const m = /^(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)/.exec(sql.slice(i, i + 128));
      const len = m ? m[0].length : 1;
      out.push({ kind: 'num', text: sql.slice(i, i + len), depth, start: i, end: i + len });
      i += len;
    } else if (WORD_START.test(c)) {
      let j = i + 1;
      while (j < n && WORD_PART.test(sql[j])) j++;
      out.push({ kind: 'word', text: sql.slice(i, j), depth, start: i, end: j });
      i = j;
    } else if ('+-*/<>=~!@#%^&|`?'.includes(c)) {
      // PostgreSQL operators are runs of these characters (`::` and `;` are punctuation).
      let j = i + 1;
      while (j < n && '+-*/<>=~!@#%^&|`?'.includes(sql[j]) && !(sql[j] === '-' && sql[j + 1] === '-') && !(sql[j] === '/' && sql[j + 1] === '*')) j++;
      out.push({ kind: 'op', text: sql.slice(i, j), depth, start: i, end: j });
      i = j;
    } else {
      if (c === ')' || c === ']') depth = Math.max(0, depth - 1);
      out.push({ kind: 'punct', text: c, depth, start: i, end: i + 1 });
      if (c === '(' || c === '[') depth++;
      i++;
    }
  }
  return withUescape(out);
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
