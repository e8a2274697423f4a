/**
 * The schema's own spelling in SQL agro shows: a model (or a person) may write `ARTISTs` for the table `artists`;
 * SQLite accepts any case of a name, but a person reading the query, or copying it to an engine that folds names
 * differently, should see the names as the schema spells them. Only the case of a name changes, so the query means
 * exactly what it meant (names are case-insensitive in SQLite; in PostgreSQL a bare name folds to lower case, so
 * there only a bare name whose schema spelling is that lower case is rewritten, and quoted names are exact already).
 * Aliases stay as written (`AS t`, a table's alias in FROM), as do strings, keywords and function names.
 */
import { isKeyword, tokenize, type Token } from './lexer.ts';
import { tokenizePg } from './pg-lexer.ts';
import type { SqlDialect } from './guard.ts';
import type { DbSchema } from './types.ts';

/** Every table and column name of the schema by its lower case (the first spelling met wins: tables, then columns). */
export function schemaNames(schema: DbSchema): Map<string, string> {
  const out = new Map<string, string>();
  for (const t of schema.tables) if (!out.has(t.name.toLowerCase())) out.set(t.name.toLowerCase(), t.name);
  for (const t of schema.tables) for (const c of t.columns) if (!out.has(c.name.toLowerCase())) out.set(c.name.toLowerCase(), c.name);
  return out;
}

const isName = (t: Token | undefined): t is Token => t !== undefined && (t.kind === 'qid' || (t.kind === 'word' && !isKeyword(t.text)));
const word = (t: Token | undefined, kw: string): boolean => t !== undefined && t.kind === 'word' && t.text.toLowerCase() === kw;

/** Names the query itself defines: after AS, and a table's alias written without AS (`FROM artists a`, `JOIN x y`). */
function aliasesOf(toks: readonly Token[], tables: ReadonlySet<string>): Set<string> {
  const out = new Set<string>();
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i];
    if (!isName(t)) continue;
    if (word(toks[i - 1], 'as')) out.add(t.text.toLowerCase());
    else if (isName(toks[i - 1]) && tables.has(toks[i - 1].text.toLowerCase()) && (word(toks[i - 2], 'from') || word(toks[i - 2], 'join') || toks[i - 2]?.text === ',')) out.add(t.text.toLowerCase());
  }
  return out;
}

/** The query with each table and column name spelled as the schema spells it (see the header); else unchanged. */
export function schemaSpelling(sql: string, schema: DbSchema, dialect: SqlDialect = 'sqlite'): string {
  const names = schemaNames(schema);
  const toks = dialect === 'postgres' ? tokenizePg(sql) : tokenize(sql);
  const tables = new Set(schema.tables.map((t) => t.name.toLowerCase()));
  const aliases = aliasesOf(toks, tables);
  const edits: Array<{ start: number; end: number; text: string }> = [];
  toks.forEach((t, i) => {
    if (!isName(t) || t.unicode !== undefined) return;
    const key = t.text.toLowerCase();
    const spelled = names.get(key);
    if (spelled === undefined || spelled === t.text) return;
    // An alias is the query's own name, even where it shadows a column's (`SELECT name AS Name`): kept as written.
    if (aliases.has(key)) return;
    // A function call (`COUNT(...)` beside a column named count) is no name of the schema.
    if (t.kind === 'word' && toks[i + 1]?.text === '(') return;
    if (t.kind === 'word') {
      if (dialect === 'postgres' && spelled !== key) return;
      edits.push({ start: t.start, end: t.end, text: spelled });
    } else {
      if (dialect === 'postgres') return;
      const close = t.quote === '[' ? ']' : t.quote!;
      edits.push({ start: t.start, end: t.end, text: `${t.quote}${close === ']' ? spelled : spelled.split(close).join(close + close)}${close}` });
    }
  });
  let out = sql;
  for (const e of edits.reverse()) out = out.slice(0, e.start) + e.text + out.slice(e.end);
  return out;
}
