/**
 * Human gold SQL asked in the factory's words: queries people wrote (Spider's train gold, say: SQL only,
 * never their questions) become (question, SQL) pairs whose question the factory writes. Each query is read
 * into the AST (from-sql.ts), run once (a query with no answer proves nothing in a round trip), realized by
 * the factory's realize stage (people's variety, with paraphrases), and kept only when the factory's own
 * round trip (align.ts) parses the question back to a query whose result equals the human query's. The
 * pair keeps the human SQL as written (whitespace tidied), not the AST printed.
 */
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import { readInputText } from '../util/fs.ts';
import { tokenize } from '../sql/lexer.ts';
import type { DbDocs } from '../prompt/docs-types.ts';
import type { DbSchema, SqlExecutor } from '../sql/types.ts';
import { Rng } from '../util/rng.ts';
import { mapConcurrent } from '../util/concurrency.ts';
import type { ColRef, Cond, Expr, QueryAst, SelectAst } from './ast.ts';
import { isCountStar } from './language/intents.ts';
import { astFromSql } from './from-sql.ts';
import type { SchemaGraph } from './schema-graph.ts';
import { alignStage } from './align.ts';
import { makeParseEnv } from './language/general-parse.ts';
import { realizeStage } from './language/realize.ts';
import { databaseLanguage, loadSchema } from './pipeline.ts';
import { queryShape } from './realism.ts';
import { draftPair } from './synthesize.ts';
import { silentProgress } from '../util/progress.ts';
import { STAGE_CONCURRENCY, type StageContext, type SynthPair } from './types.ts';
import { isEmptyAggregate, MAX_RESULT_ROWS, VERIFY_TIMEOUT_MS } from './verify.ts';

export interface GoldSql {
  /** Line of the gold file (0-based): the pair's id is `gold-<index>`. */
  index: number;
  dbId: string;
  sql: string;
}

/** One line of a gold file: Spider's fields (others, such as a question, are ignored: the factory writes its own). */
const goldLineSchema = z.looseObject({ db_id: z.string().min(1), query: z.string().min(1) });

/** The queries of a gold file (JSON lines with db_id and query), in file order. */
export function readGoldSql(path: string): GoldSql[] {
  const out: GoldSql[] = [];
  for (const [i, line] of readInputText(path, 'gold').split('\n').entries()) {
    if (!line.trim()) continue;
    let row: z.infer<typeof goldLineSchema>;
    try {
      row = goldLineSchema.parse(JSON.parse(line));
    } catch {
      throw new AgroError('invalid_input', `${path}:${i + 1}: not a JSON object with string fields "db_id" and "query"`);
    }
    out.push({ index: i, dbId: row.db_id, sql: row.query });
  }
  if (out.length === 0) throw new AgroError('invalid_input', `${path} holds no gold queries`);
  return out;
}

/** Where a gold query went: the step that dropped it, with why, or 'kept'. */
export interface GoldOutcome {
  index: number;
  /** realism.ts queryShape of the human SQL. */
  shape: string;
  step: 'convert' | 'execute' | 'realize' | 'roundtrip' | 'kept';
  reason?: string;
}

export interface GoldOptions {
  executor: SqlExecutor;
  seed: number;
  /** Questions per query: the question and up to phrasings-1 paraphrases, each parsed back on its own. */
  phrasings: number;
  /** Share of questions in people's variety (realize.ts); 1: every one that an intent says. */
  people?: number;
  timeoutMs?: number;
  docs?: DbDocs;
}

/** The SQL as written with one space wherever it had whitespace (Spider's gold has `age  >  56`); comments and a trailing `;` dropped. */
export function tidySql(sql: string): string {
  const toks = tokenize(sql);
  let out = '';
  for (const [k, t] of toks.entries()) {
    if (k > 0 && t.start > toks[k - 1].end) out += ' ';
    out += sql.slice(t.start, t.end);
  }
  return out.replace(/\s*;$/, '');
}

/**
 * The AST as the realizer reads it, saying the same query (the first three) or one the round trip must still
 * find equal on the database (the last):
 * - a grouped query names its group first (realize.ts and intents.ts read columns[0] as the group): only the
 *   column order changes, which Spider's comparison allows;
 * - `SELECT *` of one table lists its columns (the grammars name columns, not "everything");
 * - `HAVING count(*) > k` is `>= k + 1` for a whole k (the intent "with at least k");
 * - a query grouped by one column it does not show (`SELECT T1.name ... GROUP BY T1.id`, as people write SQL)
 *   is asked by the first column it shows ("which name has the most ..."): the round trip then keeps the pair
 *   only where that gives the human query's result;
 * - a join that counts rows (`count(*)`) is rooted at the table whose rows it counts (rootAtCounted), since the
 *   grammars say `count(*)` as "the number of <the query's first table>".
 */
export function realizableForm(q: QueryAst, schema: DbSchema, graph: SchemaGraph): QueryAst {
  const one = (s0: SelectAst): SelectAst => {
    const s = rootAtCounted(s0, graph);
    let columns = s.columns;
    if (columns.length === 1 && columns[0].kind === 'star' && !s.joins.length) {
      const t = schema.tables.find((x) => x.name === s.from.table)!;
      columns = t.columns.map((c): Expr => ({ kind: 'col', alias: s.from.alias, table: t.name, column: c.name }));
    }
    const having = s.having.map((c): Cond =>
      c.kind === 'cmp' && c.op === '>' && isCountStar(c.left) && c.right.kind === 'lit' && Number.isInteger(c.right.value) ? { ...c, op: '>=', right: { kind: 'lit', value: (c.right.value as number) + 1 } } : c,
    );
    let groupBy = s.groupBy;
    const g = groupBy[0];
    if (g) {
      const i = columns.findIndex((e) => e.kind === 'col' && e.alias === g.alias && e.column === g.column);
      const shown = columns.findIndex((e) => e.kind === 'col');
      const at = i >= 0 ? i : groupBy.length === 1 ? shown : -1;
      if (at >= 0) {
        if (i < 0) groupBy = [columns[at] as ColRef];
        columns = [columns[at], ...columns.filter((_, j) => j !== at)];
      }
    }
    return { ...s, columns, having, groupBy };
  };
  return q.kind === 'select' ? one(q) : { ...q, left: one(q.left), right: one(q.right) };
}

/**
 * A join that counts rows, re-rooted at the table its join rows are: the one from which every join edge leads
 * to a parent along a foreign key (`FROM courses JOIN registrations ... count(*)` counts registrations, one
 * join row each). The same joins, in another order; s itself when there is no such table or nothing counted.
 */
export function rootAtCounted(s: SelectAst, graph: SchemaGraph): SelectAst {
  if (!s.joins.length || !JSON.stringify([s.columns, s.having, s.orderBy]).includes('"fn":"COUNT","arg":{"kind":"star"}')) return s;
  const eq = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
  const leadsUp = (a: ColRef, b: ColRef) =>
    graph.edges.some((e) => eq(e.fromTable, a.table) && eq(e.toTable, b.table) && e.fromColumns.some((c, i) => eq(c, a.column) && eq(e.toColumns[i], b.column)));
  const pairs = s.joins.flatMap((j) => j.on);
  const up = new Map<string, Set<string>>();
  for (const p of pairs) {
    const [child, parent] = leadsUp(p.left, p.right) ? [p.left, p.right] : leadsUp(p.right, p.left) ? [p.right, p.left] : [null, null];
    if (!child || !parent) return s;
    up.set(child.alias, (up.get(child.alias) ?? new Set()).add(parent.alias));
  }
  const tableOf = new Map([[s.from.alias, s.from.table], ...s.joins.map((j): [string, string] => [j.alias, j.table])]);
  for (const root of tableOf.keys()) {
    const order = [root];
    for (let k = 0; k < order.length; k++) for (const p of up.get(order[k]) ?? []) if (!order.includes(p)) order.push(p);
    if (order.length !== tableOf.size) continue;
    if (root === s.from.alias) return s;
    const joins = order.slice(1).map((alias, k) => {
      const earlier = new Set(order.slice(0, k + 1));
      const on = pairs.flatMap((p) => (p.right.alias === alias && earlier.has(p.left.alias) ? [p] : p.left.alias === alias && earlier.has(p.right.alias) ? [{ left: p.right, right: p.left }] : []));
      return { table: tableOf.get(alias)!, alias, on };
    });
    return { ...s, from: { table: tableOf.get(root)!, alias: root }, joins };
  }
  return s;
}

/** The gold queries of one database as verified pairs, and what became of each query. */
export async function goldPairs(db: { dbId: string; path: string }, items: readonly GoldSql[], opts: GoldOptions): Promise<{ pairs: SynthPair[]; outcomes: GoldOutcome[] }> {
  const timeoutMs = opts.timeoutMs ?? 5000;
  const schema = await loadSchema(db.path);
  const { graph, lex } = await databaseLanguage(schema, opts.executor, timeoutMs, opts.docs);
  const outcomes = new Map<number, GoldOutcome>();
  const byId = new Map<string, GoldOutcome>();
  const candidates: SynthPair[] = [];
  for (const it of items) {
    const sql = tidySql(it.sql);
    const o: GoldOutcome = { index: it.index, shape: queryShape(sql), step: 'convert' };
    outcomes.set(it.index, o);
    const conv = astFromSql(sql, schema, graph);
    if (!conv.ok) {
      o.reason = conv.reason;
      continue;
    }
    const ast = realizableForm(conv.ast, schema, graph);
    const id = `gold-${it.index}`;
    byId.set(id, o);
    candidates.push(draftPair(id, db.dbId, ast, sql, 'gold', 'human-gold'));
  }
  const ctx: StageContext = {
    dbId: db.dbId,
    dbPath: db.path,
    schema,
    executor: opts.executor,
    rng: new Rng(opts.seed),
    progress: silentProgress,
    variants: [],
    timeoutMs,
    reject: (item, reason) => {
      const o = byId.get((item as SynthPair).id);
      if (o) o.reason = reason;
    },
  };
  // Run once: a query that fails, or whose answer is empty or all NULL, would match a wrong reading too.
  const why = await mapConcurrent(candidates, STAGE_CONCURRENCY, undefined, async (p) => {
    const r = await opts.executor.execute(db.path, p.sql, { timeoutMs: Math.min(timeoutMs, VERIFY_TIMEOUT_MS), maxRows: MAX_RESULT_ROWS + 1 });
    if (!r.ok) return r.error === 'timeout' ? 'timeout' : 'exec_error';
    if (r.rows.length === 0) return 'empty_result';
    if (r.rows.every((row) => row.every((v) => v === null))) return 'all_null';
    if (isEmptyAggregate(p.ast, r.rows)) return 'empty_aggregate';
    return null;
  });
  const runnable = candidates.filter((p, i) => {
    const o = byId.get(p.id)!;
    o.step = 'execute';
    o.reason = why[i] ?? undefined;
    if (why[i] === null) p.provenance.checks.push('exec', 'non_empty');
    return why[i] === null;
  });
  for (const p of runnable) byId.get(p.id)!.step = 'realize';
  const realized = await realizeStage(lex, { people: opts.people ?? 1, phrasings: opts.phrasings }).run(runnable, ctx);
  for (const p of realized) byId.get(p.id)!.step = 'roundtrip';
  const pairs = await alignStage(makeParseEnv(schema, graph, lex)).run(realized, ctx);
  for (const p of pairs) {
    const o = byId.get(p.id)!;
    o.step = 'kept';
    delete o.reason;
  }
  return { pairs, outcomes: items.map((it) => outcomes.get(it.index)!) };
}

export interface GoldSummary {
  queries: number;
  converted: number;
  /** Converted and ran with a non-empty answer. */
  runnable: number;
  kept: number;
  /** Questions kept: each kept query's question and its paraphrases that passed the round trip. */
  questions: number;
  /** Per query shape: queries, converted, kept. */
  byShape: Record<string, { queries: number; converted: number; kept: number }>;
  /** Why queries were dropped, by step: `convert:derived_table`, `execute:empty_result`, `roundtrip:roundtrip_mismatch`. */
  dropped: Record<string, number>;
}

/** Coverage of a gold run: how many converted and survived, by shape, and why the rest were dropped. */
export function summarizeGold(outcomes: readonly GoldOutcome[], pairs: readonly SynthPair[]): GoldSummary {
  const s: GoldSummary = { queries: outcomes.length, converted: 0, runnable: 0, kept: 0, questions: 0, byShape: {}, dropped: {} };
  for (const o of outcomes) {
    const row = (s.byShape[o.shape] ??= { queries: 0, converted: 0, kept: 0 });
    row.queries++;
    const converted = o.step !== 'convert';
    if (converted) {
      s.converted++;
      row.converted++;
    }
    if (converted && o.step !== 'execute') s.runnable++;
    if (o.step === 'kept') {
      s.kept++;
      row.kept++;
    } else {
      const k = `${o.step}:${o.reason ?? 'unknown'}`;
      s.dropped[k] = (s.dropped[k] ?? 0) + 1;
    }
  }
  s.questions = pairs.reduce((a, p) => a + 1 + (p.paraphrases?.length ?? 0), 0);
  s.byShape = Object.fromEntries(Object.entries(s.byShape).sort((a, b) => b[1].queries - a[1].queries));
  s.dropped = Object.fromEntries(Object.entries(s.dropped).sort((a, b) => b[1] - a[1]));
  return s;
}
