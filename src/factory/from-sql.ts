/**
 * SQL text back to the factory's AST (ast.ts): a SQLite SELECT, as people write it, in the subset the AST
 * says. It is what lets human gold SQL be asked in the factory's words: the realizer speaks an AST, so a
 * query people wrote needs one first (gold.ts). The AST is closed, so anything it cannot say returns null
 * with the reason, never a query that means something else.
 *
 * Two steps: the repository's one tokenizer (sql/lexer.ts) and a small recursive-descent parser give a
 * syntax tree with names as written; resolving the names against the schema (aliases, unqualified
 * columns, SQLite's double-quoted strings, a result column's alias) gives the AST. A join's equalities
 * must follow a foreign key of the schema graph, or join columns that match by name (the same name, or
 * `<table>_id` against that table's key) or, where the caller can look, by values (JoinProbe): people
 * join on keys nobody declared (Spider's imdb, scholar, restaurants declare none that their queries use).
 * The question parser rebuilds joins from the graph alone, so a query joined off the graph reads and
 * prints back, and its question does not parse back to it: gold.ts's round trip keeps it out of a memory.
 *
 * Said as the AST says it: BETWEEN as two comparisons, `x IN (v)` of one value as `x = v` (of several as
 * an OR of equalities, NOT IN as a conjunction of `<>`), `!=` as `<>`; `A JOIN B JOIN C ON p AND q` as
 * each equality on the later of its two tables.
 */
import { isKeyword, isWord, tokenize, type Token } from '../sql/lexer.ts';
import { nameIn } from '../sql/dialect.ts';
import type { Column, DbSchema } from '../sql/types.ts';
import type { AggFn, ArithOp, CmpOp, ColRef, Cond, Expr, JoinStep, OrderItem, QueryAst, SelectAst } from './ast.ts';
import { singular, type SchemaGraph } from './schema-graph.ts';

export type FromSqlResult = { ok: true; ast: QueryAst } | { ok: false; reason: string };

/**
 * Whether two columns a query joins on hold the same values (every non-null value of one is a value of the
 * other, and there is one): the evidence of data for a join no key declares and no name suggests. Called only
 * for such joins; a caller without the data passes none and those joins stay unread.
 */
export type JoinProbe = (a: ColRef, b: ColRef) => boolean;

export interface FromSqlOptions {
  joinProbe?: JoinProbe;
}

/** Rows of each column a JoinProbe looks at (as inferForeignKeys bounds its check). */
const PROBE_ROWS = 5000;

/**
 * The JoinProbe of a SQLite database that `one` runs a query on (a row, as an array): both directions of
 * the containment, each pair of columns asked once.
 */
export function joinProbeOn(one: (sql: string) => unknown[] | undefined): JoinProbe {
  const seen = new Map<string, boolean>();
  const within = (a: ColRef, b: ColRef): boolean => {
    const v = nameIn(a.column, 'sqlite');
    const sql =
      `SELECT COUNT(*), SUM(v IN (SELECT ${nameIn(b.column, 'sqlite')} FROM ${nameIn(b.table, 'sqlite')})) ` +
      `FROM (SELECT DISTINCT ${v} AS v FROM (SELECT ${v} FROM ${nameIn(a.table, 'sqlite')} WHERE ${v} IS NOT NULL LIMIT ${PROBE_ROWS}))`;
    const [n, inside] = one(sql) ?? [0, null];
    return Number(n) > 0 && Number(inside) === Number(n);
  };
  return (a, b) => {
    const k = [`${a.table}.${a.column}`, `${b.table}.${b.column}`].sort().join('=');
    let hit = seen.get(k);
    if (hit === undefined) seen.set(k, (hit = within(a, b) || within(b, a)));
    return hit;
  };
}

/** What the AST cannot say, with its reason (short snake_case: the coverage report counts them). */
class Unsupported extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

// ---------------------------------------------------------------- syntax tree (names as written)

type Node =
  | { t: 'num'; v: number }
  | { t: 'str'; v: string }
  | { t: 'null' }
  /** A name: `qual.name` or `name`; dq when written in double quotes (a string if it names no column). */
  | { t: 'id'; qual: string | null; name: string; dq: boolean }
  | { t: 'star'; qual: string | null }
  | { t: 'fn'; name: string; distinct: boolean; args: Node[] }
  | { t: 'bin'; op: string; l: Node; r: Node }
  | { t: 'neg'; e: Node }
  | { t: 'sub'; q: RawQuery }
  | { t: 'and' | 'or'; items: Node[] }
  | { t: 'not'; e: Node }
  | { t: 'cmp'; op: string; l: Node; r: Node }
  | { t: 'like'; not: boolean; l: Node; r: Node }
  | { t: 'in'; not: boolean; l: Node; sub?: RawQuery; list?: Node[] }
  | { t: 'between'; not: boolean; e: Node; lo: Node; hi: Node }
  | { t: 'isnull'; not: boolean; e: Node }
  | { t: 'exists'; not: boolean; q: RawQuery };

interface RawFrom {
  table: string;
  alias: string | null;
  /** The ON condition of a JOIN; null for the first table, and for a JOIN whose equalities a later ON holds. */
  on: Node | null;
}

interface RawSelect {
  kind: 'select';
  distinct: boolean;
  items: Array<{ e: Node; alias: string | null }>;
  from: RawFrom[];
  where: Node | null;
  groupBy: Node[];
  having: Node | null;
  orderBy: Array<{ e: Node; dir: 'ASC' | 'DESC' }>;
  limit: number | null;
}

type RawQuery = RawSelect | { kind: 'setop'; op: 'UNION' | 'INTERSECT' | 'EXCEPT'; left: RawSelect; right: RawSelect };

/** Keywords that are grammar here; SQLite's other keywords may stand for a name (`key`, `plan`, `temp`), as SQLite allows. */
const GRAMMAR = new Set(
  'select from where group by having order limit offset and or not in is null like glob between exists case when then else end union intersect except as on using join inner left right full outer cross natural distinct all asc desc cast collate escape over filter window true false current_date current_time current_timestamp'.split(' '),
);
const CMP = new Set(['=', '==', '!=', '<>', '<', '>', '<=', '>=']);
const AGGS: Record<string, AggFn> = { count: 'COUNT', sum: 'SUM', avg: 'AVG', min: 'MIN', max: 'MAX' };

class SqlParser {
  private k = 0;
  constructor(private readonly toks: Token[]) {}

  private peek(off = 0): Token | undefined {
    return this.toks[this.k + off];
  }
  private kw(w: string, off = 0): boolean {
    return isWord(this.peek(off), w);
  }
  private eatKw(w: string): boolean {
    if (!this.kw(w)) return false;
    this.k++;
    return true;
  }
  private expectKw(w: string): void {
    if (!this.eatKw(w)) throw new Unsupported('syntax');
  }
  private punct(p: string, off = 0): boolean {
    const t = this.peek(off);
    return t !== undefined && (t.kind === 'punct' || t.kind === 'op') && t.text === p;
  }
  private eatPunct(p: string): boolean {
    if (!this.punct(p)) return false;
    this.k++;
    return true;
  }
  private expectPunct(p: string): void {
    if (!this.eatPunct(p)) throw new Unsupported('syntax');
  }
  done(): boolean {
    while (this.punct(';')) this.k++;
    return this.k >= this.toks.length;
  }
  /** A name token: a quoted identifier, or a word that is not grammar. */
  private isName(t: Token | undefined): boolean {
    return t !== undefined && (t.kind === 'qid' || (t.kind === 'word' && !GRAMMAR.has(t.text.toLowerCase())));
  }
  private name(): string {
    const t = this.peek();
    if (!this.isName(t)) throw new Unsupported('syntax');
    this.k++;
    return t!.text;
  }

  query(): RawQuery {
    const left = this.select();
    const op = (['UNION', 'INTERSECT', 'EXCEPT'] as const).find((w) => this.kw(w));
    if (!op) return left;
    this.k++;
    if (this.kw('ALL')) throw new Unsupported('union_all');
    const right = this.select();
    if (['UNION', 'INTERSECT', 'EXCEPT'].some((w) => this.kw(w))) throw new Unsupported('nested_set_operation');
    return { kind: 'setop', op, left, right };
  }

  private select(): RawSelect {
    if (this.punct('(')) throw new Unsupported('parenthesized_select');
    this.expectKw('SELECT');
    const distinct = this.eatKw('DISTINCT');
    this.eatKw('ALL');
    const items: RawSelect['items'] = [];
    do {
      const e = this.expr();
      let alias: string | null = null;
      if (this.eatKw('AS')) alias = this.name();
      else if (this.isName(this.peek())) alias = this.name();
      items.push({ e, alias });
    } while (this.eatPunct(','));
    if (!this.eatKw('FROM')) throw new Unsupported('no_from');
    const from = this.fromList();
    const q: RawSelect = { kind: 'select', distinct, items, from, where: null, groupBy: [], having: null, orderBy: [], limit: null };
    if (this.eatKw('WHERE')) q.where = this.expr();
    if (this.eatKw('GROUP')) {
      this.expectKw('BY');
      do q.groupBy.push(this.expr());
      while (this.eatPunct(','));
    }
    if (this.eatKw('HAVING')) q.having = this.expr();
    if (this.eatKw('ORDER')) {
      this.expectKw('BY');
      do {
        const e = this.expr();
        const dir = this.eatKw('DESC') ? 'DESC' : 'ASC';
        this.eatKw('ASC');
        if (this.kw('NULLS')) throw new Unsupported('nulls_order');
        q.orderBy.push({ e, dir });
      } while (this.eatPunct(','));
    }
    if (this.eatKw('LIMIT')) {
      const t = this.peek();
      if (t?.kind !== 'num' || !/^\d+$/.test(t.text)) throw new Unsupported('limit_expression');
      this.k++;
      q.limit = Number(t.text);
      if (this.kw('OFFSET') || this.punct(',')) throw new Unsupported('offset');
    }
    if (this.kw('WINDOW')) throw new Unsupported('window');
    return q;
  }

  private fromList(): RawFrom[] {
    if (this.punct('(')) throw new Unsupported('derived_table');
    const out: RawFrom[] = [this.tableRef()];
    for (;;) {
      if (this.punct(',')) throw new Unsupported('comma_join');
      if (this.kw('LEFT') || this.kw('RIGHT') || this.kw('FULL')) throw new Unsupported('outer_join');
      if (this.kw('CROSS') || this.kw('NATURAL')) throw new Unsupported('cross_join');
      if (!this.kw('JOIN') && !(this.kw('INNER') && this.kw('JOIN', 1))) return out;
      this.eatKw('INNER');
      this.expectKw('JOIN');
      if (this.punct('(')) throw new Unsupported('derived_table');
      const ref = this.tableRef();
      if (this.kw('USING')) throw new Unsupported('join_using');
      // `A JOIN B JOIN C ON p AND q`: B's equalities come in C's ON (the resolver puts each on its later table).
      if (this.eatKw('ON')) ref.on = this.expr();
      else if (!this.kw('JOIN') && !(this.kw('INNER') && this.kw('JOIN', 1))) throw new Unsupported('join_without_on');
      out.push(ref);
    }
  }

  private tableRef(): RawFrom {
    // Any word names a table here (IMDb's table is called `cast`).
    const t = this.peek();
    if (!t || (t.kind !== 'word' && t.kind !== 'qid') || isWord(t, 'SELECT')) throw new Unsupported('syntax');
    this.k++;
    const table = t.text;
    if (this.punct('.')) throw new Unsupported('schema_qualified_table');
    let alias: string | null = null;
    if (this.eatKw('AS')) alias = this.name();
    else if (this.isName(this.peek())) alias = this.name();
    return { table, alias, on: null };
  }

  // ---- expressions, loosest first

  expr(): Node {
    const items = [this.andExpr()];
    while (this.eatKw('OR')) items.push(this.andExpr());
    return items.length === 1 ? items[0] : { t: 'or', items };
  }

  private andExpr(): Node {
    const items = [this.notExpr()];
    while (this.eatKw('AND')) items.push(this.notExpr());
    return items.length === 1 ? items[0] : { t: 'and', items };
  }

  private notExpr(): Node {
    if (this.eatKw('NOT')) {
      if (this.kw('EXISTS')) return this.existsExpr(true);
      return { t: 'not', e: this.notExpr() };
    }
    if (this.kw('EXISTS')) return this.existsExpr(false);
    return this.predicate();
  }

  private existsExpr(not: boolean): Node {
    this.expectKw('EXISTS');
    this.expectPunct('(');
    const q = this.query();
    this.expectPunct(')');
    return { t: 'exists', not, q };
  }

  private predicate(): Node {
    const l = this.additive();
    const t = this.peek();
    if (t && t.kind === 'op' && CMP.has(t.text)) {
      this.k++;
      return { t: 'cmp', op: t.text, l, r: this.additive() };
    }
    const not = this.kw('NOT') && (this.kw('LIKE', 1) || this.kw('IN', 1) || this.kw('BETWEEN', 1) || this.kw('GLOB', 1));
    if (not) this.k++;
    if (this.eatKw('LIKE')) {
      const r = this.additive();
      if (this.kw('ESCAPE')) throw new Unsupported('like_escape');
      return { t: 'like', not, l, r };
    }
    if (this.kw('GLOB')) throw new Unsupported('glob');
    if (this.eatKw('IN')) {
      this.expectPunct('(');
      if (this.kw('SELECT')) {
        const sub = this.query();
        this.expectPunct(')');
        return { t: 'in', not, l, sub };
      }
      const list: Node[] = [];
      if (!this.punct(')')) {
        do list.push(this.additive());
        while (this.eatPunct(','));
      }
      this.expectPunct(')');
      return { t: 'in', not, l, list };
    }
    if (this.eatKw('BETWEEN')) {
      const lo = this.additive();
      this.expectKw('AND');
      return { t: 'between', not, e: l, lo, hi: this.additive() };
    }
    if (this.eatKw('IS')) {
      const neg = this.eatKw('NOT');
      if (!this.eatKw('NULL')) throw new Unsupported('is_value');
      return { t: 'isnull', not: neg, e: l };
    }
    if (this.kw('ISNULL') || this.kw('NOTNULL')) throw new Unsupported('isnull_keyword');
    return l;
  }

  private additive(): Node {
    let l = this.multiplicative();
    for (;;) {
      const t = this.peek();
      if (!t || t.kind !== 'op' || !['+', '-', '||'].includes(t.text)) return l;
      this.k++;
      l = { t: 'bin', op: t.text, l, r: this.multiplicative() };
    }
  }

  private multiplicative(): Node {
    let l = this.unary();
    for (;;) {
      const t = this.peek();
      if (!t || t.kind !== 'op' || !['*', '/', '%'].includes(t.text)) return l;
      this.k++;
      l = { t: 'bin', op: t.text, l, r: this.unary() };
    }
  }

  private unary(): Node {
    if (this.eatPunct('-')) return { t: 'neg', e: this.unary() };
    if (this.eatPunct('+')) return this.unary();
    return this.primary();
  }

  private primary(): Node {
    const t = this.peek();
    if (!t) throw new Unsupported('syntax');
    if (t.kind === 'num') {
      this.k++;
      return { t: 'num', v: Number(t.text) };
    }
    if (t.kind === 'str') {
      this.k++;
      return { t: 'str', v: t.text };
    }
    if (t.kind === 'op' && t.text === '*') {
      this.k++;
      return { t: 'star', qual: null };
    }
    if (t.kind === 'punct' && t.text === '(') {
      this.k++;
      if (this.kw('SELECT')) {
        const q = this.query();
        this.expectPunct(')');
        return { t: 'sub', q };
      }
      const e = this.expr();
      this.expectPunct(')');
      return e;
    }
    if (isWord(t, 'NULL')) {
      this.k++;
      return { t: 'null' };
    }
    if (isWord(t, 'CASE')) throw new Unsupported('case');
    if (isWord(t, 'CAST') && this.punct('(', 1)) throw new Unsupported('cast');
    if (t.kind === 'word' && this.punct('(', 1) && !GRAMMAR.has(t.text.toLowerCase())) return this.call();
    if (this.isName(t) || (t.kind === 'word' && this.punct('.', 1))) {
      this.k++;
      if (this.eatPunct('.')) {
        if (this.eatPunct('*')) return { t: 'star', qual: t.text };
        return { t: 'id', qual: t.text, name: this.name(), dq: false };
      }
      return { t: 'id', qual: null, name: t.text, dq: t.kind === 'qid' && t.quote === '"' };
    }
    throw new Unsupported(t.kind === 'word' && isKeyword(t.text) ? `keyword_${t.text.toLowerCase()}` : 'syntax');
  }

  private call(): Node {
    const name = this.peek()!.text.toLowerCase();
    this.k += 2;
    const distinct = this.eatKw('DISTINCT');
    const args: Node[] = [];
    if (!this.punct(')')) {
      do args.push(this.expr());
      while (this.eatPunct(','));
    }
    this.expectPunct(')');
    if (this.kw('OVER') || this.kw('FILTER')) throw new Unsupported('window');
    return { t: 'fn', name, distinct, args };
  }
}

// ---------------------------------------------------------------- names resolved against the schema

/** Where an expression stands, for SQLite's rule on result-column aliases. */
type Place = 'select' | 'clause' | 'order';

interface ScopeTable {
  /** The AST alias (T1, T2, ... outside; S1, S2, ... in a subquery). */
  alias: string;
  /** The alias as written, or the table's name when none was (lower case). */
  written: string;
  table: string;
  columns: Map<string, string>;
  key: string[];
  affinity: Map<string, Column['affinity']>;
}

interface Scope {
  tables: ScopeTable[];
  /** Result-column aliases of this SELECT (`count(*) AS n` ... `ORDER BY n`). */
  aliases: Map<string, Node>;
  outer: Scope | null;
  /** The alias prefix: 'T' for the outer query, 'S' inside a subquery. */
  prefix: string;
}

type TableInfo = Pick<ScopeTable, 'table' | 'columns' | 'key' | 'affinity'>;

class Resolver {
  private readonly tables = new Map<string, TableInfo>();
  constructor(
    schema: DbSchema,
    private readonly graph: SchemaGraph,
    private readonly probe: JoinProbe | undefined,
  ) {
    for (const t of schema.tables) {
      this.tables.set(t.name.toLowerCase(), {
        table: t.name,
        columns: new Map(t.columns.map((c) => [c.name.toLowerCase(), c.name])),
        key: t.primaryKey,
        affinity: new Map(t.columns.map((c) => [c.name, c.affinity])),
      });
    }
  }

  query(q: RawQuery, outer: Scope | null, prefix: string): QueryAst {
    if (q.kind === 'select') return this.select(q, outer, prefix);
    const left = this.select(q.left, outer, prefix);
    const right = this.select(q.right, outer, prefix);
    if (left.columns.length !== right.columns.length) throw new Unsupported('set_operation_width');
    return { kind: 'setop', op: q.op, left, right };
  }

  private select(q: RawSelect, outer: Scope | null, prefix: string): SelectAst {
    const scope: Scope = { tables: [], aliases: new Map(), outer, prefix };
    for (const [i, f] of q.from.entries()) {
      const t = this.tables.get(f.table.toLowerCase());
      if (!t) throw new Unsupported('unknown_table');
      const written = (f.alias ?? f.table).toLowerCase();
      if (scope.tables.some((x) => x.written === written)) throw new Unsupported('duplicate_alias');
      scope.tables.push({ alias: `${prefix}${i + 1}`, written, ...t });
    }
    const joins = this.joinSteps(q.from, scope);
    for (const it of q.items) if (it.alias) scope.aliases.set(it.alias.toLowerCase(), it.e);
    const columns: Expr[] = q.items.map((it) => this.expr(it.e, scope, 'select'));
    const groupBy = q.groupBy.map((g) => {
      const e = this.expr(g, scope, 'clause');
      if (e.kind !== 'col') throw new Unsupported('group_by_expression');
      return e;
    });
    const orderBy: OrderItem[] = q.orderBy.map((o) => {
      if (o.e.t === 'num') throw new Unsupported('order_by_position');
      return { expr: this.expr(o.e, scope, 'order'), dir: o.dir };
    });
    const first = scope.tables[0];
    return {
      kind: 'select',
      distinct: q.distinct,
      columns,
      from: { table: first.table, alias: first.alias },
      joins,
      where: q.where ? this.conds(q.where, scope) : [],
      groupBy,
      having: q.having ? this.conds(q.having, scope) : [],
      orderBy,
      limit: q.limit,
    };
  }

  /**
   * The JOINs' ON equalities, each on the later of its two tables (the left side an earlier one), each along a
   * foreign key of the graph or matching by name or values; every table after the first needs one.
   */
  private joinSteps(from: RawFrom[], scope: Scope): JoinStep[] {
    const steps: JoinStep[] = scope.tables.slice(1).map((t) => ({ table: t.table, alias: t.alias, on: [] }));
    const index = (alias: string) => scope.tables.findIndex((x) => x.alias === alias);
    for (const f of from) {
      if (!f.on) continue;
      for (const p of f.on.t === 'and' ? f.on.items : [f.on]) {
        if (p.t !== 'cmp' || (p.op !== '=' && p.op !== '==')) throw new Unsupported('join_condition');
        const a = this.expr(p.l, scope, 'select');
        const b = this.expr(p.r, scope, 'select');
        if (a.kind !== 'col' || b.kind !== 'col' || a.alias === b.alias) throw new Unsupported('join_condition');
        const [left, right] = index(a.alias) < index(b.alias) ? [a, b] : [b, a];
        if (!this.foreignKey(left, right) && !this.sameByName(left, right) && !this.probe?.(left, right)) throw new Unsupported('join_not_on_foreign_key');
        steps[index(right.alias) - 1].on.push({ left, right });
      }
    }
    if (steps.some((j) => j.on.length === 0)) throw new Unsupported('join_without_on');
    return steps;
  }

  private foreignKey(a: ColRef, b: ColRef): boolean {
    const eq = (x: string, y: string) => x.toLowerCase() === y.toLowerCase();
    const along = (c: ColRef, d: ColRef) =>
      this.graph.edges.some((e) => eq(e.fromTable, c.table) && eq(e.toTable, d.table) && e.fromColumns.some((fc, i) => eq(fc, c.column) && eq(e.toColumns[i], d.column)));
    return along(a, b) || along(b, a);
  }

  /**
   * Columns whose names say they are one key: the same name where it keys one side or ends in `id`
   * (`customer_id` = `customer_id`, whatever types a schema declared: SQLite compares them by affinity), or,
   * of like type, `<x>_id` / `<x>id` (`start_station_id`) against the key, or `id`, of the table x names
   * (`station.id`). Two tables' `country` columns are not one key; their values may say so (JoinProbe).
   */
  private sameByName(a: ColRef, b: ColRef): boolean {
    const info = (c: ColRef) => this.tables.get(c.table.toLowerCase())!;
    const keyLike = (c: ColRef) => info(c).key.includes(c.column) || /id$/i.test(c.column);
    if (a.column.toLowerCase() === b.column.toLowerCase()) return keyLike(a) || keyLike(b);
    const kind = (c: ColRef) => {
      const aff = info(c).affinity.get(c.column);
      return aff === 'TEXT' || aff === 'BLOB' ? aff : 'number';
    };
    if (kind(a) !== kind(b)) return false;
    const names = (ref: ColRef, key: ColRef) => {
      const m = /^(.+?)_?id$/i.exec(ref.column);
      if (!m) return false;
      const stem = singular(m[1].toLowerCase().replace(/_$/, ''));
      const table = singular(key.table.toLowerCase());
      const isKey = info(key).key.length === 1 ? info(key).key[0] === key.column : key.column.toLowerCase() === 'id';
      return isKey && (stem === table || stem.endsWith(`_${table}`));
    };
    return names(a, b) || names(b, a);
  }

  /** A WHERE/HAVING condition as the AST's conjunction. */
  private conds(n: Node, scope: Scope): Cond[] {
    if (n.t === 'and') return n.items.flatMap((x) => this.conds(x, scope));
    switch (n.t) {
      case 'or': {
        // Each alternative a conjunction; an alternative that is itself an OR (parenthesized) joins this one.
        const any = n.items.flatMap((x) => {
          const all = this.conds(x, scope);
          return all.length === 1 && all[0].kind === 'or' ? all[0].any : [all];
        });
        return [{ kind: 'or', any }];
      }
      case 'not':
        throw new Unsupported('not');
      case 'exists':
        throw new Unsupported('exists');
      case 'cmp':
        return [{ kind: 'cmp', left: this.expr(n.l, scope, 'clause'), op: cmpOp(n.op), right: this.expr(n.r, scope, 'clause') }];
      case 'between': {
        if (n.not) throw new Unsupported('not_between');
        const e = this.expr(n.e, scope, 'clause');
        return [
          { kind: 'cmp', left: e, op: '>=', right: this.expr(n.lo, scope, 'clause') },
          { kind: 'cmp', left: e, op: '<=', right: this.expr(n.hi, scope, 'clause') },
        ];
      }
      case 'like': {
        const e = this.expr(n.l, scope, 'clause');
        const p = this.expr(n.r, scope, 'clause');
        if (e.kind !== 'col') throw new Unsupported('like_on_expression');
        if (p.kind !== 'lit' || typeof p.value !== 'string') throw new Unsupported('like_pattern');
        return [n.not ? { kind: 'like', expr: e, pattern: p.value, negated: true } : { kind: 'like', expr: e, pattern: p.value }];
      }
      case 'isnull': {
        const e = this.expr(n.e, scope, 'clause');
        if (e.kind !== 'col') throw new Unsupported('null_test_on_expression');
        return [{ kind: 'null', expr: e, negated: n.not }];
      }
      case 'in': {
        const e = this.expr(n.l, scope, 'clause');
        if (n.list) {
          const values = n.list.map((v) => this.expr(v, scope, 'clause'));
          // A NULL among the values makes IN and its rewriting differ (NOT IN is then never true).
          if (!values.length || values.some((v) => v.kind !== 'lit' || v.value === null)) throw new Unsupported('in_list');
          const each = values.map((v): Cond => ({ kind: 'cmp', left: e, op: n.not ? '<>' : '=', right: v }));
          return n.not || each.length === 1 ? each : [{ kind: 'or', any: each.map((c) => [c]) }];
        }
        if (e.kind !== 'col') throw new Unsupported('in_on_expression');
        const sub = this.query(n.sub!, scope, 'S');
        if (sub.kind !== 'select') throw new Unsupported('in_set_operation');
        if (sub.columns.length !== 1) throw new Unsupported('subquery_width');
        return [{ kind: 'in', expr: e, query: sub, negated: n.not }];
      }
      default:
        throw new Unsupported('condition_expression');
    }
  }

  /** A value expression; `at` says where, for a result column's alias (not in the SELECT list; first in ORDER BY, last elsewhere). */
  private expr(n: Node, scope: Scope, at: Place): Expr {
    switch (n.t) {
      case 'num':
        return { kind: 'lit', value: n.v };
      case 'str':
        return { kind: 'lit', value: n.v };
      case 'null':
        return { kind: 'lit', value: null };
      case 'neg': {
        const e = this.expr(n.e, scope, at);
        if (e.kind === 'lit' && typeof e.value === 'number') return { kind: 'lit', value: -e.value };
        throw new Unsupported('unary_minus');
      }
      case 'star':
        if (n.qual) throw new Unsupported('qualified_star');
        return { kind: 'star' };
      case 'id':
        return this.column(n, scope, at);
      case 'bin': {
        if (!['+', '-', '*', '/'].includes(n.op)) throw new Unsupported(n.op === '||' ? 'concatenation' : 'modulo');
        return { kind: 'arith', op: n.op as ArithOp, left: this.expr(n.l, scope, at), right: this.expr(n.r, scope, at) };
      }
      case 'fn':
        return this.call(n, scope, at);
      case 'sub': {
        const q = this.query(n.q, scope, 'S');
        if (q.kind !== 'select') throw new Unsupported('scalar_set_operation');
        if (q.columns.length !== 1) throw new Unsupported('subquery_width');
        return { kind: 'scalar', query: q };
      }
      default:
        throw new Unsupported('condition_as_value');
    }
  }

  private call(n: Extract<Node, { t: 'fn' }>, scope: Scope, at: Place): Expr {
    const agg = AGGS[n.name];
    if (agg) {
      if (n.args.length !== 1) throw new Unsupported(`function_${n.name}_arity`);
      const arg = this.expr(n.args[0], scope, at);
      if (arg.kind === 'star' && (agg !== 'COUNT' || n.distinct)) throw new Unsupported('star_argument');
      if (arg.kind === 'agg' || arg.kind === 'scalar') throw new Unsupported('nested_aggregate');
      return { kind: 'agg', fn: agg, arg, distinct: n.distinct };
    }
    if (n.name === 'strftime' && n.args.length === 2 && n.args[0].t === 'str' && (n.args[0].v === '%Y' || n.args[0].v === '%m')) {
      const arg = this.expr(n.args[1], scope, at);
      if (arg.kind !== 'col') throw new Unsupported('function_strftime');
      return { kind: 'datepart', part: n.args[0].v === '%Y' ? 'year' : 'month', arg };
    }
    throw new Unsupported(`function_${n.name}`);
  }

  private column(n: Extract<Node, { t: 'id' }>, scope: Scope, at: Place): Expr {
    const name = n.name.toLowerCase();
    if (n.qual) {
      const q = n.qual.toLowerCase();
      for (let s: Scope | null = scope; s; s = s.outer) {
        const t = s.tables.find((x) => x.written === q);
        if (!t) continue;
        if (s !== scope) throw new Unsupported('correlated_subquery');
        const c = t.columns.get(name);
        if (!c) throw new Unsupported('unknown_column');
        return { kind: 'col', alias: t.alias, table: t.table, column: c };
      }
      throw new Unsupported('unknown_alias');
    }
    // SQLite: in ORDER BY a result column's alias comes first; elsewhere a table's column does.
    const aliased = at === 'select' ? undefined : scope.aliases.get(name);
    const bare = { ...scope, aliases: new Map<string, Node>() };
    if (aliased && at === 'order') return this.expr(aliased, bare, at);
    for (let s: Scope | null = scope; s; s = s.outer) {
      const hits = s.tables.filter((t) => t.columns.has(name));
      if (hits.length > 1) throw new Unsupported('ambiguous_column');
      if (hits.length === 1) {
        if (s !== scope) throw new Unsupported('correlated_subquery');
        return { kind: 'col', alias: hits[0].alias, table: hits[0].table, column: hits[0].columns.get(name)! };
      }
    }
    if (aliased) return this.expr(aliased, bare, at);
    // SQLite's lenient rule: a double-quoted name that names no column is a string.
    if (n.dq) return { kind: 'lit', value: n.name };
    throw new Unsupported('unknown_column');
  }
}

function cmpOp(op: string): CmpOp {
  if (op === '==') return '=';
  if (op === '!=') return '<>';
  return op as CmpOp;
}

/**
 * The AST of a SQLite SELECT over `schema`, or why the AST cannot say it. Joins follow an edge of `graph`
 * (the schema's foreign keys, declared or inferred), or columns that match by name, or by values where
 * `opts.joinProbe` can tell.
 */
export function astFromSql(sql: string, schema: DbSchema, graph: SchemaGraph, opts: FromSqlOptions = {}): FromSqlResult {
  try {
    const p = new SqlParser(tokenize(sql));
    const raw = p.query();
    if (!p.done()) throw new Unsupported('trailing_text');
    return { ok: true, ast: new Resolver(schema, graph, opts.joinProbe).query(raw, null, 'T') };
  } catch (e) {
    if (e instanceof Unsupported) return { ok: false, reason: e.reason };
    throw e;
  }
}
