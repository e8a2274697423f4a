/**
 * Questions as people ask them, for the shapes people ask most: "How many X have ...?", "Which G has
 * the most X?", "What is the A of the X with the highest C?", "How many different C are there?",
 * "What is the average C of X that have ...?", "List the A of all X.", "How many X are there for each G?".
 * Each intent is a sentence pattern with its exact inverse here, so a question realized by an intent is
 * parsed back to the same query (align.ts tries these before the general grammar of realize.ts). A
 * query that fits no intent is realized by the general grammar.
 *
 * Filters are said as "have <column> <value>" ("have status 'Operational'", "have capacity at least
 * 1000", "have construction start in 1975", "have name containing 'Kursk'"); values keep their quotes,
 * as people quote what they type from the data.
 */
import pluralize from 'pluralize';
import { emptySelect, isRankGuard, lit, type AggFn, type ColRef, type Cond, type Expr, type SelectAst } from './ast.ts';
import { spokenColumn, tablePlural, tableSingular, type Lexicon } from './names.ts';
import type { QuestionStyle } from './types.ts';

/** The comparison words of a filter said after its column; '=' on text is just the value. */
const NAT_OPS: ReadonlyArray<[string, string]> = [
  ['<>', 'other than'],
  ['>=', 'at least'],
  ['<=', 'at most'],
  ['>', 'above'],
  ['<', 'below'],
  ['=', 'of'],
];
const YEAR_OPS: ReadonlyArray<[string, string]> = [
  ['=', 'in'],
  ['>', 'after'],
  ['<', 'before'],
];

const lastPlural = (phrase: string): string => {
  const w = phrase.split(' ');
  w[w.length - 1] = pluralize.plural(w[w.length - 1]);
  return w.join(' ');
};

/**
 * A column phrase in the plural when the last word is a noun that pluralizes and the plural names the
 * same column unambiguously ("names", "countries"); else as it is ("last updated", "status date").
 */
function pluralSay(lex: Lexicon, phrase: string): string {
  const last = phrase.split(' ').pop()!;
  if (last.length < 3 || /(ed|ing|from|to)$/.test(last)) return phrase;
  const pl = lastPlural(phrase);
  const hit = intentEnv(lex).plurals.get(pl);
  const own = lex.columns.get(phrase);
  return hit && own && hit[0] === own[0] && hit[1] === own[1] && pl !== phrase ? pl : phrase;
}

const quote = (v: string | number): string => (typeof v === 'number' ? String(v) : `'${v}'`);

type Say = (c: ColRef) => string;

function natCond(c: Cond, say: Say): string | null {
  if (c.kind === 'cmp' && c.left.kind === 'col' && c.right.kind === 'lit' && c.right.value !== null) {
    const v = c.right.value;
    if (c.op === '=' && typeof v === 'string') return `${say(c.left)} ${quote(v)}`;
    const w = NAT_OPS.find(([op]) => op === c.op)?.[1];
    return w ? `${say(c.left)} ${w} ${quote(v)}` : null;
  }
  if (c.kind === 'cmp' && c.left.kind === 'datepart' && c.left.part === 'year' && c.right.kind === 'lit' && typeof c.right.value === 'string') {
    const w = YEAR_OPS.find(([op]) => op === c.op)?.[1];
    return w && /^\d{4}$/.test(c.right.value) ? `${say(c.left.arg)} ${w} ${c.right.value}` : null;
  }
  if (c.kind === 'like' && /^%[^%]+%$/.test(c.pattern)) return `${say(c.expr)} containing '${c.pattern.slice(1, -1)}'`;
  if (c.kind === 'null' && !c.negated) return `no ${say(c.expr)}`;
  return null;
}

/** The filters of q said naturally, the implicit NOT NULL guard of a ranked column left out; null if one cannot be. */
function natConds(q: SelectAst, say: Say): string | null {
  const parts: string[] = [];
  for (const c of q.where) {
    if (isRankGuard(q, c)) continue;
    const s = natCond(c, say);
    if (s === null) return null;
    parts.push(s);
  }
  return parts.join(' and ');
}

/** "Which G ...": one group, and it is all the query selects. */
const selectsGroupOnly = (q: SelectAst): boolean => {
  const [c] = q.columns;
  return q.groupBy.length === 1 && q.columns.length === 1 && c.kind === 'col' && c.column === q.groupBy[0].column && c.alias === q.groupBy[0].alias;
};

const isCountStar = (e: Expr | undefined): boolean => e?.kind === 'agg' && e.fn === 'COUNT' && e.arg.kind === 'star';
const plainCol = (e: Expr | undefined): e is ColRef => e?.kind === 'col';

const AGG_NAT: Partial<Record<AggFn, [string, string]>> = { SUM: ['highest total', 'lowest total'], AVG: ['highest average', 'lowest average'] };
const AGG_OF: Partial<Record<AggFn, string>> = { SUM: 'total', AVG: 'average', MAX: 'highest', MIN: 'lowest' };

/** A question for q by one of the intents, or null when none fits. `variant` picks among an intent's phrasings. */
export function realizeIntent(q: SelectAst, lex: Lexicon, style: QuestionStyle, variant: number): string | null {
  const say: Say = (c) => spokenColumn(lex, c.table, c.column);
  const P = tablePlural(q.from.table);
  const conds = natConds(q, say);
  if (conds === null) return null;
  // Which G have at least k X (that have ...)?
  if (q.having.length) {
    const h = q.having[0];
    const one = q.having.length === 1 && selectsGroupOnly(q);
    if (!one || q.orderBy.length || h.kind !== 'cmp' || !isCountStar(h.left) || h.op !== '>=' || h.right.kind !== 'lit' || typeof h.right.value !== 'number') return null;
    const gs = pluralSay(lex, say(q.groupBy[0]));
    const have = conds ? ` that have ${conds}` : '';
    return style === 'imperative' || style === 'terse' ? `List the ${gs} with at least ${h.right.value} ${P}${have}.` : `Which ${gs} have at least ${h.right.value} ${P}${have}?`;
  }
  const have = conds ? ` that have ${conds}` : '';
  const grouped = q.groupBy.length === 1;
  const ranked = q.orderBy.length > 0 && q.limit !== null;
  const v = variant % 2;

  // How many X (have ...)?
  if (!grouped && !ranked && !q.distinct && q.columns.length === 1 && isCountStar(q.columns[0]) && q.orderBy.length === 0) {
    if (style === 'imperative') return `Count the ${P}${have}.`;
    if (style === 'terse') return `Number of ${P}${conds ? ` with ${conds}` : ''}.`;
    const head = style === 'colloquial' ? 'Could you tell me how many' : 'How many';
    return conds ? `${head} ${P} have ${conds}?` : `${head} ${P} ${style === 'colloquial' ? 'there are' : 'are there'}?`;
  }
  // How many different C are there (among X that have ...)?
  if (!grouped && !ranked && !q.distinct && q.columns.length === 1 && q.orderBy.length === 0) {
    const e = q.columns[0];
    if (e.kind === 'agg' && e.fn === 'COUNT' && e.distinct && plainCol(e.arg)) {
      if (!conds && (e.arg.table !== q.from.table || q.joins.length)) return null;
      return `How many different ${lastPlural(say(e.arg))} are there${conds ? ` among ${P} that have ${conds}` : ''}?`;
    }
    // What is the average C of X (that have ...)?
    if (e.kind === 'agg' && e.fn !== 'COUNT' && plainCol(e.arg)) {
      const head = style === 'imperative' ? 'Find the' : 'What is the';
      return `${head} ${AGG_OF[e.fn]} ${say(e.arg)} of ${conds ? P : `all ${P}`}${have}${style === 'imperative' ? '.' : '?'}`;
    }
  }
  // Which G has the most X (that have ...)? / What are the k G with the most X?
  if (ranked && selectsGroupOnly(q)) {
    const g = say(q.groupBy[0]);
    const o = q.orderBy[0];
    const desc = o.dir === 'DESC';
    let measure: string;
    if (isCountStar(o.expr)) measure = `the ${desc ? 'most' : 'fewest'} ${P}${have}`;
    else if (o.expr.kind === 'agg' && AGG_NAT[o.expr.fn] && plainCol(o.expr.arg) && !o.expr.distinct) {
      measure = `the ${AGG_NAT[o.expr.fn]![desc ? 0 : 1]} ${say(o.expr.arg)}${conds ? `, counting only ${P} that have ${conds}` : ''}`;
    } else return null;
    if (q.limit === 1) return v === 0 || style === 'formal' ? `Which ${g} has ${measure}?` : `Find the ${g} with ${measure}.`;
    return `What are the ${q.limit} ${lastPlural(g)} with ${measure}?`;
  }
  // What is the A of the X with the highest C (among those that have ...)?
  if (!grouped && ranked && !q.distinct && q.columns.length === 1 && plainCol(q.columns[0]) && plainCol(q.orderBy[0].expr)) {
    const a = say(q.columns[0]);
    const c = say(q.orderBy[0].expr);
    const hi = q.orderBy[0].dir === 'DESC' ? 'highest' : 'lowest';
    const among = conds ? `, among those that have ${conds}` : '';
    if (q.limit === 1) return `What is the ${a} of the ${tableSingular(q.from.table)} with the ${hi} ${c}${among}?`;
    return `What are the ${pluralSay(lex, a)} of the ${q.limit} ${P} with the ${hi} ${c}${among}?`;
  }
  // How many X are there for each G? / What is the average C of X for each G?
  if (grouped && !ranked && q.columns.length === 2 && plainCol(q.columns[0]) && !conds) {
    const g = say(q.groupBy[0]);
    const e = q.columns[1];
    if (isCountStar(e)) return v === 0 ? `How many ${P} are there for each ${g}?` : `Show the number of ${P} for each ${g}.`;
    if (e.kind === 'agg' && e.fn !== 'COUNT' && plainCol(e.arg)) return `What is the ${AGG_OF[e.fn]} ${say(e.arg)} of ${P} for each ${g}?`;
    return null;
  }
  // List the A (and B) of X (that have ...).
  if (!grouped && !ranked && q.orderBy.length === 0 && q.columns.length >= 1 && q.columns.length <= 2 && q.columns.every(plainCol)) {
    const cols = q.columns.map((c) => pluralSay(lex, say(c as ColRef)));
    const what = `${q.distinct ? 'different ' : ''}${cols.join(' and ')}`;
    const of = conds ? `${P} that have ${conds}` : `all ${P}`;
    if (style === 'imperative' || style === 'terse') return `${v === 0 ? 'List' : 'Show'} the ${what} of ${of}.`;
    return `What are the ${what} of ${of}?`;
  }
  return null;
}

/** Thrown when a sentence looks like an intent but does not parse. */
export class IntentParseError extends Error {}

interface IntentEnv {
  lex: Lexicon;
  /** Every column phrase, longest first (so "status date" is tried before "status"). */
  phrases: string[];
  /** Table plurals, longest first. */
  tablePlurals: string[];
  /** Plural phrases of columns ("reactor models") -> [table, column]. */
  plurals: Map<string, [string, string]>;
  /** The keys of plurals, longest first. */
  pluralPhrases: string[];
  /** [singular phrase, table] of every table whose singular names it alone, longest first. */
  tableSingulars: Array<[string, string]>;
}

const cache = new WeakMap<Lexicon, IntentEnv>();

function intentEnv(lex: Lexicon): IntentEnv {
  let e = cache.get(lex);
  if (!e) {
    const phrases = [...lex.columns.keys()].sort((a, b) => b.length - a.length);
    const plurals = new Map<string, [string, string]>();
    const clash = new Set<string>();
    for (const [p, tc] of lex.columns) {
      const pl = lastPlural(p);
      if (plurals.has(pl) || lex.columns.has(pl)) clash.add(pl);
      plurals.set(pl, tc);
    }
    for (const c of clash) plurals.delete(c);
    const longestFirst = (a: string, b: string): number => b.length - a.length;
    const tablePlurals = [...lex.tables.keys()].filter((k) => tablePlural(lex.tables.get(k)!) === k).sort(longestFirst);
    const tableSingulars = [...lex.tables.entries()].filter(([k, t]) => tableSingular(t) === k).sort((a, b) => longestFirst(a[0], b[0]));
    e = { lex, phrases, tablePlurals, plurals, pluralPhrases: [...plurals.keys()].sort(longestFirst), tableSingulars };
    cache.set(lex, e);
  }
  return e;
}

/** A cursor over one sentence; literals are ⟦n⟧ placeholders (see parseIntent). */
class Cursor {
  i = 0;
  constructor(
    readonly s: string,
    readonly lits: string[],
    readonly env: IntentEnv,
  ) {}
  eat(t: string): boolean {
    if (!this.s.startsWith(t, this.i)) return false;
    this.i += t.length;
    return true;
  }
  expect(t: string): void {
    if (!this.eat(t)) throw new IntentParseError(`expected "${t}"`);
  }
  private boundary(j: number): boolean {
    return j >= this.s.length || !/[\p{L}\p{N}_]/u.test(this.s[j]);
  }
  private longest(options: Iterable<string>): string | null {
    for (const p of options) if (this.s.startsWith(p, this.i) && this.boundary(this.i + p.length)) return p;
    return null;
  }
  column(): ColRef {
    const p = this.longest(this.env.phrases);
    if (!p) throw new IntentParseError('unknown column');
    this.i += p.length;
    const [t, c] = this.env.lex.columns.get(p)!;
    return { kind: 'col', alias: '', table: t, column: c };
  }
  pluralColumn(): ColRef {
    const p = this.longest(this.env.pluralPhrases);
    if (!p) throw new IntentParseError('unknown column plural');
    this.i += p.length;
    const [t, c] = this.env.plurals.get(p)!;
    return { kind: 'col', alias: '', table: t, column: c };
  }
  /** A column named in the plural ("names") or as it is ("status"). */
  columnOrPlural(): ColRef {
    const save = this.i;
    try {
      return this.pluralColumn();
    } catch {
      this.i = save;
      return this.column();
    }
  }
  table(): string {
    const p = this.longest(this.env.tablePlurals);
    if (!p) throw new IntentParseError('unknown table');
    this.i += p.length;
    return this.env.lex.tables.get(p)!;
  }
  value(): string | number {
    const m = /^\u27e6(\d+)\u27e7/.exec(this.s.slice(this.i));
    if (m) {
      this.i += m[0].length;
      return this.lits[Number(m[1])];
    }
    const n = /^-?\d+(\.\d+)?(?![\p{L}\d])/u.exec(this.s.slice(this.i));
    if (!n) throw new IntentParseError('expected a value');
    this.i += n[0].length;
    return Number(n[0]);
  }
  int(): number {
    const n = /^\d+/.exec(this.s.slice(this.i));
    if (!n) throw new IntentParseError('expected a number');
    this.i += n[0].length;
    return Number(n[0]);
  }
  /** cond (" and " cond)* */
  conds(): Cond[] {
    const out = [this.cond()];
    while (this.eat(' and ')) out.push(this.cond());
    return out;
  }
  cond(): Cond {
    if (this.eat('no ')) return { kind: 'null', expr: this.column(), negated: false };
    const c = this.column();
    if (this.eat(' containing ')) {
      const v = this.value();
      if (typeof v !== 'string') throw new IntentParseError('containing a number');
      return { kind: 'like', expr: c, pattern: `%${v}%` };
    }
    for (const [op, w] of YEAR_OPS) {
      const save = this.i;
      if (this.eat(` ${w} `)) {
        const y = /^\d{4}(?![\p{L}\d])/u.exec(this.s.slice(this.i));
        if (y) {
          this.i += 4;
          return { kind: 'cmp', left: { kind: 'datepart', part: 'year', arg: c }, op: op as '=', right: lit(y[0]) };
        }
        this.i = save;
      }
    }
    for (const [op, w] of NAT_OPS) {
      if (this.eat(` ${w} `)) return { kind: 'cmp', left: c, op: op as '=', right: lit(this.value()) };
    }
    this.expect(' ');
    const v = this.value();
    if (typeof v !== 'string') throw new IntentParseError('a bare number after a column');
    return { kind: 'cmp', left: c, op: '=', right: lit(v) };
  }
  done(): boolean {
    return this.i >= this.s.length;
  }
}

/** What the intent parser rebuilds: the query without joins and aliases (the caller links the tables). */
export interface IntentQuery {
  q: SelectAst;
  /** The ranked query's implicit rules apply (tie-breaker, NOT NULL guard), as in the general grammar. */
  ranked: boolean;
}

type IntentParser = (c: Cursor) => IntentQuery;

const countStar = (): Expr => ({ kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false });

function haveClause(c: Cursor, lead: string): Cond[] {
  return c.eat(lead) ? c.conds() : [];
}

/** Sentence openers -> the parser of the intent they begin. Tried in order; the first that parses wins. */
const PARSERS: ReadonlyArray<[RegExp, IntentParser]> = [
  [/^(How many|Could you tell me how many) (?!different )/, (c) => {
    const q = emptySelect(c.table());
    q.columns = [countStar()];
    if (c.eat(' have ')) q.where = c.conds();
    else if (!c.eat(' are there') && !c.eat(' there are')) throw new IntentParseError('count without a clause');
    if (c.eat(' for each ')) {
      if (q.where.length) throw new IntentParseError('grouped count with filters');
      const g = c.column();
      q.columns = [g, countStar()];
      q.groupBy = [g];
    }
    return { q, ranked: false };
  }],
  [/^Count the /, (c) => {
    const q = emptySelect(c.table());
    q.columns = [countStar()];
    q.where = haveClause(c, ' that have ');
    return { q, ranked: false };
  }],
  [/^Number of /, (c) => {
    const q = emptySelect(c.table());
    q.columns = [countStar()];
    q.where = haveClause(c, ' with ');
    return { q, ranked: false };
  }],
  [/^Show the number of /, (c) => {
    const q = emptySelect(c.table());
    c.expect(' for each ');
    const g = c.column();
    q.columns = [g, countStar()];
    q.groupBy = [g];
    return { q, ranked: false };
  }],
  [/^How many different /, (c) => {
    const target = c.pluralColumn();
    c.expect(' are there');
    const q = emptySelect(target.table);
    if (c.eat(' among ')) {
      q.from.table = c.table();
      c.expect(' that have ');
      q.where = c.conds();
    }
    q.columns = [{ kind: 'agg', fn: 'COUNT', arg: target, distinct: true }];
    return { q, ranked: false };
  }],
  [/^(Which|List the) (?=.* (have|with) at least \d)/, (c) => {
    const g = c.columnOrPlural();
    if (!c.eat(' have at least ')) c.expect(' with at least ');
    const k = c.int();
    c.expect(' ');
    const q = emptySelect(c.table());
    q.columns = [g];
    q.groupBy = [g];
    q.where = haveClause(c, ' that have ');
    q.having = [{ kind: 'cmp', left: countStar(), op: '>=', right: lit(k) }];
    return { q, ranked: false };
  }],
  [/^(Which|Find the) /, (c) => {
    const g = c.column();
    if (!c.eat(' has ')) c.expect(' with ');
    return groupTop(c, g, 1);
  }],
  [/^What are the (?=\d)/, (c) => {
    const k = c.int();
    c.expect(' ');
    const g = c.pluralColumn();
    c.expect(' with ');
    return groupTop(c, g, k);
  }],
  [/^(What is the|Find the) (?=(total|average|highest|lowest) )/, (c) => {
    for (const [fn, w] of Object.entries(AGG_OF) as Array<[AggFn, string]>) {
      if (!c.eat(`${w} `)) continue;
      const arg = c.column();
      c.expect(' of ');
      const all = c.eat('all ');
      const q = emptySelect(c.table());
      q.columns = [{ kind: 'agg', fn, arg, distinct: false }];
      if (c.eat(' for each ')) {
        if (all) throw new IntentParseError('"all" with a group');
        const g = c.column();
        q.columns.unshift(g);
        q.groupBy = [g];
      } else q.where = all ? [] : haveClause(c, ' that have ');
      return { q, ranked: false };
    }
    throw new IntentParseError('unknown aggregate');
  }],
  [/^(What is|What are) the (?!\d)/, (c) => {
    const first = c.columnOrPlural();
    c.expect(' of the ');
    let k = 1;
    let table: string;
    if (/^\d/.test(c.s.slice(c.i))) {
      k = c.int();
      c.expect(' ');
      table = c.table();
    } else table = singularTable(c);
    c.expect(' with the ');
    const dir = c.eat('highest ') ? 'DESC' : c.eat('lowest ') ? 'ASC' : null;
    if (!dir) throw new IntentParseError('expected highest or lowest');
    const by = c.column();
    const q = emptySelect(table);
    q.columns = [first];
    q.orderBy = [{ expr: by, dir }];
    q.limit = k;
    if (c.eat(', among those that have ')) q.where = c.conds();
    return { q, ranked: true };
  }],
  [/^(What are the|List the|Show the) /, (c) => list(c)],
];

function singularTable(c: Cursor): string {
  for (const [phrase, t] of c.env.tableSingulars) if (c.eat(phrase)) return t;
  throw new IntentParseError('unknown table (singular)');
}

function groupTop(c: Cursor, g: ColRef, k: number): IntentQuery {
  c.expect('the ');
  let by: Expr;
  let dir: 'ASC' | 'DESC';
  let table: string;
  let where: Cond[] = [];
  if (c.eat('most ') || c.eat('fewest ')) {
    dir = c.s.slice(0, c.i).endsWith('most ') ? 'DESC' : 'ASC';
    table = c.table();
    by = countStar();
    where = haveClause(c, ' that have ');
  } else {
    const m = /^(highest|lowest) (total|average) /.exec(c.s.slice(c.i));
    if (!m) throw new IntentParseError('expected most, fewest, highest or lowest');
    c.i += m[0].length;
    dir = m[1] === 'highest' ? 'DESC' : 'ASC';
    const arg = c.column();
    by = { kind: 'agg', fn: m[2] === 'total' ? 'SUM' : 'AVG', arg, distinct: false };
    table = arg.table;
    if (c.eat(', counting only ')) {
      table = c.table();
      c.expect(' that have ');
      where = c.conds();
    }
  }
  const q = emptySelect(table);
  q.columns = [g];
  q.groupBy = [g];
  q.orderBy = [{ expr: by, dir }];
  q.limit = k;
  q.where = where;
  return { q, ranked: true };
}

function list(c: Cursor): IntentQuery {
  const distinct = c.eat('different ');
  const cols = [c.columnOrPlural()];
  if (c.eat(' and ')) cols.push(c.columnOrPlural());
  c.expect(' of ');
  const all = c.eat('all ');
  const q = emptySelect(c.table());
  q.distinct = distinct;
  q.columns = cols;
  if (!all) {
    c.expect(' that have ');
    q.where = c.conds();
  }
  return { q, ranked: false };
}

/**
 * A question with its quoted values replaced by ⟦n⟧ placeholders (and the values, in order), so that
 * no value is read as words. A value is a quoted span starting after a space, so the apostrophe of
 * "I'd" is not one. Both grammars' parsers read questions this way.
 */
export function maskLiterals(question: string): { text: string; lits: string[] } {
  const lits: string[] = [];
  const text = question.trim().replace(/(^|\s)'([^']*)'(?=$|[\s,.?])/g, (_m, pre: string, v: string) => `${pre}\u27e6${lits.push(v) - 1}\u27e7`);
  return { text, lits };
}

/**
 * The query an intent sentence says, or null when the sentence is no intent's (the general grammar
 * then reads it). Throws IntentParseError for a sentence that opens like an intent but breaks off.
 */
export function parseIntent(question: string, lex: Lexicon): IntentQuery | null {
  const { text, lits } = maskLiterals(question);
  const s = text.replace(/[?.]$/, '');
  const env = intentEnv(lex);
  let lastError: IntentParseError | null = null;
  for (const [opener, parse] of PARSERS) {
    const m = opener.exec(s);
    if (!m) continue;
    const c = new Cursor(s, lits, env);
    c.i = m[0].length;
    try {
      const r = parse(c);
      if (!c.done()) throw new IntentParseError('trailing text');
      return r;
    } catch (e) {
      if (!(e instanceof IntentParseError)) throw e;
      lastError = e;
    }
  }
  if (lastError) throw lastError;
  return null;
}
