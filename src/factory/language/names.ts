/**
 * Readable names for schema identifiers, shared by the realizer (AST -> question) and the
 * round-trip parser (question -> AST) so both sides agree on how a column is spoken.
 */
import pluralize from 'pluralize';
import { memoized } from '../../util/memo.ts';
import type { DbDocs } from '../../prompt/docs-types.ts';
import type { DbSchema } from '../../sql/types.ts';
import { words } from '../../prompt/words.ts';
import { birthGradable, gradableOf, type Gradable } from './adjectives.ts';
import { COMPOUNDS, SYNONYMS } from './wordnet-lexicon.ts';
import { otherNames } from './morphology.ts';

// How identifiers are read is src/prompt/words.ts's (schema linking reads names the same way).
export { words };

// Mass nouns that the library would otherwise singularize ("data" -> "datum").
for (const w of ['data', 'media', 'information', 'equipment', 'staff', 'personnel', 'feedback', 'software']) pluralize.addUncountableRule(w);

/**
 * snake_case / camelCase / spaced text -> lowercase words, nothing expanded (a stored value is typed
 * as its words; src/prompt/words.ts's words() would also spell out abbreviations, right for names only).
 */
function splitWords(name: string): string {
  return name
    .replace(/([\p{Ll}\d])(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim()
    .toLowerCase();
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

// The library's rules are all added above, at load, so a word's singular and plural never change after.
export const singular: (w: string) => string = memoized((w: string): string => pluralize.singular(w));

export const plural: (w: string) => string = memoized((w: string): string => pluralize.plural(w));

function lastWord(f: (w: string) => string, phrase: string): string {
  const parts = phrase.split(' ');
  parts[parts.length - 1] = f(parts[parts.length - 1]);
  return parts.join(' ');
}

export const tableSingular: (table: string) => string = memoized((table: string): string => lastWord(singular, words(table) || 'row'));

export const tablePlural: (table: string) => string = memoized((table: string): string => lastWord(plural, tableSingular(table)));

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
  /** "table\u0000column" -> the adjectives a comparison or ranking of the column is said with ("cheaper than", "the longest"). */
  gradable: Map<string, Gradable>;
  /**
   * table -> [singular, plural] of another name people give it, where that names the table alone: its documented
   * name, its closed-compound name said open ("school teachers" for Schoolteacher), or a WordNet synonym of its
   * one-word name ("films" for movie).
   */
  synonymTables: Map<string, [string, string]>;
  /**
   * "table\u0000column" -> other names people give the column (morphology.ts: "writer" for written_by, "zip code"
   * for a postcode), each naming that column alone; also in `columns`, so a question saying one is read back.
   */
  aliases?: Map<string, string[]>;
  /**
   * "table\u0000column" -> a category value as people type it (case-folded; "shut down" for 'Shutdown'; a documented
   * meaning for a code) -> the value as stored; only forms that name one stored value of the column (withData).
   */
  typed?: Map<string, Map<string, string>>;
}

export const colKey = (table: string, column: string) => `${table}\u0000${column}`;

export function buildLexicon(schema: DbSchema, docs?: DbDocs): Lexicon {
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
  if (docs) documentedNames(schema, docs, seen, short, unspeakable);
  for (const [k, p] of short) {
    const [t, c] = k.split('\u0000');
    columns.set(p, [t, c]);
  }
  const aliases = columnAliases(schema, columns, unspeakable);
  for (const [k, names] of aliases) {
    const [t, c] = k.split('\u0000');
    for (const n of names) columns.set(n, [t, c]);
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
  return { columns, short, tables, unspeakable, shortTables, gradable: gradables(schema), synonymTables: synonymTables(real, tables, columns, tcount, docs), aliases };
}

/**
 * Other names of each column (morphology.ts), by its own words or with its table's name before them ("book
 * writer" where two tables have a written_by), each kept where it names one column and no table, no other
 * column's phrase and no grammar word.
 */
function columnAliases(schema: DbSchema, columns: Map<string, [string, string]>, unspeakable: Set<string>): Map<string, string[]> {
  const tableWords = new Set(schema.tables.flatMap((t) => [tablePlural(t.name), tableSingular(t.name)]));
  const owners = new Map<string, Set<string>>();
  const wanted: Array<[string, string[]]> = [];
  for (const t of schema.tables) {
    for (const c of t.columns) {
      const k = colKey(t.name, c.name);
      if (unspeakable.has(k)) continue;
      const names = new Set([...otherNames(columnWords(t.name, c.name)), ...otherNames(ownWords(t.name, c.name))]);
      const ts = tableSingular(t.name);
      const all = [...names].flatMap((n) => [n, n === ts || n.startsWith(`${ts} `) ? n : `${ts} ${n}`]);
      for (const n of all) owners.set(n, (owners.get(n) ?? new Set()).add(k));
      wanted.push([k, [...new Set(all)]]);
    }
  }
  const out = new Map<string, string[]>();
  for (const [k, names] of wanted) {
    const own = names.filter((n) => owners.get(n)!.size === 1 && !columns.has(n) && !tableWords.has(n) && !GRAMMAR_HEADS.has(n.split(' ')[0]));
    // The shortest that names the column alone first: the one a question says.
    if (own.length) out.set(k, own.sort((a, b) => a.split(' ').length - b.split(' ').length));
  }
  return out;
}

/** A description short enough to be a name ("zip code", "date of birth"): a few words, letters only, no sentence. */
export function nameLike(description: string | undefined): string | undefined {
  const d = description?.trim().replace(/\s+/g, ' ').replace(/\.$/, '');
  return d && /^\p{L}[\p{L} ]*$/u.test(d) && d.split(' ').length <= 4 ? d : undefined;
}

/** Numeric columns said with an adjective (adjectives.ts), and birth dates by age, where the adjective names one column of its table. */
function gradables(schema: DbSchema): Map<string, Gradable> {
  const out = new Map<string, Gradable>();
  for (const t of schema.tables) {
    const keys = new Set([...t.primaryKey, ...t.foreignKeys.flatMap((f) => f.fromColumns)]);
    const found = t.columns
      .filter((c) => !keys.has(c.name))
      .flatMap((c) => {
        const own = ownWords(t.name, c.name);
        return birthGradable(t.name, c.name, own) ?? (c.affinity !== 'TEXT' ? gradableOf(t.name, c.name, own) : null) ?? [];
      });
    for (const g of found) if (found.filter((o) => o.more === g.more || o.less === g.less).length === 1) out.set(colKey(t.name, g.column), g);
  }
  return out;
}

const MASS_ENDINGS = /(ise|ware|ment|ness|age|ing|ery|ity|ism|ics)$/;

/**
 * A one-word table named by a WordNet synonym of its name too ("films" for movie), as people name it,
 * when no other table, column or grammar word is that synonym. Restrained: one-word names only, and
 * only synonyms whose first sense is the name's first sense (wordnet-lexicon.ts).
 */
function synonymTables(real: DbSchema['tables'], tables: Map<string, string>, columns: Map<string, [string, string]>, tcount: Map<string, number>, docs?: DbDocs): Map<string, [string, string]> {
  const out = new Map<string, [string, string]>();
  const claimed = new Map<string, number>();
  const candidates: Array<[string, string, string]> = [];
  const claim = (t: string, one: string, many: string) => {
    candidates.push([t, one, many]);
    for (const w of new Set([one, many])) claimed.set(w, (claimed.get(w) ?? 0) + 1);
  };
  // Its documentation's name (a name, or a description short enough to be one), then its name's words said
  // otherwise (a closed compound open): the names closest to the table's own, tried first.
  for (const t of real) {
    const td = docs?.tables.find((d) => d.table.toLowerCase() === t.name.toLowerCase());
    const named = (td?.name ?? nameLike(td?.description))?.toLowerCase();
    const one = tableSingular(t.name);
    for (const n of [...(named && /^\p{L}[\p{L} ]*$/u.test(named) ? [lastWord(singular, named)] : []), ...otherNames(one)]) {
      if (n !== one) claim(t.name, n, lastWord(plural, n));
    }
  }
  for (const t of real) {
    const one = tableSingular(t.name);
    if (one.includes(' ')) continue;
    for (const syn of SYNONYMS[one] ?? []) {
      const many = plural(syn);
      // A mass noun reads wrong in the plural ("merchandises"): WordNet does not say which nouns count, their endings do.
      if (singular(syn) !== syn || many === syn || MASS_ENDINGS.test(syn)) continue;
      claim(t.name, syn, many);
    }
  }
  for (const [t, one, many] of candidates) {
    if (out.has(t) || [one, many].some((w) => claimed.get(w) !== 1 || columns.has(w) || tcount.has(w) || tables.has(w) || GRAMMAR_HEADS.has(w))) continue;
    out.set(t, [one, many]);
    tables.set(one, t);
    tables.set(many, t);
  }
  return out;
}

/**
 * Columns named by their documentation ("total federal revenue" for t_fed_rev): the documented name
 * becomes the column's short phrase, when it reads as words and names no other column or table.
 */
function documentedNames(schema: DbSchema, docs: DbDocs, long: Map<string, string[]>, short: Map<string, string>, unspeakable: Set<string>): void {
  const tableWords = new Set(schema.tables.flatMap((t) => [tablePlural(t.name), tableSingular(t.name)]));
  const taken = new Set([...long.keys(), ...short.values()]);
  const named = new Map<string, string[]>();
  for (const td of docs.tables) {
    const t = schema.tables.find((x) => x.name.toLowerCase() === td.table.toLowerCase());
    if (!t) continue;
    for (const cd of td.columns) {
      const c = t.columns.find((x) => x.name.toLowerCase() === cd.column.toLowerCase());
      // A comment (PostgreSQL's COMMENT ON COLUMN) or description of a few words is the column's name too.
      const name = (cd.name ?? nameLike(cd.description))?.toLowerCase().replace(/\s+/g, ' ').trim();
      if (!c || !name || !/^\p{L}[\p{L}\p{N} ]*$/u.test(name) || name.split(' ').length > 6) continue;
      named.set(name, [...(named.get(name) ?? []), colKey(t.name, c.name)]);
    }
  }
  for (const [name, keys] of named) {
    if (keys.length !== 1 || unspeakable.has(keys[0]) || taken.has(name) || tableWords.has(name) || GRAMMAR_HEADS.has(name.split(' ')[0])) continue;
    const [t, c] = keys[0].split('\u0000');
    if (columnPhrase(t, c) === name) continue;
    short.set(keys[0], name);
  }
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

/**
 * How a question in people's variety names a column: one time in two (by variant) its first other name
 * (Lexicon.aliases: "the writer" for written_by), else as the realizer always names it.
 */
export function peopleColumn(lex: Lexicon, table: string, column: string, variant: number): string {
  const alias = lex.aliases?.get(colKey(table, column))?.[0];
  return alias && variant % 2 === 0 ? alias : spokenColumn(lex, table, column);
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
export function withData(lex: Lexicon, values: Map<string, string[]>, dates: Iterable<string> = [], docs?: DbDocs): Lexicon {
  const owners = new Map<string, ValueRef[]>();
  const meanings = docs ? valueMeanings(docs) : new Map<string, Map<string, string>>();
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
  // The forms people type name the same value: its words ("shut down"), its documented meaning.
  const typed = new Map<string, Map<string, string>>();
  for (const [k, vals] of values) {
    const forms = new Map<string, string[]>();
    const m = meanings.get(k.toLowerCase());
    for (const value of new Set(vals)) {
      if (typeof value !== 'string') continue;
      for (const f of new Set([value.toLowerCase(), ...spokenForms(value), ...(m?.has(value) ? [m.get(value)!.toLowerCase()] : [])])) forms.set(f, [...(forms.get(f) ?? []), value]);
    }
    const own = new Map<string, string>();
    for (const [f, vs] of forms) if (vs.length === 1 && f.length >= 2) own.set(f, vs[0]);
    typed.set(k, own);
    for (const [f, stored] of own) indexForm(lex, index, owners, f, stored);
  }
  return { ...lex, values: index, dates: new Set(dates), typed };
}

/**
 * A typed form of a value that names its column alone (Lexicon.values) names it too, where the form is no other
 * value, column, table or grammar word: "shut down plants" as "Shutdown plants".
 */
function indexForm(lex: Lexicon, index: Map<string, ValueRef>, owners: ReadonlyMap<string, unknown>, f: string, stored: string): void {
  const ref = index.get(stored.toLowerCase());
  if (!ref || ref.value !== stored || f === stored.toLowerCase() || index.has(f) || owners.has(f) || lex.columns.has(f) || lex.tables.has(f) || GRAMMAR_HEADS.has(f) || !/^\p{L}[\p{L}\p{N} ]*$/u.test(f)) return;
  index.set(f, ref);
}

/**
 * The lexicon with more typed forms of its values ("table\u0000column" -> form -> stored; value-parts.ts's parts),
 * each named as withData names the others: in Lexicon.typed, and in Lexicon.values where its value is there.
 */
export function withForms(lex: Lexicon, more: ReadonlyMap<string, ReadonlyMap<string, string>>): Lexicon {
  const typed = new Map([...(lex.typed ?? [])].map(([k, m]) => [k, new Map(m)]));
  const index = new Map(lex.values ?? []);
  const before = new Map(index);
  for (const [k, forms] of more) {
    const own = typed.get(k) ?? new Map<string, string>();
    for (const [f, stored] of forms) {
      if (own.has(f)) continue;
      own.set(f, stored);
      if (lex.values) indexForm(lex, index, before, f, stored);
    }
    typed.set(k, own);
  }
  return { ...lex, typed, ...(lex.values ? { values: index } : {}) };
}

/**
 * A stored value as people type it in words: camelCase and other joined words split ("InProgress" ->
 * "in progress", "Shutdown" -> "shut down" where WordNet knows both "shutdown" and "shut down").
 */
export function spokenForms(value: string): string[] {
  const out = new Set<string>();
  // Words only: an e-mail, a code or a number is typed as it is stored.
  if (!/^\p{L}[\p{L} _-]*$/u.test(value)) return [];
  const split = splitWords(value);
  // A split that leaves a stray fragment ("McDonald" -> "mc donald") is no way of typing the value.
  const whole = split.split(' ').every((w) => w.length >= 3 || SHORT_WORDS.has(w) || /^\d+$/.test(w));
  if (split !== value.toLowerCase() && split && whole) out.add(split);
  const parts = split.split(' ').map((w) => COMPOUNDS[w] ?? w);
  const open = parts.join(' ');
  if (open !== split) out.add(open);
  out.delete(value.toLowerCase());
  return [...out];
}

const SHORT_WORDS = new Set(['in', 'on', 'of', 'to', 'at', 'up', 'by', 'no', 'or', 'and', 'not', 'off', 'out', 'a', 'an']);

/** "table\u0000column" (lower-cased) -> stored value -> its documented meaning. */
function valueMeanings(docs: DbDocs): Map<string, Map<string, string>> {
  const out = new Map<string, Map<string, string>>();
  for (const t of docs.tables) for (const c of t.columns) if (c.values) out.set(colKey(t.table, c.column).toLowerCase(), new Map(Object.entries(c.values)));
  return out;
}
