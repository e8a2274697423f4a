import { Option, type Command } from 'commander';
import cliProgress from 'cli-progress';
import { z } from 'zod';
import { AgroError } from '../../errors.ts';
import { EVAL_DEFAULTS, evaluate } from '../../eval/run.ts';
import { formatReport } from '../../eval/format.ts';
import { readDataset } from '../../data/read-dataset.ts';
import { readPredictions } from '../../data/read-predictions.ts';
import { resolveDatabases } from '../../data/databases.ts';
import { SqlPool } from '../../sql/pool.ts';
import { writeJsonAtomic } from '../../util/fs.ts';

const optionsSchema = z.object({
  data: z.string().min(1),
  dbRoot: z.string().min(1),
  pred: z.string().min(1).optional(),
  gold: z.boolean().optional(),
  mode: z.enum(['bird', 'spider']),
  timeout: z.coerce.number().int().positive(),
  suite: z.string().min(1).optional(),
  out: z.string().min(1).optional(),
  json: z.boolean().optional(),
  workers: z.coerce.number().int().min(1).max(64),
  floatTol: z.coerce.number().min(0),
});
type EvalCliOptions = z.infer<typeof optionsSchema>;

function parseOptions(raw: unknown): EvalCliOptions {
  const r = optionsSchema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0];
    const flag = String(issue.path[0] ?? '').replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    throw new AgroError('usage', `eval: --${flag}: ${issue.message}`);
  }
  if (!r.data.pred === !r.data.gold) throw new AgroError('usage', 'eval: give exactly one of --pred <file> or --gold');
  return r.data;
}

async function runEval(raw: unknown): Promise<void> {
  const o = parseOptions(raw);
  // All input is read and checked before the first query runs: bad input costs nothing.
  const dataset = readDataset(o.data);
  const predictions = o.gold ? dataset.items.map((it) => it.gold) : readPredictions(o.pred!, dataset.items);
  resolveDatabases(o.dbRoot, dataset.items.map((it) => it.dbId));
  const showBar = !o.json && process.stderr.isTTY;
  const bar = showBar ? new cliProgress.SingleBar({ stream: process.stderr, clearOnComplete: true, hideCursor: true }, cliProgress.Presets.shades_classic) : undefined;
  bar?.start(dataset.items.length, 0);
  const pool = new SqlPool({ size: o.workers });
  let report;
  try {
    report = await evaluate(dataset, predictions, pool, {
      dbRoot: o.dbRoot,
      mode: o.mode,
      timeoutMs: o.timeout,
      floatTol: o.floatTol,
      concurrency: o.workers * 2,
      predLabel: o.gold ? '(gold)' : o.pred!,
      ...(o.suite ? { suiteDir: o.suite } : {}),
      onProgress: (done) => bar?.update(done),
    });
  } finally {
    bar?.stop();
    await pool.close();
  }
  if (o.out) writeJsonAtomic(o.out, report);
  if (o.json) {
    process.stdout.write(JSON.stringify(report, null, 2) + '\n');
  } else {
    process.stdout.write(formatReport(report));
    if (o.out) process.stdout.write(`report written to ${o.out}\n`);
  }
}

export function register(program: Command): void {
  program
    .command('eval')
    .description('Execution accuracy of predicted SQL against a BIRD- or Spider-style question set')
    .requiredOption('--data <file>', 'questions: JSON array or JSONL with db_id and SQL (BIRD) or query (Spider)')
    .option('--db-root <dir>', 'databases as <dir>/<db_id>/<db_id>.sqlite', 'data/databases')
    .option('--pred <file>', 'predictions: JSON array/object (BIRD predict format too), JSONL, or .sql/.txt one per line')
    .option('--gold', 'evaluate the gold queries against themselves (a sanity check: must give 100%)')
    .addOption(new Option('--mode <mode>', 'result comparison: bird = set equality; spider = multiset, ordered when gold has ORDER BY').choices(['bird', 'spider']).default(EVAL_DEFAULTS.mode))
    .option('--timeout <ms>', 'per-query wall-clock limit in milliseconds', String(EVAL_DEFAULTS.timeoutMs))
    .option('--suite <dir>', 'test-suite mode: also compare on <dir>/<db_id>/*.sqlite variants')
    .option('--out <file>', 'write the JSON report (with per-question outcomes) to this file')
    .option('--json', 'print the JSON report to stdout instead of the table')
    .option('--workers <n>', 'SQL executor processes', '2')
    .option('--float-tol <x>', 'relative tolerance for comparing numbers (0 = exact, as the official scripts)', String(EVAL_DEFAULTS.floatTol))
    .action(async (opts: unknown) => runEval(opts));
}
