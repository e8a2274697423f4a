/**
 * Follow-up pairs: a verified query, then one edit of it as the next turn of a conversation asks it — a filter
 * added or its value changed, a limit, an order, a column added or replaced — worded as people continue
 * (language/follow-ups.ts). The edited query is checked as every pair is (verify.ts: it runs, its result is
 * non-empty and none of its filters is redundant; augment.ts: it runs on every variant and ties at a LIMIT do not
 * decide it), and it must answer differently from the query it continues. A follow-up carries the turn it
 * continues (`previous`): the agent reads it in its prompt at training as at answer time.
 */
import type { ColRef, Cond, Expr, SelectAst } from './ast.ts';
import { col } from './ast.ts';
import type { FollowUpEdit } from '../data/dataset-row.ts';
import { printQuery } from './print.ts';
import { verifyPair } from './verify.ts';
import { ambiguityReason, humanizeRanking } from './augment.ts';
import { difficultyOf } from './synthesize.ts';
import { colKey, spokenColumn, type Lexicon } from './language/names.ts';
import { AGG_OF, NAT_OPS, typedValue } from './language/intents.ts';
import { followUpQuestion, type FollowUpWords } from './language/follow-ups.ts';
import { realizeEvidence } from './language/realize.ts';
import type { ColumnRole, TableProfile } from './profile.ts';
import { mapConcurrent } from '../util/concurrency.ts';
import { Rng } from '../util/rng.ts';
import { STAGE_CONCURRENCY, type Stage, type StageContext, type SynthPair } from './types.ts';

/**
 * A follow-up's share of the pairs when a run does not say: none. agro's own 1.25M-parameter policy answers no
 * follow-up even trained on them (`npm run bench -- followup`, docs/benchmarks.md#followup), so by default they would
 * only take the place of questions it can learn and pull down the held-out figure; `--follow-ups 0.15` writes them
 * for a policy that can use them (a larger one trained through `agro export`).
 */
export const FOLLOW_UP_SHARE = 0;

/** What the edits read of the database: the columns synthesis may use, their category values, and how they are said. */
export interface FollowUpEnv {
  lex: Lexicon;
  profiles: Map<string, TableProfile>;
  /** colKey -> the category values of the column (profile.ts categoryValues). */
  values: Map<string, string[]>;
}

/** One edit of a query: its kind, the edited query, and the words the follow-up says it with. */
export interface Edit {
  kind: FollowUpEdit;
  ast: SelectAst;
  words: FollowUpWords;
  /** The result column an order edit sorts by (its values must differ, so the order is the query's alone). */
  sortColumn?: number;
}

const quote = (v: string | number): string => (typeof v === 'number' ? String(v) : `'${v}'`);
const sameCol = (a: ColRef, b: ColRef): boolean => a.alias === b.alias && a.column === b.column;
const isCol = (e: Expr): e is ColRef => e.kind === 'col';

/** The base table's columns an edit may name: usable, not keys, and said unambiguously. */
function ownColumns(q: SelectAst, env: FollowUpEnv): Array<{ ref: ColRef; role: ColumnRole }> {
  const p = env.profiles.get(q.from.table);
  if (!p) return [];
  return p.columns.filter((c) => !c.isKey && !env.lex.unspeakable.has(colKey(c.table, c.column))).map((c) => ({ ref: col(q.from.alias, q.from.table, c.column), role: c.role }));
}

const say = (env: FollowUpEnv, c: ColRef): string => spokenColumn(env.lex, c.table, c.column);

/** Columns the query's filters already read (a second filter on one of them reads as a change, not an addition). */
const filtered = (q: SelectAst): ColRef[] => q.where.flatMap((c) => (c.kind === 'cmp' && c.left.kind === 'col' ? [c.left] : c.kind === 'cmp' && c.left.kind === 'datepart' ? [c.left.arg] : c.kind === 'like' || c.kind === 'null' ? [c.expr] : []));

/** "and only those with genre 'Rock'": a category value or a numeric bound on a column of the rows the query lists or counts. */
function filterAdd(q: SelectAst, env: FollowUpEnv, rng: Rng, schemaSamples: (table: string, column: string) => number[]): Edit | null {
  if (q.groupBy.length || q.having.length) return null;
  const taken = filtered(q);
  const free = ownColumns(q, env).filter((c) => !taken.some((t) => sameCol(t, c.ref)));
  const choices = rng.shuffle(free.filter((c) => c.role === 'category' || c.role === 'numeric'));
  for (const c of choices) {
    if (c.role === 'category') {
      const vals = env.values.get(colKey(c.ref.table, c.ref.column)) ?? [];
      if (vals.length < 2) continue;
      const v = rng.pick(vals);
      const cond: Cond = { kind: 'cmp', left: c.ref, op: '=', right: { kind: 'lit', value: v } };
      return { kind: 'filter-add', ast: { ...q, where: [...q.where, cond] }, words: { kind: 'filter-add', cond: `${say(env, c.ref)} ${quote(typedValue(env.lex, c.ref.table, c.ref.column, v))}` } };
    }
    // A bound people would type: a whole number from the column's own values, in the middle of them.
    const nums = schemaSamples(c.ref.table, c.ref.column).filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
    if (nums.length < 4) continue;
    const bound = Math.round(nums[Math.floor(nums.length / 2)]);
    const op = rng.next() < 0.5 ? '>' : '<';
    const word = NAT_OPS.find(([o]) => o === op)![1];
    const cond: Cond = { kind: 'cmp', left: c.ref, op, right: { kind: 'lit', value: bound } };
    return { kind: 'filter-add', ast: { ...q, where: [...q.where, cond] }, words: { kind: 'filter-add', cond: `${say(env, c.ref)} ${word} ${bound}` } };
  }
  return null;
}

/** "what about 'Jazz'?": a text filter of the query asked again with another value of its column. */
function filterChange(q: SelectAst, env: FollowUpEnv, rng: Rng): Edit | null {
  const at = rng.shuffle(q.where.map((_, i) => i));
  for (const i of at) {
    const c = q.where[i];
    if (c.kind !== 'cmp' || c.op !== '=' || c.left.kind !== 'col' || c.right.kind !== 'lit' || typeof c.right.value !== 'string') continue;
    const left = c.left;
    const old = c.right.value;
    const others = (env.values.get(colKey(left.table, left.column)) ?? []).filter((v) => v !== old);
    if (!others.length) continue;
    const v = rng.pick(others);
    const where = q.where.map((w, j) => (j === i ? { ...c, right: { kind: 'lit' as const, value: v } } : w));
    return { kind: 'filter-change', ast: { ...q, where }, words: { kind: 'filter-change', value: quote(typedValue(env.lex, left.table, left.column, v)) } };
  }
  return null;
}

/** "just the top 3": a ranked or sorted query cut to fewer rows. Tie-breakers go in for the ambiguity check, which drops them where they change nothing. */
function limit(q: SelectAst, env: FollowUpEnv, rng: Rng, rows: number): Edit | null {
  if (!q.orderBy.length) return null;
  const bound = q.limit ?? rows;
  const ks = [1, 3, 5].filter((k) => k < bound);
  if (!ks.length) return null;
  const k = rng.pick(ks);
  const first = q.orderBy[0].expr;
  const pk = env.profiles.get(q.from.table)?.pk ?? [];
  const ties: ColRef[] = q.groupBy.length ? q.groupBy : (pk.length ? pk : ['rowid']).map((c) => col(q.from.alias, q.from.table, c));
  const orderBy = q.orderBy.length > 1 ? q.orderBy : [...q.orderBy, ...ties.filter((t) => !(isCol(first) && sameCol(first, t))).map((t) => ({ expr: t, dir: 'ASC' as const }))];
  // The ranked column's NULLs are no top row (synthesis guards its rankings so).
  const guard: Cond[] = isCol(first) && !q.groupBy.length && !q.where.some((c) => c.kind === 'null' && c.negated && sameCol(c.expr, first)) ? [{ kind: 'null', expr: first, negated: true }] : [];
  return { kind: 'limit', ast: { ...q, orderBy, where: [...q.where, ...guard], limit: k }, words: { kind: 'limit', k } };
}

/** How a sorted column is spoken: a column by its name, a count as "count", an aggregate by its word and column. */
function sortWords(e: Expr, env: FollowUpEnv): string | null {
  if (isCol(e)) return `the ${say(env, e)}`;
  if (e.kind === 'agg' && e.fn === 'COUNT' && e.arg.kind === 'star') return 'the count';
  if (e.kind === 'agg' && e.fn !== 'COUNT' && isCol(e.arg) && AGG_OF[e.fn]) return `the ${AGG_OF[e.fn]} ${say(env, e.arg)}`;
  return null;
}

/** "now sort them by price, highest first": a list of several rows sorted by one of its own columns. */
function order(q: SelectAst, env: FollowUpEnv, rng: Rng, rows: number): Edit | null {
  if (q.orderBy.length || q.limit !== null || rows < 3) return null;
  const roleOf = (c: ColRef): ColumnRole | undefined => env.profiles.get(c.table)?.columns.find((u) => u.column === c.column)?.role;
  const at = rng.shuffle(q.columns.map((_, i) => i));
  for (const i of at) {
    const e = q.columns[i];
    const words = sortWords(e, env);
    if (!words) continue;
    const role = isCol(e) ? roleOf(e) : 'numeric';
    if (!role) continue;
    // Ties in the sorted column are checked on the result (checkFollowUp): a category sorts as any text does.
    const s = role === 'numeric' ? 'number' : role === 'date' ? 'date' : 'text';
    const dir = s === 'text' && rng.next() < 0.8 ? 'ASC' : rng.next() < 0.5 ? 'DESC' : 'ASC';
    return { kind: 'order', ast: { ...q, orderBy: [{ expr: e, dir }] }, words: { kind: 'order', column: words, dir, scale: s }, sortColumn: i };
  }
  return null;
}

/** "also show their composer" / "show their composer instead": a list of the rows' own columns, widened or changed. */
function columnEdit(q: SelectAst, env: FollowUpEnv, rng: Rng, replace: boolean): Edit | null {
  if (q.groupBy.length || q.distinct || !q.columns.every(isCol) || q.columns.length > (replace ? 1 : 2)) return null;
  const shown = q.columns as ColRef[];
  const free = ownColumns(q, env).filter((c) => !shown.some((s) => sameCol(s, c.ref)));
  if (!free.length) return null;
  const c = rng.pick(free).ref;
  const words = say(env, c);
  return replace
    ? { kind: 'column-replace', ast: { ...q, columns: [c] }, words: { kind: 'column-replace', column: words } }
    : { kind: 'column-add', ast: { ...q, columns: [...q.columns, c] }, words: { kind: 'column-add', column: words } };
}

/** The edits that apply to a query, in a seeded order. */
export function candidateEdits(q: SelectAst, env: FollowUpEnv, rng: Rng, resultRows: number, samples: (table: string, column: string) => number[]): Edit[] {
  const makers: Array<() => Edit | null> = [
    () => filterAdd(q, env, rng, samples),
    () => filterChange(q, env, rng),
    () => limit(q, env, rng, resultRows),
    () => order(q, env, rng, resultRows),
    () => columnEdit(q, env, rng, false),
    () => columnEdit(q, env, rng, true),
  ];
  return rng.shuffle(makers).flatMap((m) => m() ?? []);
}

/** The rows of a pair's result (verify.ts keeps them as JSON). */
const resultRows = (p: SynthPair): unknown[][] => (p.result ? (JSON.parse(p.result) as unknown[][]) : []);

/** Why a follow-up of `base` made by `edit` fails its checks (null: it passes; `pair` then holds its SQL and result). */
export async function checkFollowUp(ctx: StageContext, base: SynthPair, edit: Edit, pair: SynthPair): Promise<string | null> {
  const reason = await verifyPair(ctx, pair);
  if (reason) return reason;
  // A turn that answers what the last one answered continues nothing.
  if (pair.result === base.result) return 'follow_up_unchanged';
  if (edit.sortColumn !== undefined) {
    const keys = resultRows(pair).map((r) => JSON.stringify(r[edit.sortColumn!]));
    if (new Set(keys).size !== keys.length) return 'follow_up_order_ties';
  }
  const amb = await ambiguityReason(ctx, pair);
  if (amb) return amb;
  await humanizeRanking(ctx, pair);
  return null;
}

/** A follow-up pair of `base` by `edit`, before its checks: the previous turn, the edited query, its question. */
export function followUpPair(ctx: StageContext, base: SynthPair, edit: Edit, env: FollowUpEnv, variant: number): SynthPair {
  return {
    id: `${base.id}+${edit.kind}`,
    dbId: base.dbId,
    sql: printQuery(edit.ast, ctx.dialect),
    ast: edit.ast,
    question: followUpQuestion(edit.words, base.style, variant),
    evidence: realizeEvidence(edit.ast, env.lex, ctx.dialect),
    style: base.style,
    difficulty: difficultyOf(edit.ast).difficulty,
    provenance: { stages: ['follow-up'], checks: [], ...(base.provenance.template ? { template: base.provenance.template } : {}), followUp: edit.kind, followsUp: base.id },
    previous: [{ question: base.question, sql: base.sql }],
  };
}

/**
 * The follow-up stage: for a `share` of the pairs (seeded), one follow-up each, the first of its edits that
 * passes the checks (two tried at most). The follow-ups take the place of as many pairs that no follow-up
 * continues (the last ones: synthesis draws its templates in a seeded mix, so they are no kind in particular),
 * so a run writes the number of pairs it was asked for; the first turns are kept, and the follow-ups come after
 * the pairs.
 */
export const followUpStage = (env: FollowUpEnv, share: number): Stage<SynthPair, SynthPair> => ({
  name: 'follow-up',
  async run(items, ctx) {
    const want = Math.round(share * items.length);
    const samples = (table: string, column: string): number[] =>
      (ctx.schema.tables.find((t) => t.name === table)?.columns.find((c) => c.name === column)?.stats.samples ?? []).flatMap((v) => (typeof v === 'number' ? [v] : typeof v === 'bigint' ? [Number(v)] : []));
    // Each base pair's draws come from its own generator, seeded in order, so the concurrent checks do not change them.
    const order = ctx.rng.shuffle(items.filter((p) => p.ast.kind === 'select' && !p.previous?.length).map((p) => ({ p, seed: 0 })));
    for (const o of order) o.seed = ctx.rng.int(0x7fffffff);
    const out: SynthPair[] = [];
    ctx.progress.start('follow-up', want);
    for (let at = 0; at < order.length && out.length < want; at += STAGE_CONCURRENCY) {
      const chunk = order.slice(at, at + STAGE_CONCURRENCY);
      const made = await mapConcurrent(chunk, STAGE_CONCURRENCY, undefined, async ({ p, seed }) => {
        const rng = new Rng(seed);
        const edits = candidateEdits(p.ast as SelectAst, env, rng, p.resultRows ?? resultRows(p).length, samples).slice(0, 2);
        for (const e of edits) {
          const f = followUpPair(ctx, p, e, env, rng.int(6));
          const reason = await checkFollowUp(ctx, p, e, f);
          if (!reason) return f;
          ctx.reject(f, reason);
        }
        return null;
      });
      for (const f of made) {
        if (!f || out.length >= want) continue;
        f.provenance.checks.push('exec', 'non_empty', 'non_degenerate', 'changed', `variants:${ctx.variants.length}`, 'unambiguous');
        out.push(f);
        ctx.progress.tick();
      }
    }
    ctx.progress.stop();
    const continued = new Set(out.map((f) => f.provenance.followsUp));
    let room = out.length;
    const kept = [...items].reverse().filter((p) => {
      if (room === 0 || continued.has(p.id)) return true;
      room--;
      ctx.reject(p, 'room_for_follow_ups');
      return false;
    });
    return [...kept.reverse(), ...out];
  },
});
