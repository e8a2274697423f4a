/**
 * Stage 2: structure-aware SQL synthesis. Query structures are sampled by template and built as
 * an AST; filter literals come from a real row of the (joined) tables so that filters match data.
 * Deterministic for a seed: every random choice goes through an Rng, and rows are sampled by
 * OFFSET rather than ORDER BY random(). Candidates are drafted several at a time (each with its own
 * random stream, seeded in launch order) and admitted in launch order, so the output does not depend
 * on which query came back first.
 */
import { AgroError } from '../errors.ts';
import type { SqlValue } from '../sql/types.ts';
import { Rng } from '../util/rng.ts';
import { fnv1a } from '../util/hash.ts';
import { jsonCopy } from '../util/json-copy.ts';
import { col, emptySelect, lit, renameAlias, type AggFn, type ColRef, type Cond, type Expr, type QueryAst, type SelectAst } from './ast.ts';
import { printQuery, printSelect } from './print.ts';
import type { TableProfile, UsableColumn } from './profile.ts';
import { buildJoins, joinPaths, type SchemaGraph } from './schema-graph.ts';
import { STAGE_CONCURRENCY, type StageContext, type SynthPair } from './types.ts';
import type { Difficulty } from '../data/dataset-row.ts';
import { mapConcurrent } from '../util/concurrency.ts';
import { verifyPair } from './verify.ts';

export interface SynthEnv {
  graph: SchemaGraph;
  profiles: Map<string, TableProfile>;
  /**
   * Sampled rows per table (and joined table), fetched once: literals come from these, not a query per
   * candidate. Kept as promises, and each window's offset comes from `rowSeed` and the key rather than
   * from whichever draft asked first, so concurrent drafts see the same rows in any order.
   */
  rowCache?: Map<string, Promise<SqlValue[][]>>;
  rowSeed?: number;
}

/** Rows sampled per frame (a window at a random offset in the first 5000 rows), so big tables are never scanned. */
const SAMPLE_ROWS = 64;

interface Bound extends UsableColumn {
  ref: ColRef;
}

interface Frame {
  q: SelectAst;
  cols: Bound[];
  row: Map<string, SqlValue>;
  /** The sampled rows the row was picked from, in the order of cols. */
  sample: SqlValue[][];
  related: string | null;
}

const key = (r: ColRef) => `${r.alias}.${r.column}`;

async function frame(ctx: StageContext, env: SynthEnv, base: TableProfile, related: TableProfile | null): Promise<Frame | null> {
  const q = emptySelect(base.table.name);
  const built = buildJoins(env.graph, base.table.name, related ? [related.table.name] : []);
  if (!built) return null;
  q.joins = built.joins;
  const cols: Bound[] = [];
  for (const [t, alias] of built.aliasOf) {
    const p = env.profiles.get(t);
    if (!p) continue;
    for (const c of p.columns) cols.push({ ...c, ref: col(alias, t, c.column) });
  }
  const cacheKey = `${base.table.name}\u0000${related?.table.name ?? ''}`;
  const cache = (env.rowCache ??= new Map<string, Promise<SqlValue[][]>>());
  let pending = cache.get(cacheKey);
  if (!pending) {
    const probe: SelectAst = { ...q, columns: cols.map((c) => c.ref) };
    const offset = new Rng(fnv1a(cacheKey, env.rowSeed ?? 0)).int(Math.max(1, Math.min(base.table.rowCount, 5000) - SAMPLE_ROWS));
    pending = (async () => {
      let r = await ctx.executor.execute(ctx.dbPath, `${printSelect(probe, false, ctx.dialect)} LIMIT ${SAMPLE_ROWS} OFFSET ${offset}`, { timeoutMs: ctx.timeoutMs, maxRows: SAMPLE_ROWS });
      if (r.ok && r.rows.length === 0) r = await ctx.executor.execute(ctx.dbPath, `${printSelect(probe, false, ctx.dialect)} LIMIT ${SAMPLE_ROWS}`, { timeoutMs: ctx.timeoutMs, maxRows: SAMPLE_ROWS });
      return r.ok ? r.rows : [];
    })();
    cache.set(cacheKey, pending);
  }
  const rows = await pending;
  if (!rows.length) return null;
  const picked = ctx.rng.pick(rows);
  const row = new Map<string, SqlValue>();
  cols.forEach((c, i) => row.set(key(c.ref), picked[i]));
  return { q, cols, row, sample: rows, related: related?.table.name ?? null };
}

/** A value usable as a literal; stray spaces ('US ') are kept as stored, or the filter would not match. */
function okString(v: string): boolean {
  return v.trim().length > 0 && v.length <= 60 && !/['\n\r\t]/.test(v);
}

/** A threshold people would say: 2 significant digits for larger numbers (1234 -> 1200), 2 decimals otherwise. */
export function roundThreshold(v: number): number {
  if (Math.abs(v) >= 100) {
    const mag = 10 ** (Math.floor(Math.log10(Math.abs(v))) - 1);
    return Math.round(v / mag) * mag;
  }
  return Number.isInteger(v) ? v : Math.round(v * 100) / 100;
}

/** Words of a value a person would search for with LIKE ("contains 'Smith'"). */
const likeWords = (v: string) => v.split(/\s+/).filter((w) => w.length >= 4 && /^[\p{L}\p{N}]+$/u.test(w));

/**
 * The word of `v` a LIKE would search for: one that other sampled values of the column share
 * ("titles containing 'Love'" lists several), else any of its words, or null.
 */
export function likeWord(v: string, others: readonly SqlValue[], rng: Rng): string | null {
  const ws = likeWords(v);
  if (!ws.length) return null;
  const hits = (w: string) => others.filter((o) => typeof o === 'string' && o.toLowerCase().includes(w.toLowerCase())).length;
  const shared = ws.filter((w) => hits(w) >= 2);
  return rng.pick(shared.length ? shared : ws);
}

/** A filter on `c` that the sampled row satisfies (mostly), or null; `others` are the column's sampled values. */
function filterFor(c: Bound, v: SqlValue, rng: Rng, others: readonly SqlValue[] = []): Cond | null {
  if (v === null) return c.nullable && rng.next() < 0.3 ? { kind: 'null', expr: c.ref, negated: false } : null;
  if (c.role === 'numeric' && typeof v === 'number') {
    const op = rng.pick(['=', '>=', '<=', '>', '<', '>=', '<='] as const);
    return { kind: 'cmp', left: c.ref, op, right: lit(op === '=' ? (Number.isInteger(v) ? v : Math.round(v * 100) / 100) : roundThreshold(v)) };
  }
  if (typeof v !== 'string' || !okString(v)) return null;
  // Numbers stored as text with many values (coordinates, capacities): nobody asks for one exactly,
  // and comparing them as numbers would compare text.
  if (/^\s*-?\d+(\.\d+)?\s*$/.test(v) && c.distinct > 50) return null;
  if (c.role === 'date') {
    return { kind: 'cmp', left: { kind: 'datepart', part: 'year', arg: c.ref }, op: '=', right: lit(v.slice(0, 4)) };
  }
  // Names and titles are searched by a word; categories now and then ("genres containing 'Rock'").
  if ((c.role === 'text' && rng.next() < 0.5) || (c.role === 'category' && rng.next() < 0.12)) {
    const w = likeWord(v, others, rng);
    if (w) return { kind: 'like', expr: c.ref, pattern: `%${w}%` };
  }
  return { kind: 'cmp', left: c.ref, op: rng.next() < 0.1 ? '<>' : '=', right: lit(v) };
}

function filters(f: Frame, rng: Rng, n: number, exclude: Set<string> = new Set()): Cond[] {
  const free = rng.shuffle(f.cols.filter((c) => !c.isKey && !exclude.has(key(c.ref))));
  // With a join, the first filter is on the joined table: otherwise the join is dropped as unneeded.
  const pool = f.related ? [...free.filter((c) => c.ref.alias !== 'T1'), ...free.filter((c) => c.ref.alias === 'T1')] : free;
  const out: Cond[] = [];
  for (const c of pool) {
    if (out.length >= n) break;
    const j = f.cols.indexOf(c);
    const cond = filterFor(c, f.row.get(key(c.ref)) ?? null, rng, f.sample.map((r) => r[j]));
    if (cond) out.push(cond);
  }
  return out;
}

function pickBase(env: SynthEnv, rng: Rng, needRelated: boolean): { base: TableProfile; related: TableProfile | null } | null {
  const tables = [...env.profiles.values()];
  if (!tables.length) return null;
  const base = rng.pick(tables);
  if (!needRelated) return { base, related: null };
  const rel = joinPaths(env.graph, base.table.name, 2).filter((p) => env.profiles.has(p.table));
  if (!rel.length) return null;
  return { base, related: env.profiles.get(rng.pick(rel).table)! };
}

/** The base table's single-column primary key among the frame's columns, or undefined. */
function keyColumn(f: Frame, env: SynthEnv): Bound | undefined {
  const pk = env.profiles.get(f.q.from.table)!.pk;
  return pk.length === 1 ? f.cols.find((c) => c.ref.alias === 'T1' && c.column === pk[0]) : undefined;
}

const nonKey = (f: Frame, alias: string | null, role?: UsableColumn['role']) =>
  f.cols.filter((c) => !c.isKey && (alias === null || c.ref.alias === alias) && (!role || c.role === role));

/**
 * Tie-breaker: the base table's primary key, or its rowid when it declares none (profiled tables are
 * rowid tables: views are skipped and a WITHOUT ROWID table has a key). The ambiguity check flips it to
 * find ties at the LIMIT; once that passes it is dropped from the SQL (augment.ts humanizeRanking).
 */
function tieBreak(f: Frame, env: SynthEnv): ColRef[] {
  const p = env.profiles.get(f.q.from.table)!;
  return (p.pk.length ? p.pk : ['rowid']).map((c) => col(f.q.from.alias, f.q.from.table, c));
}

/** True when every join goes from a foreign key to the key it references, so base rows are not repeated. */
function manyToOne(f: Frame, env: SynthEnv): boolean {
  return f.q.joins.every((j) =>
    env.graph.edges.some(
      (e) => e.fromTable === j.on[0].left.table && e.toTable === j.table && e.fromColumns.join() === j.on.map((o) => o.left.column).join(),
    ),
  );
}

/** Columns whose sum or average means nothing (years, ids, codes, phone numbers). */
const NOT_ADDITIVE = /(year|_id$|id$|code|zip|phone|number|_no$)/i;


/** Group counts of a grouped query (at most 500 groups), to pick a HAVING threshold the data splits. */
async function groupCounts(ctx: StageContext, q: SelectAst): Promise<number[]> {
  const probe: SelectAst = { ...q, distinct: false, columns: [{ kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false }], having: [], orderBy: [], limit: null };
  const r = await ctx.executor.execute(ctx.dbPath, `${printSelect(probe, false, ctx.dialect)} LIMIT 500`, { timeoutMs: Math.min(ctx.timeoutMs, 1500), maxRows: 500 });
  return r.ok ? r.rows.map((row) => Number(row[0])) : [];
}

/**
 * Per-group aggregates. People group by categories, by small-domain numbers (years, cylinders),
 * and by a parent row through a foreign key, naming the parent ("for each singer name"); they keep
 * groups over a count ("with at least 3 albums"), or ask for the top group ("which X has the most Y").
 */
async function group(ctx: StageContext, env: SynthEnv, top: boolean): Promise<QueryAst | null> {
  const pick = pickBase(env, ctx.rng, withJoin(ctx.rng, top ? 0.6 : 0.5));
  if (!pick) return null;
  const f = await frame(ctx, env, pick.base, pick.related);
  if (!f) return null;
  const groupAlias = f.related ? [...f.q.joins].reverse()[0].alias : 'T1';
  if (!manyToOne(f, env)) return null;
  const groups = nonKey(f, groupAlias).filter((c) =>
    c.role === 'category' ? c.distinct < c.rows || f.related !== null : c.role === 'numeric' ? c.distinct <= 30 && c.distinct < c.rows : c.role === 'text' && f.related !== null,
  );
  // Without a join people also group by the foreign key itself ("the number of documents for each project id").
  if (!f.related) {
    const pk = env.profiles.get(f.q.from.table)!.pk;
    groups.push(...f.cols.filter((c) => c.isKey && c.ref.alias === 'T1' && !pk.includes(c.column) && c.distinct < c.rows));
  }
  if (!groups.length) return null;
  const g = ctx.rng.pick(groups);
  // The group's own column is no measure of it (MAX(price) per price is the price).
  const nums = nonKey(f, 'T1', 'numeric').filter((c) => !NOT_ADDITIVE.test(c.column) && key(c.ref) !== key(g.ref));
  const others = nonKey(f, 'T1').filter((c) => c.role === 'category' && key(c.ref) !== key(g.ref));
  const r = ctx.rng.next();
  const agg: Expr =
    nums.length && r < 0.4
      ? { kind: 'agg', fn: ctx.rng.pick(['SUM', 'AVG', 'MAX', 'MIN'] as AggFn[]), arg: ctx.rng.pick(nums).ref, distinct: false }
      : f.related && others.length && r > 0.85
        ? { kind: 'agg', fn: 'COUNT', arg: ctx.rng.pick(others).ref, distinct: true }
        : { kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false };
  f.q.columns = [g.ref, agg];
  f.q.groupBy = [g.ref];
  if (ctx.rng.next() < (top ? 0.1 : 0.2)) f.q.where = filters(f, ctx.rng, 1, new Set([key(g.ref)]));
  if (top) {
    // "Which X has the most Y" names the X alone: 590 of the 665 grouped top-k queries of Spider's
    // train split select only the group (the aggregate is in ORDER BY).
    const sayable = agg.kind === 'agg' && !agg.distinct && (agg.fn === 'COUNT' ? agg.arg.kind === 'star' : agg.fn === 'SUM' || agg.fn === 'AVG');
    if (sayable && ctx.rng.next() < 0.89) f.q.columns = [g.ref];
    const dir = ctx.rng.next() < 0.85 ? 'DESC' : 'ASC';
    const limit = await untiedLimit(ctx, f.q, agg, dir, ctx.rng.next() < 0.75 ? 1 : 2 + ctx.rng.int(4)); // people mostly ask for the top one
    if (limit === null) return null;
    f.q.orderBy = [
      { expr: agg, dir },
      { expr: g.ref, dir: 'ASC' },
    ];
    f.q.limit = limit;
    return f.q;
  }
  if (ctx.rng.next() < 0.45) {
    // A threshold the data splits: some groups reach it and some do not, so HAVING is never redundant.
    if (await ctx.tooCostly?.(printSelect(f.q, false, ctx.dialect))) return null;
    const counts = [...new Set(await groupCounts(ctx, f.q))].sort((a, b) => a - b);
    if (counts.length < 2) return null;
    const k = counts[1 + ctx.rng.int(Math.min(3, counts.length - 1))];
    const countStar: Expr = { kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false };
    f.q.having = [{ kind: 'cmp', left: countStar, op: '>=', right: lit(k) }];
    // "Which X have at least k Y" names the X alone: 347 of the 385 HAVING queries of Spider's train split.
    if (ctx.rng.next() < 0.9) f.q.columns = [g.ref];
  }
  return f.q;
}

/** Ranked values the LIMIT probe reads: enough to find an untied cut for the limits people ask (1 to 5). */
const RANK_PROBE = 6;

/**
 * A LIMIT with no tie at or above its cut on the original database and its variants, or null: the first k + 1 ranked
 * values all differ, and there is a row past the cut (a LIMIT over a result that already fits is no
 * ranking). `want` first, then the smallest untied k. Ties at the cut would make the question
 * ambiguous (the tie-breaker is not spoken) and the ambiguity check would reject the pair, so the
 * ranked shapes people ask most ("which X has the most Y", "the longest track") were mostly lost there.
 */
async function untiedLimit(ctx: StageContext, q: SelectAst, rank: Expr, dir: 'ASC' | 'DESC', want: number): Promise<number | null> {
  const probe: SelectAst = { ...q, distinct: false, columns: [rank], having: q.having, orderBy: [{ expr: rank, dir }], limit: RANK_PROBE };
  const sql = printSelect(probe, false, ctx.dialect);
  if (await ctx.tooCostly?.(sql)) return null;
  const probeOn = (db: string) => ctx.executor.execute(db, sql, { timeoutMs: Math.min(ctx.timeoutMs, 1500), maxRows: RANK_PROBE });
  const ranked: SqlValue[][] = [];
  // No two equal values among the first k + 1: a tie inside the k would reorder the answer too.
  const untied = (k: number) => ranked.every((v) => v.length > k && v.slice(0, k + 1).every((x, i) => i === 0 || x !== v[i - 1]));
  let cuts = [want, ...Array.from({ length: RANK_PROBE - 1 }, (_, i) => i + 1)];
  // The original first: most candidates that tie, tie there, and the variants need not be asked.
  for (const runs of [[ctx.dbPath], ctx.variants]) {
    for (const r of await Promise.all(runs.map(probeOn))) {
      if (!r.ok) return null;
      ranked.push(r.rows.map((row) => row[0]));
    }
    cuts = cuts.filter(untied);
    if (!cuts.length) return null;
  }
  return cuts[0];
}

type Builder = (ctx: StageContext, env: SynthEnv) => Promise<QueryAst | null>;

const withJoin = (rng: Rng, p: number) => rng.next() < p;

const TEMPLATES: Record<string, Builder> = {
  async projection(ctx, env) {
    const pick = pickBase(env, ctx.rng, withJoin(ctx.rng, 0.5));
    if (!pick) return null;
    const f = await frame(ctx, env, pick.base, pick.related);
    if (!f) return null;
    let targets = ctx.rng.shuffle(nonKey(f, 'T1').filter((c) => c.role !== 'date')).slice(0, 1 + ctx.rng.int(2));
    if (!targets.length) return null;
    // People list ids too ("the id and name of each document").
    const pk = keyColumn(f, env);
    if (pk && ctx.rng.next() < 0.15) targets = [pk, targets[0]];
    // Across a join, a column of the joined table is what the join adds ("each document's project details").
    if (f.related && ctx.rng.next() < 0.5) {
      const rel = nonKey(f, null).filter((c) => c.ref.alias !== 'T1' && c.role !== 'date');
      if (rel.length) targets = [targets[0], ctx.rng.pick(rel)];
    }
    const joinedTarget = targets.some((c) => c.ref.alias !== 'T1');
    f.q.columns = targets.map((c) => c.ref);
    // A third of the lists people ask for have no filter ("the names of all singers").
    const fs = (!f.related || joinedTarget) && ctx.rng.next() < 0.35 ? [] : filters(f, ctx.rng, 1 + ctx.rng.int(2), new Set(targets.map((c) => key(c.ref))));
    if (!fs.length && ((f.related && !joinedTarget) || env.profiles.get(f.q.from.table)!.table.rowCount > 200)) return null;
    f.q.where = fs;
    // "the different X": a category that repeats, or a name repeated by a join (people write DISTINCT over joins).
    const t = targets[0];
    f.q.distinct = targets.length === 1 && ctx.rng.next() < (f.related ? 0.4 : t.role === 'category' && t.distinct < t.rows ? 0.5 : 0);
    return f.q;
  },
  async count(ctx, env) {
    const pick = pickBase(env, ctx.rng, withJoin(ctx.rng, 0.5));
    if (!pick) return null;
    const f = await frame(ctx, env, pick.base, pick.related);
    if (!f) return null;
    if (!manyToOne(f, env)) return null;
    f.q.columns = [{ kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false }];
    // "How many singers are there?" has no filter.
    f.q.where = !f.related && ctx.rng.next() < 0.3 ? [] : filters(f, ctx.rng, 1 + ctx.rng.int(2));
    return f.q.where.length || !f.related ? f.q : null;
  },
  async aggregate(ctx, env) {
    const pick = pickBase(env, ctx.rng, withJoin(ctx.rng, 0.4));
    if (!pick) return null;
    const f = await frame(ctx, env, pick.base, pick.related);
    if (!f) return null;
    if (!manyToOne(f, env)) return null;
    const nums = nonKey(f, 'T1', 'numeric');
    const cats = nonKey(f, null, 'category');
    if (nums.length && ctx.rng.next() < 0.7) {
      const c = ctx.rng.pick(nums);
      const fns: AggFn[] = NOT_ADDITIVE.test(c.column) ? ['MIN', 'MAX'] : ['SUM', 'AVG', 'MIN', 'MAX'];
      f.q.columns = [{ kind: 'agg', fn: ctx.rng.pick(fns), arg: c.ref, distinct: false }];
      f.q.where = !f.related && ctx.rng.next() < 0.35 ? [] : filters(f, ctx.rng, 1, new Set([key(c.ref)]));
    } else if (cats.length) {
      const c = ctx.rng.pick(cats);
      f.q.columns = [{ kind: 'agg', fn: 'COUNT', arg: c.ref, distinct: true }];
      f.q.where = !f.related && ctx.rng.next() < 0.35 ? [] : filters(f, ctx.rng, 1, new Set([key(c.ref)]));
    } else return null;
    return f.q.where.length || !f.related ? f.q : null;
  },
  async groupAgg(ctx, env) {
    return group(ctx, env, false);
  },
  async groupTop(ctx, env) {
    // "which X has the most Y": GROUP BY ... ORDER BY the aggregate DESC LIMIT 1
    return group(ctx, env, true);
  },
  async topK(ctx, env) {
    const pick = pickBase(env, ctx.rng, withJoin(ctx.rng, 0.4));
    if (!pick) return null;
    const f = await frame(ctx, env, pick.base, pick.related);
    if (!f) return null;
    const tb = tieBreak(f, env);
    // Ranked by a number or a date, of the base table or (across a many-to-one join) of the joined one.
    const rankable = (c: Bound) => c.role === 'numeric' || c.role === 'date';
    const nums = f.related && manyToOne(f, env) ? nonKey(f, null).filter((c) => rankable(c) && c.ref.alias !== 'T1') : nonKey(f, 'T1').filter(rankable);
    let targets = nonKey(f, 'T1').filter((c) => c.role !== 'numeric' && c.role !== 'date');
    // Across a many-to-one join the answer may be the parent's ("the artist of the longest track").
    if (f.related && manyToOne(f, env) && ctx.rng.next() < 0.5) {
      const rel = nonKey(f, null).filter((c) => c.ref.alias !== 'T1' && c.role !== 'numeric' && c.role !== 'date');
      const own = nonKey(f, 'T1').filter((c) => c.role === 'numeric' || c.role === 'date');
      if (rel.length && own.length) {
        nums.splice(0, nums.length, ...own);
        targets = rel;
      }
    }
    if (!nums.length) return null;
    // People also ask for the row's id ("the id of the longest file"), and for a number or date of
    // a table that has no names ("the earliest payment date", "the amount of the latest payment").
    const pkCol = keyColumn(f, env);
    if (pkCol && (!targets.length || ctx.rng.next() < 0.15)) targets = [pkCol];
    // A column with few repeated values ranks without ties at the top (ties make the question ambiguous):
    // those first, then the others, until one ranks without a tie at the cut on every database.
    const spread = ctx.rng.shuffle(nums.filter((c) => c.distinct >= 0.8 * c.rows));
    const order = [...spread, ...ctx.rng.shuffle(nums.filter((c) => !spread.includes(c)))].slice(0, 3);
    if (!targets.length) targets = nonKey(f, 'T1').filter((c) => c.role === 'numeric' || c.role === 'date');
    if (!targets.length) return null;
    const t = ctx.rng.pick(targets);
    const dir = ctx.rng.next() < 0.6 ? 'DESC' : 'ASC';
    const want = ctx.rng.next() < 0.6 ? 1 : 2 + ctx.rng.int(4); // people mostly ask for the top one
    const filtered = ctx.rng.next() < 0.4;
    for (const by of order) {
      const q: SelectAst = { ...f.q, columns: [t.ref], where: filtered ? filters(f, ctx.rng, 1, new Set([key(by.ref), key(t.ref)])) : [] };
      // Asked of the ranked column itself when it is the only thing to ask ("the earliest payment date").
      if (key(t.ref) === key(by.ref) && targets.length > 1) continue;
      // NULLs sort first in SQLite: keep them out of "highest/lowest" questions.
      q.where.push({ kind: 'null', expr: by.ref, negated: true });
      const limit = await untiedLimit(ctx, q, by.ref, dir, want);
      if (limit === null) continue;
      return { ...q, orderBy: [{ expr: by.ref, dir }, ...tb.map((c) => ({ expr: c as Expr, dir: 'ASC' as const }))], limit };
    }
    return null;
  },
  async arithmetic(ctx, env) {
    const pick = pickBase(env, ctx.rng, false);
    if (!pick) return null;
    const f = await frame(ctx, env, pick.base, null);
    if (!f) return null;
    const nums = nonKey(f, 'T1', 'numeric');
    const names = nonKey(f, 'T1').filter((c) => c.role !== 'numeric');
    if (nums.length < 2 || !names.length) return null;
    const [a, b] = ctx.rng.shuffle([...nums]).slice(0, 2);
    const op = ctx.rng.pick(['-', '+', '*', '/'] as const);
    f.q.columns = [ctx.rng.pick(names).ref, { kind: 'arith', op, left: a.ref, right: b.ref }];
    f.q.where = filters(f, ctx.rng, 1, new Set([key(a.ref), key(b.ref)]));
    return f.q.where.length ? f.q : null;
  },
  async percentage(ctx, env) {
    const pick = pickBase(env, ctx.rng, withJoin(ctx.rng, 0.4));
    if (!pick) return null;
    const f = await frame(ctx, env, pick.base, pick.related);
    if (!f) return null;
    if (!manyToOne(f, env)) return null;
    const [c] = filters(f, ctx.rng, 1);
    if (!c) return null;
    f.q.columns = [{ kind: 'pct', cond: c }];
    return f.q;
  },
  async aboveAverage(ctx, env) {
    const pick = pickBase(env, ctx.rng, withJoin(ctx.rng, 0.5));
    if (!pick) return null;
    const f = await frame(ctx, env, pick.base, pick.related);
    if (!f) return null;
    const nums = nonKey(f, 'T1', 'numeric');
    const names = nonKey(f, 'T1').filter((c) => c.role !== 'numeric' && c.role !== 'date');
    if (!nums.length || !names.length) return null;
    const n = ctx.rng.pick(nums);
    const sub = emptySelect(pick.base.table.name, 'S1');
    const fn = ctx.rng.pick(['AVG', 'AVG', 'MAX', 'MIN'] as AggFn[]);
    sub.columns = [{ kind: 'agg', fn, arg: col('S1', n.table, n.column), distinct: false }];
    const op = fn === 'MAX' ? '=' : fn === 'MIN' ? '=' : ctx.rng.pick(['>', '<'] as const);
    f.q.columns = [ctx.rng.pick(names).ref];
    f.q.where = [{ kind: 'cmp', left: n.ref, op, right: { kind: 'scalar', query: sub } }];
    if (f.related || ctx.rng.next() < 0.4) f.q.where.push(...filters(f, ctx.rng, 1, new Set([key(n.ref)])));
    return f.q;
  },
  async inSubquery(ctx, env) {
    // child rows whose foreign key is among the keys of parent rows matching a filter
    const edges = env.graph.edges.filter((e) => e.fromTable !== e.toTable && e.fromColumns.length === 1 && env.profiles.has(e.fromTable) && env.profiles.has(e.toTable));
    if (!edges.length) return null;
    const e = ctx.rng.pick(edges);
    const child = env.profiles.get(e.fromTable)!;
    const parent = env.profiles.get(e.toTable)!;
    if (ctx.rng.next() < 0.4) {
      // The anti-join people write: parent rows no child row points at ("singers with no concert").
      const names = parent.columns.filter((c) => !c.isKey && c.role !== 'numeric' && c.role !== 'date');
      if (!names.length) return null;
      const sub = emptySelect(child.table.name, 'S1');
      sub.columns = [col('S1', child.table.name, e.fromColumns[0])];
      const q = emptySelect(parent.table.name);
      // "how many singers have no concert" counts the anti-join.
      q.columns = [ctx.rng.next() < 0.3 ? { kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false } : col('T1', parent.table.name, ctx.rng.pick(names).column)];
      q.where = [{ kind: 'in', expr: col('T1', parent.table.name, e.toColumns[0]), query: sub, negated: ctx.rng.next() < 0.75 }];
      return q;
    }
    const pf = await frame(ctx, env, parent, null);
    if (!pf) return null;
    const [pc] = filters(pf, ctx.rng, 1);
    if (!pc) return null;
    const sub = emptySelect(parent.table.name, 'S1');
    sub.columns = [col('S1', parent.table.name, e.toColumns[0])];
    sub.where = [renameAlias(pc, 'T1', 'S1')];
    const q = emptySelect(child.table.name);
    const names = child.columns.filter((c) => !c.isKey && c.role !== 'numeric' && c.role !== 'date');
    if (!names.length) return null;
    q.columns = [col('T1', child.table.name, ctx.rng.pick(names).column)];
    q.distinct = true;
    const fk = child.columns.find((c) => c.column === e.fromColumns[0]);
    if (!fk) return null;
    q.where = [{ kind: 'in', expr: col('T1', child.table.name, e.fromColumns[0]), query: sub, negated: ctx.rng.next() < 0.25 }];
    if (ctx.rng.next() < 0.4) {
      const cf = await frame(ctx, env, child, null);
      if (cf) q.where.unshift(...filters(cf, ctx.rng, 1, new Set([`T1.${e.fromColumns[0]}`])));
    }
    return q;
  },
  async exists(ctx, env) {
    const edges = env.graph.edges.filter((e) => e.fromTable !== e.toTable && e.fromColumns.length === 1 && env.profiles.has(e.fromTable) && env.profiles.has(e.toTable));
    if (!edges.length) return null;
    const e = ctx.rng.pick(edges);
    const child = env.profiles.get(e.fromTable)!;
    const parent = env.profiles.get(e.toTable)!;
    const cf = await frame(ctx, env, child, null);
    if (!cf) return null;
    const [cc] = filters(cf, ctx.rng, 1);
    if (!cc) return null;
    const names = parent.columns.filter((c) => !c.isKey && c.role !== 'numeric' && c.role !== 'date');
    if (!names.length) return null;
    const sub = emptySelect(child.table.name, 'S1');
    sub.columns = [{ kind: 'star' }];
    sub.where = [
      { kind: 'cmp', left: col('S1', child.table.name, e.fromColumns[0]), op: '=', right: col('T1', parent.table.name, e.toColumns[0]) },
      renameAlias(cc, 'T1', 'S1'),
    ];
    const q = emptySelect(parent.table.name);
    q.columns = [col('T1', parent.table.name, ctx.rng.pick(names).column)];
    q.where = [{ kind: 'exists', query: sub, negated: ctx.rng.next() < 0.3 }];
    return q;
  },
  async setOperation(ctx, env) {
    const pick = pickBase(env, ctx.rng, withJoin(ctx.rng, 0.5));
    if (!pick) return null;
    const a = await frame(ctx, env, pick.base, pick.related);
    const b = await frame(ctx, env, pick.base, pick.related);
    if (!a || !b) return null;
    const targets = nonKey(a, 'T1').filter((c) => c.role === 'category' || c.role === 'text');
    if (!targets.length) return null;
    // Names rather than a handful of categories: two filters over a few values give the same set (a redundant set operation).
    const named = targets.filter((c) => c.distinct >= 8);
    const t = ctx.rng.pick(named.length ? named : targets);
    const fa = filters(a, ctx.rng, 1, new Set([key(t.ref)]));
    const fb = filters(b, ctx.rng, 1, new Set([key(t.ref)]));
    if (!fa.length || !fb.length) return null;
    a.q.columns = [t.ref];
    b.q.columns = [t.ref];
    a.q.where = fa;
    b.q.where = fb;
    return { kind: 'setop', op: ctx.rng.pick(['UNION', 'INTERSECT', 'EXCEPT'] as const), left: a.q, right: b.q };
  },
};

export const TEMPLATE_NAMES = Object.keys(TEMPLATES);

/** Relative frequency of each template, following the shapes of human questions on Spider's train databases. */
export const TEMPLATE_WEIGHTS: Readonly<Record<string, number>> = {
  projection: 12,
  count: 4,
  aggregate: 4,
  groupAgg: 6,
  groupTop: 5,
  topK: 3,
  arithmetic: 1,
  percentage: 1,
  aboveAverage: 3,
  inSubquery: 3,
  exists: 1,
  setOperation: 5,
};

/**
 * Difficulty from structure, with a score that counts what a solver must get right:
 * +1 per join; +1 GROUP BY; +1 HAVING; +1 ORDER BY ... LIMIT; +1 per WHERE condition beyond the
 * first; +1 for computed values (arithmetic, date parts, percentages); +2 per subquery plus the
 * subquery's own score, +1 more when it is correlated (EXISTS); a set operation scores 3 plus both
 * sides. simple: score <= 1; moderate: 2-3; challenging: >= 4.
 */
export function difficultyOf(q: QueryAst): { difficulty: Difficulty; score: number } {
  const score = q.kind === 'setop' ? 3 + scoreSelect(q.left) + scoreSelect(q.right) : scoreSelect(q);
  return { difficulty: score <= 1 ? 'simple' : score <= 3 ? 'moderate' : 'challenging', score };
}

function subqueries(node: unknown, out: Array<{ q: SelectAst; correlated: boolean }>): void {
  if (Array.isArray(node)) node.forEach((n) => subqueries(n, out));
  else if (node && typeof node === 'object') {
    const o = node as Record<string, unknown>;
    if (o.kind === 'scalar' || o.kind === 'in' || o.kind === 'exists') {
      out.push({ q: o.query as SelectAst, correlated: o.kind === 'exists' });
      return;
    }
    for (const v of Object.values(o)) subqueries(v, out);
  }
}

function scoreSelect(q: SelectAst): number {
  let s = q.joins.length + (q.groupBy.length ? 1 : 0) + (q.having.length ? 1 : 0) + (q.limit !== null ? 1 : 0);
  const visible = q.where.filter((c) => !(c.kind === 'null' && c.negated && q.limit !== null));
  s += Math.max(0, visible.length - 1);
  if (/"kind":"(arith|datepart|pct)"/.test(JSON.stringify(q.columns) + JSON.stringify(q.where))) s += 1;
  const subs: Array<{ q: SelectAst; correlated: boolean }> = [];
  subqueries([q.columns, q.where, q.having], subs);
  for (const sub of subs) s += 2 + (sub.correlated ? 1 : 0) + scoreSelect(sub.q);
  return s;
}

/**
 * Keeps only the joins the spoken query needs: tables mentioned (in the realizer's order) are
 * joined by their shortest paths from the base, exactly as the round-trip parser will rebuild them.
 */
export function normalizeJoins(q: QueryAst, g: SchemaGraph): QueryAst | null {
  if (q.kind === 'setop') {
    const l = normalizeJoins(q.left, g);
    const r = normalizeJoins(q.right, g);
    return l && r ? { ...q, left: l as SelectAst, right: r as SelectAst } : null;
  }
  const order: string[] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (node && typeof node === 'object') {
      const o = node as Record<string, unknown>;
      if (o.kind === 'col' && typeof o.alias === 'string' && o.alias.startsWith('T') && !order.includes(o.table as string)) order.push(o.table as string);
      if (o.kind === 'scalar' || o.kind === 'in' || o.kind === 'exists') return;
      for (const v of Object.values(o)) visit(v);
    }
  };
  visit(q.groupBy.length ? q.columns.slice(1) : q.columns);
  visit(q.groupBy);
  visit(q.where);
  visit(q.having);
  visit(q.orderBy);
  const built = buildJoins(g, q.from.table, order.filter((t) => t !== q.from.table));
  if (!built) return null;
  const fix = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(fix);
    else if (node && typeof node === 'object') {
      const o = node as Record<string, unknown>;
      if (o.kind === 'col' && typeof o.alias === 'string' && o.alias.startsWith('T')) o.alias = built.aliasOf.get(o.table as string) ?? o.alias;
      if (o.kind === 'scalar' || o.kind === 'in') return;
      for (const v of Object.values(o)) fix(v);
    }
  };
  const out = jsonCopy(q);
  out.joins = built.joins;
  for (const part of [out.columns, out.where, out.having, out.orderBy, out.groupBy]) fix(part);
  // EXISTS subqueries reference the outer base (always T1) from inside: fix those links too.
  for (const c of out.where) if (c.kind === 'exists') fix(c.query.where[0]);
  return out;
}

export function astSignature(q: QueryAst): string {
  return printQuery(q);
}

/**
 * queryShape (realism.ts) read off the AST instead of parsing the printed SQL: synthesis draws
 * many candidates and parsing each is the slow part. A test holds the two equal.
 */
export function astShape(q: QueryAst): string {
  const bits = { join: false, group: false, having: false, top: false, nested: false, setop: q.kind === 'setop', notin: false, like: false, distinct: false, agg: false };
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== 'object') return;
    const o = node as Record<string, unknown>;
    if (o.kind === 'select') {
      const sq = o as unknown as SelectAst;
      if (sq.joins.length) bits.join = true;
      if (sq.groupBy.length) bits.group = true;
      if (sq.having.length) bits.having = true;
      if (sq.orderBy.length && sq.limit !== null) bits.top = true;
      if (sq.distinct) bits.distinct = true;
    }
    if (o.kind === 'scalar' || o.kind === 'exists' || o.kind === 'in') bits.nested = true;
    if (o.kind === 'in' && o.negated) bits.notin = true;
    if (o.kind === 'like') bits.like = true;
    if (o.kind === 'agg') {
      bits.agg = true;
      if (o.distinct) bits.distinct = true;
    }
    if (o.kind === 'pct') {
      // queryShape does not look inside the CASE WHEN of a percentage (a LIKE there is not counted).
      bits.agg = true;
      return;
    }
    for (const v of Object.values(o)) visit(v);
  };
  visit(q);
  return (Object.keys(bits) as Array<keyof typeof bits>).filter((k) => bits[k]).join('+') || 'plain';
}

/** Shapes asked at least this often (percent) get a top-up of candidates when the weighted draw leaves them short. */
const TOPUP_MIN_SHARE = 0.4;
/** Verified candidates of each often-asked shape the top-up aims at, at least (the diversity stage keeps about half). */
const TOPUP_MIN = 6;
/** Tries per short shape before the top-up gives it up (the schema may not allow it). */
const TOPUP_TRIES = 80;

function drawTemplate(rng: Rng, names: string[], w: Record<string, number>): string {
  const total = names.reduce((a, t) => a + w[t], 0);
  let r = rng.next() * total;
  for (const t of names) {
    r -= w[t];
    if (r < 0) return t;
  }
  return names[names.length - 1];
}

/** Candidates drafted at once: their queries overlap in the SQL pool instead of waiting in turn. */
const DRAFT_WINDOW = 8;

/** A candidate as a template built it, before it is admitted. */
interface Draft {
  template: string;
  ast: QueryAst | null;
  /** The top-up's verification of `pair`, started while drafting when the candidate could be admitted. */
  early?: { pair: SynthPair; failed: Promise<string | null> };
}

/**
 * Synthesizes up to `n` distinct candidates by template weight; then, when a shape mix is given,
 * tops up every shape people ask often (share >= TOPUP_MIN_SHARE) to TOPUP_MIN verified candidates plus
 * half its share of n, drawing from the templates that made that shape (the diversity stage keeps
 * about half of the candidates, and the shape mix decides among them). Attempts are bounded so a poor schema ends early.
 *
 * Drafts run DRAFT_WINDOW at a time, each on its own random stream seeded from ctx.rng in launch
 * order, and are admitted in launch order: the same seed gives the same candidates however the
 * queries interleave.
 */
export async function synthesize(ctx: StageContext, env: SynthEnv, n: number, weights: Record<string, number> = {}, shapes?: Readonly<Record<string, number>>): Promise<SynthPair[]> {
  const unknown = Object.keys(weights).filter((t) => !TEMPLATES[t]);
  if (unknown.length) throw new AgroError('usage', `unknown synthesis template ${unknown.join(', ')} (have: ${TEMPLATE_NAMES.join(', ')})`);
  const w = { ...TEMPLATE_WEIGHTS, ...weights };
  const names = TEMPLATE_NAMES.filter((t) => w[t] > 0);
  if (!names.length) throw new AgroError('usage', 'every synthesis template has weight 0');
  env = { ...env, rowCache: new Map(), rowSeed: ctx.rng.int(2 ** 32) };
  const planCostly = ctx.tooCostly;
  const out: SynthPair[] = [];
  const seen = new Set<string>();
  const shapeCount = new Map<string, number>();
  const makers = new Map<string, Set<string>>();
  const draft = async (template: string, seed: number, verifyIf?: (sql: string, shape: string) => boolean): Promise<Draft> => {
    const raw = await TEMPLATES[template]({ ...ctx, rng: new Rng(seed) }, env);
    const ast = raw && normalizeJoins(raw, env.graph);
    if (!ast || !verifyIf) return { template, ast };
    const sql = printQuery(ast, ctx.dialect);
    // Not for one the plan calls too costly: admission refuses it before anything runs.
    if (!verifyIf(sql, astShape(ast)) || (await planCostly?.(sql))) return { template, ast };
    const pair = pairOf(ast, sql, template);
    return { template, ast, early: { pair, failed: verifyPair(ctx, pair) } };
  };
  const pairOf = (ast: QueryAst, sql: string, template: string): SynthPair => draftPair('', ctx.dbId, ast, sql, 'synthesize', template);
  /** Admits a draft (in launch order): distinct, affordable, of an accepted shape, and verified when asked. */
  const admit = async ({ template, ast, early }: Draft, accept: (shape: string) => boolean, verify: boolean): Promise<void> => {
    if (!ast) {
      ctx.reject({ template }, 'no_structure');
      return;
    }
    const sql = printQuery(ast, ctx.dialect);
    if (seen.has(sql)) {
      ctx.reject({ sql }, 'duplicate_sql');
      return;
    }
    if (await ctx.tooCostly?.(sql)) {
      // Judged from the plan alone: it would read too much of a big table to verify in time.
      seen.add(sql);
      ctx.reject({ sql }, 'too_costly');
      return;
    }
    const shape = astShape(ast);
    if (!makers.has(shape)) makers.set(shape, new Set());
    makers.get(shape)!.add(template);
    if (!accept(shape)) return;
    seen.add(sql);
    const pair = early?.pair ?? pairOf(ast, sql, template);
    pair.id = `${ctx.dbId}-${out.length}`;
    const failed = verify ? await (early?.failed ?? verifyPair(ctx, pair)) : null;
    if (failed) {
      ctx.reject(pair, failed);
      return;
    }
    shapeCount.set(shape, (shapeCount.get(shape) ?? 0) + 1);
    out.push(pair);
    ctx.progress.tick();
  };
  ctx.progress.start('synthesize', n);
  // Attempts judged too costly from the plan cost no execution, so they do not use up the budget (up to twice it).
  let costly = 0;
  if (planCostly) ctx = { ...ctx, tooCostly: async (sql) => ((await planCostly(sql)) ? (costly++, true) : false) };
  for (let i = 0; i < Math.min(n * 6 + costly, n * 12) && out.length < n; ) {
    const k = Math.min(DRAFT_WINDOW, Math.min(n * 6 + costly, n * 12) - i);
    const launched = Array.from({ length: k }, () => draft(drawTemplate(ctx.rng, names, w), ctx.rng.int(2 ** 32)));
    for (const d of launched) {
      i++;
      // Drafts of a window past the n-th still run (their probes query the executor): settled here, so none
      // outlives the call nor rejects unheard once its executor is closed (question-time synthesis closes early).
      if (out.length < n) await admit(await d, () => true, false);
      else await d.then(() => {}, () => {});
    }
  }
  if (shapes) {
    // The top-up counts candidates that pass verification: a shape's candidates may all fail it
    // (a join whose filter removes nothing, a LIKE that matches every row), and a shape with none
    // left never reaches the final selection. Verifying here costs nothing more: the verify stage
    // asks the same queries again of the caching executor.
    const verified = await mapConcurrent(out, STAGE_CONCURRENCY, undefined, (p) => verifyPair(ctx, p));
    shapeCount.clear();
    out.forEach((p, i) => {
      if (verified[i] !== null) return;
      const shape = astShape(p.ast);
      shapeCount.set(shape, (shapeCount.get(shape) ?? 0) + 1);
    });
    const wanted = Object.entries(shapes)
      .filter(([, share]) => share >= TOPUP_MIN_SHARE)
      .sort((a, b) => b[1] - a[1])
      .map(([shape, share]) => ({ shape, target: TOPUP_MIN + Math.ceil((n * share) / 200), tries: 0 }));
    const short = (shape: string) => {
      const y = wanted.find((z) => z.shape === shape);
      return y !== undefined && (shapeCount.get(shape) ?? 0) < y.target;
    };
    for (let round = 0; round < n * 8; ) {
      const open = wanted.filter((x) => (shapeCount.get(x.shape) ?? 0) < x.target && x.tries < TOPUP_TRIES);
      if (!open.length) break;
      // A window's shapes are chosen from the counts at its start; admission rechecks them one by one.
      const launched: Promise<Draft>[] = [];
      for (let j = 0; j < DRAFT_WINDOW && round < n * 8; j++, round++) {
        const x = open[round % open.length];
        if (x.tries >= TOPUP_TRIES) continue;
        x.tries++;
        const from = [...(makers.get(x.shape) ?? [])].filter((t) => w[t] > 0);
        const template = from.length ? ctx.rng.pick(from) : drawTemplate(ctx.rng, names, w);
        // Verification starts while drafting, only for drafts the admission could still take.
        launched.push(draft(template, ctx.rng.int(2 ** 32), (sql, shape) => !seen.has(sql) && short(shape)));
      }
      for (const d of launched) await admit(await d, short, true);
    }
  }
  ctx.progress.stop();
  return out;
}

/** A pair before it is worded: its query, its difficulty, where it came from (a stage and a template). */
export function draftPair(id: string, dbId: string, ast: QueryAst, sql: string, stage: string, template: string): SynthPair {
  return { id, dbId, sql, ast, question: '', evidence: '', style: 'formal', difficulty: difficultyOf(ast).difficulty, provenance: { stages: [stage], checks: [], template } };
}
