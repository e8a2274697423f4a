/**
 * A small typed AST for the SELECT subset the factory synthesizes. Every node here can be
 * printed as SQLite SQL (print.ts), realized as a question (language/realize.ts) and parsed back from that
 * question (language/general-parse.ts), so the subset is deliberately closed: add a node only with all three.
 */

export type Literal = string | number | null;

/** A column of a table occurrence in the FROM clause (alias is the occurrence, e.g. T1). */
export interface ColRef {
  kind: 'col';
  alias: string;
  table: string;
  column: string;
}

export type AggFn = 'COUNT' | 'SUM' | 'AVG' | 'MIN' | 'MAX';
export type ArithOp = '+' | '-' | '*' | '/';
export type CmpOp = '=' | '<>' | '>' | '<' | '>=' | '<=';

export type Expr =
  | ColRef
  | { kind: 'lit'; value: Literal }
  | { kind: 'star' }
  /** COUNT(*) is agg COUNT over star. */
  | { kind: 'agg'; fn: AggFn; arg: Expr; distinct: boolean }
  | { kind: 'arith'; op: ArithOp; left: Expr; right: Expr }
  /** strftime(fmt, col): the year ('%Y') or month ('%m') of an ISO date/time text column. */
  | { kind: 'datepart'; part: 'year' | 'month'; arg: ColRef }
  /** The share, in percent, of rows where cond holds: SUM(CASE WHEN c THEN 1 ELSE 0 END)*100.0/COUNT(*). */
  | { kind: 'pct'; cond: Cond }
  /** A scalar subquery: one row, one column. */
  | { kind: 'scalar'; query: SelectAst };

export type Cond =
  | { kind: 'cmp'; left: Expr; op: CmpOp; right: Expr }
  /** negated: NOT LIKE (absent reads as false, so the factory's own LIKE filters keep their shape). */
  | { kind: 'like'; expr: ColRef; pattern: string; negated?: boolean }
  | { kind: 'null'; expr: ColRef; negated: boolean }
  | { kind: 'in'; expr: ColRef; query: SelectAst; negated: boolean }
  /** Correlated EXISTS: rows of `query` linked to the outer row by `link` (inner col = outer col). */
  | { kind: 'exists'; query: SelectAst; negated: boolean }
  /** A disjunction of conjunctions: `a OR b AND c` is any [[a], [b, c]]; at least two alternatives. */
  | { kind: 'or'; any: Cond[][] };

export interface JoinStep {
  table: string;
  alias: string;
  /** Equalities (left is an earlier alias, right is this alias); several for composite keys. */
  on: Array<{ left: ColRef; right: ColRef }>;
}

export interface OrderItem {
  expr: Expr;
  dir: 'ASC' | 'DESC';
}

export interface SelectAst {
  kind: 'select';
  distinct: boolean;
  columns: Expr[];
  from: { table: string; alias: string };
  joins: JoinStep[];
  /** Conjunction. */
  where: Cond[];
  groupBy: ColRef[];
  /** Conjunction. */
  having: Cond[];
  orderBy: OrderItem[];
  limit: number | null;
}

export interface SetOpAst {
  kind: 'setop';
  op: 'UNION' | 'INTERSECT' | 'EXCEPT';
  left: SelectAst;
  right: SelectAst;
}

export type QueryAst = SelectAst | SetOpAst;

export function col(alias: string, table: string, column: string): ColRef {
  return { kind: 'col', alias, table, column };
}

export function lit(value: Literal): Expr {
  return { kind: 'lit', value };
}

export function emptySelect(table: string, alias = 'T1'): SelectAst {
  return {
    kind: 'select',
    distinct: false,
    columns: [],
    from: { table, alias },
    joins: [],
    where: [],
    groupBy: [],
    having: [],
    orderBy: [],
    limit: null,
  };
}

/** The NOT NULL guard of a ranked query: `c` keeps NULLs out of the first ORDER BY column of a LIMIT query. */
export function isRankGuard(q: SelectAst, c: Cond): boolean {
  const first = q.orderBy[0]?.expr;
  return q.limit !== null && first?.kind === 'col' && c.kind === 'null' && c.negated && c.expr.alias === first.alias && c.expr.column === first.column;
}

/** A copy of condition c with every column of alias `from` moved to alias `to` (into a subquery's S1, say). */
export function renameAlias(c: Cond, from: string, to: string): Cond {
  return JSON.parse(JSON.stringify(c).replaceAll(`"alias":"${from}"`, `"alias":"${to}"`)) as Cond;
}
