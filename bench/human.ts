// `npm run bench -- human [--sets spider,kaggle] [--dbs a,b] [--seeds 0,1] [--small] [--from base|scratch|DIR] [--out runs/bench-human] [--examples 0]`
// `npm run bench -- human --zero-shot [--policy base|DIR] [--no-constrain] [--retries N] [--no-memory] [--no-judge] [--chooser judge]`: no training
// at all, the policy (default: the built-in base model) on every database's human questions, with the factory's verified pairs of the database as
// the answer path's memory (`agro synth`, as the quickstart synthesizes them; --no-memory: none); the built-in judge gives the confidence
// (--no-judge: none; --chooser judge: it also chooses), and the transparent ranker's choice on the same candidates is a column beside.
// The end measure, run as a user would: `agro quickstart --db <db>` on each database alone (its documentation
// found beside it, as for any user's database), then `agro predict --policy <checkpoint>` at its defaults (the
// checkpoint's own prompt contract) with the SFT and the final RL checkpoint over the questions people wrote
// about that database, which nothing ever trains on. Sets: ../shared/data/spider-dev-open (9 Spider dev
// databases, 330 questions) and ../shared/data/kaggledbqa (2 Kaggle databases, 59 questions).
// Prints one row per database and seed (synthetic held-out EX, human EX SFT → RL, the tool's fixed/broke on
// human questions, minutes, load), the means per set, and writes summary.json. Every step is a CLI command in
// its own process and resumes: a rerun reuses finished quickstarts and predictions.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { queryShape, schemaItems } from '../src/factory/realism.ts';
import { introspectSchema } from '../src/sql/introspect.ts';
import { tokenize } from '../src/sql/lexer.ts';
import type { DbSchema } from '../src/sql/types.ts';
import { Rng } from '../src/util/rng.ts';
import { readJsonl, writeJsonAtomic } from '../src/util/fs.ts';
import type { QuestionRecord } from '../src/pipeline/predict.ts';
import { flag, num } from './_args.ts';
import { agroCli } from './_agro.ts';
import { table } from './rl.ts';
import { readMemory } from '../src/memory/legacy.ts';
import { MemoryIndex } from '../src/answer/memory.ts';
import { readDataset } from '../src/data/read-dataset.ts';
import { evaluate } from '../src/eval/run.ts';
import { createExecutor } from '../src/sql/executor.ts';

interface Human {
  db_id: string;
  question: string;
  query: string;
}

/** The open measurement sets: where their databases and questions are. */
const SETS = {
  spider: { root: resolve('../shared/data/spider-dev-open'), questions: 'dev.json' },
  kaggle: { root: resolve('../shared/data/kaggledbqa'), questions: 'questions.json' },
} as const;
type SetName = keyof typeof SETS;

const load = (): string => loadavg().map((x) => x.toFixed(1)).join(' ');

const agro = (args: string[], log: string): number => agroCli(args, { log }).seconds;

interface PredictOutcome {
  /** The answer written (the answer path's choice, at predict's defaults). */
  correct: number;
  n: number;
  fixed: number;
  broke: number;
  toolCalls: number;
  /** Predictions SQLite could not even run (syntax or unknown names). */
  errors: number;
  /** The answer path: the policy's greedy answer alone, the oracles (some candidate right) and the time to choose. */
  answer?: { greedyEx: number; chosenEx: number; msPerQuestion: number; judge?: boolean; oracle?: { any: number; policy: number; memory: number; edit: number; transparent?: number; rankerShare: number } };
}

function outcome(dir: string): PredictOutcome {
  const rep = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')) as {
    summary: { correct: number; count: number; outcomes: Record<string, number> };
    predict: { toolEffect?: { fixed: number; broke: number }; toolCalls: number; answer?: PredictOutcome['answer'] };
  };
  return {
    correct: rep.summary.correct,
    n: rep.summary.count,
    fixed: rep.predict.toolEffect?.fixed ?? 0,
    broke: rep.predict.toolEffect?.broke ?? 0,
    toolCalls: rep.predict.toolCalls,
    errors: rep.summary.outcomes.pred_error ?? 0,
    ...(rep.predict.answer ? { answer: rep.predict.answer } : {}),
  };
}

/** EX of answering each question with the SQL of the memory's most similar question (no model): the answer path's floor. */
async function memoryTop1(memoryPath: string, dataFile: string, dbRoot: string): Promise<number> {
  const index = new MemoryIndex(readMemory(memoryPath));
  const data = readDataset(dataFile);
  const preds = data.items.map((it) => index.nearest(it.question ?? '', 1)[0]?.entry.sql ?? 'SELECT NULL');
  const exec = createExecutor({ size: 2 });
  try {
    const r = await evaluate(data, preds, exec, { dbRoot, mode: 'spider' });
    return r.summary.correct / Math.max(1, r.summary.count);
  } finally {
    await exec.close();
  }
}

/**
 * The answer path on the questions whose gold answer has more than one cell: a wrong query seldom returns such a
 * result by chance, where a count or a single name often does and so inflates the oracle (some candidate right).
 */
interface BeyondChance { n: number; chosen: number; oracle: number }
async function beyondChance(dir: string, dbPath: string): Promise<BeyondChance> {
  const recs = readJsonl<QuestionRecord>(join(dir, 'trajectories.jsonl'));
  const exec = createExecutor({ size: 1 });
  const out: BeyondChance = { n: 0, chosen: 0, oracle: 0 };
  try {
    for (const r of recs) {
      const g = await exec.execute(dbPath, r.result.gold, {});
      if (!g.ok || g.rows.reduce((a, row) => a + row.length, 0) <= 1) continue;
      out.n++;
      if (r.result.outcome === 'match') out.chosen++;
      if (r.answer?.oracle?.any) out.oracle++;
    }
  } finally {
    await exec.close();
  }
  return out;
}

/**
 * The confidence read as accuracy, per set: each bucket of 0.1 with its questions, mean confidence and share right,
 * and how many answers were marked confident (above the low mark) and how many of those were right.
 */
function reliabilityLines(dirs: ReadonlyArray<{ set: string; dir: string }>): string[] {
  const out: string[] = [];
  for (const set of new Set(dirs.map((d) => d.set))) {
    const recs = dirs.filter((d) => d.set === set).flatMap((d) => readJsonl<QuestionRecord>(join(d.dir, 'trajectories.jsonl'))).filter((r) => r.answer);
    const b = Array.from({ length: 10 }, () => ({ n: 0, conf: 0, right: 0 }));
    for (const r of recs) {
      const x = b[Math.min(9, Math.floor(r.answer!.confidence * 10))];
      x.n++;
      x.conf += r.answer!.confidence;
      x.right += r.result.outcome === 'match' ? 1 : 0;
    }
    const sure = recs.filter((r) => r.answer!.low === false);
    const sureRight = sure.filter((r) => r.result.outcome === 'match').length;
    out.push(`${set}: confidence → right: ${b.map((x, i) => (x.n ? `${(i / 10).toFixed(1)}+ ${x.n} q, ${(x.conf / x.n).toFixed(2)} → ${(x.right / x.n).toFixed(2)}` : '')).filter(Boolean).join('; ')}`);
    out.push(`${set}: marked confident ${sure.length} of ${recs.length} (${pct(sure.length, recs.length)}), right ${sureRight} of them (${pct(sureRight, Math.max(1, sure.length))})`);
  }
  return out;
}

/** One line per set: the ranker's share of the oracle on the questions no answer matches by chance. */
function beyondChanceLines(rows: ReadonlyArray<{ set: string; beyond: BeyondChance }>): string[] {
  return [...new Set(rows.map((r) => r.set))].map((set) => {
    const t = rows.filter((r) => r.set === set).reduce((a, r) => ({ n: a.n + r.beyond.n, chosen: a.chosen + r.beyond.chosen, oracle: a.oracle + r.beyond.oracle }), { n: 0, chosen: 0, oracle: 0 });
    return `${set}: on the ${t.n} questions whose gold answer has more than one cell (none matched by chance), chosen ${t.chosen}, some candidate right ${t.oracle}, ranker share ${t.oracle ? (t.chosen / t.oracle).toFixed(2) : '-'}`;
  });
}

/**
 * The README's "without any training" path, as it is written there (`agro synth --db … --out …`, no size flag): the
 * zero-shot memory is the one a person builds, whose recipe is src/factory/memory-recipe.ts.
 */
export const readmeMemoryArgs = (db: string, out: string): string[] => ['synth', '--db', db, '--out', out, '--json'];

/**
 * Why a prediction missed, from the SQL alone: no answer at all (the episode ended without one: `SELECT NULL`), it
 * did not run, it left out every value the gold filters on (a dropped filter), its shape differs, it reads other
 * tables or columns, it uses other values, or none of these (order, DISTINCT, a condition said another way).
 */

export const FAILURE_KINDS = ['no_answer', 'unrunnable', 'structure', 'column', 'value', 'other'] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

/**
 * The values a query compares with, lower-cased: strings, numbers (not LIMIT/OFFSET counts), and double-quoted
 * words that name no table or column (Spider's gold writes "Operational" for 'Operational').
 */
export function valueLiterals(sql: string, schema: DbSchema): string[] {
  const names = new Set(schema.tables.flatMap((t) => [t.name, ...t.columns.map((c) => c.name)]).map((n) => n.toLowerCase()));
  const toks = tokenize(sql);
  return toks
    .filter((t, i) => {
      if (t.kind === 'str') return true;
      if (t.kind === 'num') return !/^(limit|offset)$/i.test(toks[i - 1]?.text ?? '');
      return t.kind === 'qid' && t.quote === '"' && !names.has(t.text.toLowerCase());
    })
    .map((t) => t.text.toLowerCase());
}

const NO_ANSWER = /^\s*select\s+null\s*;?\s*$/i;

export function classifyFailure(pred: string, gold: string, outcome: string, schema: DbSchema): FailureKind {
  if (!pred.trim() || NO_ANSWER.test(pred)) return 'no_answer';
  if (outcome === 'pred_error') return 'unrunnable';
  const predItems = schemaItems(pred, schema);
  const goldItems = schemaItems(gold, schema);
  const goldValues = valueLiterals(gold, schema);
  const predValues = new Set(valueLiterals(pred, schema));
  // Checked before the shape, which a missing WHERE also changes: every value of the gold is gone and the
  // prediction reads nothing the gold does not.
  if (goldValues.length > 0 && goldValues.every((v) => !predValues.has(v)) && [...predItems].every((i) => goldItems.has(i))) return 'value';
  if (queryShape(pred) !== queryShape(gold)) return 'structure';
  if ([...predItems].sort().join(',') !== [...goldItems].sort().join(',')) return 'column';
  if ([...predValues].sort().join('\u0000') !== [...new Set(goldValues)].sort().join('\u0000')) return 'value';
  return 'other';
}

function failures(dir: string, schema: DbSchema): { counts: Record<FailureKind, number>; examples: { question?: string; kind: FailureKind; pred: string; gold: string }[] } {
  const rep = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')) as { questions: { outcome: string; pred: string; gold: string; index: number }[] };
  const recs = readJsonl<QuestionRecord>(join(dir, 'trajectories.jsonl'));
  const q = new Map(recs.map((r) => [r.index, r.question]));
  const counts = Object.fromEntries(FAILURE_KINDS.map((k) => [k, 0])) as Record<FailureKind, number>;
  const examples: { question?: string; kind: FailureKind; pred: string; gold: string }[] = [];
  for (const r of rep.questions) {
    if (r.outcome === 'match') continue;
    const kind = classifyFailure(r.pred, r.gold, r.outcome, schema);
    counts[kind]++;
    examples.push({ question: q.get(r.index), kind, pred: r.pred, gold: r.gold });
  }
  return { counts, examples };
}

export interface HumanRow {
  set: SetName;
  db: string;
  seed: number;
  questions: number;
  synthRows: number;
  heldOut: { sft: number; rl: number };
  human: { sft: PredictOutcome; rl: PredictOutcome };
  /** The memory's top-1 alone on the human questions. */
  memoryTop1: number;
  /** The RL policy's misses on the human questions, by kind (classifyFailure). */
  failures: Record<FailureKind, number>;
  /** The RL checkpoint's answer path on the questions whose gold answer has more than one cell. */
  beyond: BeyondChance;
  quickstartSeconds: number | null;
  load: string;
}

const pct = (c: number, n: number): string => `${((100 * c) / Math.max(1, n)).toFixed(1)}%`;

export async function run(args: string[]): Promise<void> {
  if (args.includes('--zero-shot')) return zeroShot(args);
  const sets = flag(args, '--sets', 'spider,kaggle').split(',').filter(Boolean) as SetName[];
  const seeds = flag(args, '--seeds', '0').split(',').map(Number);
  const small = args.includes('--small');
  const outRoot = resolve(flag(args, '--out', 'runs/bench-human'));
  const nExamples = num(args, '--examples', 0);
  const from = flag(args, '--from', 'base');
  const results: HumanRow[] = [];
  for (const { set, root, db, mine } of humanSets(args)) {
    for (const seed of seeds) {
      const dbPath = join(root, 'database', db, `${db}.sqlite`);
      const out = join(outRoot, set, `${db}${small ? '-small' : ''}${from === 'base' ? '' : `-from-${basename(from)}`}-s${seed}`);
      mkdirSync(out, { recursive: true });
      const log = join(out, 'bench.log');
      const loadBefore = load();
      const finished = (): boolean => existsSync(join(out, 'report.json')) && 'rl' in (JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as object);
      let qsSecs: number | null = null;
      if (!finished()) {
        console.log(`${set}/${db} seed ${seed}: agro quickstart --from ${from}${small ? ' --small' : ''} (load ${loadBefore}) ...`);
        qsSecs = agro(['quickstart', '--db', dbPath, '--out', out, '--seed', String(seed), '--from', from, ...(small ? ['--small'] : [])], log);
      }
      const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as {
        synth: { rows: number };
        sft: { checkpoint: string; eval: { accuracy: number } };
        rl: { checkpoint: string; eval: { accuracy: number } };
      };
      const dataFile = join(out, 'human_questions.json');
      writeFileSync(dataFile, JSON.stringify(mine, null, 1));
      const human = {} as HumanRow['human'];
      for (const [name, ck] of [['sft', report.sft.checkpoint], ['rl', report.rl.checkpoint]] as const) {
        const dir = join(out, `human-${name}`);
        // No prompt flags: the checkpoint's prompt contract is what a user gets.
        if (!existsSync(join(dir, 'report.json'))) agro(['predict', '--policy', ck, '--data', dataFile, '--db-root', join(root, 'database'), '--compare', 'spider', '--oracle', '--out', dir], log);
        human[name] = outcome(dir);
      }
      const fails = failures(join(out, 'human-rl'), introspectSchema(dbPath));
      writeJsonAtomic(join(out, 'human-rl-failures.json'), fails.examples);
      const top1 = await memoryTop1(join(out, 'synth', 'memory.db'), dataFile, join(root, 'database'));
      const beyond = await beyondChance(join(out, 'human-rl'), dbPath);
      const row: HumanRow = { set, db, seed, questions: mine.length, synthRows: report.synth.rows, heldOut: { sft: report.sft.eval.accuracy, rl: report.rl.eval.accuracy }, human, memoryTop1: top1, failures: fails.counts, beyond, quickstartSeconds: qsSecs, load: loadBefore };
      results.push(row);
      console.log(`${set}/${db} seed ${seed}: human EX ${pct(human.sft.correct, human.sft.n)} → ${pct(human.rl.correct, human.rl.n)}, the RL policy's greedy answer ${answerText(human.rl.answer).greedy}, memory top-1 ${pct(top1, 1)} (held-out synthetic ${pct(report.sft.eval.accuracy, 1)} → ${pct(report.rl.eval.accuracy, 1)})`);
      if (nExamples > 0) examples(out, mine, seed, nExamples);
    }
  }
  const rows: string[][] = [['set', 'database', 'seed', 'questions', 'synthetic held-out EX SFT → RL', 'human EX chosen SFT → RL', 'RL greedy', 'memory top-1', 'oracle: any (policy/memory/edit)', 'ranker share', 'ms/q', 'RL Δ', 'unrunnable SQL (RL)', 'tool fixed/broke (RL)', 'RL misses: ' + FAILURE_KINDS.join('/'), 'quickstart min', 'load']];
  for (const r of results) {
    const a = answerText(r.human.rl.answer);
    rows.push([
      r.set, r.db, String(r.seed), String(r.questions),
      `${pct(r.heldOut.sft, 1)} → ${pct(r.heldOut.rl, 1)}`,
      `${pct(r.human.sft.correct, r.human.sft.n)} → ${pct(r.human.rl.correct, r.human.rl.n)}`,
      a.greedy, pct(r.memoryTop1, 1), a.oracle, a.share, a.ms,
      `${(100 * (r.human.rl.correct / Math.max(1, r.human.rl.n) - r.human.sft.correct / Math.max(1, r.human.sft.n))).toFixed(1)}`,
      `${r.human.rl.errors}/${r.human.rl.n}`,
      `${r.human.rl.fixed}/${r.human.rl.broke}`,
      FAILURE_KINDS.map((k) => r.failures[k]).join('/'),
      r.quickstartSeconds === null ? 'reused' : (r.quickstartSeconds / 60).toFixed(1),
      r.load,
    ]);
  }
  // Means per set: over databases (each database counts once, its seeds averaged), as the goals are stated.
  for (const set of sets) {
    const mine = results.filter((r) => r.set === set);
    if (!mine.length) continue;
    const byDb = new Map<string, HumanRow[]>();
    for (const r of mine) byDb.set(r.db, [...(byDb.get(r.db) ?? []), r]);
    const mean = (f: (r: HumanRow) => number): number => [...byDb.values()].reduce((a, rs) => a + rs.reduce((b, r) => b + f(r), 0) / rs.length, 0) / byDb.size;
    const sft = mean((r) => r.human.sft.correct / Math.max(1, r.human.sft.n));
    const rl = mean((r) => r.human.rl.correct / Math.max(1, r.human.rl.n));
    const o = (f: (x: NonNullable<NonNullable<PredictOutcome['answer']>['oracle']>) => number): number => mean((r) => (r.human.rl.answer?.oracle ? f(r.human.rl.answer.oracle) / 100 : 0));
    const chosenMean = mean((r) => r.human.rl.correct / Math.max(1, r.human.rl.n));
    rows.push([
      set, `mean of ${byDb.size}`, seeds.join(','), '', `${pct(mean((r) => r.heldOut.sft), 1)} → ${pct(mean((r) => r.heldOut.rl), 1)}`, `${pct(sft, 1)} → ${pct(rl, 1)}`,
      pct(mean((r) => (r.human.rl.answer?.greedyEx ?? 0) / 100), 1), pct(mean((r) => r.memoryTop1), 1),
      `${pct(o((x) => x.any), 1)} (${pct(o((x) => x.policy), 1)}/${pct(o((x) => x.memory), 1)}/${pct(o((x) => x.edit), 1)})`,
      o((x) => x.any) > 0 ? `${((100 * chosenMean) / (100 * o((x) => x.any))).toFixed(2)}` : '-',
      Math.round(mean((r) => r.human.rl.answer?.msPerQuestion ?? 0)).toString(),
      (100 * (rl - sft)).toFixed(1), '', '', FAILURE_KINDS.map((k) => mine.reduce((a, r) => a + r.failures[k], 0)).join('/'), '', '',
    ]);
  }
  console.log('');
  table(rows);
  for (const line of beyondChanceLines(results)) console.log(line);
  mkdirSync(outRoot, { recursive: true });
  writeJsonAtomic(join(outRoot, 'summary.json'), { date: new Date().toISOString(), small, seeds, results });
  console.log(`\nsummary: ${join(outRoot, 'summary.json')}`);
}

/** The answer path's figures of one predict run, as table cells. */
function answerText(a: PredictOutcome['answer']): { greedy: string; transparent: string; oracle: string; share: string; ms: string } {
  if (!a) return { greedy: '-', transparent: '-', oracle: '-', share: '-', ms: '-' };
  const o = a.oracle;
  return {
    greedy: `${a.greedyEx.toFixed(1)}%`,
    // What the transparent ranker would have chosen on the same candidates (the judge chose when a.judge).
    transparent: o?.transparent !== undefined ? `${o.transparent.toFixed(1)}%` : '-',
    oracle: o ? `${o.any.toFixed(1)}% (${o.policy.toFixed(1)}/${o.memory.toFixed(1)}/${o.edit.toFixed(1)})` : '-',
    share: o ? o.rankerShare.toFixed(2) : '-',
    ms: String(Math.round(a.msPerQuestion)),
  };
}

/** A few synthesized questions beside the human gold shapes the synthesized SQL never has. */
function examples(out: string, mine: Human[], seed: number, n: number): void {
  const synth = readFileSync(join(out, 'synth', 'dataset.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { question: string; SQL: string });
  const rng = new Rng(seed + 1);
  const idx = rng.shuffle(synth.map((_, i) => i)).slice(0, n);
  for (const i of idx) console.log(`  ${synth[i].question}\n      ${synth[i].SQL}`);
  const have = new Set(synth.map((p) => queryShape(p.SQL)));
  const missed = mine.filter((h) => !have.has(queryShape(h.query)));
  console.log(`  human queries whose shape no synthesized query has: ${missed.length} of ${mine.length}`);
}

/** The questions of each open database, with where its databases are. */
function humanSets(args: string[]): { set: SetName; root: string; db: string; mine: Human[] }[] {
  const sets = flag(args, '--sets', 'spider,kaggle').split(',').filter(Boolean) as SetName[];
  const only = flag(args, '--dbs', '').split(',').filter(Boolean);
  const out: { set: SetName; root: string; db: string; mine: Human[] }[] = [];
  for (const set of sets) {
    if (!(set in SETS)) throw new Error(`bench human: unknown set ${set} (have: ${Object.keys(SETS).join(', ')})`);
    const { root, questions } = SETS[set];
    if (!existsSync(root)) throw new Error(`bench human: ${root} is missing (../shared beside the repository)`);
    const humans = JSON.parse(readFileSync(join(root, questions), 'utf8')) as Human[];
    for (const db of readdirSync(join(root, 'database')).sort().filter((d) => only.length === 0 || only.includes(d))) {
      out.push({ set, root, db, mine: humans.filter((h) => h.db_id === db) });
    }
  }
  return out;
}

/**
 * Zero-shot: `agro predict --policy <policy>` on every open database's human questions, nothing trained on the
 * database first. The base model's goal is stated on this figure (mean over the Spider dev databases).
 */
async function zeroShot(args: string[]): Promise<void> {
  const policy = flag(args, '--policy', 'base');
  const retries = num(args, '--retries', 0);
  // Decoding flags passed to predict as given, and named in the output folder.
  const decoding = [...(args.includes('--no-constrain') ? ['--no-constrain'] : []), ...(retries > 0 ? ['--retries', String(retries)] : [])];
  const outRoot = resolve(flag(args, '--out', `runs/bench-human/zero-shot-${basename(policy)}${args.includes('--no-constrain') ? '-free' : ''}${retries > 0 ? `-retries${retries}` : ''}`));
  const withMemory = !args.includes('--no-memory');
  // --no-judge: the transparent ranker chooses (predict's flag, passed on).
  if (args.includes('--no-judge')) decoding.push('--no-judge');
  // --chooser judge: the judge chooses (else it gives the confidence and the transparent score chooses).
  if (flag(args, '--chooser', '') === 'judge') decoding.push('--chooser', 'judge');
  const rows: string[][] = [['set', 'database', 'questions', 'zero-shot EX (chosen)', 'transparent ranker', 'greedy', 'memory top-1', 'oracle: any (policy/memory/edit)', 'ranker share', 'ms/q', 'unrunnable SQL', 'misses: ' + FAILURE_KINDS.join('/'), 'min', 'load']];
  const results: { set: SetName; db: string; outcome: PredictOutcome; memoryTop1: number | null; failures: Record<FailureKind, number>; beyond: BeyondChance }[] = [];
  for (const { set, root, db, mine } of humanSets(args)) {
    const out = join(outRoot, set, db);
    mkdirSync(out, { recursive: true });
    const dataFile = join(out, 'human_questions.json');
    writeFileSync(dataFile, JSON.stringify(mine, null, 1));
    const dir = join(out, 'predict');
    const loadBefore = load();
    const dbPath = join(root, 'database', db, `${db}.sqlite`);
    // No training: the factory's verified pairs of the database (the README's command, the quickstart's recipe) are the memory the answer path reads.
    const memory = join(out, 'synth', 'memory.db');
    let secs = 0;
    if (withMemory && !existsSync(memory)) secs += agro(readmeMemoryArgs(dbPath, join(out, 'synth')), join(out, 'bench.log'));
    if (!existsSync(join(dir, 'report.json'))) secs += agro(['predict', '--policy', policy, ...decoding, '--data', dataFile, '--db-root', join(root, 'database'), '--compare', 'spider', '--oracle', ...(withMemory ? ['--memory', memory] : []), '--out', dir], join(out, 'bench.log'));
    const o = outcome(dir);
    const top1 = withMemory ? await memoryTop1(memory, dataFile, join(root, 'database')) : null;
    const fails = failures(dir, introspectSchema(dbPath));
    writeJsonAtomic(join(out, 'failures.json'), fails.examples);
    results.push({ set, db, outcome: o, memoryTop1: top1, failures: fails.counts, beyond: await beyondChance(dir, dbPath) });
    const a = answerText(o.answer);
    console.log(`${set}/${db}: zero-shot EX ${pct(o.correct, o.n)} (greedy ${a.greedy}, memory top-1 ${top1 === null ? '-' : pct(top1, 1)}; ${o.errors} of ${o.n} unrunnable)`);
    rows.push([set, db, String(o.n), pct(o.correct, o.n), a.transparent, a.greedy, top1 === null ? '-' : pct(top1, 1), a.oracle, a.share, a.ms, `${o.errors}/${o.n}`, FAILURE_KINDS.map((k) => fails.counts[k]).join('/'), secs === 0 ? 'reused' : (secs / 60).toFixed(1), loadBefore]);
  }
  for (const set of new Set(results.map((r) => r.set))) {
    const mine = results.filter((r) => r.set === set);
    const mean = mine.reduce((a, r) => a + r.outcome.correct / Math.max(1, r.outcome.n), 0) / mine.length;
    const m = (f: (r: (typeof mine)[number]) => number): string => pct(mine.reduce((a, r) => a + f(r), 0) / mine.length, 1);
    const or = (f: (x: NonNullable<NonNullable<PredictOutcome['answer']>['oracle']>) => number) => m((r) => (r.outcome.answer?.oracle ? f(r.outcome.answer.oracle) / 100 : 0));
    // The ranker's share as the quickstart rows give it: the mean chosen over the mean oracle.
    const anyMean = mine.reduce((a, r) => a + (r.outcome.answer?.oracle?.any ?? 0) / 100, 0) / mine.length;
    const share = anyMean > 0 ? (mean / anyMean).toFixed(2) : '-';
    const ms = Math.round(mine.reduce((a, r) => a + (r.outcome.answer?.msPerQuestion ?? 0), 0) / mine.length).toString();
    rows.push([set, `mean of ${mine.length}`, String(mine.reduce((a, r) => a + r.outcome.n, 0)), pct(mean, 1), or((x) => x.transparent ?? 0), m((r) => (r.outcome.answer?.greedyEx ?? 0) / 100), m((r) => r.memoryTop1 ?? 0), `${or((x) => x.any)} (${or((x) => x.policy)}/${or((x) => x.memory)}/${or((x) => x.edit)})`, share, ms, '', FAILURE_KINDS.map((k) => mine.reduce((a, r) => a + r.failures[k], 0)).join('/'), '', '']);
  }
  console.log('');
  table(rows);
  for (const line of beyondChanceLines(results)) console.log(line);
  for (const line of reliabilityLines(results.map((r) => ({ set: r.set, dir: join(outRoot, r.set, r.db, 'predict') })))) console.log(line);
  writeJsonAtomic(join(outRoot, 'summary.json'), { date: new Date().toISOString(), policy, results });
  console.log(`\nsummary: ${join(outRoot, 'summary.json')}`);
}
