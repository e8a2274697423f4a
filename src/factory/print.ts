/**
 * Prints the factory AST as SQL in the engine's dialect (SQLite by default) with correct identifier
 * quoting; src/sql/dialect.ts holds the spellings that differ between engines.
 */
import type { Cond, Expr, Literal, QueryAst, SelectAst } from './ast.ts';
import { asReal, datePart, likeOp, nameIn, type SqlDialect } from '../sql/dialect.ts';

export function printLiteral(v: Literal): string {
  if (v === null) return 'NULL';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : String(v);
  return `'${v.replace(/'/g, "''")}'`;
}

/** Aliases are printed only when the query has more than one table occurrence in scope. */
interface Scope {
  qualify: boolean;
  d: SqlDialect;
}

function printExpr(e: Expr, s: Scope): string {
  switch (e.kind) {
    case 'col':
      return s.qualify ? `${e.alias}.${nameIn(e.column, s.d)}` : nameIn(e.column, s.d);
    case 'lit':
      return printLiteral(e.value);
    case 'star':
      return '*';
    case 'agg':
      return `${e.fn}(${e.distinct ? 'DISTINCT ' : ''}${printExpr(e.arg, s)})`;
    case 'arith':
      // Division is made real so that integer columns do not truncate.
      if (e.op === '/') return `${asReal(printExpr(e.left, s), s.d)} / ${printExpr(e.right, s)}`;
      return `${printExpr(e.left, s)} ${e.op} ${printExpr(e.right, s)}`;
    case 'datepart':
      return datePart(e.part, printExpr(e.arg, s), s.d);
    case 'pct':
      return `${asReal(`SUM(CASE WHEN ${printCond(e.cond, s)} THEN 1 ELSE 0 END)`, s.d)} * 100 / COUNT(*)`;
    case 'scalar':
      return `(${printSelect(e.query, false, s.d)})`;
  }
}

function printCond(c: Cond, s: Scope): string {
  switch (c.kind) {
    case 'cmp':
      return `${printExpr(c.left, s)} ${c.op} ${printExpr(c.right, s)}`;
    case 'like':
      return `${printExpr(c.expr, s)} ${c.negated ? 'NOT ' : ''}${likeOp(s.d)} ${printLiteral(c.pattern)}`;
    case 'null':
      return `${printExpr(c.expr, s)} IS ${c.negated ? 'NOT ' : ''}NULL`;
    case 'in':
      return `${printExpr(c.expr, s)} ${c.negated ? 'NOT ' : ''}IN (${printSelect(c.query, false, s.d)})`;
    case 'exists':
      return `${c.negated ? 'NOT ' : ''}EXISTS (${printSelect(c.query, true, s.d)})`;
    case 'or':
      // Parenthesized whole: the WHERE around it is a conjunction, and AND binds tighter than OR.
      return `(${c.any.map((all) => all.map((x) => printCond(x, s)).join(' AND ')).join(' OR ')})`;
  }
}

function hasCorrelated(q: SelectAst): boolean {
  return q.where.some((c) => c.kind === 'exists');
}

/** forceQualify: correlated subqueries must qualify their columns to reach the outer alias. */
export function printSelect(q: SelectAst, forceQualify = false, d: SqlDialect = 'sqlite'): string {
  const s: Scope = { qualify: forceQualify || q.joins.length > 0 || hasCorrelated(q), d };
  const from = (t: string, a: string) => (s.qualify ? `${nameIn(t, d)} AS ${a}` : nameIn(t, d));
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
export function printCondIn(q: SelectAst, c: Cond, d: SqlDialect = 'sqlite'): string {
  return printCond(c, { qualify: q.joins.length > 0 || hasCorrelated(q), d });
}

export function printQuery(q: QueryAst, d: SqlDialect = 'sqlite'): string {
  if (q.kind === 'select') return printSelect(q, false, d);
  return `${printSelect(q.left, false, d)} ${q.op} ${printSelect(q.right, false, d)}`;
}
