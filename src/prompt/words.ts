/**
 * Identifiers and text as lowercase words: how a column name is read by the factory (which words questions with
 * it) and by schema linking (which matches a question against it). One home for both, so they read a name alike.
 */
import { stemmer } from 'stemmer';
import { memoized } from '../util/memo.ts';

/** Common abbreviations in column and table names, spoken in full. */
export const ABBREVIATIONS: Readonly<Record<string, string>> = {
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

/** snake_case / camelCase / spaced identifiers -> lowercase words ("InvoiceLine_id" -> "invoice line id"), abbreviations expanded. */
export const words: (name: string) => string = memoized((name: string): string =>
  name
    .replace(/([\p{Ll}\d])(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim()
    .toLowerCase()
    .split(' ')
    .map((w) => ABBREVIATIONS[w] ?? w)
    .join(' '),
);

/** Text folded for matching: accents stripped, lowercase, every run of non-letters/digits one space ("Côte-d'Ivoire" -> "cote d ivoire"). */
export function fold(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/** fold() split into tokens. */
export function tokens(text: string): string[] {
  const f = fold(text);
  return f ? f.split(' ') : [];
}

/** stem()'s memo: a vocabulary is small beside the texts read (a 40k-pair memory's 80k questions share a few thousand words). */
const STEMS = new Map<string, string>();
const STEM_CACHE_MAX = 100_000;

/**
 * Porter stem of a folded token (the `stemmer` package: Porter 1980, small, no dependencies; `natural` has the
 * same algorithm in a far larger package). British -ise spellings are read as -ize first, which Porter alone
 * stems apart ("pressurised" and "pressurized" both give "pressur").
 */
export function stem(token: string): string {
  let s = STEMS.get(token);
  if (s === undefined) {
    const t = token.length >= 7 ? token.replace(/is(e|ed|es|ing|ation|ations|er|ers)$/, 'iz$1') : token;
    s = stemmer(t);
    // Bounded, so an endless stream of new words cannot grow it without end.
    if (STEMS.size >= STEM_CACHE_MAX) STEMS.clear();
    STEMS.set(token, s);
  }
  return s;
}

/**
 * English function words and question frames that carry no table, column or value: never a match on their own
 * (they still count inside a longer phrase such as "Bank of America").
 */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'a an the of in on at to for from by with without and or not no nor is are was were be been being am do does did ' +
    'has have had having this that these those it its it\'s there their them they he she his her him we our you your i me my ' +
    'what which who whom whose when where why how many much more most less least than then as into over under about ' +
    'all any each every some such only own same so too very can will just should would could may might must shall ' +
    'show list give find return tell get display name names number count total also per out up down off if else ' +
    's t'
  ).split(' '),
);
