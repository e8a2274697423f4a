/**
 * The thing a question asks to be returned, read in the schema's words, against the columns a query returns. "Which
 * artist has the most albums?" asks for an artist; `SELECT country FROM artists GROUP BY country ...` returns a
 * country: it answers another question however close its reading, and the answer path holds it to the low mark.
 *
 * Conservative by construction, since a right answer marked low is a cost too: only a question that opens by asking
 * for something ("which X", "what X", "what is the X of", "list/show/give/find/name the X") and whose every asked
 * thing is a table or a column of the schema says anything; only a query whose returned items are all plain columns
 * of the schema (no star, aggregate or expression) is judged; and a returned column agrees when it is one the asked
 * thing names (its words within the other's), an identifier of a thing (a name, title, id or code, or a column named
 * after the asked table), or a column whose words the question says anywhere.
 */
import type { DbSchema } from '../sql/types.ts';
import { isKeyword, tokenize, type Token } from '../sql/lexer.ts';
import { stem, tokens, words } from '../prompt/words.ts';
import { columnWords, singular } from '../factory/language/names.ts';
import { countedNames } from './intent.ts';

export interface ReturnedNames {
  /** A table by its spoken singular and its unique head noun (intent.ts countedNames). */
  tables: ReadonlyMap<string, string>;
  /** Each column, lower-cased, by the stems of its words (its compound too: "birth place" is also "birthplace"). */
  columns: ReadonlyMap<string, ReadonlySet<string>>;
  /** The stems of each table's words, lower-cased name -> stems. */
  tableStems: ReadonlyMap<string, ReadonlySet<string>>;
}

const stemsOf = (phrase: string): string[] => tokens(phrase).map((w) => stem(w));

export function returnedNames(schema: DbSchema): ReturnedNames {
  const columns = new Map<string, Set<string>>();
  for (const t of schema.tables) {
    for (const c of t.columns) {
      const ws = columnWords(t.name, c.name).split(' ').filter(Boolean);
      const s = columns.get(c.name.toLowerCase()) ?? new Set<string>();
      for (const w of ws) s.add(stem(w));
      if (ws.length > 1) s.add(stem(ws.join('')));
      columns.set(c.name.toLowerCase(), s);
    }
  }
  const tableStems = new Map(schema.tables.map((t) => [t.name.toLowerCase(), new Set(stemsOf(words(t.name)).concat(stemsOf(words(t.name)).map((s) => stem(singular(s)))))]));
  return { tables: countedNames(schema.tables.map((t) => t.name)), columns, tableStems };
}

/** What a question asks to be returned: a table (a thing) or the stems of a column's words. */
export type Asked = { table: string } | { column: string[] };

/** Openings that ask for something returned; the words after them name it. */
const ASKING = /^\s*(?:please\s+)?(?:which|what|list|show|give|find|return|display|name|tell)\b/i;
/** Words between the opening and the thing ("what are the", "show me all the different"). */
const LEAD = new Set('is are was were me us all the a an every each different distinct unique various'.split(' '));
/** Words that end the asked thing: grammar after it ("the name of ...", "which artist has ..."). */
const STOP = new Set('of that who whom which whose where when with without has have had having in on at for from by is are was were do does did did will can could would should to than as there whom sorted ordered order grouped per'.split(' '));

/** The things a question asks to be returned, or [] when it asks for nothing this can read (then nothing is said). */
export function askedThings(question: string, names: ReturnedNames): Asked[] {
  const open = ASKING.exec(question);
  if (!open) return [];
  const ws = tokens(question.slice(open[0].length));
  let i = 0;
  while (i < ws.length && LEAD.has(ws[i])) i++;
  const items: string[][] = [[]];
  for (; i < ws.length && !STOP.has(ws[i]); i++) {
    if (ws[i] === 'and') items.push([]);
    else items[items.length - 1].push(ws[i]);
  }
  const out: Asked[] = [];
  for (const item of items) {
    if (item.length === 0 || item.length > 3) return [];
    const table = names.tables.get(item.map((w) => singular(w)).join(' '));
    if (table !== undefined) {
      out.push({ table });
      continue;
    }
    const s = item.map((w) => stem(w));
    // A column is asked for when one of the schema's columns is named by these words (its words within them, or theirs within its).
    if (![...names.columns.values()].some((c) => within(s, c) || [...c].every((x) => s.includes(x)))) return [];
    out.push({ column: s });
  }
  return out;
}

const within = (s: readonly string[], set: ReadonlySet<string>): boolean => s.length > 0 && s.every((x) => set.has(x));

/** Stems of what identifies a thing: its name, title, id or code. */
const IDENTIFYING = new Set(['name', 'titl', 'id', 'code']);

/** The columns a query's first SELECT returns, lower-cased, or null when any returned item is not a plain column (star, aggregate, expression, literal). */
export function returnedColumns(sql: string): string[] | null {
  const toks = tokenize(sql);
  const start = toks.findIndex((t) => t.depth === 0 && t.kind === 'word' && t.text.toLowerCase() === 'select');
  if (start < 0) return null;
  const end = toks.findIndex((t, k) => k > start && t.depth === 0 && t.kind === 'word' && /^(from|where|group|order|limit|union|except|intersect)$/i.test(t.text));
  const list = toks.slice(start + 1, end < 0 ? toks.length : end);
  const items: Token[][] = [[]];
  for (const t of list) {
    if (t.depth === 0 && t.text === ',') items.push([]);
    else items[items.length - 1].push(t);
  }
  const out: string[] = [];
  const name = (t: Token | undefined): boolean => t !== undefined && (t.kind === 'qid' || (t.kind === 'word' && !isKeyword(t.text)));
  for (let item of items) {
    if (item[0]?.kind === 'word' && /^(distinct|all)$/i.test(item[0].text)) item = item.slice(1);
    let k = 0;
    if (name(item[0]) && item[1]?.text === '.' && name(item[2])) k = 2;
    else if (!name(item[0])) return null;
    const rest = item.slice(k + 1);
    // An alias after the column (`name AS artist`, `name artist`) is kept as written; anything else is an expression.
    const aliased = rest.length === 0 || (rest.length === 1 && name(rest[0])) || (rest.length === 2 && rest[0].kind === 'word' && rest[0].text.toLowerCase() === 'as' && name(rest[1]));
    if (!aliased) return null;
    out.push(item[k].text.toLowerCase());
  }
  return out;
}

/**
 * Whether the query returns another thing than the question asks for: every asked thing is the schema's, every
 * returned item a plain column of it, and no returned column agrees with any asked thing or is said in the question.
 */
export function returnsAnotherThing(question: string, sql: string | null, names: ReturnedNames): boolean {
  if (!sql) return false;
  const asked = askedThings(question, names);
  if (!asked.length) return false;
  const cols = returnedColumns(sql);
  if (!cols || !cols.length || cols.some((c) => !names.columns.has(c))) return false;
  const said = new Set(tokens(question).map((w) => stem(w)));
  const agrees = (c: string): boolean => {
    const s = names.columns.get(c)!;
    if ([...s].some((x) => said.has(x))) return true;
    return asked.some((a) => {
      // Asked for names, a thing's title is its name ("the names of albums" are their titles): identifiers agree.
      if ('column' in a) return within(a.column, s) || [...s].every((x) => a.column.includes(x)) || (a.column.some((x) => IDENTIFYING.has(x)) && [...s].some((x) => IDENTIFYING.has(x)));
      const t = names.tableStems.get(a.table.toLowerCase()) ?? new Set<string>();
      return [...s].some((x) => IDENTIFYING.has(x) || t.has(x));
    });
  };
  return !cols.some(agrees);
}
