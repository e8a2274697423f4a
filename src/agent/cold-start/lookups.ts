/**
 * Where a question names a value differently from how the database stores it ("shut down" for 'Shutdown',
 * "bolton" for 'Bolton'), the agent should look the value up before answering: a `SELECT DISTINCT` with a
 * LIKE on the words it has, then the answer with the stored value. This module finds those places in a
 * verified (question, SQL) pair and writes the lookup query; the cold start turns them into episodes.
 */
import { isKeyword, tokenize, sqlName, quoteString, tablesRead, type Token } from '../../sql/lexer.ts';
import type { DbSchema } from '../../sql/types.ts';

export interface ValueLookup {
  table: string;
  column: string;
  /** The value as stored (the gold query's literal). */
  stored: string;
  /** The piece of the question's wording the LIKE searches for. */
  probe: string;
  sql: string;
}

/** Case-blind comparison of names and wordings (not words.ts fold: accents and punctuation stay). */
const lower = (s: string): string => s.toLowerCase();

/** The longest substring of `a` (at least `min` characters, letters or digits) that occurs in `b`. */
export function longestShared(a: string, b: string, min = 3): string | null {
  let best = '';
  for (let i = 0; i < a.length; i++) {
    for (let j = a.length; j - i > best.length; j--) {
      const piece = a.slice(i, j);
      if (!/^[\p{L}\p{N}][\p{L}\p{N} ]*[\p{L}\p{N}]$/u.test(piece)) continue;
      if (b.includes(piece)) {
        best = piece;
        break;
      }
    }
  }
  return best.length >= min ? best : null;
}

/** Alias (or table name) → table, from `FROM t [AS] a` and `JOIN t [AS] a`, lower-cased. */
function aliases(toks: Token[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i + 1 < toks.length; i++) {
    const kw = toks[i];
    if (kw.kind !== 'word' || !/^(from|join)$/i.test(kw.text)) continue;
    const t = toks[i + 1];
    if (t.kind !== 'word' && t.kind !== 'qid') continue;
    out.set(lower(t.text), t.text);
    let j = i + 2;
    if (toks[j]?.kind === 'word' && lower(toks[j].text) === 'as') j++;
    const a = toks[j];
    if (a && (a.kind === 'qid' || (a.kind === 'word' && !isKeyword(a.text)))) out.set(lower(a.text), t.text);
  }
  return out;
}

/**
 * The first string literal the gold query compares a column with (`col = 'v'`, `col LIKE '%v%'`, `col IN ('v', …)`)
 * whose stored form is not written verbatim in the question, with the lookup that finds it.
 */
export function valueLookup(question: string, goldSql: string, schema: DbSchema): ValueLookup | null {
  const toks = tokenize(goldSql);
  const tables = new Set(tablesRead(goldSql).map(lower));
  const aliasOf = aliases(toks);
  const q = lower(question);
  for (let i = 2; i < toks.length; i++) {
    const t = toks[i];
    if (t.kind !== 'str') continue;
    const op = toks[i - 1];
    const isEq = op.kind === 'op' && (op.text === '=' || op.text === '==');
    const isLike = op.kind === 'word' && lower(op.text) === 'like';
    if (!isEq && !isLike) continue;
    const col = toks[i - 2];
    if (col.kind !== 'word' && col.kind !== 'qid') continue;
    const stored = t.text.replace(/^%|%$/g, '');
    if (!stored.trim() || question.includes(stored)) continue;
    // `T2.name`: the alias names the table; a bare column must belong to one table of the query.
    const qualifier = toks[i - 3]?.text === '.' ? aliasOf.get(lower(toks[i - 4]?.text ?? '')) : undefined;
    const candidates = qualifier ? new Set([lower(qualifier)]) : tables;
    const owners = schema.tables.filter((tb) => candidates.has(lower(tb.name)) && tb.columns.some((c) => lower(c.name) === lower(col.text)));
    if (owners.length !== 1) continue;
    const table = owners[0];
    const column = table.columns.find((c) => lower(c.name) === lower(col.text))!.name;
    const probe = longestShared(lower(stored), q);
    if (!probe) continue;
    const sql = `SELECT DISTINCT ${sqlName(column)} FROM ${sqlName(table.name)} WHERE ${sqlName(column)} LIKE ${quoteString(`%${probe}%`)} LIMIT 10`;
    return { table: table.name, column, stored: t.text, probe, sql };
  }
  return null;
}
