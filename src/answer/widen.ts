/**
 * Edits that make a query return what the question asks for: what it leaves out, and not what it adds. People ask
 * for several things at once ("the name, the class and the rank of each captain", "the lowest, the average and the
 * highest distance"), and the memory's queries mostly return one: on the judge's pretraining lists a third of the
 * questions no candidate answered were of this kind (docs/answering.md#candidates). Three edits (and the first
 * and third at once), each one more query to run:
 * - columns: each column of a table the query reads at its top level that the question names (every word of it,
 *   as swap.ts reads names), that no other such table's column also matches, and that the query does not use (a
 *   column it filters or orders on is the filter's, as in swap.ts; a key it joins on is the joined table's) is added
 *   to what it returns;
 * - aggregates: a query returning one MIN, MAX, AVG or SUM of an expression returns, instead, each of those the
 *   question asks for, in the question's order ("the lowest ... and the highest": MIN(x), MAX(x));
 * - and the other way: the columns it returns that the question does not name are dropped, when one it names stays.
 * Grouped queries and set operations are left alone (a bare column beside a group is SQLite's arbitrary row); so
 * is a query returning an aggregate without a group, where a column added would be one arbitrary row's. Which
 * queries are widened is answer.ts's to say (not drafts, as for swaps).
 */
import { sqlName, tokenize, type Token } from '../sql/lexer.ts';
import { stem, tokens, words } from '../prompt/words.ts';
import { tableAliases, type Edit } from './edit.ts';
import { askedStems, namedBy, type SwapColumn, type SwapNames } from './swap.ts';
import { cueWords } from './text.ts';

/** Columns added per query at most. */
const MAX_ADDED = 3;

const AGGREGATES = new Set(['min', 'max', 'avg', 'sum', 'count']);
/** The question's aggregate cues (text.ts) and what each asks a column for. */
const CUE_AGGREGATE: Readonly<Record<string, string>> = { qlow: 'MIN', qhigh: 'MAX', qavg: 'AVG', qsum: 'SUM' };

/** The top-level query's SELECT list, as token ranges between its commas; null when it is not a plain SELECT. */
function selectList(toks: readonly Token[]): { items: Array<[number, number]>; distinct: boolean } | null {
  const top = (i: number, re: RegExp): boolean => toks[i].depth === 0 && toks[i].kind === 'word' && re.test(toks[i].text);
  if (toks.length === 0 || !top(0, /^select$/i)) return null;
  for (let i = 0; i < toks.length; i++) if (top(i, /^(group|union|except|intersect)$/i)) return null;
  const from = toks.findIndex((_, i) => top(i, /^from$/i));
  if (from < 0) return null;
  const distinct = toks[1] !== undefined && top(1, /^distinct$/i);
  const items: Array<[number, number]> = [];
  let start = distinct ? 2 : 1;
  for (let i = start; i <= from; i++) {
    if (i === from || (toks[i].depth === 0 && toks[i].text === ',')) {
      if (i > start) items.push([start, i]);
      start = i + 1;
    }
  }
  return items.length ? { items, distinct } : null;
}

const isAggregateAt = (toks: readonly Token[], i: number): boolean => toks[i].kind === 'word' && AGGREGATES.has(toks[i].text.toLowerCase()) && toks[i + 1]?.text === '(';

/** The tables the top-level query reads (not its subqueries'), lower-cased, with the name each goes by there. */
function outerTables(toks: readonly Token[]): Map<string, string> {
  return tableAliases(toks.filter((t) => t.depth === 0));
}

/** Lower-cased `table.column` of every column the query names, by its qualifier or, bare, by the one outer table that has it. */
function usedColumns(toks: readonly Token[], tables: ReadonlyMap<string, string>, names: SwapNames): Set<string> {
  const byAlias = new Map([...tables].map(([t, a]) => [a.toLowerCase(), t]));
  const out = new Set<string>();
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i];
    if ((t.kind !== 'word' && t.kind !== 'qid') || toks[i + 1]?.text === '.' || toks[i + 1]?.text === '(') continue;
    const name = t.text.toLowerCase();
    const owners = toks[i - 1]?.text === '.' ? [byAlias.get(toks[i - 2]?.text.toLowerCase() ?? '')].filter((x): x is string => !!x) : [...tables.keys()];
    for (const o of owners) if (names.get(o)?.some((c) => c.name.toLowerCase() === name)) out.add(`${o}.${name}`);
  }
  return out;
}

function addColumns(sql: string, toks: readonly Token[], list: NonNullable<ReturnType<typeof selectList>>, asked: ReadonlySet<string>, names: SwapNames): Edit | null {
  for (const [a, b] of list.items) for (let i = a; i < b; i++) if (isAggregateAt(toks, i)) return null;
  const tables = outerTables(toks);
  // A key the query joins on is the joined table's to answer for ("the channel" of a cartoon joined to its channel).
  const used = usedColumns(toks, tables, names);
  const named = [...tables].flatMap(([table, alias]) => (names.get(table) ?? []).filter((c) => namedBy(c, asked) && !used.has(`${table}.${c.name.toLowerCase()}`)).map((c) => ({ table, alias, column: c })));
  // A name two tables' columns share ("name" of a singer and of a song) says nothing about which is asked.
  const key = (c: { stems: ReadonlySet<string> }): string => [...c.stems].sort().join(' ');
  const allNamed = [...tables.keys()].flatMap((t) => (names.get(t) ?? []).filter((c) => namedBy(c, asked)));
  const added = named.filter((n) => allNamed.filter((c) => key(c) === key(n.column)).length === 1).slice(0, MAX_ADDED);
  if (added.length === 0) return null;
  const qualify = tables.size > 1 || [...tables].some(([t, a]) => a.toLowerCase() !== t);
  const text = added.map((n) => (qualify ? `${n.alias}.${sqlName(n.column.name)}` : sqlName(n.column.name)));
  const at = toks[list.items[list.items.length - 1][1] - 1].end;
  return { sql: `${sql.slice(0, at)}, ${text.join(', ')}${sql.slice(at)}`, changes: added.map((n) => ({ from: '', to: n.column.name })) }; // from '': added, not replaced
}

function addAggregates(sql: string, toks: readonly Token[], list: NonNullable<ReturnType<typeof selectList>>, question: string): Edit | null {
  if (list.items.length !== 1 || list.distinct) return null;
  const [a, b] = list.items[0];
  const fn = toks[a].text.toUpperCase();
  if (!isAggregateAt(toks, a) || fn === 'COUNT' || toks[b - 1].text !== ')' || toks[a + 1].depth !== toks[b - 1].depth) return null;
  // The closing parenthesis of the aggregate must end the item: `MAX(x) - MIN(x)` is not one aggregate.
  for (let i = a + 2; i < b - 1; i++) if (toks[i].depth === toks[a + 1].depth && toks[i].text === ')') return null;
  // The argument's own words are its name, not a cue: "the highest total" of a column `total` asks for one MAX.
  const own = new Set(toks.slice(a + 2, b - 1).flatMap((t) => (t.kind === 'word' || t.kind === 'qid' ? words(t.text).split(' ') : [])).map((w) => stem(w)));
  const rest = tokens(question).filter((w) => !own.has(stem(w))).join(' ');
  const asked = [...new Set(cueWords(rest).map((w) => CUE_AGGREGATE[w]).filter((x): x is string => !!x))];
  if (asked.length < 2) return null;
  const arg = sql.slice(toks[a + 2].start, toks[b - 1].start).trim();
  const items = asked.map((f) => `${f}(${arg})`);
  return { sql: `${sql.slice(0, toks[a].start)}${items.join(', ')}${sql.slice(toks[b - 1].end)}`, changes: [{ from: `${fn}(${arg})`, to: items.join(', ') }] };
}

/** The one column an item of the SELECT list is, as `table.column` (lower-cased) of an outer table, or null when it is more. */
function itemColumn(toks: readonly Token[], [a, b]: [number, number], tables: ReadonlyMap<string, string>, names: SwapNames): { table: string; column: SwapColumn } | null {
  const name = toks[b - 1];
  const bare = b - a === 1;
  if ((!bare && !(b - a === 3 && toks[a + 1].text === '.')) || (name.kind !== 'word' && name.kind !== 'qid')) return null;
  const byAlias = new Map([...tables].map(([t, al]) => [al.toLowerCase(), t]));
  const owners = bare ? [...tables.keys()] : [byAlias.get(toks[a].text.toLowerCase())].filter((x): x is string => !!x);
  const found = owners.flatMap((table) => (names.get(table) ?? []).filter((c) => c.name.toLowerCase() === name.text.toLowerCase()).map((column) => ({ table, column })));
  return found.length === 1 ? found[0] : null;
}

/**
 * The query without the columns it returns that the question does not name, when one it names stays: a remembered
 * query returns what its own question asked ("the open years and locations of shops"), and a person asking for
 * the locations alone gets a table with another column, which Spider's evaluator and a reader both count wrong.
 */
function dropColumns(sql: string, toks: readonly Token[], list: NonNullable<ReturnType<typeof selectList>>, asked: ReadonlySet<string>, names: SwapNames): Edit | null {
  if (list.items.length < 2) return null;
  const tables = outerTables(toks);
  const cols = list.items.map((it) => itemColumn(toks, it, tables, names));
  const keep = list.items.filter((_, i) => cols[i] === null || namedBy(cols[i]!.column, asked));
  if (keep.length === list.items.length || !cols.some((c, i) => c && namedBy(c.column, asked) && keep.includes(list.items[i]))) return null;
  const text = keep.map(([a, b]) => sql.slice(toks[a].start, toks[b - 1].end)).join(', ');
  const first = list.items[0][0];
  const last = list.items[list.items.length - 1][1] - 1;
  const dropped = list.items.filter((it) => !keep.includes(it)).map(([a, b]) => sql.slice(toks[a].start, toks[b - 1].end));
  return { sql: `${sql.slice(0, toks[first].start)}${text}${sql.slice(toks[last].end)}`, changes: dropped.map((d) => ({ from: d, to: '' })) }; // to '': dropped
}

/** The query returning, besides what it returns, what the question names and it leaves out; [] when nothing fits. */
export function widenQuery(sql: string, question: string, names: SwapNames): Edit[] {
  const toks = tokenize(sql);
  const list = selectList(toks);
  if (!list) return [];
  const asked = askedStems(question);
  const added = addColumns(sql, toks, list, asked, names);
  const out = [added, addAggregates(sql, toks, list, question), dropColumns(sql, toks, list, asked, names)];
  if (added) {
    // Both at once: the query returns what the question names and nothing else ("the incident summaries" remembered
    // for "the dates the incidents start and end").
    const addedToks = tokenize(added.sql);
    const addedList = selectList(addedToks);
    const both = addedList && dropColumns(added.sql, addedToks, addedList, asked, names);
    if (both) out.push({ sql: both.sql, changes: [...added.changes, ...both.changes] });
  }
  return out.filter((e): e is Edit => e !== null);
}
