// `npm run bench -- followup [--policy base|DIR] [--dbs music_store,retail,school] [--pairs 300] [--share 0.3] [--held-out <share>] [--seed 0] [--max 0] [--out runs/bench-followup]`
// `npm run bench -- followup --quickstart RUN [--stage rl|sft] [--max 0] [--out DIR]`: a quickstart's own checkpoint on its own held-out rows.
// The follow-up measure (issue 48: a follow-up turn answered at ≥ 80% of the accuracy of a stand-alone question of
// the same shape). Per bundled database (data/databases): `agro synth --n <pairs> --follow-ups <share>`, split as the
// quickstart splits (by SQL skeleton, a conversation's turns on one side; --held-out defaults to the quickstart's
// share: 1 takes every row, fair for a policy that never trained on the database, as the base model never did), then
// on the held-out rows: the follow-ups (each with the turn it continues in its prompt) and the stand-alone questions
// whose SQL shape (factory/realism.ts queryShape) some follow-up has, each set through `agro predict --no-search` (the
// policy's own greedy answer; the answer path leaves a follow-up to the policy anyway). Prints EX of each, the
// stand-alone EX weighted to the follow-ups' shapes, and their ratio; EX per edit kind; writes summary.json.
// --max N keeps N rows of each set per database (0: all). `bench human` cannot measure this: its questions stand alone.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { queryShape } from '../src/factory/realism.ts';
import { rowSqls, splitBySkeleton } from '../src/data/splits.ts';
import { quickstartConfigSchema } from '../src/pipeline/quickstart.ts';
import type { DatasetRow } from '../src/data/dataset-row.ts';
import { readJsonl, writeJsonAtomic } from '../src/util/fs.ts';
import { Rng } from '../src/util/rng.ts';
import { flag, num } from './_args.ts';
import { agroCli } from './_agro.ts';
import { table } from './rl.ts';
import { databaseId } from '../src/sql/db-id.ts';

/** EX of one set of rows: per row, right or not. */
interface Scored {
  row: DatasetRow;
  correct: boolean;
}

export interface FollowUpMeasure {
  followUps: { n: number; ex: number };
  standAlone: { n: number; ex: number; exAtFollowUpShapes: number };
  /** followUps.ex / standAlone.exAtFollowUpShapes; null when the stand-alone questions got none right. */
  ratio: number | null;
  byEdit: Record<string, { n: number; ex: number }>;
}

const mean = (xs: boolean[]): number => (xs.length ? xs.filter(Boolean).length / xs.length : 0);

/**
 * The held-out rows the measure compares: the follow-ups whose shape some stand-alone row has, and the stand-alone
 * rows of those shapes (at most `max` of each when max > 0, chosen by seed).
 */
export function pairedSets(heldOut: readonly DatasetRow[], max: number, seed: number): { followUps: DatasetRow[]; standAlone: DatasetRow[] } {
  const alone = heldOut.filter((r) => !r.previous?.length);
  const aloneShapes = new Set(alone.map((r) => queryShape(r.SQL)));
  let followUps = heldOut.filter((r) => r.previous?.length && aloneShapes.has(queryShape(r.SQL)));
  if (max > 0) followUps = new Rng(seed).shuffle([...followUps]).slice(0, max);
  const shapes = new Set(followUps.map((r) => queryShape(r.SQL)));
  let standAlone = alone.filter((r) => shapes.has(queryShape(r.SQL)));
  if (max > 0) standAlone = new Rng(seed + 1).shuffle([...standAlone]).slice(0, max);
  return { followUps, standAlone };
}

/**
 * The measure from scored rows: EX of the follow-ups; EX of the stand-alone questions, plain and weighted by the
 * follow-ups' shapes (each shape's stand-alone EX counted as often as follow-ups have that shape; a shape no
 * stand-alone row has is left out of both).
 */
export function followUpMeasure(followUps: readonly Scored[], standAlone: readonly Scored[], shapeOf = (r: DatasetRow): string => queryShape(r.SQL)): FollowUpMeasure {
  const byShape = new Map<string, boolean[]>();
  for (const s of standAlone) {
    const k = shapeOf(s.row);
    byShape.set(k, [...(byShape.get(k) ?? []), s.correct]);
  }
  const kept = followUps.filter((f) => byShape.has(shapeOf(f.row)));
  const weighted = kept.length ? kept.reduce((a, f) => a + mean(byShape.get(shapeOf(f.row))!), 0) / kept.length : 0;
  const ex = mean(kept.map((f) => f.correct));
  const byEdit: Record<string, { n: number; ex: number }> = {};
  for (const f of kept) {
    const k = f.row.provenance.followUp ?? 'unknown';
    const cur = byEdit[k] ?? { n: 0, ex: 0 };
    byEdit[k] = { n: cur.n + 1, ex: cur.ex + (f.correct ? 1 : 0) };
  }
  for (const v of Object.values(byEdit)) v.ex /= v.n;
  return {
    followUps: { n: kept.length, ex },
    standAlone: { n: standAlone.length, ex: mean(standAlone.map((s) => s.correct)), exAtFollowUpShapes: weighted },
    ratio: weighted > 0 ? ex / weighted : null,
    byEdit,
  };
}

/** Each row of `rows` right or not, by `agro predict` of the policy over them (resumable in `dir`). */
function predict(policy: string, rows: readonly DatasetRow[], dbRoot: string, dir: string, log: string): Scored[] {
  if (!rows.length) return [];
  mkdirSync(dir, { recursive: true });
  const data = join(dir, 'questions.jsonl');
  writeFileSync(data, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  if (!existsSync(join(dir, 'run', 'report.json'))) agroCli(['predict', '--policy', policy, '--data', data, '--db-root', dbRoot, '--no-search', '--out', join(dir, 'run')], { log });
  const rep = JSON.parse(readFileSync(join(dir, 'run', 'report.json'), 'utf8')) as { questions: Array<{ index: number; outcome: string }> };
  const right = new Set(rep.questions.filter((q) => q.outcome === 'match').map((q) => q.index));
  return rows.map((row, i) => ({ row, correct: right.has(i) }));
}

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

export async function run(args: string[]): Promise<void> {
  const out = resolve(flag(args, '--out', 'runs/bench-followup'));
  const max = num(args, '--max', 0);
  const seed = num(args, '--seed', 0);
  mkdirSync(out, { recursive: true });
  const log = join(out, 'bench.log');
  const defaults = quickstartConfigSchema.parse({});
  const sets: Array<{ dbId: string; dbRoot: string; heldOut: DatasetRow[]; policy: string }> = [];
  const qs = flag(args, '--quickstart', '');
  if (qs) {
    // A quickstart's checkpoint on the rows it held out (its own split, its own database).
    const rep = JSON.parse(readFileSync(join(qs, 'report.json'), 'utf8')) as { config: { db: string }; sft?: { checkpoint: string }; rl?: { checkpoint: string } };
    const stage = flag(args, '--stage', 'rl') as 'rl' | 'sft';
    const policy = rep[stage]?.checkpoint;
    if (!policy) throw new Error(`bench: ${qs} has no ${stage} checkpoint (is the quickstart finished?)`);
    const db = resolve(rep.config.db);
    sets.push({ dbId: databaseId(db), dbRoot: dirname(dirname(db)), heldOut: readJsonl<DatasetRow>(join(qs, 'held_out.jsonl')), policy });
  } else {
    const policy = flag(args, '--policy', 'base');
    const pairs = num(args, '--pairs', 300);
    const share = num(args, '--share', 0.3);
    const heldOutShare = num(args, '--held-out', defaults.heldOutShare);
    const dbs = flag(args, '--dbs', 'music_store,retail,school').split(',').filter(Boolean);
    for (const dbId of dbs) {
      const db = resolve('data/databases', dbId, `${dbId}.sqlite`);
      const synth = join(out, dbId, 'synth');
      if (!existsSync(join(synth, 'dataset.jsonl'))) agroCli(['synth', '--db', db, '--out', synth, '--n', String(pairs), '--follow-ups', String(share), '--variants', '1', '--seed', String(seed), '--json'], { log });
      const rows = readJsonl<DatasetRow>(join(synth, 'dataset.jsonl'));
      const rest = 1 - heldOutShare;
      // The quickstart's split (its seed and shares), so a row held out here is one a quickstart of the same seed holds out.
      const split = splitBySkeleton(rows, rowSqls, { sft: rest - Math.min(rest, defaults.rlShare), rl: Math.min(rest, defaults.rlShare), heldOut: heldOutShare }, seed ^ 0x9e37);
      sets.push({ dbId, dbRoot: resolve('data/databases'), heldOut: split.heldOut, policy });
    }
  }
  const lines: string[][] = [['database', 'follow-ups', 'EX', 'stand-alone', 'EX', 'EX at their shapes', 'ratio', 'load']];
  const all: { f: Scored[]; s: Scored[] } = { f: [], s: [] };
  const perDb: Record<string, FollowUpMeasure> = {};
  for (const set of sets) {
    const { followUps, standAlone } = pairedSets(set.heldOut, max, seed);
    const f = predict(set.policy, followUps, set.dbRoot, join(out, set.dbId, 'follow-ups'), log);
    const s = predict(set.policy, standAlone, set.dbRoot, join(out, set.dbId, 'stand-alone'), log);
    const m = followUpMeasure(f, s);
    perDb[set.dbId] = m;
    all.f.push(...f);
    all.s.push(...s);
    lines.push([set.dbId, String(m.followUps.n), pct(m.followUps.ex), String(m.standAlone.n), pct(m.standAlone.ex), pct(m.standAlone.exAtFollowUpShapes), m.ratio === null ? '-' : m.ratio.toFixed(2), loadavg()[0].toFixed(1)]);
  }
  // Over every database: shapes weighted within each, so one database's easy shapes do not stand for another's.
  const overall = followUpMeasure(all.f, all.s, (r) => `${r.db_id}\u0000${queryShape(r.SQL)}`);
  lines.push(['all', String(overall.followUps.n), pct(overall.followUps.ex), String(overall.standAlone.n), pct(overall.standAlone.ex), pct(overall.standAlone.exAtFollowUpShapes), overall.ratio === null ? '-' : overall.ratio.toFixed(2), '']);
  console.log(`policy: ${sets[0]?.policy ?? '-'}`);
  table(lines);
  console.log(`by edit: ${Object.entries(overall.byEdit).map(([k, v]) => `${k} ${pct(v.ex)} of ${v.n}`).join(', ')}`);
  console.log(`goal: follow-up EX ≥ 0.80 × stand-alone EX at the same shapes: ${overall.ratio === null ? 'no stand-alone question right, no ratio' : overall.ratio >= 0.8 ? 'met' : 'not met'}`);
  writeJsonAtomic(join(out, 'summary.json'), { policy: sets[0]?.policy ?? null, databases: perDb, all: overall });
}
