/**
 * Readable names for schema identifiers, shared by the realizer (AST -> question) and the
 * round-trip parser (question -> AST) so both sides agree on how a column is spoken.
 */
import pluralize from 'pluralize';
import type { DbSchema } from '../sql/types.ts';

/** Common abbreviations in column and table names, spoken in full. */
const ABBREVIATIONS: Record<string, string> = {
  addr: 'address',
  amt: 'amount',
  avg: 'average',
  cnt: 'count',
  cust: 'customer',
  dept: 'department',
  desc: 'description',
  descr: 'description',
  dob: 'date of birth',
  dt: 'date',
  emp: 'employee',
  fname: 'first name',
  lname: 'last name',
  info: 'information',
  lat: 'latitude',
  lng: 'longitude',
  lon: 'longitude',
  mgr: 'manager',
  num: 'number',
  no: 'number',
  nbr: 'number',
  pct: 'percent',
  enr: 'enrollment',
  qty: 'quantity',
  tel: 'telephone',
  yr: 'year',
};

// Mass nouns that the library would otherwise singularize ("data" -> "datum").
for (const w of ['data', 'media', 'information', 'equipment', 'staff', 'personnel', 'feedback', 'software']) pluralize.addUncountableRule(w);

/** snake_case / camelCase / spaced identifiers -> lowercase words ("InvoiceLine_id" -> "invoice line id"), abbreviations expanded. */
export function words(name: string): string {
  return name
    .replace(/([\p{Ll}\d])(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim()
    .toLowerCase()
    .split(' ')
    .map((w) => ABBREVIATIONS[w] ?? w)
    .join(' ');
}

/**
 * A column's words without a one-letter prefix that is its table's initial (Player.pName is "name",
 * College.cName is "name"; Player.yCard stays "y card").
 */
export function columnWords(table: string, column: string): string {
  const w = words(column).split(' ');
  const initial = words(table).charAt(0);
  return w.length > 1 && w[0].length === 1 && w[0] === initial ? w.slice(1).join(' ') : w.join(' ');
}

export function singular(w: string): string {
  return pluralize.singular(w);
}

export function plural(w: string): string {
  return pluralize.plural(w);
}

function lastWord(f: (w: string) => string, phrase: string): string {
  const parts = phrase.split(' ');
  parts[parts.length - 1] = f(parts[parts.length - 1]);
  return parts.join(' ');
}

export function tableSingular(table: string): string {
  return lastWord(singular, words(table) || 'row');
}

export function tablePlural(table: string): string {
  return lastWord(plural, tableSingular(table));
}

/**
 * How a column is spoken: "<table singular> <column words>", without repeating what the table
 * name already says ("customers.customer_id" -> "customer id", "car_makers.Maker" -> "car maker",
 * "customer_orders.order_status" -> "customer order status").
 */
/** Grammar words that end some column names ("genre_is", "name_of"): spoken, they run into the question's own words ("is is"). */
const TRAILING_GRAMMAR = new Set(['is', 'of', 'for', 'by', 'in', 'at', 'on']); // not 'to': OperationalTo is "operational to"

export function columnPhrase(table: string, column: string): string {
  const t = tableSingular(table);
  const c = ownWords(table, column) || 'value';
  if (c === t || c.startsWith(t + ' ')) return c;
  const tw = t.split(' ');
  const cw = c.split(' ');
  for (let k = Math.min(tw.length, cw.length); k > 0; k--) {
    const overlap = tw.slice(-k).join(' ');
    const head = cw.slice(0, k);
    if (overlap === head.join(' ') || overlap === [...head.slice(0, -1), singular(head[k - 1])].join(' ')) return [...tw, ...cw.slice(k)].join(' ');
  }
  return `${t} ${c}`;
}

/** A category value that names its column on its own ("Operational" is a status, "France" a country). */
export interface ValueRef {
  table: string;
  column: string;
  /** As stored. */
  value: string;
  /** The column is a place (country, city, ...): people say "plants in France", not "France plants". */
  location: boolean;
}

export interface Lexicon {
  /** phrase -> [table, column] for phrases that name exactly one column (long and short phrases). */
  columns: Map<string, [string, string]>;
  /**
   * "table\u0000column" -> the column's own words ("status", not "nuclear power plant status") where they
   * name one column in the whole schema and say nothing else: how people name a column.
   */
  short: Map<string, string>;
  /** table plural / singular -> table, for phrases naming exactly one table (short names included). */
  tables: Map<string, string>;
  /**
   * The head noun people call a long-named table by ("plants" for nuclear_power_plants, "crimes" for
   * GreaterManchesterCrime): table -> [singular, plural], where it names that table alone.
   */
  shortTables?: Map<string, [string, string]>;
  /** "table\u0000column" keys whose phrase is ambiguous or unusable (excluded from synthesis). */
  unspeakable: Set<string>;
  /** Lowercased category values that belong to one column and say nothing else (withData); absent before the data is read. */
  values?: Map<string, ValueRef>;
  /** "table\u0000column" keys of date columns, whose extremes are "the earliest" and "the latest" (withData). */
  dates?: Set<string>;
}

export const colKey = (table: string, column: string) => `${table}\u0000${column}`;

export function buildLexicon(schema: DbSchema): Lexicon {
  const seen = new Map<string, string[]>();
  for (const t of schema.tables) {
    for (const c of t.columns) {
      const p = columnPhrase(t.name, c.name);
      seen.set(p, [...(seen.get(p) ?? []), colKey(t.name, c.name)]);
    }
  }
  const columns = new Map<string, [string, string]>();
  const unspeakable = new Set<string>();
  for (const [p, keys] of seen) {
    // Ambiguous phrases are unusable; phrases with grammar words ("cost of treatment", "is official")
    // are fine: the parser matches whole column phrases, longest first.
    const bad = keys.length > 1 || p.length === 0;
    for (const k of keys) {
      if (bad) unspeakable.add(k);
      else {
        const [t, c] = k.split('\u0000');
        columns.set(p, [t, c]);
      }
    }
  }
  const tables = new Map<string, string>();
  const tcount = new Map<string, number>();
  const short = shortPhrases(schema, seen, unspeakable);
  for (const [k, p] of short) {
    const [t, c] = k.split('\u0000');
    columns.set(p, [t, c]);
  }
  for (const t of schema.tables) for (const w of [tablePlural(t.name), tableSingular(t.name)]) tcount.set(w, (tcount.get(w) ?? 0) + 1);
  for (const t of schema.tables) {
    for (const w of [tablePlural(t.name), tableSingular(t.name)]) if (tcount.get(w) === 1) tables.set(w, t.name);
  }
  // A name of three words or more (or any longer name in a one-table database) is shortened to its head
  // noun, as people shorten it, when no other table, column or grammar word is that noun.
  const shortTables = new Map<string, [string, string]>();
  const real = schema.tables.filter((t) => t.kind === 'table');
  const heads = new Map<string, number>();
  for (const t of real) {
    const h = tableSingular(t.name).split(' ').pop()!;
    heads.set(h, (heads.get(h) ?? 0) + 1);
  }
  for (const t of real) {
    const ws = tableSingular(t.name).split(' ');
    if (ws.length < (real.length === 1 ? 2 : 3)) continue;
    const one = ws[ws.length - 1];
    const many = tablePlural(t.name).split(' ').pop()!;
    if (one.length < 4 || one === many || heads.get(one) !== 1 || GRAMMAR_HEADS.has(one)) continue;
    if ([one, many].some((w) => columns.has(w) || tcount.has(w))) continue;
    shortTables.set(t.name, [one, many]);
    tables.set(one, t.name);
    tables.set(many, t.name);
  }
  return { columns, short, tables, unspeakable, shortTables };
}

/**
 * Words that open the question grammar's own phrases ("the number of", "the different", "the year of",
 * "the total", "no", "a"): a column spoken as one of them would read as grammar.
 */
const GRAMMAR_HEADS = new Set(['number', 'percentage', 'different', 'distinct', 'year', 'month', 'total', 'average', 'highest', 'lowest', 'most', 'fewest', 'top', 'everything', 'no', 'a', 'the', 'which', 'how', 'each', 'all', 'there']);

/** A column's own words, without a trailing grammar word: the short phrase, and columnPhrase's column part. */
function ownWords(table: string, column: string): string {
  const c = columnWords(table, column);
  const cws = c.split(' ');
  return cws.length > 1 && TRAILING_GRAMMAR.has(cws[cws.length - 1]) ? cws.slice(0, -1).join(' ') : c;
}

function shortPhrases(schema: DbSchema, long: Map<string, string[]>, unspeakable: Set<string>): Map<string, string> {
  const owners = new Map<string, string[]>();
  for (const t of schema.tables) {
    for (const c of t.columns) {
      const w = ownWords(t.name, c.name);
      owners.set(w, [...(owners.get(w) ?? []), colKey(t.name, c.name)]);
    }
  }
  const tableWords = new Set(schema.tables.flatMap((t) => [tablePlural(t.name), tableSingular(t.name)]));
  const out = new Map<string, string>();
  for (const [w, keys] of owners) {
    if (keys.length !== 1 || !w || unspeakable.has(keys[0])) continue;
    const [t, c] = keys[0].split('\u0000');
    if (columnPhrase(t, c) === w) continue; // already its own long phrase
    if (long.has(w) || tableWords.has(w) || GRAMMAR_HEADS.has(w.split(' ')[0])) continue;
    out.set(keys[0], w);
  }
  return out;
}

/** How the realizer names a column: its short phrase where the schema allows one, else the long one. */
export function spokenColumn(lex: Lexicon, table: string, column: string): string {
  return lex.short.get(colKey(table, column)) ?? columnPhrase(table, column);
}

/** Last words of a column that is a place. */
const PLACE_WORDS = new Set(['country', 'city', 'state', 'region', 'location', 'county', 'town', 'nation', 'continent', 'district', 'province', 'territory']);

/** Values that name nothing on their own ("Yes plants"). */
const EMPTY_VALUES = new Set(['yes', 'no', 'y', 'n', 'true', 'false', 'none', 'null', 'other', 'others', 'unknown', 'n/a', 'na', 'tbd', 'all', 'any']);

/**
 * The lexicon with what the data says of the schema: the values of its category columns (`values`: "table\u0000column" -> distinct
 * values), so a question can say "How many Operational plants are in France?", and its date columns
 * (colKeys), whose extremes are the earliest and the latest. A value is kept when
 * it belongs to one column only, reads as words (letters first, no quotes or sentence punctuation),
 * and is not also the name of a table or column or a word of the question grammar.
 */
export function withData(lex: Lexicon, values: Map<string, string[]>, dates: Iterable<string> = []): Lexicon {
  const owners = new Map<string, ValueRef[]>();
  for (const [k, vals] of values) {
    const [table, column] = k.split('\u0000');
    const last = ownWords(table, column).split(' ').pop()!;
    for (const value of new Set(vals)) {
      const low = value.toLowerCase();
      if (value.length < 2 || value.length > 40 || !/^\p{L}(?:[\p{L}\p{N} &/-]*[\p{L}\p{N}])?$/u.test(value) || /\s{2}/.test(value)) continue;
      if (EMPTY_VALUES.has(low) || GRAMMAR_HEADS.has(low) || lex.columns.has(low) || lex.tables.has(low)) continue;
      owners.set(low, [...(owners.get(low) ?? []), { table, column, value, location: PLACE_WORDS.has(last) }]);
    }
  }
  const index = new Map<string, ValueRef>();
  for (const [low, refs] of owners) if (refs.length === 1) index.set(low, refs[0]);
  return { ...lex, values: index, dates: new Set(dates) };
}
