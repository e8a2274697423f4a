/**
 * Structure features of a SQL query (gold or generated), for dedup, diversity and difficulty:
 * clauses, joins, tables, aggregates, functions, nesting, set operations, CASE, arithmetic; a
 * canonical skeleton with literals masked; a fixed-length numeric vector; and Spider's hardness.
 *
 * node-sql-parser (sqlite dialect) does the parsing. It rejects some valid SQLite (INTERSECT and
 * EXCEPT in this dialect, NULLS LAST, ...): set operations are split at top level and parsed part
 * by part; anything still unparsed falls back to a token-level analysis, flagged `parsed: false`.
 */
import { createRequire } from 'node:module';
import type { Parser as SqlParser } from 'node-sql-parser';
import { quoteIdent, quoteString, SQL_KEYWORDS as KEYWORDS, tokenize } from './lexer.ts';

/**
 * The parser, made on the first query parsed: node-sql-parser takes about a second to load, and many commands
 * import this module (through the factory, the judge, the data splits) without parsing anything (a usage error,
 * `--help`, `agro memory list`). It is CommonJS, so a require() loads it synchronously where it is first needed.
 */
let parserInstance: SqlParser | undefined;
function sqlParser(): SqlParser {
  if (!parserInstance) {
    const { Parser } = createRequire(import.meta.url)('node-sql-parser') as typeof import('node-sql-parser');
    parserInstance = new Parser();
  }
  return parserInstance;
}

/** Keywords that are also functions when a parenthesis follows: `replace(x, 'a', 'b')`, `cast(x AS int)`. */
const FUNCTION_KEYWORDS = new Set(['cast', 'replace']);
const AGGREGATES = new Set(['count', 'sum', 'avg', 'min', 'max', 'total', 'group_concat']);
/** Marks a function name while joining the skeleton (a character no token can contain). */
const FN = '\u0001';
const COMPARISON = new Set(['=', '==', '!=', '<>', '<', '>', '<=', '>=']);

/** Canonical text of a query with its literals kept: equal for queries that differ only in layout or case. */
export function normalizeSql(sql: string): string {
  return sqlSkeleton(sql, { maskLiterals: false });
}

/**
 * Canonical skeleton for dedup: keywords upper-cased, literals masked as `?`, IN lists collapsed,
 * identifiers lower-cased (or masked as `_` with maskIdentifiers). Double-quoted text right after a
 * comparison or LIKE is a value (SQLite's lenient rule that BIRD's gold SQL leans on), not a name.
 */
export function sqlSkeleton(sql: string, opts: { maskIdentifiers?: boolean; maskLiterals?: boolean } = {}): string {
  const maskLiterals = opts.maskLiterals ?? true;
  const toks = tokenize(sql.trim().replace(/;\s*$/, ''));
  const parts: string[] = [];
  for (let k = 0; k < toks.length; k++) {
    const t = toks[k];
    const prev = k > 0 ? toks[k - 1] : undefined;
    const afterCompare = prev !== undefined && (COMPARISON.has(prev.text) || /^(like|glob)$/i.test(prev.text));
    if (!maskLiterals && (t.kind === 'str' || t.kind === 'num' || (t.kind === 'qid' && afterCompare))) {
      parts.push(t.kind === 'num' ? t.text : quoteString(t.text));
      continue;
    }
    if (t.kind === 'str' || t.kind === 'num' || (t.kind === 'qid' && afterCompare)) {
      // A unary minus belongs to the literal: `a = -5` and `a = 5` share a skeleton; `a - 5` keeps its minus.
      const before = k >= 2 ? toks[k - 2] : undefined;
      const unary = !before || before.kind === 'op' || before.text === '(' || before.text === ',' || (before.kind === 'word' && KEYWORDS.has(before.text.toLowerCase()));
      if (prev?.text === '-' && unary) parts.pop();
      parts.push('?');
      continue;
    }
    if (t.kind === 'word' && KEYWORDS.has(t.text.toLowerCase()) && !(FUNCTION_KEYWORDS.has(t.text.toLowerCase()) && toks[k + 1]?.text === '(')) {
      parts.push(t.text.toUpperCase());
      continue;
    }
    if (t.kind === 'word' && toks[k + 1]?.text === '(') {
      parts.push(t.text.toLowerCase() + FN); // function names are structure, never masked
      continue;
    }
    if (t.kind === 'word' || t.kind === 'qid') {
      const name = t.text.toLowerCase();
      parts.push(opts.maskIdentifiers ? '_' : /^[a-z_][a-z0-9_$]*$/.test(name) ? name : quoteIdent(name));
      continue;
    }
    parts.push(t.text);
  }
  let s = parts
    .join(' ')
    .replace(new RegExp(FN + ' \\(', 'g'), '(')
    .replace(/ \. /g, '.')
    .replace(/\( /g, '(')
    .replace(/ \)/g, ')')
    .replace(/ ,/g, ',');
  // IN (?, ?, ?) → IN (?): the number of listed values is not structure.
  if (maskLiterals) s = s.replace(/\((\?(?:, \?)+)\)/g, '(?)');
  if (opts.maskIdentifiers) s = s.replace(/_\._/g, '_');
  return s;
}

// ---------------------------------------------------------------- features

export interface SqlFeatures {
  /** False when node-sql-parser rejected the query and the token-level analysis was used. */
  parsed: boolean;
  clauses: { where: boolean; groupBy: boolean; having: boolean; orderBy: boolean; limit: boolean; distinct: boolean };
  /** JOINs (explicit or comma) across the whole query. */
  joins: number;
  /** Distinct tables touched, lower-cased, sorted. */
  tables: string[];
  /** Aggregate calls by function name (lower-cased), e.g. { count: 2, avg: 1 }. */
  aggregates: Record<string, number>;
  /** Distinct non-aggregate functions (lower-cased, sorted), CAST included as 'cast'. */
  functions: string[];
  /** 0 for a flat query; 1 when a subquery appears; 2 for a subquery inside a subquery... */
  nestingDepth: number;
  subqueries: number;
  /** Set operations in order: 'union', 'union all', 'intersect', 'except'. */
  setOps: string[];
  caseCount: number;
  /** Arithmetic operators (+ - * / %). */
  arithmetic: number;
  /** Predicate leaves in WHERE/HAVING/ON. */
  conditions: number;
  ors: number;
  likes: number;
  nots: number;
  ins: number;
  betweens: number;
  exists: number;
  nullChecks: number;
  selectColumns: number;
  window: boolean;
  hardness: SpiderHardness;
}

export type SpiderHardness = 'easy' | 'medium' | 'hard' | 'extra';
export const SPIDER_HARDNESS: readonly SpiderHardness[] = ['easy', 'medium', 'hard', 'extra'];

type Node = { [k: string]: unknown };
const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Parse into a chain of SELECT nodes linked by `_next`/`set_op`, or null when the parser fails. */
function parseSelect(sql: string): Node | null {
  const text = sql.trim().replace(/;\s*$/, '');
  const tryOne = (s: string): Node | null => {
    try {
      const ast = sqlParser().astify(s, { database: 'sqlite' });
      const one = Array.isArray(ast) ? (ast.length === 1 ? ast[0] : null) : ast;
      return isNode(one) && one.type === 'select' ? (one as unknown as Node) : null;
    } catch {
      return null;
    }
  };
  const whole = tryOne(text);
  if (whole) return whole;
  // Split at top-level INTERSECT/EXCEPT/UNION and parse each side.
  const parts = splitSetOps(text);
  if (parts.length < 2) return null;
  const nodes: Node[] = [];
  for (const p of parts) {
    const node = tryOne(p.sql);
    if (!node) return null;
    nodes.push(node);
  }
  for (let i = 0; i < nodes.length - 1; i++) {
    let tail = nodes[i];
    while (isNode(tail._next)) tail = tail._next;
    tail._next = nodes[i + 1];
    tail.set_op = parts[i + 1].op;
  }
  return nodes[0];
}

function splitSetOps(sql: string): Array<{ sql: string; op: string }> {
  const re = /'(?:[^']|'')*'|"(?:[^"]|"")*"|`[^`]*`|\[[^\]]*\]|[()]|\b(UNION\s+ALL|UNION|INTERSECT|EXCEPT)\b/gi;
  const out: Array<{ sql: string; op: string }> = [];
  let depth = 0;
  let start = 0;
  let op = '';
  for (let m = re.exec(sql); m; m = re.exec(sql)) {
    if (m[0] === '(') depth++;
    else if (m[0] === ')') depth--;
    else if (m[1] && depth === 0) {
      out.push({ sql: sql.slice(start, m.index).trim(), op });
      op = m[1].toLowerCase().replace(/\s+/g, ' ');
      start = m.index + m[0].length;
    }
  }
  out.push({ sql: sql.slice(start).trim(), op });
  return out;
}

function funcName(node: Node): string {
  const name = node.name;
  if (typeof name === 'string') return name.toLowerCase();
  if (isNode(name) && Array.isArray(name.name)) {
    return (name.name as Node[]).map((p) => String(p.value ?? '')).join('.').toLowerCase();
  }
  return '';
}

/** A subquery wrapper as node-sql-parser emits it: { ast: {type:'select'} }. */
const subSelect = (v: unknown): Node | null =>
  isNode(v) && isNode(v.ast) && v.ast.type === 'select' ? v.ast : null;

interface Acc {
  f: Omit<SqlFeatures, 'parsed' | 'hardness' | 'tables'>;
  tables: Set<string>;
  functions: Set<string>;
  cteNames: Set<string>;
}

/** A query's counts before any of it is read: the one home of the features' zero (factory/ast-features reads the same). */
export function zeroCounts(): Omit<SqlFeatures, 'parsed' | 'hardness' | 'tables' | 'functions'> {
  return {
    clauses: { where: false, groupBy: false, having: false, orderBy: false, limit: false, distinct: false },
    joins: 0,
    aggregates: {},
    nestingDepth: 0,
    subqueries: 0,
    setOps: [],
    caseCount: 0,
    arithmetic: 0,
    conditions: 0,
    ors: 0,
    likes: 0,
    nots: 0,
    ins: 0,
    betweens: 0,
    exists: 0,
    nullChecks: 0,
    selectColumns: 0,
    window: false,
  };
}

function newAcc(): Acc {
  return {
    f: { ...zeroCounts(), functions: [] },
    tables: new Set(),
    functions: new Set(),
    cteNames: new Set(),
  };
}

const LOGIC = new Set(['AND', 'OR']);
const ARITH = new Set(['+', '-', '*', '/', '%']);

/** Count predicate leaves and their operators in a condition tree. */
function visitCondition(node: unknown, acc: Acc, depth: number): void {
  if (!isNode(node)) return;
  if (node.type === 'binary_expr' && LOGIC.has(String(node.operator).toUpperCase())) {
    if (String(node.operator).toUpperCase() === 'OR') acc.f.ors++;
    visitCondition(node.left, acc, depth);
    visitCondition(node.right, acc, depth);
    return;
  }
  acc.f.conditions++;
  let leaf = node;
  if (leaf.type === 'unary_expr' && String(leaf.operator).toUpperCase() === 'NOT') {
    acc.f.nots++;
    if (isNode(leaf.expr)) leaf = leaf.expr;
  }
  const op = String(leaf.operator ?? '').toUpperCase();
  if (op.startsWith('NOT ')) acc.f.nots++;
  if (op.endsWith('LIKE') || op.endsWith('GLOB')) acc.f.likes++;
  if (op.endsWith('IN')) acc.f.ins++;
  if (op.endsWith('BETWEEN')) acc.f.betweens++;
  if (op === 'IS' || op === 'IS NOT') acc.f.nullChecks++;
  if (leaf.type === 'function' && funcName(leaf) === 'exists') acc.f.exists++;
  visitExpr(node, acc, depth);
}

function visitExpr(node: unknown, acc: Acc, depth: number): void {
  if (Array.isArray(node)) {
    for (const x of node) visitExpr(x, acc, depth);
    return;
  }
  if (!isNode(node)) return;
  const sub = subSelect(node);
  if (sub) {
    acc.f.subqueries++;
    visitSelect(sub, acc, depth + 1);
    return;
  }
  if (node.type === 'select') {
    visitSelect(node, acc, depth);
    return;
  }
  switch (node.type) {
    case 'aggr_func': {
      const name = funcName(node);
      acc.f.aggregates[name] = (acc.f.aggregates[name] ?? 0) + 1;
      if (isNode(node.args) && node.args.distinct) acc.f.clauses.distinct = true;
      break;
    }
    case 'function': {
      const name = funcName(node);
      if (name === 'exists') break;
      if (AGGREGATES.has(name)) acc.f.aggregates[name] = (acc.f.aggregates[name] ?? 0) + 1;
      else acc.functions.add(name);
      break;
    }
    case 'cast':
      acc.functions.add('cast');
      break;
    case 'case':
      acc.f.caseCount++;
      break;
    case 'binary_expr':
      if (ARITH.has(String(node.operator))) acc.f.arithmetic++;
      break;
  }
  if (node.over) acc.f.window = true;
  for (const [k, v] of Object.entries(node)) {
    if (k === 'over' && v) continue;
    if (typeof v === 'object' && v !== null) visitExpr(v, acc, depth);
  }
}

function visitSelect(sel: Node, acc: Acc, depth: number): void {
  acc.f.nestingDepth = Math.max(acc.f.nestingDepth, depth);
  if (Array.isArray(sel.with)) {
    for (const w of sel.with as Node[]) {
      if (isNode(w.name)) acc.cteNames.add(String(w.name.value).toLowerCase());
      const body = isNode(w.stmt) ? (w.stmt.ast as Node | undefined) : undefined;
      if (body) {
        acc.f.subqueries++;
        visitSelect(body, acc, depth + 1);
      }
    }
  }
  const c = acc.f.clauses;
  if (sel.distinct) c.distinct = true;
  if (depth === 0 && Array.isArray(sel.columns)) acc.f.selectColumns = Math.max(acc.f.selectColumns, sel.columns.length);
  visitExpr(sel.columns, acc, depth);
  if (Array.isArray(sel.from)) {
    const from = sel.from as Node[];
    acc.f.joins += Math.max(0, from.length - 1);
    for (const item of from) {
      if (typeof item.table === 'string') acc.tables.add(item.table.toLowerCase());
      const sub = subSelect(item.expr);
      if (sub) {
        acc.f.subqueries++;
        visitSelect(sub, acc, depth + 1);
      }
      if (item.on) visitCondition(item.on, acc, depth);
    }
  }
  if (sel.where) {
    c.where = true;
    visitCondition(sel.where, acc, depth);
  }
  if (isNode(sel.groupby) && Array.isArray(sel.groupby.columns) && sel.groupby.columns.length > 0) {
    c.groupBy = true;
    visitExpr(sel.groupby.columns, acc, depth);
  }
  if (sel.having) {
    c.having = true;
    visitCondition(sel.having, acc, depth);
  }
  if (Array.isArray(sel.orderby) && sel.orderby.length > 0) {
    c.orderBy = true;
    visitExpr(sel.orderby, acc, depth);
  }
  if (isNode(sel.limit) && Array.isArray(sel.limit.value) && sel.limit.value.length > 0) c.limit = true;
  if (isNode(sel._next)) {
    acc.f.setOps.push(String(sel.set_op ?? 'union').toLowerCase());
    visitSelect(sel._next, acc, depth);
  }
}

/**
 * Parsing costs milliseconds; dedup, embedding and hardness ask about the same queries again (the factory embeds
 * the same pairs more than once: selection, then the coverage of the final set). The oldest entry goes first.
 */
const CACHE_MAX = 50_000;
const cache = new Map<string, SqlFeatures>();

/** Structure features of one query, the cached object itself: for callers that only read it (embedding's hot loop). */
export function sqlFeaturesShared(sql: string): Readonly<SqlFeatures> {
  let f = cache.get(sql);
  if (!f) {
    f = computeFeatures(sql);
    cache.set(sql, f);
    if (cache.size > CACHE_MAX) cache.delete(cache.keys().next().value!);
  }
  return f;
}

/**
 * Gives the cache the features of `sql` where a caller knows them without parsing (the factory reads its own
 * AST: factory/ast-features.ts); features already cached stay.
 */
export function primeSqlFeatures(sql: string, f: SqlFeatures): void {
  if (cache.has(sql)) return;
  cache.set(sql, f);
  if (cache.size > CACHE_MAX) cache.delete(cache.keys().next().value!);
}

/** Structure features of one query, the caller's own copy. Never throws: unparseable SQL gets token-level features. */
export function sqlFeatures(sql: string): SqlFeatures {
  return structuredClone(sqlFeaturesShared(sql));
}

function computeFeatures(sql: string): SqlFeatures {
  const ast = parseSelect(sql);
  if (!ast) return tokenFeatures(sql);
  const acc = newAcc();
  visitSelect(ast, acc, 0);
  for (const name of acc.cteNames) acc.tables.delete(name);
  return {
    parsed: true,
    ...acc.f,
    tables: [...acc.tables].sort(),
    functions: [...acc.functions].sort(),
    hardness: hardnessFromAst(ast),
  };
}

/** The token-level fallback: keyword counts, with paren depth standing in for nesting. */
function tokenFeatures(sql: string): SqlFeatures {
  const acc = newAcc();
  const f = acc.f;
  const toks = tokenize(sql);
  const low = (k: number): string => (toks[k]?.kind === 'word' ? toks[k].text.toLowerCase() : '');
  let depth = 0;
  const selectDepths: number[] = [];
  for (let k = 0; k < toks.length; k++) {
    const t = toks[k];
    const w = low(k);
    if (t.text === '(') depth++;
    else if (t.text === ')') depth--;
    if (w === 'select') selectDepths.push(depth);
    if (w === 'where') f.clauses.where = true;
    if (w === 'group' && low(k + 1) === 'by') f.clauses.groupBy = true;
    if (w === 'having') f.clauses.having = true;
    if (w === 'order' && low(k + 1) === 'by') f.clauses.orderBy = true;
    if (w === 'limit') f.clauses.limit = true;
    if (w === 'distinct') f.clauses.distinct = true;
    if (w === 'join') f.joins++;
    if ((w === 'from' || w === 'join') && toks[k + 1] && toks[k + 1].text !== '(') {
      const n = toks[k + 1];
      if (n.kind === 'word' || n.kind === 'qid') acc.tables.add(n.text.toLowerCase());
    }
    if (t.kind === 'word' && toks[k + 1]?.text === '(') {
      if (AGGREGATES.has(w)) f.aggregates[w] = (f.aggregates[w] ?? 0) + 1;
      else if (!KEYWORDS.has(w) || FUNCTION_KEYWORDS.has(w)) acc.functions.add(w);
    }
    if (w === 'union') f.setOps.push(low(k + 1) === 'all' ? 'union all' : 'union');
    if (w === 'intersect' || w === 'except') f.setOps.push(w);
    if (w === 'case') f.caseCount++;
    if (w === 'or') f.ors++;
    if (w === 'like' || w === 'glob') f.likes++;
    if (w === 'not') f.nots++;
    if (w === 'in') f.ins++;
    if (w === 'between') f.betweens++;
    if (w === 'exists') f.exists++;
    if (w === 'is') f.nullChecks++;
    if (w === 'over') f.window = true;
    if (t.kind === 'op' && COMPARISON.has(t.text)) f.conditions++;
    if (t.kind === 'op' && ARITH.has(t.text)) {
      const prev = toks[k - 1];
      const isStar = t.text === '*' && (!prev || prev.text === '(' || prev.text === ',' || prev.text === '.' || /^(select|distinct)$/i.test(prev.text));
      if (!isStar) f.arithmetic++;
    }
  }
  if (selectDepths.length > 0) {
    const base = selectDepths[0];
    f.subqueries = selectDepths.filter((d) => d > base).length;
    f.nestingDepth = Math.max(0, ...selectDepths.map((d) => d - base));
  }
  f.conditions += f.likes + f.betweens + f.exists + f.nullChecks;
  return {
    parsed: false,
    ...f,
    tables: [...acc.tables].sort(),
    functions: [...acc.functions].sort(),
    hardness: hardnessFromTokens(f),
  };
}

// ---------------------------------------------------------------- Spider hardness

/**
 * Spider's eval_hardness (taoyds/spider evaluation.py), on the outermost (left-most) SELECT:
 * component1 = WHERE, GROUP BY, ORDER BY, LIMIT (1 each) + (tables in FROM − 1) + ORs + LIKEs in
 * ON/WHERE/HAVING; component2 = subqueries used as condition values + 1 for a following set
 * operation; others = [aggregates > 1] + [select columns > 1] + [WHERE conditions > 1] + [GROUP BY
 * columns > 1]. Spider's count_agg over WHERE/HAVING condition units reads the unit's NOT flag
 * (its first field), so negated conditions count there instead of aggregates; kept as-is so
 * labels match the official script.
 */
export function spiderHardnessCounts(sql: string): { component1: number; component2: number; others: number; parsed: boolean } {
  const ast = parseSelect(sql);
  if (ast) return { ...spiderCounts(ast), parsed: true };
  const f = tokenFeatures(sql);
  return { ...tokenCounts(f), parsed: false };
}

export function spiderHardness(sql: string): SpiderHardness {
  return sqlFeatures(sql).hardness;
}

function classify(c1: number, c2: number, others: number): SpiderHardness {
  if (c1 <= 1 && others === 0 && c2 === 0) return 'easy';
  if ((others <= 2 && c1 <= 1 && c2 === 0) || (c1 <= 2 && others < 2 && c2 === 0)) return 'medium';
  if (
    (others > 2 && c1 <= 2 && c2 === 0) ||
    (c1 > 2 && c1 <= 3 && others <= 2 && c2 === 0) ||
    (c1 <= 1 && others === 0 && c2 <= 1)
  ) {
    return 'hard';
  }
  return 'extra';
}

interface CondUnit {
  not: boolean;
  like: boolean;
  nested: number;
}

function condUnits(node: unknown, out: { units: CondUnit[]; ors: number }): void {
  if (!isNode(node)) return;
  const op = String(node.operator ?? '').toUpperCase();
  if (node.type === 'binary_expr' && LOGIC.has(op)) {
    if (op === 'OR') out.ors++;
    condUnits(node.left, out);
    condUnits(node.right, out);
    return;
  }
  let leaf = node;
  let not = false;
  if (leaf.type === 'unary_expr' && String(leaf.operator).toUpperCase() === 'NOT' && isNode(leaf.expr)) {
    not = true;
    leaf = leaf.expr;
  }
  const lop = String(leaf.operator ?? '').toUpperCase();
  if (lop.startsWith('NOT ')) not = true;
  let nested = 0;
  const operands: unknown[] = [];
  if (leaf.type === 'function' && funcName(leaf) === 'exists' && isNode(leaf.args)) operands.push(...((leaf.args.value as unknown[]) ?? []));
  else {
    operands.push(leaf.right);
    if (isNode(leaf.right) && leaf.right.type === 'expr_list' && Array.isArray(leaf.right.value)) operands.push(...leaf.right.value);
  }
  for (const o of operands) if (subSelect(o)) nested++;
  out.units.push({ not, like: lop.endsWith('LIKE'), nested });
}

const topAgg = (v: unknown): number => (isNode(v) && v.type === 'aggr_func' ? 1 : 0);
/** Spider's val_unit holds at most two column units joined by one arithmetic operator. */
const valUnitAggs = (v: unknown): number =>
  isNode(v) && v.type === 'binary_expr' && ARITH.has(String(v.operator)) ? topAgg(v.left) + topAgg(v.right) : topAgg(v);

function spiderCounts(sel: Node): { component1: number; component2: number; others: number } {
  const from = Array.isArray(sel.from) ? (sel.from as Node[]) : [];
  const fromConds = { units: [] as CondUnit[], ors: 0 };
  for (const item of from) if (item.on) condUnits(item.on, fromConds);
  const where = { units: [] as CondUnit[], ors: 0 };
  condUnits(sel.where, where);
  const having = { units: [] as CondUnit[], ors: 0 };
  condUnits(sel.having, having);
  const groupCols = isNode(sel.groupby) && Array.isArray(sel.groupby.columns) ? (sel.groupby.columns as unknown[]) : [];
  const orderBy = Array.isArray(sel.orderby) ? (sel.orderby as Node[]) : [];
  const hasLimit = isNode(sel.limit) && Array.isArray(sel.limit.value) && sel.limit.value.length > 0;
  const all = [...fromConds.units, ...where.units, ...having.units];

  let c1 = 0;
  if (where.units.length > 0) c1++;
  if (groupCols.length > 0) c1++;
  if (orderBy.length > 0) c1++;
  if (hasLimit) c1++;
  if (from.length > 0) c1 += from.length - 1;
  c1 += fromConds.ors + where.ors + having.ors;
  c1 += all.filter((u) => u.like).length;

  let c2 = all.reduce((s, u) => s + u.nested, 0);
  if (isNode(sel._next)) c2++;

  const columns = Array.isArray(sel.columns) ? (sel.columns as Node[]) : [];
  let agg = columns.reduce((s, col) => s + topAgg(col.expr), 0);
  agg += where.units.filter((u) => u.not).length;
  agg += groupCols.reduce((s: number, g) => s + topAgg(g), 0);
  agg += orderBy.reduce((s, o) => s + valUnitAggs(o.expr), 0);
  agg += having.units.filter((u) => u.not).length;
  let others = 0;
  if (agg > 1) others++;
  if (columns.length > 1) others++;
  if (where.units.length > 1) others++;
  if (groupCols.length > 1) others++;
  return { component1: c1, component2: c2, others };
}

function hardnessFromAst(ast: Node): SpiderHardness {
  const c = spiderCounts(ast);
  return classify(c.component1, c.component2, c.others);
}

/** Whole-query token counts: an approximation used only when the parser fails. */
function tokenCounts(f: Omit<SqlFeatures, 'parsed' | 'hardness' | 'tables'>): { component1: number; component2: number; others: number } {
  const c = f.clauses;
  const c1 = +c.where + +c.groupBy + +c.orderBy + +c.limit + f.joins + f.ors + f.likes;
  const c2 = f.subqueries + (f.setOps.length > 0 ? 1 : 0);
  const aggs = Object.values(f.aggregates).reduce((s, n) => s + n, 0);
  const others = +(aggs > 1) + +(f.selectColumns > 1) + +(f.conditions - f.joins > 1);
  return { component1: c1, component2: c2, others };
}

function hardnessFromTokens(f: Omit<SqlFeatures, 'parsed' | 'hardness' | 'tables'>): SpiderHardness {
  const c = tokenCounts(f);
  return classify(c.component1, c.component2, c.others);
}

// ---------------------------------------------------------------- vector and keys

export const FEATURE_NAMES = [
  'where', 'group_by', 'having', 'order_by', 'limit', 'distinct',
  'joins', 'tables', 'aggregates', 'agg_count', 'agg_sum', 'agg_avg', 'agg_minmax',
  'functions', 'date_fn', 'string_fn', 'cast',
  'nesting', 'subqueries', 'union', 'intersect', 'except',
  'case', 'arithmetic', 'conditions', 'or', 'like', 'not', 'in', 'between', 'exists', 'null_check',
  'select_columns', 'window',
  'hard_easy', 'hard_medium', 'hard_hard', 'hard_extra',
] as const;
export const FEATURE_DIM = FEATURE_NAMES.length;

const DATE_FNS = new Set(['strftime', 'date', 'time', 'datetime', 'julianday', 'unixepoch']);
const STRING_FNS = new Set(['substr', 'substring', 'instr', 'length', 'lower', 'upper', 'trim', 'ltrim', 'rtrim', 'replace', 'printf', 'format']);

/** Saturating count: 0, 1/cap, ..., 1 — keeps one busy dimension from dominating distances. */
const sat = (n: number, cap: number): number => Math.min(n, cap) / cap;

/** Fixed-length vector in [0, 1]^FEATURE_DIM, in FEATURE_NAMES order. */
export function featureVector(f: SqlFeatures): number[] {
  const a = f.aggregates;
  const aggTotal = Object.values(a).reduce((s, n) => s + n, 0);
  const c = f.clauses;
  return [
    +c.where, +c.groupBy, +c.having, +c.orderBy, +c.limit, +c.distinct,
    sat(f.joins, 3), sat(f.tables.length, 4), sat(aggTotal, 4),
    +((a.count ?? 0) > 0), +((a.sum ?? 0) + (a.total ?? 0) > 0), +((a.avg ?? 0) > 0), +((a.min ?? 0) + (a.max ?? 0) > 0),
    sat(f.functions.length, 3), +f.functions.some((x) => DATE_FNS.has(x)), +f.functions.some((x) => STRING_FNS.has(x)), +f.functions.includes('cast'),
    sat(f.nestingDepth, 2), sat(f.subqueries, 3),
    +f.setOps.some((s) => s.startsWith('union')), +f.setOps.includes('intersect'), +f.setOps.includes('except'),
    sat(f.caseCount, 2), sat(f.arithmetic, 3), sat(f.conditions, 4), +(f.ors > 0), +(f.likes > 0), +(f.nots > 0),
    +(f.ins > 0), +(f.betweens > 0), +(f.exists > 0), +(f.nullChecks > 0),
    sat(f.selectColumns, 4), +f.window,
    ...SPIDER_HARDNESS.map((h) => +(f.hardness === h)),
  ];
}

/**
 * A coarse structure signature: which clauses, how many joins (0-3+), which aggregate families,
 * nesting, set operation, CASE, arithmetic. Distinct keys = distinct structures covered.
 */
export function structureKey(f: SqlFeatures): string {
  const c = f.clauses;
  const aggs = Object.keys(f.aggregates)
    .filter((k) => (f.aggregates[k] ?? 0) > 0)
    .map((k) => (k === 'min' || k === 'max' ? 'minmax' : k))
    .sort();
  const bits = [
    c.where ? 'W' : '',
    c.groupBy ? 'G' : '',
    c.having ? 'H' : '',
    c.orderBy ? 'O' : '',
    c.limit ? 'L' : '',
    c.distinct ? 'D' : '',
  ].join('');
  return [
    bits || '-',
    `j${Math.min(f.joins, 3)}`,
    `a:${[...new Set(aggs)].join('+')}`,
    `n${Math.min(f.nestingDepth, 2)}`,
    f.setOps.length > 0 ? f.setOps[0] : '',
    f.caseCount > 0 ? 'case' : '',
    f.arithmetic > 0 ? 'arith' : '',
  ].join('|');
}
