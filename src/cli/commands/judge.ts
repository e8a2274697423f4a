/**
 * `agro judge`: the learned judge whose probability is the answer path's confidence, and its choice with --chooser judge (src/judge).
 *   pretrain  collect labelled candidate lists on many databases (resumable), train, calibrate, write the judge
 *   show      a judge's figures
 */
import type { Command } from 'commander';
import { readJudgeReport } from '../../judge/checkpoint.ts';
import { builtinJudgeDir } from '../../judge/load.ts';
import { JUDGE_PRETRAIN_DEFAULTS, runJudgePretrain } from '../../pipeline/judge-pretrain.ts';
import { numberArg } from '../options.ts';
import { printErr, printOut } from '../print.ts';

interface PretrainCliOptions {
  spider: string;
  work: string;
  out: string;
  memoryPairs?: number;
  questions?: number;
  maxDbs?: number;
  seed?: number;
}

async function pretrain(o: PretrainCliOptions): Promise<void> {
  const command = ['agro judge pretrain', `--spider ${o.spider}`, `--work ${o.work}`, `--out ${o.out}`, ...(o.memoryPairs ? [`--memory-pairs ${o.memoryPairs}`] : []), ...(o.questions !== undefined ? [`--questions ${o.questions}`] : []), ...(o.maxDbs ? [`--max-dbs ${o.maxDbs}`] : []), ...(o.seed !== undefined ? [`--seed ${o.seed}`] : [])].join(' ');
  const r = await runJudgePretrain(
    { spider: o.spider, work: o.work, out: o.out, ...(o.memoryPairs ? { memoryPairs: o.memoryPairs } : {}), ...(o.questions !== undefined ? { goldQuestions: o.questions } : {}), ...(o.maxDbs ? { maxDbs: o.maxDbs } : {}), ...(o.seed !== undefined ? { seed: o.seed } : {}) },
    (line) => printErr(`agro: ${line}\n`),
    command,
  );
  const v = r.validation;
  printOut(`judge: ${o.out} (held-out databases: ${v.lists} questions; some candidate right ${(100 * v.oracle).toFixed(1)}%, the transparent ranker ${(100 * v.transparent).toFixed(1)}%, the judge ${(100 * v.judge).toFixed(1)}%; calibration error ${v.ece.toFixed(3)})\n`);
}

function show(dir: string | undefined): void {
  const report = readJudgeReport(dir ?? builtinJudgeDir());
  printOut(`${JSON.stringify(report, null, 2)}\n`);
}

export function register(program: Command): void {
  const cmd = program.command('judge').description('The learned judge of the answer path\'s candidates: its confidence (and its choice with predict --chooser judge)');
  cmd
    .command('pretrain')
    .description('Pretrain the judge on many databases: their memories, the answer path\'s candidates for their gold SQL, labelled by execution (resumable)')
    .requiredOption('--spider <dir>', 'a Spider-layout folder: database/<db>/<db>.sqlite and gold.jsonl (db_id, query; questions are not read)')
    .option('--work <dir>', 'where the labelled lists go (one file per database: a rerun resumes)', 'runs/judge-pretrain')
    .option('--out <dir>', 'where the judge is written', 'runs/judge')
    .option('--memory-pairs <n>', `pairs in each database's memory (default ${JUDGE_PRETRAIN_DEFAULTS.memoryPairs})`, numberArg('--memory-pairs', { min: 50, max: 100_000 }))
    .option('--questions <n>', `human gold queries asked per database (default ${JUDGE_PRETRAIN_DEFAULTS.goldQuestions})`, numberArg('--questions', { min: 0, max: 1000 }))
    .option('--max-dbs <n>', 'databases used, at most (the first by name)', numberArg('--max-dbs', { min: 2 }))
    .option('--seed <n>', 'seed', numberArg('--seed', { min: 0 }))
    .action((o: PretrainCliOptions) => pretrain(o));
  cmd
    .command('show')
    .description("A judge's training report (default: the built-in one)")
    .argument('[dir]', 'a judge folder')
    .action((dir?: string) => show(dir));
}
