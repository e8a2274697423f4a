/**
 * The parser of the realizer's grammars: a question back to its query, from the question text and the
 * schema alone (it never sees the AST or SQL). Intent sentences (intent-parse.ts) are tried first, then
 * the general grammar of realize.ts. align.ts runs it for the round trip.
 */
import type { DbSchema } from '../../sql/types.ts';
import { col, emptySelect, lit, type AggFn, type ColRef, type Cond, type Expr, type QueryAst, type SelectAst } from '../ast.ts';
import { buildLexicon, type Lexicon } from './names.ts';
import { AGG_WORDS, CMP_WORDS, OP_WORDS, SET_WORDS, STYLE_PREFIXES } from './realize.ts';
import { buildJoins, type SchemaGraph } from '../schema-graph.ts';
import { IntentParseError, maskLiterals, parseIntent, type IntentQuery } from './intent-parse.ts';

/** Thrown when a question is in neither grammar. */
export class ParseError extends Error {}

interface Scope {
  /** '' for the outer query (aliases assigned after joins are known), 'S1' inside a subquery. */
  alias: string;
  mentions: string[];
}

class Parser {
  private i = 0;
  private readonly phrases: string[];
  private readonly tablePhrases: string[];
  constructor(
    private readonly s: string,
    private readonly lits: string[],
    private readonly lex: Lexicon,
  ) {
    this.phrases = [...lex.columns.keys()].sort((a, b) => b.length - a.length);
    this.tablePhrases = [...lex.tables.keys()].sort((a, b) => b.length - a.length);
  }
  mark(): number {
    return this.i;
  }
  reset(i: number): void {
    this.i = i;
  }
  done(): boolean {
    return this.i >= this.s.length;
  }
  peek(t: string): boolean {
    return this.s.startsWith(t, this.i);
  }
  eat(t: string): boolean {
    if (!this.peek(t)) return false;
    this.i += t.length;
    return true;
  }
  expect(t: string): void {
    if (!this.eat(t)) throw new ParseError(`expected "${t}" at "${this.s.slice(this.i, this.i + 30)}"`);
  }
  private boundary(j: number): boolean {
    return j >= this.s.length || !/[\p{L}\p{N}_]/u.test(this.s[j]);
  }
  /** Longest column phrase at the cursor. */
  column(scope: Scope): ColRef | null {
    for (const p of this.phrases) {
      if (this.peek(p) && this.boundary(this.i + p.length)) {
        this.i += p.length;
        const [t, c] = this.lex.columns.get(p)!;
        if (!scope.mentions.includes(t)) scope.mentions.push(t);
        return col(scope.alias, t, c);
      }
    }
    return null;
  }
  table(scope: Scope): string | null {
    for (const p of this.tablePhrases) {
      if (this.peek(p) && this.boundary(this.i + p.length)) {
        this.i += p.length;
        const t = this.lex.tables.get(p)!;
        if (!scope.mentions.includes(t)) scope.mentions.push(t);
        return t;
      }
    }
    return null;
  }
  needColumn(scope: Scope): ColRef {
    const c = this.column(scope);
    if (!c) throw new ParseError(`unknown column at "${this.s.slice(this.i, this.i + 30)}"`);
    return c;
  }
  literal(): string | number | null {
    const m = /^\u27e6(\d+)\u27e7/.exec(this.s.slice(this.i));
    if (m) {
      this.i += m[0].length;
      return this.lits[Number(m[1])];
    }
    const n = /^-?\d+(\.\d+)?(?![\p{L}\d])/u.exec(this.s.slice(this.i));
    if (n) {
      this.i += n[0].length;
      return Number(n[0]);
    }
    return null;
  }
}

export interface ParseEnv {
  schema: DbSchema;
  graph: SchemaGraph;
  lex: Lexicon;
}

function parseExpr(p: Parser, scope: Scope): { e: Expr; distinct?: boolean; countOf?: string } {
  if (p.eat('the number of distinct ')) {
    const c = p.needColumn(scope);
    p.expect(' values');
    return { e: { kind: 'agg', fn: 'COUNT', arg: c, distinct: true } };
  }
  if (p.eat('the number of ')) {
    const c = p.column(scope);
    if (c && p.eat(' values')) return { e: { kind: 'agg', fn: 'COUNT', arg: c, distinct: false } };
    if (c) throw new ParseError('COUNT of a column without "values"');
    const t = p.table(scope);
    if (!t) throw new ParseError('unknown table after "the number of"');
    return { e: { kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false }, countOf: t };
  }
  if (p.eat('the percentage of ')) {
    const t = p.table(scope);
    if (!t) throw new ParseError('unknown table after "the percentage of"');
    p.expect(' for which ');
    return { e: { kind: 'pct', cond: parseCond(p, scope, null) }, countOf: t };
  }
  if (p.eat('the different ')) return { e: p.needColumn(scope), distinct: true };
  for (const part of ['year', 'month'] as const) {
    if (p.eat(`the ${part} of the `)) return { e: { kind: 'datepart', part, arg: p.needColumn(scope) } };
  }
  for (const [fn, w] of Object.entries(AGG_WORDS)) {
    if (p.peek(`the ${w} `)) {
      const save = p.mark();
      p.eat(`the ${w} `);
      const c = p.column(scope);
      if (c) return { e: { kind: 'agg', fn: fn as AggFn, arg: c, distinct: false } };
      p.reset(save);
    }
  }
  p.expect('the ');
  const left = p.needColumn(scope);
  for (const [op, w] of Object.entries(OP_WORDS)) {
    if (p.eat(` ${w} the `)) return { e: { kind: 'arith', op: op as '+', left, right: p.needColumn(scope) } };
  }
  return { e: left };
}

function scalarSub(p: Parser): Expr | null {
  for (const [fn, w] of Object.entries(AGG_WORDS)) {
    if (p.eat(`the ${w} `)) {
      const sub: Scope = { alias: 'S1', mentions: [] };
      const c = p.needColumn(sub);
      const q = emptySelect(c.table, 'S1');
      q.columns = [{ kind: 'agg', fn: fn as AggFn, arg: c, distinct: false }];
      return { kind: 'scalar', query: q };
    }
  }
  return null;
}

/** outerBase: the outer query's table, needed to link a correlated EXISTS. */
function parseCond(p: Parser, scope: Scope, env: { outerBase: string; graph: SchemaGraph } | null): Cond {
  for (const [prefix, negated] of [
    ['there is at least one ', false],
    ['there is no ', true],
  ] as const) {
    if (p.eat(prefix)) {
      if (!env) throw new ParseError('EXISTS outside a WHERE clause');
      const sub: Scope = { alias: 'S1', mentions: [] };
      const inner = p.table(sub);
      if (!inner) throw new ParseError('unknown table in "there is"');
      p.expect(' for which ');
      const c = parseCond(p, sub, null);
      const edge = env.graph.edges.find((e) => e.fromTable === inner && e.toTable === env.outerBase && e.fromColumns.length === 1);
      if (!edge) throw new ParseError(`no link from ${inner} to ${env.outerBase}`);
      const q = emptySelect(inner, 'S1');
      q.columns = [{ kind: 'star' }];
      q.where = [{ kind: 'cmp', left: col('S1', inner, edge.fromColumns[0]), op: '=', right: col('T1', env.outerBase, edge.toColumns[0]) }, c];
      return { kind: 'exists', query: q, negated };
    }
  }
  if (p.eat('either ')) {
    const any = [[parseCond(p, scope, env)]];
    while (p.eat(' or ')) any.push([parseCond(p, scope, env)]);
    if (any.length < 2) throw new ParseError('"either" without "or"');
    return { kind: 'or', any };
  }
  const { e: left } = parseExpr(p, scope);
  for (const [w, negated] of [
    [' is not one of the ', true],
    [' is one of the ', false],
  ] as const) {
    if (p.eat(w)) {
      if (left.kind !== 'col') throw new ParseError('IN on a non-column');
      const sub: Scope = { alias: 'S1', mentions: [] };
      const target = p.needColumn(sub);
      p.expect(' values');
      const q = emptySelect(target.table, 'S1');
      q.columns = [target];
      if (p.eat(' for which ')) q.where = [parseCond(p, sub, null)];
      return { kind: 'in', expr: left, query: q, negated };
    }
  }
  for (const [w, negated] of [
    [' does not contain ', true],
    [' contains ', false],
  ] as const) {
    if (!p.eat(w)) continue;
    const v = p.literal();
    if (typeof v !== 'string' || left.kind !== 'col') throw new ParseError('bad contains');
    return negated ? { kind: 'like', expr: left, pattern: `%${v}%`, negated } : { kind: 'like', expr: left, pattern: `%${v}%` };
  }
  if (left.kind === 'col' && p.eat(' is known')) return { kind: 'null', expr: left, negated: true };
  if (left.kind === 'col' && p.eat(' is missing')) return { kind: 'null', expr: left, negated: false };
  const ops = Object.entries(CMP_WORDS).sort((a, b) => b[1].length - a[1].length);
  for (const [op, w] of ops) {
    if (p.eat(` ${w} `)) {
      const sub = scalarSub(p);
      if (sub) return { kind: 'cmp', left, op: op as '=', right: sub };
      let v = p.literal();
      if (v === null) throw new ParseError('expected a value');
      if (left.kind === 'datepart') v = String(v).padStart(left.part === 'month' ? 2 : 4, '0');
      return { kind: 'cmp', left, op: op as '=', right: lit(v) };
    }
  }
  throw new ParseError('expected a comparison');
}

function baseOf(t: { e: Expr; countOf?: string }): string {
  if (t.countOf) return t.countOf;
  const e = t.e;
  if (e.kind === 'col') return e.table;
  if (e.kind === 'agg' && e.arg.kind === 'col') return e.arg.table;
  if (e.kind === 'arith' && e.left.kind === 'col') return e.left.table;
  throw new ParseError('cannot tell the base table');
}

function parseCore(p: Parser, env: ParseEnv, stopAtSet: boolean): SelectAst {
  const scope: Scope = { alias: '', mentions: [] };
  const targets = [parseExpr(p, scope)];
  const base = baseOf(targets[0]);
  scope.mentions = [base, ...scope.mentions.filter((t) => t !== base)];
  while (p.peek(', the ') || p.peek(' and the ')) {
    if (!p.eat(', ')) p.eat(' and ');
    targets.push(parseExpr(p, scope));
  }
  const q = emptySelect(base);
  q.distinct = targets.some((t) => t.distinct);
  q.columns = targets.map((t) => t.e);
  let group: ColRef | null = null;
  if (p.eat(' for each ')) {
    group = p.needColumn(scope);
    const g = group;
    // "the name for each name": a query that shows only its group (realize.ts says the group as its target).
    const only = q.columns.length === 1 && q.columns[0].kind === 'col' && q.columns[0].table === g.table && q.columns[0].column === g.column && !q.distinct;
    if (!only) q.columns.unshift(g);
    q.groupBy = [g];
  }
  if (p.eat(' where ')) {
    q.where.push(parseCond(p, scope, { outerBase: base, graph: env.graph }));
    while (p.peek(' and the ') || p.peek(' and there is ')) {
      p.eat(' and ');
      q.where.push(parseCond(p, scope, { outerBase: base, graph: env.graph }));
    }
  }
  if (p.eat(', keeping only groups where ')) q.having.push(parseCond(p, scope, null));
  if (p.eat(', sorted by ')) {
    const { e } = parseExpr(p, scope);
    const dir = p.eat(' from highest to lowest') ? 'DESC' : p.eat(' from lowest to highest') ? 'ASC' : null;
    if (!dir) throw new ParseError('missing sort direction');
    q.orderBy = [{ expr: e, dir }];
  }
  if (p.eat(', showing only the top one')) q.limit = 1;
  else if (p.eat(', showing only the top ')) {
    const n = p.literal();
    if (typeof n !== 'number') throw new ParseError('bad limit');
    q.limit = n;
  }
  if (!p.done() && !(stopAtSet && Object.values(SET_WORDS).some((w) => p.peek(w)))) throw new ParseError('trailing text');
  linkTables(q, env, scope.mentions.slice(1));
  implicitRanking(q, env, group);
  return q;
}

/** Joins q's base table to the mentioned ones and gives the outer query's columns their aliases (subqueries keep S1). */
function linkTables(q: SelectAst, env: ParseEnv, mentions: string[]): void {
  const built = buildJoins(env.graph, q.from.table, mentions);
  if (!built) throw new ParseError('tables are not connected');
  q.joins = built.joins;
  outerCols(q, (c) => {
    if (c.alias === '') c.alias = built.aliasOf.get(c.table) ?? 'T1';
  });
}

/** Calls f on each column of q's own clauses: not inside a subquery, except the key an IN compares (the subquery's tables are its own). */
function outerCols(q: SelectAst, f: (c: ColRef) => void): void {
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      const o = node as Record<string, unknown>;
      if (o.kind === 'col') f(o as unknown as ColRef);
      if (o.kind === 'scalar' || o.kind === 'exists') return;
      if (o.kind === 'in') return walk(o.expr);
      for (const v of Object.values(o)) walk(v);
    }
  };
  walk([q.columns, q.where, q.having, q.orderBy, q.groupBy]);
}

/** A query of an intent sentence (intents.ts) with its tables joined and aliased, as parseCore does (each side of a set operation alone). */
function linkIntent(found: IntentQuery, env: ParseEnv): QueryAst {
  const link = (q: SelectAst): SelectAst => {
    const mentions: string[] = [];
    outerCols(q, (c) => {
      if (c.table !== q.from.table && !mentions.includes(c.table)) mentions.push(c.table);
    });
    linkTables(q, env, mentions);
    if (found.ranked) implicitRanking(q, env, q.groupBy[0] ?? null);
    return q;
  };
  const q = found.q;
  return q.kind === 'setop' ? { ...q, left: link(q.left), right: link(q.right) } : link(q);
}

/**
 * The implicit rules of a ranked query, shared by both grammars: ties are broken by the group or the
 * primary key, and only rows whose ranking column is known are ranked.
 */
function implicitRanking(q: SelectAst, env: ParseEnv, group: ColRef | null): void {
  if (!q.orderBy.length) return;
  if (group) {
    q.orderBy.push({ expr: group, dir: 'ASC' });
    return;
  }
  const t = env.schema.tables.find((x) => x.name === q.from.table)!;
  for (const k of t.primaryKey) q.orderBy.push({ expr: col('T1', q.from.table, k), dir: 'ASC' });
  const first = q.orderBy[0].expr;
  if (q.limit !== null && first.kind === 'col') q.where.push({ kind: 'null', expr: first, negated: true });
}

/** Rebuilds a query from a question of the realizer's grammars (intents first), or throws ParseError. */
export function parseQuestion(question: string, env: ParseEnv): QueryAst {
  let found: IntentQuery | null = null;
  try {
    found = parseIntent(question, env.lex, env.graph.edges);
  } catch (e) {
    if (!(e instanceof IntentParseError)) throw e;
  }
  if (found) return linkIntent(found, env);
  const masked = maskLiterals(question);
  const lits = masked.lits;
  let s = masked.text.replace(/[?.]$/, '');
  const prefixes = Object.values(STYLE_PREFIXES)
    .flat()
    .filter((x) => x)
    .sort((a, b) => b.length - a.length);
  const pre = prefixes.find((x) => s.startsWith(x));
  if (pre) s = s.slice(pre.length);
  s = s.charAt(0).toLowerCase() + s.slice(1);
  if (!s.startsWith('the ')) s = 'the ' + s;
  const p = new Parser(s, lits, env.lex);
  const left = parseCore(p, env, true);
  for (const [op, w] of Object.entries(SET_WORDS)) {
    if (p.eat(w)) {
      const right = parseCore(p, env, false);
      return { kind: 'setop', op: op as 'UNION', left, right };
    }
  }
  return left;
}

export function makeParseEnv(schema: DbSchema, graph: SchemaGraph, lex: Lexicon = buildLexicon(schema)): ParseEnv {
  return { schema, graph, lex };
}
