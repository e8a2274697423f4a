import { Option, type Command } from 'commander';
import { readPredictInputs, runPredict, type PredictConfig, type PredictInputs, type PredictProgress } from '../../pipeline/predict.ts';
import { EPISODE_TIMEOUT_MS } from '../../agent/episode.ts';
import { formatReport } from '../../eval/format.ts';
import { createExecutor } from '../../sql/executor.ts';
import { LEGACY_QUOTES_MISSING, legacyQuotesAvailable } from '../../sql/open-database.mjs';
import { isPostgresUrl } from '../../sql/postgres.ts';
import { JUDGE_DEFAULTS } from '../../sql/judge.ts';
import { AgroError } from '../../errors.ts';
import { addPrivilegedRoleOption, type PrivilegedRoleCliOption, numberArg } from '../options.ts';
import { addPolicyOptions, openPolicyFromCli, type PolicyCliOptions } from '../policy-options.ts';
import { addAnswerOptions, judgeSpec } from '../answer-options.ts';
import { prepareOutDir } from '../out-path.ts';
import { addPromptOptions, askedPrompt, envDepsFromCli, printWarning, type PromptCliOptions } from '../prompt-options.ts';
import { readDataset } from '../../data/read-dataset.ts';
import { resolveDatabasesFromFlag } from '../db-root.ts';
import { factoryOutputOf } from '../../data/catalog.ts';
import { join } from 'node:path';
import { SYNTH_DRAFTS } from '../../answer/answer.ts';
import { duration, printOut, printErr } from '../print.ts';

/** Where the data's databases are when no --db-root is given and the data is no factory output. */
const DEFAULT_DB_ROOT = 'data/databases';

interface PredictCliOptions extends PolicyCliOptions, PromptCliOptions, PrivilegedRoleCliOption {
  data: string;
  dbRoot?: string;
  out: string;
  mode: PredictConfig['mode'];
  compare: PredictConfig['compare'];
  samples: number;
  temperature?: number;
  retries: number;
  concurrency: number;
  maxTurnTokens?: number;
  suite?: string;
  episodeTimeout: number;
  timeout: number;
  seed: number;
  json?: boolean;
  workers: number;
  search: boolean;
  searchSamples: number;
  memory?: string[];
  judge?: string | boolean;
  chooser?: 'transparent' | 'judge';
  oracle?: boolean;
  synthDrafts: number;
}

/** `[ 12/100] EX 41.7% · 1 failed · 0.8 q/s · ETA 1m50s`: the rate counts only questions this process ran. */
export function progressLine(p: PredictProgress): string {
  const rate = p.doneHere / Math.max(1e-3, p.elapsedMs / 1000);
  const eta = p.doneHere > 0 ? duration(((p.total - p.done) / rate) * 1000) : '?';
  const ex = p.done ? ((100 * p.correct) / p.done).toFixed(1) : '0.0';
  const w = String(p.total).length;
  return `[${String(p.done).padStart(w)}/${p.total}] EX ${ex}% · ${p.failed} failed · ${rate.toFixed(2)} q/s · ETA ${eta}`;
}

async function run(o: PredictCliOptions): Promise<void> {
  prepareOutDir({ flag: '--out', path: o.out }, [{ flag: '--data', path: o.data }, ...(o.policy ? [{ flag: '--policy', path: o.policy }] : [])]);
  // The data and its databases are read and checked once, before the policy loads: bad input costs nothing.
  // A factory output (its folder, or its dataset.jsonl beside manifest.json) names its own database.
  const factory = o.dbRoot === undefined ? factoryOutputOf(o.data) : undefined;
  const data = factory === o.data ? join(o.data, 'dataset.jsonl') : o.data;
  const dbRoot = o.dbRoot ?? DEFAULT_DB_ROOT;
  // predict scores every answer against its gold SQL as agro eval does: without the extension the gold queries
  // with double-quoted strings fail (31 of 190 on six open databases) and every score is low. Refuse, as eval does.
  if (!isPostgresUrl(dbRoot) && !legacyQuotesAvailable()) throw new AgroError('not_found', `predict: ${LEGACY_QUOTES_MISSING}`);
  let inputs: PredictInputs;
  if (factory !== undefined) inputs = readPredictInputs({ data, dbRoot, factory });
  else {
    const dataset = readDataset(data);
    inputs = { dataset, databases: resolveDatabasesFromFlag(o.dbRoot, DEFAULT_DB_ROOT, dataset.items.map((it) => it.dbId)) };
  }
  const policy = await openPolicyFromCli(o, o.concurrency);
  const pool = createExecutor({ size: o.workers, allowPrivilegedRole: o.allowPrivilegedRole });
  const ctrl = new AbortController();
  const onSig = (): void => ctrl.abort();
  process.once('SIGINT', onSig);
  process.once('SIGTERM', onSig);
  const tty = !o.json && Boolean(process.stderr.isTTY);
  let lastLogged = -1;
  try {
    if (!o.json) printErr(`policy: ${policy.description}\n`);
    const res = await runPredict(
      {
        data, dbRoot, ...(factory !== undefined ? { factory } : {}), out: o.out, mode: o.mode, compare: o.compare, samples: o.samples,
        ...(o.temperature !== undefined ? { temperature: o.temperature } : {}),
        retries: o.retries,
        concurrency: o.concurrency, maxTurnTokens: o.maxTurnTokens, episodeTimeoutMs: o.episodeTimeout,
        execTimeoutMs: o.timeout, ...askedPrompt(o), seed: o.seed, ...(o.suite ? { suite: o.suite } : {}),
        search: o.search, searchSamples: o.searchSamples, synthDrafts: o.synthDrafts, memory: o.memory ?? [], oracle: Boolean(o.oracle), ...(judgeSpec(o) !== undefined ? { judge: judgeSpec(o) } : {}), ...(o.chooser ? { chooser: o.chooser } : {}),
      },
      policy,
      pool,
      {
        signal: ctrl.signal,
        onWarning: printWarning,
        onProgress: (p) => {
          if (o.json) return;
          if (tty) process.stderr.write(`\r${progressLine(p)}\x1b[K`);
          // Without a terminal: a line per 10% (and the last).
          else if (p.done === p.total || Math.floor((10 * p.done) / p.total) > lastLogged) {
            lastLogged = Math.floor((10 * p.done) / p.total);
            printErr(progressLine(p) + '\n');
          }
        },
      },
      envDepsFromCli(o),
      inputs,
    );
    if (tty) printErr('\n');
    if (res.interrupted) {
      printErr(`agro: predict interrupted: ${res.done}/${res.total} questions done, in ${res.files.trajectories}; run the same command again to continue\n`);
      process.exitCode = 130;
      return;
    }
    const r = res.report!;
    if (o.json) {
      process.stdout.write(JSON.stringify(r, null, 2) + '\n');
      return;
    }
    printOut(formatReport(r));
    const p = r.predict;
    const ends = Object.entries(p.endReasons).map(([k, v]) => `${k} ${v}`).join(', ');
    printOut(`episodes: ${ends}; ${p.failed} failed; ${p.toolCalls.toFixed(2)} tool calls per question; ${p.questionsPerSecond.toFixed(2)} questions/s\n`);
    const t = p.toolEffect;
    printOut(`tool: ${t.checked} answers after a query; ${t.changed} differ from the first query: ${t.fixed} fixed, ${t.broke} broke\n`);
    if (p.answer) {
      const a = p.answer;
      const oracle = a.oracle ? `; some candidate right ${a.oracle.any.toFixed(1)}% (policy ${a.oracle.policy.toFixed(1)}%, memory ${a.oracle.memory.toFixed(1)}%, edits ${a.oracle.edit.toFixed(1)}%), the ranker reaches ${(100 * a.oracle.rankerShare).toFixed(0)}% of it` : '';
      printOut(`answer path: EX ${a.chosenEx.toFixed(1)}% chosen vs ${a.greedyEx.toFixed(1)}% greedy (${a.memories} ${a.memories === 1 ? 'memory' : 'memories'}; mean confidence ${a.meanConfidence.toFixed(2)}; ${Math.round(a.msPerQuestion)} ms a question to choose)${oracle}\n`);
    }
    if (p.samples > 1) printOut(`samples ${p.samples} at temperature ${p.temperature}: pass@1 ${p.passAt1!.toFixed(2)}%, pass@${p.samples} ${p.passAtK!.toFixed(2)}%, self-consistency ${p.selfConsistency!.toFixed(2)}%\n`);
    printOut(`predictions: ${res.files.bird} (BIRD), ${res.files.spider} (Spider); trajectories: ${res.files.trajectories}; report: ${res.files.report}\n`);
  } finally {
    process.removeListener('SIGINT', onSig);
    process.removeListener('SIGTERM', onSig);
    await policy.close();
    await pool.close();
  }
}

export function register(program: Command): void {
  const cmd = program
    .command('predict')
    .description('Run a policy (checkpoint, GGUF or endpoint) over a BIRD/Spider question file: official-format predictions, trajectories, EX report')
    .requiredOption('--data <file>', 'questions: BIRD/Spider JSON array or JSONL')
    .option('--db-root <dir>', `databases as <dir>/<db_id>/<db_id>.sqlite (default ${DEFAULT_DB_ROOT}; a factory output, its folder or its dataset.jsonl, names its own)`)
    .requiredOption('--out <dir>', 'run directory (resumable: rerun the same command to continue)');
  addAnswerOptions(addPolicyOptions(cmd))
    .addOption(new Option('--compare <mode>', 'result comparison of the report').choices(['bird', 'spider']).default('bird'))
    .option('--samples <k>', 'episodes per question: adds pass@k and self-consistency (majority vote over result sets)', numberArg('--samples', { min: 1 }), 1)
    .option('--temperature <t>', 'sampling temperature (default 0 = greedy; 0.7 with --samples > 1)', numberArg('--temperature', { min: 0, integer: false }))
    .option('--concurrency <n>', 'questions in flight', numberArg('--concurrency', { min: 1 }), 4)
    .option('--suite <dir>', 'test-suite scoring: also compare on <dir>/<db_id>/*.sqlite variants (as agro eval --suite)')
    .option('--episode-timeout <ms>', 'wall-clock limit of one episode', numberArg('--episode-timeout', { min: 1 }), EPISODE_TIMEOUT_MS)
    .option('--timeout <ms>', 'per-query limit when scoring', numberArg('--timeout', { min: 1 }), JUDGE_DEFAULTS.timeoutMs)
    .option('--seed <n>', 'seed for sampling', numberArg('--seed', { min: 0 }), 0)
    .option('--workers <n>', 'SQL executor processes', numberArg('--workers', { min: 1 }), 2)
    .addOption(new Option('--chooser <who>', 'who chooses among the candidates when there is a judge: the transparent score (the judge gives the confidence) or the judge').choices(['transparent', 'judge']))
    .option('--no-search', "answer with the policy's own answer (greedy, or the --samples vote) instead of the answer path (candidates from the policy and the memory, run and ranked)")
    .option('--synth-drafts <n>', 'queries question-time synthesis drafts around each question (0: none)', numberArg('--synth-drafts', { min: 0, max: 500 }), SYNTH_DRAFTS)
    .option('--oracle', 'also score every candidate: how often some candidate was right, by source (slower; for benchmarks)')
    .option('--json', 'print the JSON report instead of the table');
  addPrivilegedRoleOption(addPromptOptions(cmd)).action((o: PredictCliOptions) => run(o));
}
