import { Option, type Command } from 'commander';
import cliProgress from 'cli-progress';
import { z } from 'zod';
import { AgroError } from '../../errors.ts';
import { EVAL_DEFAULTS, evaluate } from '../../eval/run.ts';
import { formatReport } from '../../eval/format.ts';
import { readDataset } from '../../data/read-dataset.ts';
import { readPredictions } from '../../data/read-predictions.ts';
import { assertDir } from '../../data/databases.ts';
import { resolveDatabasesFromFlag } from '../db-root.ts';
import { catalogFromFactoryOutput, factoryOutputOf } from '../../data/catalog.ts';
import { join } from 'node:path';
import { writeBirdFiles } from '../../data/bird-files.ts';
import { createExecutor } from '../../sql/executor.ts';
import { LEGACY_QUOTES_MISSING, legacyQuotesAvailable } from '../../sql/open-database.mjs';
import { ensureDir, writeJsonAtomic } from '../../util/fs.ts';
import { LIMITS, addPrivilegedRoleOption, parseCliOptions } from '../options.ts';
import { prepareOutDir, prepareOutFile } from '../out-path.ts';
import { printOut } from '../print.ts';

/** Where the data's databases are when no --db-root is given and the data is no factory output. */
const DEFAULT_DB_ROOT = 'data/databases';

const optionsSchema = z.object({
  data: z.string().min(1),
  dbRoot: z.string().min(1).optional(),
  pred: z.string().min(1).optional(),
  gold: z.boolean().optional(),
  mode: z.enum(['bird', 'spider']),
  timeout: z.coerce.number().int().positive().max(LIMITS.timeoutMs),
  suite: z.string().min(1).optional(),
  out: z.string().min(1).optional(),
  json: z.boolean().optional(),
  workers: z.coerce.number().int().min(1).max(64),
  floatTol: z.coerce.number().min(0).max(1),
  keepDistinct: z.boolean().optional(),
  birdSortedRows: z.boolean().optional(),
  exportBird: z.string().min(1).optional(),
  allowPrivilegedRole: z.boolean().optional(),
});
type EvalCliOptions = z.infer<typeof optionsSchema>;

function parseOptions(raw: unknown): EvalCliOptions {
  const r = { data: parseCliOptions(optionsSchema, raw, 'eval') };
  if (!r.data.pred === !r.data.gold) throw new AgroError('usage', 'eval: give exactly one of --pred <file> or --gold');
  if (r.data.keepDistinct && r.data.mode !== 'spider') throw new AgroError('usage', 'eval: --keep-distinct applies to --mode spider only');
  if (r.data.birdSortedRows && r.data.mode !== 'bird') throw new AgroError('usage', 'eval: --bird-sorted-rows applies to --mode bird only');
  return r.data;
}

async function runEval(raw: unknown): Promise<void> {
  const o = parseOptions(raw);
  // Without it, double-quoted string literals (2,818 of Spider's 8,475 train gold queries) fail here
  // but not in the official scripts: every such score would be wrong, so refuse rather than mislead.
  if (!legacyQuotesAvailable()) throw new AgroError('not_found', `eval: ${LEGACY_QUOTES_MISSING}`);
  // All input is read and checked, and the output path too, before the first query runs: bad input costs nothing.
  const inputs = [{ flag: '--data', path: o.data }, ...(o.pred ? [{ flag: '--pred', path: o.pred }] : [])];
  // A --suite folder that does not exist would check nothing and report the suite as passed.
  if (o.suite) assertDir('--suite', o.suite);
  if (o.out) prepareOutFile({ flag: '--out', path: o.out }, inputs);
  if (o.exportBird) prepareOutDir({ flag: '--export-bird', path: o.exportBird }, inputs);
  // A factory output (its folder, or its dataset.jsonl beside manifest.json) names its own database.
  const factory = o.dbRoot === undefined ? factoryOutputOf(o.data) : undefined;
  const catalog = factory !== undefined ? catalogFromFactoryOutput(factory) : undefined;
  const dbRoot = o.dbRoot ?? factory ?? DEFAULT_DB_ROOT;
  const dataset = readDataset(factory === o.data ? join(o.data, 'dataset.jsonl') : o.data);
  const predictions = o.gold ? dataset.items.map((it) => it.gold) : readPredictions(o.pred!, dataset.items);
  // Every db_id resolved, and its database checked, before the first query.
  const ids = dataset.items.map((it) => it.dbId);
  if (catalog) for (const id of new Set(ids)) catalog.resolve(id);
  else resolveDatabasesFromFlag(o.dbRoot, DEFAULT_DB_ROOT, ids);
  const databases = catalog ? (id: string): string => catalog.resolve(id).path : undefined;
  if (o.exportBird) {
    ensureDir(o.exportBird);
    const files = writeBirdFiles(o.exportBird, dataset.items, predictions);
    if (!o.json) printOut(`BIRD files written: ${files.pred}, ${files.gold}\n`);
  }
  const showBar = !o.json && process.stderr.isTTY;
  const bar = showBar ? new cliProgress.SingleBar({ stream: process.stderr, clearOnComplete: true, hideCursor: true }, cliProgress.Presets.shades_classic) : undefined;
  bar?.start(dataset.items.length, 0);
  const pool = createExecutor({ size: o.workers, allowPrivilegedRole: o.allowPrivilegedRole });
  let report;
  try {
    report = await evaluate(dataset, predictions, pool, {
      dbRoot,
      ...(databases ? { databases } : {}),
      mode: o.mode,
      timeoutMs: o.timeout,
      floatTol: o.floatTol,
      keepDistinct: o.keepDistinct ?? false,
      birdSortedRows: o.birdSortedRows ?? false,
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
    printOut(formatReport(report));
    if (o.out) printOut(`report written to ${o.out}\n`);
  }
}

export function register(program: Command): void {
  const cmdEval = program
    .command('eval')
    .description('Execution accuracy of predicted SQL against a BIRD- or Spider-style question set')
    .requiredOption('--data <file>', "questions: JSON array or JSONL with db_id and SQL (BIRD) or query (Spider), or BIRD's dev_gold.sql (SQL<TAB>db_id per line)")
    .option('--db-root <dir|url>', `databases as <dir>/<db_id>/<db_id>.sqlite, or a postgres:// server whose databases are named by db_id (default ${DEFAULT_DB_ROOT}; a factory output, its folder or its dataset.jsonl, names its own)`)
    .option('--pred <file>', 'predictions: JSON array/object (BIRD predict format too), JSONL, or .sql/.txt one per line')
    .option('--gold', 'evaluate the gold queries against themselves (a sanity check: must give 100%)')
    .addOption(
      new Option('--mode <mode>', 'official semantics: bird = bird-bench mini_dev evaluation_ex.py; spider = test-suite-sql-eval eval_exec_match (default flags)')
        .choices(['bird', 'spider'])
        .default(EVAL_DEFAULTS.mode),
    )
    .option('--keep-distinct', 'spider: keep DISTINCT in both queries (upstream --keep_distinct); by default it is removed')
    .option('--bird-sorted-rows', "bird: sort each row's values before comparing (DAMO-ConvAI BIRD evaluation.py, PR #159 variant)")
    .option('--timeout <ms>', 'per-query wall-clock limit in milliseconds', String(EVAL_DEFAULTS.timeoutMs))
    .option('--suite <dir>', 'test-suite mode: also compare on <dir>/<db_id>/*.sqlite variants')
    .option('--export-bird <dir>', 'also write the data and predictions as BIRD files (predict_dev.json, dev_gold.sql) for the official scripts')
    .option('--out <file>', 'write the JSON report (with per-question outcomes) to this file')
    .option('--json', 'print the JSON report to stdout instead of the table')
    .option('--workers <n>', 'SQL executor processes', '2')
    .option('--float-tol <x>', 'relative tolerance for comparing numbers (0 = exact, as the official scripts)', String(EVAL_DEFAULTS.floatTol));
  addPrivilegedRoleOption(cmdEval).action(async (opts: unknown) => runEval(opts));
}
