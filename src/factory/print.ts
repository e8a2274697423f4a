/** Prints the factory AST as SQLite SQL with correct identifier quoting. */
import type { Cond, Expr, Literal, QueryAst, SelectAst } from './ast.ts';

const KEYWORDS = new Set(
  ('abort action add after all alter analyze and as asc attach autoincrement before begin between by cascade case cast check ' +
    'collate column commit conflict constraint create cross current current_date current_time current_timestamp database default ' +
    'deferrable deferred delete desc detach distinct do drop each else end escape except exclusive exists explain fail filter for ' +
    'foreign from full glob group having if ignore immediate in index indexed initially inner insert instead intersect into is isnull ' +
    'join key left like limit match natural no not nothing notnull null of offset on or order outer over plan pragma primary query ' +
    'raise recursive references regexp reindex release rename replace restrict right rollback row rows savepoint select set table ' +
    'temp temporary then to transaction trigger union unique update using vacuum values view virtual when where window with without')
    .split(' '),
);

/** Double-quotes an identifier unless it is a plain, non-keyword name. */
export function quoteIdent(name: string): string {
  if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && !KEYWORDS.has(name.toLowerCase())) return name;
  return `"${name.replace(/"/g, '""')}"`;
}

export function printLiteral(v: Literal): string {
  if (v === null) return 'NULL';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : String(v);
  return `'${v.replace(/'/g, "''")}'`;
}

/** Aliases are printed only when the query has more than one table occurrence in scope. */
interface Scope {
  qualify: boolean;
}

function printExpr(e: Expr, s: Scope): string {
  switch (e.kind) {
    case 'col':
      return s.qualify ? `${e.alias}.${quoteIdent(e.column)}` : quoteIdent(e.column);
    case 'lit':
      return printLiteral(e.value);
    case 'star':
      return '*';
    case 'agg':
      return `${e.fn}(${e.distinct ? 'DISTINCT ' : ''}${printExpr(e.arg, s)})`;
    case 'arith':
      // Division is made real so that integer columns do not truncate.
      if (e.op === '/') return `CAST(${printExpr(e.left, s)} AS REAL) / ${printExpr(e.right, s)}`;
      return `${printExpr(e.left, s)} ${e.op} ${printExpr(e.right, s)}`;
    case 'datepart':
      return `strftime('${e.part === 'year' ? '%Y' : '%m'}', ${printExpr(e.arg, s)})`;
    case 'pct':
      return `CAST(SUM(CASE WHEN ${printCond(e.cond, s)} THEN 1 ELSE 0 END) AS REAL) * 100 / COUNT(*)`;
    case 'scalar':
      return `(${printSelect(e.query)})`;
  }
}

function printCond(c: Cond, s: Scope): string {
  switch (c.kind) {
    case 'cmp':
      return `${printExpr(c.left, s)} ${c.op} ${printExpr(c.right, s)}`;
    case 'like':
      return `${printExpr(c.expr, s)} LIKE ${printLiteral(c.pattern)}`;
    case 'null':
      return `${printExpr(c.expr, s)} IS ${c.negated ? 'NOT ' : ''}NULL`;
    case 'in':
      return `${printExpr(c.expr, s)} ${c.negated ? 'NOT ' : ''}IN (${printSelect(c.query)})`;
    case 'exists':
      return `${c.negated ? 'NOT ' : ''}EXISTS (${printSelect(c.query, true)})`;
  }
}

function hasCorrelated(q: SelectAst): boolean {
  return q.where.some((c) => c.kind === 'exists');
}

/** forceQualify: correlated subqueries must qualify their columns to reach the outer alias. */
export function printSelect(q: SelectAst, forceQualify = false): string {
  const s: Scope = { qualify: forceQualify || q.joins.length > 0 || hasCorrelated(q) };
  const from = (t: string, a: string) => (s.qualify ? `${quoteIdent(t)} AS ${a}` : quoteIdent(t));
  let sql = `SELECT ${q.distinct ? 'DISTINCT ' : ''}${q.columns.map((e) => printExpr(e, s)).join(', ')} FROM ${from(q.from.table, q.from.alias)}`;
  for (const j of q.joins) {
    const on = j.on.map((p) => `${printExpr(p.left, s)} = ${printExpr(p.right, s)}`).join(' AND ');
    sql += ` INNER JOIN ${from(j.table, j.alias)} ON ${on}`;
  }
  if (q.where.length) sql += ` WHERE ${q.where.map((c) => printCond(c, s)).join(' AND ')}`;
  if (q.groupBy.length) sql += ` GROUP BY ${q.groupBy.map((e) => printExpr(e, s)).join(', ')}`;
  if (q.having.length) sql += ` HAVING ${q.having.map((c) => printCond(c, s)).join(' AND ')}`;
  if (q.orderBy.length) sql += ` ORDER BY ${q.orderBy.map((o) => `${printExpr(o.expr, s)} ${o.dir}`).join(', ')}`;
  if (q.limit !== null) sql += ` LIMIT ${q.limit}`;
  return sql;
}

/** A condition printed as it would be inside `q` (same alias qualification). */
export function printCondIn(q: SelectAst, c: Cond): string {
  return printCond(c, { qualify: q.joins.length > 0 || hasCorrelated(q) });
}

export function printQuery(q: QueryAst): string {
  if (q.kind === 'select') return printSelect(q);
  return `${printSelect(q.left)} ${q.op} ${printSelect(q.right)}`;
}
