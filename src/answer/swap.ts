/**
 * An edit that carries a query's columns over to the question: a remembered query (or the policy's) often has the
 * question's shape and filters but returns, groups or orders by a sibling column ("the rooms with at least 2
 * faculties named Michael" recalled for "the building with ..."). A column the query uses there that the question
 * does not name is replaced, everywhere in those clauses, by a column of the same table, of the same kind (number
 * or text), that the question names and the query does not already use outside its joins. Filters and join
 * conditions are left alone: the value edits (edit.ts) carry those over, and a key swapped in a join breaks the
 * query's meaning. Which queries are swapped is answer.ts's to say (not drafts).
 */
import type { DbSchema } from '../sql/types.ts';
import { isKeyword, sqlName, tokenize, type Token } from '../sql/lexer.ts';
import { stem, words } from '../prompt/words.ts';
import { columnWords } from '../factory/language/names.ts';
import { tableAliases, type Edit } from './edit.ts';
import { memoized } from '../util/memo.ts';

export interface SwapColumn {
  name: string;
  stems: ReadonlySet<string>;
  numeric: boolean;
}

/** Each table's columns, lower-cased table name -> its columns with the stems of their words. */
export type SwapNames = ReadonlyMap<string, readonly SwapColumn[]>;

/** Swaps per query at most: each one more query to run. */
const MAX_SWAPS = 3;

export function swapNames(schema: DbSchema): SwapNames {
  return new Map(
    schema.tables.map((t) => [
      t.name.toLowerCase(),
      t.columns.map((c) => ({
        name: c.name,
        stems: new Set(columnWords(t.name, c.name).split(' ').filter(Boolean).map((w) => stem(w))),
        numeric: c.affinity === 'INTEGER' || c.affinity === 'REAL' || c.affinity === 'NUMERIC',
      })),
    ]),
  );
}

/** The clauses whose columns say what a query returns and how it ranks or groups (not WHERE, ON, FROM). */
const SWAPPABLE = new Set(['select', 'group', 'order', 'having']);
const CLAUSE_WORDS = /^(select|from|join|on|where|group|order|having|limit|union|except|intersect)$/i;

interface Ref {
  /** Indexes of the column's token and of its qualifier, if any. */
  at: number;
  qualifier: number;
  table: string;
  column: SwapColumn;
  swappable: boolean;
  /** In a join condition: a key joined on may still be what is asked for. */
  joined: boolean;
}

function references(toks: readonly Token[], names: SwapNames): Ref[] {
  const aliases = tableAliases(toks);
  const byAlias = new Map<string, string>();
  for (const [table, alias] of aliases) byAlias.set(alias.toLowerCase(), table);
  const tables = [...aliases.keys()].filter((t) => names.has(t));
  const out: Ref[] = [];
  let clause = 'select';
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i];
    if (t.kind === 'word' && CLAUSE_WORDS.test(t.text)) {
      clause = t.text.toLowerCase();
      continue;
    }
    if (t.kind !== 'word' && t.kind !== 'qid') continue;
    if (t.kind === 'word' && isKeyword(t.text)) continue;
    if (toks[i + 1]?.text === '(' || toks[i + 1]?.text === '.') continue;
    const name = t.text.toLowerCase();
    const qualified = toks[i - 1]?.text === '.' && toks[i - 2] !== undefined;
    let table: string | undefined;
    if (qualified) table = byAlias.get(toks[i - 2].text.toLowerCase());
    else {
      const owners = tables.filter((x) => names.get(x)!.some((c) => c.name.toLowerCase() === name));
      if (owners.length === 1) table = owners[0];
    }
    const column = table === undefined ? undefined : names.get(table)?.find((c) => c.name.toLowerCase() === name);
    if (!table || !column) continue;
    out.push({ at: i, qualifier: qualified ? i - 2 : -1, table, column, swappable: SWAPPABLE.has(clause), joined: clause === 'on' });
  }
  return out;
}

/**
 * The stems of a question's words, as names are read here: read once per question, not once per candidate query
 * (swaps and widen.ts ask it of every remembered query).
 */
export const askedStems: (question: string) => ReadonlySet<string> = memoized((question: string) => new Set(words(question).split(' ').filter(Boolean).map((w) => stem(w))), 64);

/** Every stem of a column's words is among the question's. */
export const namedBy = (c: SwapColumn, asked: ReadonlySet<string>): boolean => c.stems.size > 0 && [...c.stems].every((s) => asked.has(s));

/** The query with one column the question does not name replaced by one it does, per swap; [] when none fits. */
export function swapColumns(sql: string, question: string, names: SwapNames): Edit[] {
  const toks = tokenize(sql);
  const refs = references(toks, names);
  if (refs.length === 0) return [];
  const asked = askedStems(question);
  // A column the query filters on is the filter's (returning it gives back the threshold's own column); a key
  // joined on may still be what is asked for.
  const used = new Set(refs.filter((r) => !r.joined).map((r) => `${r.table}.${r.column.name.toLowerCase()}`));
  const out: Edit[] = [];
  const done = new Set<string>();
  for (const r of refs) {
    if (!r.swappable || namedBy(r.column, asked)) continue;
    const from = `${r.table}.${r.column.name.toLowerCase()}`;
    if (done.has(from)) continue;
    done.add(from);
    const qualifier = r.qualifier >= 0 ? toks[r.qualifier].text.toLowerCase() : null;
    // Every use of this column in the swappable clauses, with the same qualifier (or none).
    const sites = refs.filter((x) => x.swappable && x.table === r.table && x.column === r.column && (x.qualifier >= 0 ? toks[x.qualifier].text.toLowerCase() : null) === qualifier);
    for (const c of names.get(r.table)!) {
      if (out.length >= MAX_SWAPS) return out;
      if (c.numeric !== r.column.numeric || used.has(`${r.table}.${c.name.toLowerCase()}`) || !namedBy(c, asked)) continue;
      const text = sqlName(c.name);
      let next = sql;
      for (const s of [...sites].sort((a, b) => toks[b.at].start - toks[a.at].start)) next = next.slice(0, toks[s.at].start) + text + next.slice(toks[s.at].end);
      out.push({ sql: next, changes: [{ from: r.column.name, to: c.name }] });
    }
  }
  return out;
}
