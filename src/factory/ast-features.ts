/**
 * A pair's structure features (sql/features.ts SqlFeatures: what dedup's coverage and the diversity stage's
 * embedding read) taken off the factory's own AST instead of parsing its printed SQL with node-sql-parser, which
 * costs about a millisecond a query and was a seventh of a run's CPU. The reading follows what that parser makes
 * of the SQL print.ts writes, node for node (a NOT EXISTS is its own operator there, so it counts as a negation
 * and not as an EXISTS; an INTERSECT or EXCEPT is parsed side by side), so the features are the parser's: a test
 * holds the two equal on every pair of several synthesized databases. Where the printed SQL leaves that common
 * ground (a name that must be quoted, another dialect, a number in exponent form) it answers null and the caller
 * parses as before.
 */
import type { SqlDialect } from '../sql/dialect.ts';
import { primeSqlFeatures, zeroCounts, type SqlFeatures, type SpiderHardness } from '../sql/features.ts';
import { sqlName } from '../sql/lexer.ts';
import type { Cond, Expr, QueryAst, SelectAst } from './ast.ts';
import { printQuery } from './print.ts';

type Counts = ReturnType<typeof zeroCounts>;

class Unsure extends Error {}

interface Acc {
  f: Counts;
  tables: Set<string>;
  functions: Set<string>;
}

const plainName = (name: string): string => {
  if (sqlName(name) !== name) throw new Unsure();
  return name;
};

function literal(v: unknown): void {
  if (typeof v === 'number' && !/^-?\d+(\.\d+)?$/.test(String(v))) throw new Unsure();
  if (typeof v === 'string' && /[\\\n\r\0]/.test(v)) throw new Unsure();
}

function expr(e: Expr, acc: Acc, depth: number): void {
  switch (e.kind) {
    case 'col':
      plainName(e.column);
      plainName(e.table);
      return;
    case 'lit':
      literal(e.value);
      return;
    case 'star':
      return;
    case 'agg': {
      const name = e.fn.toLowerCase();
      acc.f.aggregates[name] = (acc.f.aggregates[name] ?? 0) + 1;
      if (e.distinct) acc.f.clauses.distinct = true;
      expr(e.arg, acc, depth);
      return;
    }
    case 'arith':
      acc.f.arithmetic++;
      // Division is printed CAST(left AS REAL) / right.
      if (e.op === '/') acc.functions.add('cast');
      expr(e.left, acc, depth);
      expr(e.right, acc, depth);
      return;
    case 'datepart':
      acc.functions.add('strftime');
      expr(e.arg, acc, depth);
      return;
    case 'pct':
      // CAST(SUM(CASE WHEN cond THEN 1 ELSE 0 END) AS REAL) * 100 / COUNT(*): the condition is read as an
      // expression there (its subqueries count, its predicates do not).
      acc.functions.add('cast');
      acc.f.aggregates.sum = (acc.f.aggregates.sum ?? 0) + 1;
      acc.f.aggregates.count = (acc.f.aggregates.count ?? 0) + 1;
      acc.f.caseCount++;
      acc.f.arithmetic += 2;
      condAsExpr(e.cond, acc, depth);
      return;
    case 'scalar':
      acc.f.subqueries++;
      select(e.query, acc, depth + 1);
      return;
  }
}

/** A condition walked as a plain expression (inside CASE WHEN). */
function condAsExpr(c: Cond, acc: Acc, depth: number): void {
  switch (c.kind) {
    case 'or':
      for (const all of c.any) for (const x of all) condAsExpr(x, acc, depth);
      return;
    case 'cmp':
      expr(c.left, acc, depth);
      expr(c.right, acc, depth);
      return;
    case 'like':
      literal(c.pattern);
      expr(c.expr, acc, depth);
      return;
    case 'null':
      expr(c.expr, acc, depth);
      return;
    case 'in':
      expr(c.expr, acc, depth);
      acc.f.subqueries++;
      select(c.query, acc, depth + 1);
      return;
    case 'exists':
      acc.f.subqueries++;
      select(c.query, acc, depth + 1);
      return;
  }
}

/** A WHERE or HAVING conjunct: its predicate leaves and their operators, then the expressions in them. */
function cond(c: Cond, acc: Acc, depth: number): void {
  if (c.kind === 'or') {
    acc.f.ors += c.any.length - 1;
    for (const all of c.any) for (const x of all) cond(x, acc, depth);
    return;
  }
  acc.f.conditions++;
  switch (c.kind) {
    case 'like':
      acc.f.likes++;
      if (c.negated) acc.f.nots++;
      break;
    case 'null':
      acc.f.nullChecks++;
      break;
    case 'in':
      acc.f.ins++;
      if (c.negated) acc.f.nots++;
      break;
    case 'exists':
      // The parser's NOT EXISTS is one operator, not a NOT around an EXISTS call.
      if (c.negated) acc.f.nots++;
      else acc.f.exists++;
      break;
  }
  condAsExpr(c, acc, depth);
}

function select(q: SelectAst, acc: Acc, depth: number): void {
  const f = acc.f;
  f.nestingDepth = Math.max(f.nestingDepth, depth);
  if (q.distinct) f.clauses.distinct = true;
  if (depth === 0) f.selectColumns = Math.max(f.selectColumns, q.columns.length);
  for (const e of q.columns) expr(e, acc, depth);
  f.joins += q.joins.length;
  acc.tables.add(plainName(q.from.table).toLowerCase());
  for (const j of q.joins) {
    acc.tables.add(plainName(j.table).toLowerCase());
    for (const p of j.on) {
      f.conditions++;
      expr(p.left, acc, depth);
      expr(p.right, acc, depth);
    }
  }
  if (q.where.length) f.clauses.where = true;
  for (const c of q.where) cond(c, acc, depth);
  if (q.groupBy.length) f.clauses.groupBy = true;
  for (const e of q.groupBy) expr(e, acc, depth);
  if (q.having.length) f.clauses.having = true;
  for (const c of q.having) cond(c, acc, depth);
  if (q.orderBy.length) f.clauses.orderBy = true;
  for (const o of q.orderBy) expr(o.expr, acc, depth);
  if (q.limit !== null) f.clauses.limit = true;
}

// ---------------------------------------------------------------- Spider hardness (features.ts spiderCounts)

interface Unit {
  not: boolean;
  like: boolean;
  nested: number;
}

function units(c: Cond, out: { units: Unit[]; ors: number }): void {
  if (c.kind === 'or') {
    out.ors += c.any.length - 1;
    for (const all of c.any) for (const x of all) units(x, out);
    return;
  }
  const negated = (c.kind === 'like' || c.kind === 'in' || c.kind === 'exists') && Boolean(c.negated);
  // A subquery counts where it is the right operand (a comparison's, IN's) or EXISTS's argument; NOT EXISTS
  // is a unary operator there, whose operand is not looked at.
  const nested = (c.kind === 'cmp' && c.right.kind === 'scalar') || c.kind === 'in' || (c.kind === 'exists' && !c.negated) ? 1 : 0;
  out.units.push({ not: negated, like: c.kind === 'like', nested });
}

const topAgg = (e: Expr): number => (e.kind === 'agg' ? 1 : 0);
/** An ORDER BY item's aggregates as Spider's val_unit reads them: both sides of one arithmetic operator. */
const valUnitAggs = (e: Expr): number => {
  // pct prints as (... * 100) / COUNT(*); a division's left side is wrapped in CAST.
  if (e.kind === 'pct') return 1;
  if (e.kind === 'arith') return (e.op === '/' ? 0 : topAgg(e.left)) + topAgg(e.right);
  return topAgg(e);
};

function hardness(q: SelectAst, setop: boolean): SpiderHardness {
  const from = { units: [] as Unit[], ors: 0 };
  for (const j of q.joins) for (let k = 0; k < j.on.length; k++) from.units.push({ not: false, like: false, nested: 0 });
  const where = { units: [] as Unit[], ors: 0 };
  for (const c of q.where) units(c, where);
  const having = { units: [] as Unit[], ors: 0 };
  for (const c of q.having) units(c, having);
  const all = [...from.units, ...where.units, ...having.units];
  let c1 = 0;
  if (where.units.length > 0) c1++;
  if (q.groupBy.length > 0) c1++;
  if (q.orderBy.length > 0) c1++;
  if (q.limit !== null) c1++;
  c1 += q.joins.length;
  c1 += from.ors + where.ors + having.ors;
  c1 += all.filter((u) => u.like).length;
  let c2 = all.reduce((s, u) => s + u.nested, 0);
  if (setop) c2++;
  let agg = q.columns.reduce((s, e) => s + topAgg(e), 0);
  agg += where.units.filter((u) => u.not).length;
  agg += q.orderBy.reduce((s, o) => s + valUnitAggs(o.expr), 0);
  agg += having.units.filter((u) => u.not).length;
  let others = 0;
  if (agg > 1) others++;
  if (q.columns.length > 1) others++;
  if (where.units.length > 1) others++;
  if (q.groupBy.length > 1) others++;
  if (c1 <= 1 && others === 0 && c2 === 0) return 'easy';
  if ((others <= 2 && c1 <= 1 && c2 === 0) || (c1 <= 2 && others < 2 && c2 === 0)) return 'medium';
  if ((others > 2 && c1 <= 2 && c2 === 0) || (c1 > 2 && c1 <= 3 && others <= 2 && c2 === 0) || (c1 <= 1 && others === 0 && c2 <= 1)) return 'hard';
  return 'extra';
}

/** The features node-sql-parser's reading of printQuery(q, d) gives, or null where this reading is not sure of them. */
export function astSqlFeatures(q: QueryAst, d: SqlDialect = 'sqlite'): SqlFeatures | null {
  if (d !== 'sqlite') return null;
  const acc: Acc = {
    f: zeroCounts(),
    tables: new Set(),
    functions: new Set(),
  };
  try {
    if (q.kind === 'select') select(q, acc, 0);
    else {
      // A side with its own ORDER BY or LIMIT would bind differently around the operator.
      for (const side of [q.left, q.right]) if (side.orderBy.length || side.limit !== null) return null;
      select(q.left, acc, 0);
      acc.f.setOps.push(q.op.toLowerCase());
      select(q.right, acc, 0);
    }
  } catch (err) {
    if (err instanceof Unsure) return null;
    throw err;
  }
  // SqlFeatures' key order, as features.ts builds it (its cached objects are compared and printed whole).
  const { clauses, joins, aggregates, nestingDepth, subqueries, setOps, caseCount, arithmetic, conditions, ors, likes, nots, ins, betweens, exists, nullChecks, selectColumns, window } = acc.f;
  return {
    parsed: true,
    clauses,
    joins,
    aggregates,
    functions: [...acc.functions].sort(),
    nestingDepth,
    subqueries,
    setOps,
    caseCount,
    arithmetic,
    conditions,
    ors,
    likes,
    nots,
    ins,
    betweens,
    exists,
    nullChecks,
    selectColumns,
    window,
    tables: [...acc.tables].sort(),
    hardness: hardness(q.kind === 'select' ? q : q.left, q.kind === 'setop'),
  };
}

/**
 * Gives sql/features.ts the features of pairs whose SQL is their AST's print, read off the AST, so that the
 * stages after (dedup's coverage, the diversity embedding) find them cached and parse only the rest.
 */
export function primePairFeatures(pairs: ReadonlyArray<{ sql: string; ast: QueryAst }>, d: SqlDialect = 'sqlite'): void {
  for (const p of pairs) {
    const f = astSqlFeatures(p.ast, d);
    if (f && printQuery(p.ast, d) === p.sql) primeSqlFeatures(p.sql, f);
  }
}
