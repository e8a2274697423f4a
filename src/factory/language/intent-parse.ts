/**
 * The exact inverse of the intent sentences of intents.ts: a question in one of those patterns back to
 * its query, read from the words alone (and the schema's foreign keys for links). general-parse.ts tries these
 * before the general grammar; a sentence no intent opens with is left to it (null), one that opens like
 * an intent but breaks off is an IntentParseError.
 */
import { col, emptySelect, lit, renameAlias, type AggFn, type ColRef, type Cond, type Expr, type QueryAst, type SetOpAst } from '../ast.ts';
import { colKey, type Lexicon, type ValueRef } from './names.ts';
import { COUNT_CLAUSE_FRAMES, COUNT_NOUN_FRAMES, DISTINCT_COUNT_FRAMES, GROUP_TOP_FRAMES, LIST_FRAMES, openers, VALUE_FRAMES } from './frames.ts';
import type { ForeignKey } from '../../sql/types.ts';
import { AGG_OF, HIGH_WORDS, intentEnv, isCountStar, NAMING_ROLES, NAT_OPS, roleWords, YEAR_OPS, type IntentEnv } from './intents.ts';

/**
 * Thrown when a sentence looks like an intent but does not parse. The parser backtracks by throwing it (the
 * factory reads thousands of questions back), so it is made without a stack trace: capturing one was most of
 * its cost, and it is always caught by the parser or read for its message.
 */
export class IntentParseError extends Error {
  constructor(message: string) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(message);
    } finally {
      Error.stackTraceLimit = limit;
    }
  }
}

/** A cursor over one sentence; literals are ⟦n⟧ placeholders (see parseIntent). */
class Cursor {
  i = 0;
  constructor(
    readonly s: string,
    readonly lits: string[],
    readonly env: IntentEnv,
    /** The schema's foreign keys, for "have no tracks" and "are not the support rep of any customer". */
    readonly links: readonly ForeignKey[],
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
  /**
   * A table with the category values people name it by (tableRef in the realizer): "Operational
   * nuclear power plants in France" is the table and its filters Status = 'Operational' and Country = 'France'.
   */
  tableRef(): { table: string; where: Cond[] } {
    const where: Cond[] = [];
    const start = this.i;
    const adj = this.valueAt();
    let table: string;
    if (adj && this.eat(' ')) {
      try {
        table = this.table();
        if (adj.table !== table || adj.location) throw new IntentParseError(`'${adj.value}' is not a category of ${table}`);
        where.push(valueCond(adj));
      } catch (e) {
        if (!(e instanceof IntentParseError)) throw e;
        this.i = start; // not a value after all ("nuclear power plants" when "nuclear" were a value)
        where.length = 0;
        table = this.table();
      }
    } else {
      this.i = start;
      table = this.table();
    }
    const save = this.i;
    if (this.eat(' in ')) {
      const place = this.valueAt();
      if (place && place.location && place.table === table) where.push(valueCond(place));
      else this.i = save;
    }
    return { table, where };
  }
  /** A category value at the cursor, quoted (⟦n⟧) or as words, or null. */
  private valueAt(): ValueRef | null {
    const values = this.env.lex.values;
    if (!values) return null;
    const q = this.placeholder();
    if (q) {
      const r = values.get(q.lit.toLowerCase());
      if (!r || r.value !== q.lit) return null;
      this.i += q.length;
      return r;
    }
    for (const k of this.env.valueKeys) {
      if (this.s.slice(this.i, this.i + k.length).toLowerCase() === k && this.boundary(this.i + k.length)) {
        this.i += k.length;
        return values.get(k)!;
      }
    }
    return null;
  }
  singularTable(): string {
    for (const [phrase, t] of this.env.tableSingulars) if (this.s.startsWith(phrase, this.i) && this.boundary(this.i + phrase.length)) {
      this.i += phrase.length;
      return t;
    }
    throw new IntentParseError('unknown table (singular)');
  }
  /** The quoted value (a ⟦n⟧ placeholder) at the cursor and its length in the sentence, without moving; null if none. */
  private placeholder(): { lit: string; length: number } | null {
    const m = /^\u27e6(\d+)\u27e7/.exec(this.s.slice(this.i));
    return m ? { lit: this.lits[Number(m[1])], length: m[0].length } : null;
  }
  value(): string | number {
    const q = this.placeholder();
    if (q) {
      this.i += q.length;
      return q.lit;
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
  /** "are longer than 300000 milliseconds": a gradable column of `base` against a number (intents.ts comparison), or null. */
  comparison(base: string): Cond | null {
    const save = this.i;
    if (!this.eat('are ')) return null;
    for (const x of this.env.gradables) {
      if (x.g.table !== base || x.g.rankOnly || !this.eat(`${x.comparative} than `)) continue;
      const v = this.value();
      if (typeof v !== 'number') throw new IntentParseError('a comparison with text');
      if (x.g.unit) this.eat(` ${x.g.unit}`);
      return { kind: 'cmp', left: { kind: 'col', alias: '', table: base, column: x.g.column }, op: x.dir === 'DESC' ? '>' : '<', right: lit(v) };
    }
    this.i = save;
    return null;
  }
  /** "the most expensive track" / "the 3 longest tracks" (after "the"): the table ranked by a gradable column, or null. */
  superlativeRef(many: boolean): { table: string; by: ColRef; dir: 'ASC' | 'DESC' } | null {
    const save = this.i;
    for (const x of this.env.gradables) {
      if (!this.eat(`${x.superlative} `)) continue;
      try {
        const t = many ? this.table() : this.singularTable();
        if (t === x.g.table) return { table: t, by: { kind: 'col', alias: '', table: t, column: x.g.column }, dir: x.dir };
      } catch (e) {
        if (!(e instanceof IntentParseError)) throw e;
      }
      this.i = save;
    }
    return null;
  }
  /** A category value as typed ('shut down', 'rock') back to the value stored in column c ('Shutdown', 'Rock'), where it names one. */
  stored(c: ColRef, v: string): string {
    return this.env.lex.typed?.get(colKey(c.table, c.column))?.get(v.toLowerCase()) ?? v;
  }
  /** A value of column c typed without quotes ("shut down"), the longest form of the column's values at the cursor, as stored; or null. */
  bareValue(c: ColRef): string | null {
    const forms = this.env.lex.typed?.get(colKey(c.table, c.column));
    if (!forms || this.placeholder()) return null;
    let best: string | null = null;
    for (const f of forms.keys()) {
      if ((!best || f.length > best.length) && this.s.slice(this.i, this.i + f.length).toLowerCase() === f && this.boundary(this.i + f.length)) best = f;
    }
    if (best === null) return null;
    this.i += best.length;
    return forms.get(best)!;
  }
  /** cond (" and " cond)*, stopping before an " and " that opens a link ("and have no tracks"). */
  conds(): Cond[] {
    const out = [this.cond()];
    while (!this.s.startsWith(' and have ', this.i) && !this.s.startsWith(' and are ', this.i) && this.eat(' and ')) out.push(this.cond());
    return out;
  }
  cond(): Cond {
    if (this.eat('no ')) return { kind: 'null', expr: this.column(), negated: false };
    for (const [w, dir] of HIGH_WORDS) {
      if (this.eat(`the ${w}`)) {
        const fn = dir === 'DESC' ? 'MAX' : 'MIN';
        const c = this.column();
        return { kind: 'cmp', left: c, op: '=', right: ownAggregateOf(c, fn) };
      }
    }
    const c = this.column();
    for (const [op, w] of [['>', ' above average'], ['<', ' below average']] as const) {
      if (this.eat(w)) return { kind: 'cmp', left: c, op, right: ownAggregateOf(c, 'AVG') };
    }
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
    const typed = this.bareValue(c);
    if (typed !== null) return { kind: 'cmp', left: c, op: '=', right: lit(typed) };
    const v = this.value();
    if (typeof v !== 'string') throw new IntentParseError('a bare number after a column');
    return { kind: 'cmp', left: c, op: '=', right: lit(this.stored(c, v)) };
  }
  /**
   * What rows of `base` must satisfy, as natClause says it: "have <conds>", then links to other tables
   * ("have no tracks", "have at least one tryout", "are [not] the <role> of [any|at least one] <child>"), joined by " and ".
   */
  clause(base: string): Cond[] {
    const out: Cond[] = [];
    // Comparisons said with adjectives come first, then "have" attributes, then links (natClause's order).
    let phase: 'are' | 'have' | 'links' = 'are';
    do {
      const cmp = phase === 'are' ? this.comparison(base) : null;
      if (cmp) {
        out.push(cmp);
        continue;
      }
      const link = this.link(base);
      if (link) {
        out.push(link);
        phase = 'links';
      } else {
        if (phase !== 'are') throw new IntentParseError('attributes after a link');
        this.expect('have ');
        out.push(...this.conds());
        phase = 'have';
      }
    } while (this.eat(' and '));
    return out;
  }
  private link(base: string): Cond | null {
    const save = this.i;
    let negated: boolean;
    let child: string;
    let role: string | null = null;
    if (this.eat('have no ') || this.eat('have at least one ')) {
      negated = this.s.startsWith('have no ', save);
      try {
        child = negated ? this.table() : this.singularTable();
      } catch {
        this.i = save; // "have no composer": a missing value, not a link
        return null;
      }
    } else if (this.eat('are not the ') || this.eat('are the ')) {
      negated = this.s.startsWith('are not the ', save);
      const end = this.s.indexOf(negated ? ' of any ' : ' of at least one ', this.i);
      if (end < 0) throw new IntentParseError('a role without its table');
      role = this.s.slice(this.i, end);
      this.i = end + (negated ? ' of any ' : ' of at least one ').length;
      child = this.singularTable();
    } else return null;
    const edges = this.links.filter((e) => e.fromTable === child && e.toTable === base && e.fromColumns.length === 1 && roleWords(e) === role);
    if (edges.length !== 1) throw new IntentParseError(`${edges.length} links from ${child} to ${base}`);
    const e = edges[0];
    const sub = emptySelect(child, 'S1');
    if (role === null && this.eat(' with ')) {
      // EXISTS: the child rows linked to the outer row that also meet a filter.
      const inner = renameAlias(this.cond(), '', 'S1');
      sub.columns = [{ kind: 'star' }];
      sub.where = [{ kind: 'cmp', left: col('S1', child, e.fromColumns[0]), op: '=', right: col('T1', base, e.toColumns[0]) }, inner];
      return { kind: 'exists', query: sub, negated };
    }
    sub.columns = [col('S1', child, e.fromColumns[0])];
    return { kind: 'in', expr: { kind: 'col', alias: '', table: base, column: e.toColumns[0] }, query: sub, negated };
  }
  done(): boolean {
    return this.i >= this.s.length;
  }
}

const valueCond = (v: ValueRef): Cond => ({ kind: 'cmp', left: { kind: 'col', alias: '', table: v.table, column: v.column }, op: '=', right: lit(v.value) });

/** (SELECT fn(c) FROM c's table), the aggregate "above average" and "the highest" compare with. */
function ownAggregateOf(c: ColRef, fn: AggFn): Expr {
  const sub = emptySelect(c.table, 'S1');
  sub.columns = [{ kind: 'agg', fn, arg: col('S1', c.table, c.column), distinct: false }];
  return { kind: 'scalar', query: sub };
}

/** What the intent parser rebuilds: the query without joins and aliases (the caller links the tables). */
export interface IntentQuery {
  q: QueryAst;
  /** The ranked query's implicit rules apply (tie-breaker, NOT NULL guard), as in the general grammar. */
  ranked: boolean;
}

type IntentParser = (c: Cursor) => IntentQuery;

const countStar = (): Expr => ({ kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false });

/** " that <clause>" when it comes next, else no filter. */
function thatClause(c: Cursor, base: string): Cond[] {
  return c.eat(' that ') ? c.clause(base) : [];
}

/**
 * A set operation's two sides, the same column of the same table with one filter each:
 * "<target plural><lead><table> that have <c1><sep>[<table> that have ]<c2>".
 */
function setOp(c: Cursor, op: SetOpAst['op'], lead: string, sep: string, tableAgain: boolean): IntentQuery {
  const target = c.columnOrPlural();
  c.expect(lead);
  const table = c.table();
  c.expect(' that have ');
  const first = c.cond();
  c.expect(sep);
  if (tableAgain) {
    if (c.table() !== table) throw new IntentParseError('two tables');
    c.expect(' that have ');
  }
  const [left, right] = [first, c.cond()].map((w) => {
    const q = emptySelect(table);
    q.columns = [{ ...target }];
    q.where = [w];
    return q;
  });
  return { q: { kind: 'setop', op, left, right }, ranked: false };
}

/** Sentence openers -> the parser of the intent they begin. Tried in order; the first that parses wins. */
const PARSERS: ReadonlyArray<[RegExp, IntentParser]> = [
  [new RegExp(`^${openers(COUNT_CLAUSE_FRAMES)}(?!different )`), (c) => {
    const { table: t, where } = c.tableRef();
    const q = emptySelect(t);
    q.columns = [countStar()];
    q.where = where;
    if (!c.eat(' are there') && !c.eat(' there are')) {
      c.expect(' ');
      q.where.push(...c.clause(t));
    }
    if (c.eat(' for each ')) {
      if (q.where.length) throw new IntentParseError('grouped count with filters');
      const g = c.column();
      q.columns = [g, countStar()];
      q.groupBy = [g];
    }
    return { q, ranked: false };
  }],
  [/^How (?=\S+ is the )/, (c) => {
    // "How long is the track named 'X'?" / "How expensive is the track with composer 'X'?"
    const save = c.i;
    for (const x of c.env.gradables) {
      if (x.dir !== 'DESC' || x.g.rankOnly || !c.eat(`${x.g.more} is the `)) continue;
      let t: string | null = null;
      try {
        t = c.singularTable();
      } catch (e) {
        if (!(e instanceof IntentParseError)) throw e;
      }
      if (t !== x.g.table) {
        c.i = save;
        continue;
      }
      const q = emptySelect(t);
      q.columns = [{ kind: 'col', alias: '', table: t, column: x.g.column }];
      const role = NAMING_ROLES.find((r) => c.eat(` ${r} `));
      if (role) {
        const column = c.env.naming.get(`${t}\u0000${role}`);
        const v = c.value();
        if (!column || typeof v !== 'string') throw new IntentParseError(`no ${role} column`);
        q.where = [{ kind: 'cmp', left: { kind: 'col', alias: '', table: t, column }, op: '=', right: lit(v) }];
      } else {
        c.expect(' with ');
        q.where = [c.cond()];
      }
      return { q, ranked: false };
    }
    throw new IntentParseError('no adjective of a table');
  }],
  [/^Count the /, (c) => {
    const { table: t, where } = c.tableRef();
    const q = emptySelect(t);
    q.columns = [countStar()];
    q.where = [...where, ...thatClause(c, t)];
    return { q, ranked: false };
  }],
  [new RegExp(`^${openers(COUNT_NOUN_FRAMES)}`), (c) => {
    const { table: t, where } = c.tableRef();
    const q = emptySelect(t);
    q.columns = [countStar()];
    q.where = [...where, ...thatClause(c, t)];
    return { q, ranked: false };
  }],
  [/^Number of /, (c) => {
    const { table: t, where } = c.tableRef();
    const q = emptySelect(t);
    q.columns = [countStar()];
    q.where = [...where, ...(c.eat(' with ') ? c.conds() : thatClause(c, t))];
    return { q, ranked: false };
  }],
  [/^(What percentage of|Find the percentage of) /, (c) => {
    const t = c.table();
    if (!c.eat(' have ')) c.expect(' that have ');
    const q = emptySelect(t);
    q.columns = [{ kind: 'pct', cond: c.cond() }];
    return { q, ranked: false };
  }],
  [/^For each /, (c) => {
    const g = c.column();
    let agg: Expr;
    let t: string;
    let where: Cond[];
    if (c.eat(', how many ')) {
      const ref = c.tableRef();
      t = ref.table;
      where = ref.where;
      if (!c.eat(' are there')) {
        c.expect(' ');
        where.push(...c.clause(t));
      }
      if (!where.length) throw new IntentParseError('"for each" without a filter');
      agg = countStar();
    } else {
      c.expect(', what is the ');
      const fn = (Object.entries(AGG_OF) as Array<[AggFn, string]>).find(([, w]) => c.eat(`${w} `))?.[0];
      if (!fn) throw new IntentParseError('unknown aggregate');
      const arg = c.column();
      c.expect(' of ');
      t = c.table();
      c.expect(' that ');
      where = c.clause(t);
      agg = { kind: 'agg', fn, arg, distinct: false };
    }
    const q = emptySelect(t);
    q.columns = [g, agg];
    q.groupBy = [g];
    q.where = where;
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
  [new RegExp(`^${openers(DISTINCT_COUNT_FRAMES)}`), (c) => {
    const target = c.columnOrPlural();
    const asked = c.s.startsWith('How many different ');
    if (asked) c.expect(' are there');
    const q = emptySelect(target.table);
    if (c.eat(' for each ')) {
      const g = c.column();
      q.columns = [g, { kind: 'agg', fn: 'COUNT', arg: target, distinct: true }];
      q.groupBy = [g];
      return { q, ranked: false };
    }
    if (c.eat(' among ')) {
      q.from.table = c.table();
      c.expect(' that ');
      q.where = c.clause(q.from.table);
    }
    q.columns = [{ kind: 'agg', fn: 'COUNT', arg: target, distinct: true }];
    return { q, ranked: false };
  }],
  [/^(Which|List the) (?=.* (have|with) at least \d)/, (c) => {
    const g = c.columnOrPlural();
    if (!c.eat(' have at least ')) c.expect(' with at least ');
    const k = c.int();
    c.expect(' ');
    const t = c.table();
    const q = emptySelect(t);
    q.columns = [g];
    q.groupBy = [g];
    q.where = thatClause(c, t);
    q.having = [{ kind: 'cmp', left: countStar(), op: '>=', right: lit(k) }];
    if (c.eat(', and how many ')) {
      if (c.table() !== t) throw new IntentParseError('"and how many" of another table');
      c.expect(' does each have');
      q.columns.push(countStar());
    }
    return { q, ranked: false };
  }],
  [/^Which (?=.* are shared by )/, (c) => setOp(c, 'INTERSECT', ' are shared by ', ' and ', true)],
  [/^What is the most common /, (c) => {
    const g = c.column();
    c.expect(' of ');
    const { table, where } = c.tableRef();
    const q = emptySelect(table);
    q.columns = [g];
    q.groupBy = [g];
    q.where = [...where, ...thatClause(c, table)];
    q.orderBy = [{ expr: countStar(), dir: 'DESC' }];
    q.limit = 1;
    return { q, ranked: true };
  }],
  [new RegExp(`^${openers(GROUP_TOP_FRAMES)}`), (c) => {
    const g = c.column();
    if (!c.eat(' has ')) c.expect(' with ');
    return groupTop(c, g, 1);
  }],
  [/^What are the (top )?(?=\d)/, (c) => {
    const k = c.int();
    c.expect(' ');
    const g = c.pluralColumn();
    c.expect(' with ');
    return groupTop(c, g, k);
  }],
  [new RegExp(`^(?:${openers(VALUE_FRAMES)}|What is the |Find the )(?=(total|average|highest|lowest|latest|earliest) )`), (c) => {
    for (const [fn, w] of [...(Object.entries(AGG_OF) as Array<[AggFn, string]>), ['MAX', 'latest'], ['MIN', 'earliest']] as Array<[AggFn, string]>) {
      if (!c.eat(`${w} `)) continue;
      const arg = c.column();
      c.expect(' of ');
      const all = c.eat('all ');
      const ref = all ? { table: c.table(), where: [] } : c.tableRef();
      const t = ref.table;
      const q = emptySelect(t);
      q.columns = [{ kind: 'agg', fn, arg, distinct: false }];
      if (!ref.where.length && c.eat(' for each ')) {
        if (all) throw new IntentParseError('"all" with a group');
        const g = c.column();
        q.columns.unshift(g);
        q.groupBy = [g];
      } else q.where = all ? [] : [...ref.where, ...thatClause(c, t)];
      return { q, ranked: false };
    }
    throw new IntentParseError('unknown aggregate');
  }],
  [/^(What are the|List the) different (?=.* or )/, (c) => setOp(c, 'UNION', ' of ', ' or ', false)],
  [/^What are the (?=.*, excluding those of )/, (c) => setOp(c, 'EXCEPT', ' of ', ', excluding those of ', true)],
  [/^(What is|What are) the (?!\d)/, (c) => {
    const first = c.columnOrPlural();
    c.expect(' of the ');
    let k = 1;
    const counted = /^\d/.test(c.s.slice(c.i));
    if (counted) {
      k = c.int();
      c.expect(' ');
    }
    // "the most expensive track" / "the 3 longest tracks", or "the track with the highest unit price".
    const sup = c.superlativeRef(counted);
    let table: string;
    let dir: 'ASC' | 'DESC' | undefined;
    let by: ColRef;
    if (sup) ({ table, dir, by } = sup);
    else {
      table = counted ? c.table() : c.singularTable();
      c.expect(' with the ');
      dir = HIGH_WORDS.find(([w]) => c.eat(w))?.[1];
      if (!dir) throw new IntentParseError('expected highest or lowest');
      by = c.column();
    }
    const q = emptySelect(table);
    q.columns = [first];
    q.orderBy = [{ expr: by, dir }];
    q.limit = k;
    if (c.eat(', among those that ')) q.where = c.clause(table);
    return { q, ranked: true };
  }],
  [/^(What are the|List the|Show the) /, (c) => list(c)],
  [new RegExp(`^${openers(LIST_FRAMES)}`), (c) => list(c)],
];

function groupTop(c: Cursor, g: ColRef, k: number): IntentQuery {
  c.expect('the ');
  let by: Expr;
  let dir: 'ASC' | 'DESC';
  let table: string;
  let where: Cond[] = [];
  if (c.eat('most ') || c.eat('fewest ')) {
    dir = c.s.slice(0, c.i).endsWith('most ') ? 'DESC' : 'ASC';
    const ref = c.tableRef();
    table = ref.table;
    by = countStar();
    where = [...ref.where, ...thatClause(c, table)];
  } else {
    const m = /^(highest|lowest|latest|earliest) (?:(total|average) )?/.exec(c.s.slice(c.i));
    if (!m) throw new IntentParseError('expected most, fewest, highest or lowest');
    c.i += m[0].length;
    dir = m[1] === 'highest' || m[1] === 'latest' ? 'DESC' : 'ASC';
    const arg = c.column();
    by = { kind: 'agg', fn: m[2] === 'total' ? 'SUM' : m[2] === 'average' ? 'AVG' : dir === 'DESC' ? 'MAX' : 'MIN', arg, distinct: false };
    table = arg.table;
    if (c.eat(', counting only ')) {
      table = c.table();
      c.expect(' that ');
      where = c.clause(table);
    }
  }
  const q = emptySelect(table);
  q.columns = [g];
  q.groupBy = [g];
  q.orderBy = [{ expr: by, dir }];
  q.limit = k;
  q.where = where;
  if (c.eat(', and how many ')) {
    if (!isCountStar(by) || c.table() !== table) throw new IntentParseError('"and how many" of another count');
    if (!c.eat(k === 1 ? ' does it have' : ' does each have')) throw new IntentParseError('expected "does it have"');
    q.columns.push(countStar());
  } else if (c.eat(k === 1 ? ', and what is it' : ', and what are those figures')) {
    if (isCountStar(by)) throw new IntentParseError('a count asked as "what is it"');
    q.columns.push(by);
  }
  return { q, ranked: true };
}

function list(c: Cursor): IntentQuery {
  const distinct = c.eat('different ');
  const cols = [c.columnOrPlural()];
  if (c.eat(' and ')) cols.push(c.columnOrPlural());
  c.expect(' of ');
  const all = c.eat('all ');
  const ref = all ? { table: c.table(), where: [] } : c.tableRef();
  const t = ref.table;
  const q = emptySelect(t);
  q.distinct = distinct;
  q.columns = cols;
  if (!all) {
    q.where = [...ref.where, ...thatClause(c, t)];
    if (!q.where.length) throw new IntentParseError('a list without "all" or a filter');
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
 * `links` are the schema's foreign keys (the schema graph's edges), which "have no tracks" follows.
 */
export function parseIntent(question: string, lex: Lexicon, links: readonly ForeignKey[] = []): IntentQuery | null {
  const { text, lits } = maskLiterals(question);
  const s = text.replace(/[?.]$/, '');
  const env = intentEnv(lex);
  let lastError: IntentParseError | null = null;
  for (const [opener, parse] of PARSERS) {
    const m = opener.exec(s);
    if (!m) continue;
    const c = new Cursor(s, lits, env, links);
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
