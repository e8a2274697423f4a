// `npm run bench -- kaggle [--dbs GeoNuclearData,GreaterManchesterCrime] [--out runs/bench-kaggle] [--small] [--examples 10] [--seed 0]`
// The end measure of the data factory, run as a user would: `agro quickstart --db <db>` on each KaggleDBQA
// database (../shared/data/kaggledbqa: real Kaggle databases with human questions), then `agro predict` with
// the SFT and the final (RL) checkpoint over that database's human questions, which are never trained on.
// Prints execution accuracy (Spider comparison) per database and policy, how long each step took with the
// load average beside it, a few synthesized questions, and the human gold shapes the synthesized SQL never has.
// Every step is a CLI command in its own process and resumes: a rerun reuses finished quickstarts and predictions.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { queryShape } from '../src/factory/realism.ts';
import { Rng } from '../src/util/rng.ts';
import { flag, num } from './_args.ts';
import { table } from './rl.ts';

const ROOT = resolve('../shared/data/kaggledbqa');

interface Human {
  db_id: string;
  question: string;
  query: string;
}

const load = (): string => loadavg().map((x) => x.toFixed(1)).join(' ');

/** Runs the agro CLI; its output goes to `log` (appended); stops the benchmark when it fails. */
function agro(args: string[], log: string): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['bin/agro.js', ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  writeFileSync(log, `$ agro ${args.join(' ')}\n${r.stdout}${r.stderr}\n`, { flag: 'a' });
  if (r.status !== 0) throw new Error(`bench kaggle: agro ${args[0]} failed (exit ${r.status}); see ${log}\n${r.stderr.trim().split('\n').slice(-3).join('\n')}`);
  return (performance.now() - t0) / 1000;
}

/** EX of a finished `agro predict` run (its report.json: the evaluator's summary). */
function accuracy(dir: string): { correct: number; n: number } {
  const rep = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')) as { summary: { correct: number; count: number } };
  return { correct: rep.summary.correct, n: rep.summary.count };
}

export async function run(args: string[]): Promise<void> {
  const all = readdirSync(join(ROOT, 'database')).sort();
  const dbs = flag(args, '--dbs', all.join(',')).split(',').filter(Boolean);
  const outRoot = resolve(flag(args, '--out', 'runs/bench-kaggle'));
  const small = args.includes('--small');
  const seed = num(args, '--seed', 0);
  const nExamples = num(args, '--examples', 10);
  const humans = JSON.parse(readFileSync(join(ROOT, 'questions.json'), 'utf8')) as Human[];
  const rows: string[][] = [['database', 'human questions', 'synth pairs', 'EX after SFT', 'EX after RL', 'quickstart s', 'load']];
  for (const db of dbs) {
    const dbPath = join(ROOT, 'database', db, `${db}.sqlite`);
    if (!existsSync(dbPath)) throw new Error(`bench kaggle: no database ${dbPath} (have: ${all.join(', ')})`);
    const out = join(outRoot, `${db}${small ? '-small' : ''}-s${seed}`);
    mkdirSync(out, { recursive: true });
    const log = join(out, 'bench.log');
    const loadBefore = load();
    let qsSecs = 0;
    const finished = (): boolean => existsSync(join(out, 'report.json')) && 'rl' in (JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as object);
    if (!finished()) {
      console.log(`${db}: agro quickstart${small ? ' --small' : ''} (load ${loadBefore}) ...`);
      qsSecs = agro(['quickstart', '--db', dbPath, '--out', out, '--seed', String(seed), ...(small ? ['--small'] : [])], log);
    }
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as {
      config: { schemaChars: number };
      synth: { rows: number };
      sft: { checkpoint: string };
      rl: { checkpoint: string };
    };
    // The human questions of this database only, as a Spider file for `agro predict`.
    const mine = humans.filter((h) => h.db_id === db);
    const dataFile = join(out, 'human_questions.json');
    writeFileSync(dataFile, JSON.stringify(mine, null, 1));
    const ex: string[] = [];
    for (const [name, ck] of [['sft', report.sft.checkpoint], ['rl', report.rl.checkpoint]] as const) {
      const dir = join(out, `human-${name}`);
      if (!existsSync(join(dir, 'report.json'))) {
        agro(['predict', '--policy', ck, '--data', dataFile, '--db-root', join(ROOT, 'database'), '--schema-chars', String(report.config.schemaChars), '--compare', 'spider', '--out', dir], log);
      }
      const a = accuracy(dir);
      ex.push(`${((100 * a.correct) / Math.max(1, a.n)).toFixed(1)}% (${a.correct}/${a.n})`);
    }
    rows.push([db, String(mine.length), String(report.synth.rows), ex[0], ex[1], qsSecs ? qsSecs.toFixed(0) : 'reused', loadBefore]);

    // What the model was trained on, next to what people ask.
    const synth = readFileSync(join(out, 'synth', 'dataset.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { question: string; SQL: string });
    const rng = new Rng(seed + 1);
    console.log(`\n${db}: ${nExamples} random synthesized questions (of ${synth.length}):`);
    const idx = synth.map((_, i) => i);
    for (let i = 0; i < Math.min(nExamples, idx.length); i++) {
      const j = i + rng.int(idx.length - i);
      [idx[i], idx[j]] = [idx[j], idx[i]];
    }
    for (const i of idx.slice(0, nExamples)) console.log(`  ${synth[i].question}\n      ${synth[i].SQL}`);
    const have = new Set(synth.map((p) => queryShape(p.SQL)));
    const missed = mine.filter((h) => !have.has(queryShape(h.query)));
    console.log(`${db}: human queries whose shape no synthesized query has: ${missed.length} of ${mine.length}`);
    const byShape = new Map<string, Human[]>();
    for (const h of missed) byShape.set(queryShape(h.query), [...(byShape.get(queryShape(h.query)) ?? []), h]);
    for (const [shape, hs] of [...byShape].sort((a, b) => b[1].length - a[1].length)) console.log(`  ${shape} (${hs.length}): "${hs[0].question}" → ${hs[0].query}`);
  }
  console.log('');
  table(rows);
}
