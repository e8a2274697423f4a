/**
 * Result comparison with the official evaluators' semantics (pure functions).
 *
 * - BIRD (bird-bench evaluation.py): `set(predicted_res) == set(ground_truth_res)`: rows are tuples,
 *   so column order matters; duplicates collapse and row order is ignored.
 * - Spider (taoyds/test-suite-sql-eval exec_eval.py `result_eq(result1, result2, order_matters)`):
 *   multiset (bag) equality of rows, allowing any permutation of columns; when order matters (the gold
 *   query orders) the rows must match position by position under one column permutation.
 *
 * Python value semantics reproduced: 1 == 1.0 (numbers compare by value, exactly, also between a
 * bigint and a float), None == None (NULLs are equal to each other inside tuples), bytes compare
 * byte by byte, strings exactly, and no cross-type equality ('1' != 1, b'a' != 'a').
 *
 * Not reproduced: Spider's `quick_rej` sorts cells by `str(x) + str(type(x))`, which in rare cases
 * tells an int from an equal float (gold (1, 1.5) vs pred (1.0, 1.5) is rejected there). better-sqlite3
 * hands both as the same JS number, so the type is gone; we compare by value, like Python's `==`.
 */
import { isWord, tokenize } from './lexer.ts';
import type { CompareMode, Row, SqlValue } from './types.ts';

export interface CompareOptions {
  mode: CompareMode;
  /** Spider only: rows must be in the same order (gold has ORDER BY). BIRD ignores it, as upstream does. */
  ordered?: boolean;
  /**
   * 0 (default) = exact, official parity. When > 0, two numbers are equal when
   * |a - b| <= floatTol * max(1, |a|, |b|): an absolute tolerance for magnitudes up to 1 and a
   * relative one above. Other types still compare exactly.
   */
  floatTol?: number;
}

function isNum(v: SqlValue): v is number | bigint {
  return typeof v === 'number' || typeof v === 'bigint';
}

function hex(b: Uint8Array): string {
  let s = '';
  for (const x of b) s += x.toString(16).padStart(2, '0');
  return s;
}

/** A string equal for exactly the values Python's `==` (and hash) treats as equal. */
export function cellKey(v: SqlValue): string {
  if (v === null) return 'N';
  if (typeof v === 'bigint') return `i${v.toString()}`;
  if (typeof v === 'number') {
    // Integral floats equal the int of the same value (1 == 1.0, -0.0 == 0), exactly: 2**53 + 1 != 2.0**53.
    if (Number.isInteger(v)) return `i${BigInt(v).toString()}`;
    return `f${v}`;
  }
  if (typeof v === 'string') return `s${v}`;
  return `b${hex(v)}`;
}

function rowKey(row: Row): string {
  return JSON.stringify(row.map(cellKey));
}

function numEqTol(a: number | bigint, b: number | bigint, tol: number): boolean {
  const x = Number(a);
  const y = Number(b);
  if (x === y) return true;
  return Math.abs(x - y) <= tol * Math.max(1, Math.abs(x), Math.abs(y));
}

export function cellsEqual(a: SqlValue, b: SqlValue, floatTol = 0): boolean {
  if (floatTol > 0 && isNum(a) && isNum(b)) return numEqTol(a, b, floatTol);
  return cellKey(a) === cellKey(b);
}

function rowsEqual(a: Row, b: Row, tol: number): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!cellsEqual(a[i], b[i], tol)) return false;
  return true;
}

/** Set equality (BIRD). */
function setEqual(pred: Row[], gold: Row[], tol: number): boolean {
  if (tol === 0) {
    const p = new Set(pred.map(rowKey));
    const g = new Set(gold.map(rowKey));
    if (p.size !== g.size) return false;
    for (const k of p) if (!g.has(k)) return false;
    return true;
  }
  const covered = (xs: Row[], ys: Row[]): boolean => xs.every((x) => ys.some((y) => rowsEqual(x, y, tol)));
  return covered(pred, gold) && covered(gold, pred);
}

/** Bag equality. Under a tolerance, exact matches pair first and the rest pair greedily. */
function multisetEqual(a: Row[], b: Row[], tol: number): boolean {
  if (a.length !== b.length) return false;
  const counts = new Map<string, number>();
  for (const r of a) {
    const k = rowKey(r);
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  const leftoverB: Row[] = [];
  for (const r of b) {
    const k = rowKey(r);
    const c = counts.get(k) ?? 0;
    if (c > 0) counts.set(k, c - 1);
    else if (tol === 0) return false;
    else leftoverB.push(r);
  }
  if (leftoverB.length === 0) return true;
  const leftoverA = a.filter((r) => {
    const k = rowKey(r);
    const c = counts.get(k) ?? 0;
    if (c > 0) {
      counts.set(k, c - 1);
      return true;
    }
    return false;
  });
  const used = new Array<boolean>(leftoverA.length).fill(false);
  for (const r of leftoverB) {
    const i = leftoverA.findIndex((x, j) => !used[j] && rowsEqual(x, r, tol));
    if (i < 0) return false;
    used[i] = true;
  }
  return true;
}

/**
 * For each column i of r1, the columns j of r2 that could map onto it: every sampled value of r2's
 * column j occurs in r1's column i. Sound pruning (it never removes a permutation that could match),
 * as upstream's get_constraint_permutation; exact mode checks all rows, tolerant mode 20 of them.
 */
function candidateColumns(r1: Row[], r2: Row[], n: number, tol: number): number[][] {
  const cand: number[][] = [];
  if (tol === 0) {
    const sets = Array.from({ length: n }, (_, i) => new Set(r1.map((r) => cellKey(r[i]))));
    const keys2 = Array.from({ length: n }, (_, j) => new Set(r2.map((r) => cellKey(r[j]))));
    for (let i = 0; i < n; i++) {
      cand.push([...Array(n).keys()].filter((j) => [...keys2[j]].every((k) => sets[i].has(k))));
    }
    return cand;
  }
  const step = Math.max(1, Math.floor(r2.length / 20));
  const sample = r2.filter((_, k) => k % step === 0).slice(0, 20);
  for (let i = 0; i < n; i++) {
    cand.push([...Array(n).keys()].filter((j) => sample.every((row) => r1.some((x) => cellsEqual(x[i], row[j], tol)))));
  }
  return cand;
}

/** Spider's result_eq(result1, result2, order_matters). */
function spiderEqual(r1: Row[], r2: Row[], ordered: boolean, tol: number): boolean {
  if (r1.length === 0 && r2.length === 0) return true;
  if (r1.length !== r2.length) return false;
  const n = r1[0].length;
  if (r2[0].length !== n) return false;
  const cand = candidateColumns(r1, r2, n, tol);
  const perm: number[] = [];
  const taken = new Array<boolean>(n).fill(false);
  const tryPerm = (): boolean => {
    const permuted = n === 1 ? r2 : r2.map((row) => perm.map((j) => row[j]));
    if (ordered) return r1.every((row, k) => rowsEqual(row, permuted[k], tol));
    return multisetEqual(r1, permuted, tol);
  };
  const search = (i: number): boolean => {
    if (i === n) return tryPerm();
    for (const j of cand[i]) {
      if (taken[j]) continue;
      taken[j] = true;
      perm.push(j);
      if (search(i + 1)) return true;
      perm.pop();
      taken[j] = false;
    }
    return false;
  };
  return search(0);
}

/** True when the predicted rows match the gold rows under the chosen official semantics. */
export function resultsMatch(pred: Row[], gold: Row[], opts: CompareOptions): boolean {
  const tol = opts.floatTol ?? 0;
  if (!(tol >= 0)) throw new RangeError('floatTol must be >= 0');
  if (opts.mode === 'bird') return setEqual(pred, gold, tol);
  return spiderEqual(gold, pred, opts.ordered ?? false, tol);
}

/**
 * Does the gold query order its result? By default: an ORDER BY at the top level of the statement
 * (not inside a subquery, a window's OVER (...), a string or a comment). `{ substring: true }` gives
 * upstream Spider's exact test, `'order by' in g_str.lower()`, which also fires on those.
 */
export function hasOrderBy(sql: string, opts: { substring?: boolean } = {}): boolean {
  if (opts.substring) return /order by/.test(sql.toLowerCase());
  const tokens = tokenize(sql);
  for (let i = 0; i + 1 < tokens.length; i++) {
    if (tokens[i].depth === 0 && isWord(tokens[i], 'ORDER') && isWord(tokens[i + 1], 'BY')) return true;
  }
  return false;
}
