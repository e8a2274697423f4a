/**
 * `agro predict`: a policy over every question of a BIRD/Spider-style file.
 *
 * Run directory:
 *   run.json            the settings; a rerun with other settings is refused
 *   trajectories.jsonl  one line per finished question: every sample's turns (text, SQL, observation,
 *                       timing, tokens), the chosen prediction and its evaluation. Appended as each
 *                       question ends, so a killed run loses only the questions in flight; a rerun
 *                       skips what is there (and retries questions that failed on a policy error).
 *   predict_dev.json    BIRD's format    } written (atomically) once every question is done
 *   predict.sql         Spider's format  }
 *   report.json         `agro eval`'s report of the predictions, plus a `predict` section
 * Each question is scored as it ends with the evaluator itself (src/eval), so the running EX and the
 * final report are exactly what `agro eval --pred` on the written file gives.
 */
import { isPostgresUrl, redactUrl } from '../sql/postgres.ts';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import { writeFileAtomic, writeJsonAtomic } from '../util/fs.ts';
import { SqlEnvironment, sqlEnvConfigSchema, type SqlEnvDeps, type SqlTask } from '../agent/sql-env.ts';
import { promptContract, resolvePromptSettings, turnTokens } from '../prompt/contract.ts';
import { normalizeSql } from '../sql/features.ts';
import { runEpisode, sampleSeed, EPISODE_MODES, EPISODE_TIMEOUT_MS, type EpisodeEvent, type EpisodeResult } from '../agent/episode.ts';
import type { Policy } from '../agent/policies/types.ts';
import { judgedDatabases, questionScorer } from '../eval/run.ts';
import { JUDGE_DEFAULTS } from '../sql/judge.ts';
import { summarize } from '../eval/metrics.ts';
import { readDataset } from '../data/read-dataset.ts';
import { resolveDatabases } from '../data/databases.ts';
import { majorityVote } from '../eval/sampling.ts';
import { passAtK } from '../util/pass-at-k.ts';
import { mapConcurrent } from '../util/concurrency.ts';
import type { EvalReport, QuestionResult } from '../eval/types.ts';
import type { Dataset, EvalItem } from '../data/types.ts';
import { birdPredictions, oneLineSql, spiderPredictions } from '../data/predictions.ts';
import type { SqlExecutor } from '../sql/types.ts';
import { Answerer } from '../answer/resources.ts';
import { answerConfigFor, answerMemories, spellingFor } from '../answer/ask.ts';
import { answerConfigSchema, SEARCH_SAMPLES, SEARCH_TEMPERATURE, SYNTH_DRAFTS, type PolicyAnswer, type RankedCandidate } from '../answer/answer.ts';
import type { CandidateSource } from '../answer/rank.ts';
import { sqlTaskOf } from '../agent/tasks.ts';
import { catalogFromFactoryOutput } from '../data/catalog.ts';
import { ensureDir } from '../util/fs.ts';
import { loadJudge } from '../judge/load.ts';

export const predictConfigSchema = z.strictObject({
  data: z.string().min(1),
  dbRoot: z.string().min(1),
  /** A factory output folder whose manifest names the data's database (used instead of dbRoot). */
  factory: z.string().min(1).optional(),
  out: z.string().min(1),
  mode: z.enum(EPISODE_MODES).default('agent'),
  compare: z.enum(['bird', 'spider']).default('bird'),
  samples: z.number().int().min(1).max(64).default(1),
  /** 0 = greedy; with samples > 1 the default is 0.7. */
  temperature: z.number().min(0).max(2).optional(),
  topP: z.number().gt(0).max(1).default(1),
  /** Execution-guided decoding: an answer whose SQL does not run is sampled again up to this many times (episode.ts). */
  retries: z.number().int().min(0).max(16).default(0),
  concurrency: z.number().int().min(1).max(64).default(4),
  /** Prompt settings asked for; unset ones come from the policy's prompt contract, then the environment's defaults. */
  maxTurns: z.number().int().min(1).max(32).optional(),
  /** Unset: the policy's prompt contract (how it was trained and evaluated), else 256. */
  maxTurnTokens: z.number().int().min(1).optional(),
  episodeTimeoutMs: z.number().int().positive().default(EPISODE_TIMEOUT_MS),
  /** Time limit of a query when judging (the judge's default); tool calls get at most TOOL_TIMEOUT_MS of it. */
  execTimeoutMs: z.number().int().positive().default(JUDGE_DEFAULTS.timeoutMs),
  schemaChars: z.number().int().min(200).optional(),
  schemaFormat: z.enum(['grounded', 'ddl']).optional(),
  valueHints: z.number().int().min(0).max(50).optional(),
  docs: z.boolean().optional(),
  seed: z.number().int().min(0).default(0),
  /** Test-suite scoring: also compare on the variant databases `<suite>/<db_id>/*.sqlite` (as `agro eval --suite`). */
  suite: z.string().min(1).optional(),
  /**
   * The answer path (src/answer): candidates from the policy, the memory and their edits, run and ranked by a
   * checked reading. Off: the policy's answer as it is (greedy, or the self-consistency vote of --samples).
   */
  search: z.boolean().default(true),
  /** Sampled episodes (at 0.7) beside the greedy one as candidates, with one sample; with --samples > 1 the samples are the candidates. */
  searchSamples: z.number().int().min(0).max(32).default(SEARCH_SAMPLES),
  /** Queries question-time synthesis drafts per question (0: none). */
  synthDrafts: z.number().int().min(0).max(500).default(SYNTH_DRAFTS),
  /** Memory files (agro memory build); one per database (a later file for the same database replaces an earlier one). */
  memory: z.array(z.string().min(1)).default([]),
  /** Also the memories the policy's prompt contract names (before those given: a given one replaces the contract's). */
  contractMemory: z.boolean().default(true),
  /** The judge that gives the confidence (and chooses under `chooser: 'judge'`): a judge folder, false for none, or (absent) the built-in one. */
  judge: z.union([z.string().min(1), z.literal(false)]).optional(),
  /** Who chooses when there is a judge (answer.ts answerConfigSchema chooser). */
  chooser: answerConfigSchema.shape.chooser,
  /** Score every result group of every question too (the oracle: some candidate right), for benchmarks. */
  oracle: z.boolean().default(false),
});
export type PredictConfig = z.infer<typeof predictConfigSchema>;

export interface SampleRecord extends Omit<EpisodeResult, 'messages'> {
  /** The sample's query scored alone (samples > 1). */
  correct?: boolean;
}

export interface QuestionRecord {
  index: number;
  question_id?: number | string;
  db_id: string;
  question: string;
  /** The query written to the prediction files. */
  prediction: string;
  /** Which sample it came from (self-consistency vote; 0 with one sample). */
  chosen: number;
  samples: SampleRecord[];
  result: QuestionResult;
  /**
   * What the tool did, when the chosen episode ran a query before answering: the answer is that query
   * (unchanged), or not, and then the first query alone would have been wrong and the answer is right
   * (fixed), the other way round (broke), or both score the same (changed).
   */
  tool?: 'unchanged' | 'changed' | 'fixed' | 'broke';
  /** The answer path's choice (with --search): what it read, how sure it is, the candidates, and the greedy answer's score. */
  answer?: AnswerRecord;
}

export interface AnswerRecord {
  reading: string | null;
  confidence: number;
  /** Below the low mark of its confidence (answer.ts Answer.low): marked as a guess. */
  low: boolean;
  /** Where the chosen query came from. */
  sources: CandidateSource[];
  /** The policy's greedy answer, scored alone (what predict answered before the answer path). */
  greedy: { sql: string; correct: boolean } | null;
  /** The best candidates (up to ANSWER_KEPT), best first. */
  candidates: Array<Pick<RankedCandidate, 'sql' | 'sources' | 'score' | 'group' | 'reading'>>;
  tried: number;
  failed: number;
  empty: number;
  ms: number;
  /** With --oracle: whether some candidate was right, overall and by source. */
  oracle?: { any: boolean; policy: boolean; memory: boolean; edit: boolean; transparent: boolean };
}

/** Candidates kept per question in trajectories.jsonl. */
const ANSWER_KEPT = 10;

export interface PredictProgress {
  done: number;
  total: number;
  correct: number;
  failed: number;
  /** Questions finished by this process (for a rate that ignores resumed ones). */
  doneHere: number;
  elapsedMs: number;
}

export interface PredictHooks {
  onProgress?: (p: PredictProgress) => void;
  /** Every episode event, with the question it belongs to. */
  onEvent?: (index: number, sample: number, e: EpisodeEvent) => void;
  /** One line when a prompt setting asked for contradicts the policy's prompt contract. */
  onWarning?: (line: string) => void;
  signal?: AbortSignal;
}

export interface PredictSummary {
  policy: string;
  mode: PredictConfig['mode'];
  samples: number;
  temperature: number;
  /** Questions whose chosen episode ended on a policy error or the episode deadline. */
  failed: number;
  endReasons: Record<string, number>;
  /** Mean over questions; pass@k and self-consistency only with samples > 1. */
  passAt1?: number;
  passAtK?: number;
  selfConsistency?: number;
  /** Questions per second and mean tool calls, over the questions this process ran. */
  questionsPerSecond: number;
  toolCalls: number;
  /** Share of questions whose chosen episode ran at least one query. */
  toolUse: number;
  /** Over the questions whose chosen episode ran a query before answering (see QuestionRecord.tool). */
  toolEffect: { checked: number; changed: number; fixed: number; broke: number };
  /** New tokens per turn the episodes ran with. */
  maxTurnTokens: number;
  /** The answer path (with --search): EX of the greedy answer alone beside the chosen one, the oracle with --oracle, time per question. */
  answer?: {
    greedyEx: number;
    chosenEx: number;
    memories: number;
    msPerQuestion: number;
    meanConfidence: number;
    oracle?: { any: number; policy: number; memory: number; edit: number; transparent: number; rankerShare: number };
    /** Whether a learned judge was loaded (the confidence is its; it chose only under `chooser: 'judge'`). */
    judge?: boolean;
  };
}

export type PredictReport = EvalReport & { predict: PredictSummary };

export interface PredictResult {
  interrupted: boolean;
  done: number;
  total: number;
  report?: PredictReport;
  files: { trajectories: string; bird?: string; spider?: string; report?: string };
}

const FILES = { run: 'run.json', traj: 'trajectories.jsonl', bird: 'predict_dev.json', spider: 'predict.sql', report: 'report.json' };

const isFailure = (r: Pick<EpisodeResult, 'endReason'>): boolean => r.endReason === 'error' || r.endReason === 'timeout';

/** The finished questions of an earlier run; a torn last line (a kill mid-write) and policy failures are dropped, the file rewritten without them. */
function loadDone(path: string, total: number): Map<number, QuestionRecord> {
  const done = new Map<number, QuestionRecord>();
  if (!existsSync(path)) return done;
  const lines = readFileSync(path, 'utf8').split('\n');
  let dirty = false;
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    let rec: QuestionRecord;
    try {
      rec = JSON.parse(line) as QuestionRecord;
    } catch {
      if (i >= lines.length - 2) {
        dirty = true;
        return;
      }
      throw new AgroError('invalid_input', `${path}: line ${i + 1} is not JSON (not a file agro predict wrote?)`);
    }
    if (!Number.isInteger(rec.index) || rec.index < 0 || rec.index >= total) throw new AgroError('invalid_input', `${path}: line ${i + 1}: question index ${rec.index} is not in the data`);
    if (rec.samples[rec.chosen]?.endReason === 'error') {
      dirty = true;
      return;
    }
    done.set(rec.index, rec);
  });
  if (dirty) writeFileAtomic(path, [...done.values()].map((r) => JSON.stringify(r) + '\n').join(''));
  return done;
}

/** The first query an episode ran with its tool, scored beside its answer (as the quickstart's evaluation does). */
async function toolEffectOf(e: EpisodeResult, result: QuestionResult, score: (sql: string) => Promise<QuestionResult>): Promise<QuestionRecord['tool']> {
  const first = e.turns.find((t) => t.sql !== undefined)?.sql;
  if (first === undefined || e.answer === undefined) return undefined;
  if (normalizeSql(first) === normalizeSql(e.answer)) return 'unchanged';
  const firstRight = (await score(oneLineSql(first))).outcome === 'match';
  const right = result.outcome === 'match';
  return !firstRight && right ? 'fixed' : firstRight && !right ? 'broke' : 'changed';
}

/** Which candidates were right: each result group scored once (by its best member), by the sources in it. */
async function oracleOf(candidates: readonly RankedCandidate[], score: (sql: string) => Promise<QuestionResult>): Promise<NonNullable<AnswerRecord['oracle']>> {
  const out = { any: false, policy: false, memory: false, edit: false, transparent: false };
  const right = new Map<number, boolean>();
  // The transparent ranker's choice, beside whichever chose: the group of the best transparent score.
  const transparent = candidates.reduce<RankedCandidate | undefined>((b, c) => (!b || c.score > b.score ? c : b), undefined);
  if (transparent) {
    right.set(transparent.group, (await score(oneLineSql(transparent.sql))).outcome === 'match');
    out.transparent = right.get(transparent.group)!;
  }
  for (const c of candidates) {
    if (!right.has(c.group)) right.set(c.group, (await score(oneLineSql(c.sql))).outcome === 'match');
    if (!right.get(c.group)) continue;
    out.any = true;
    if (c.sources.includes('greedy') || c.sources.includes('sample')) out.policy = true;
    if (c.sources.includes('memory')) out.memory = true;
    if (c.sources.includes('edit')) out.edit = true;
  }
  return out;
}

/** A tool call's query runs at most this long (the judge's limit when lower): the agent waits for it. */
const TOOL_TIMEOUT_MS = 10_000;

/** The questions and the database of each db_id: read and resolved once, by the CLI before the policy loads, or by runPredict. */
export interface PredictInputs {
  dataset: Dataset;
  databases: ReadonlyMap<string, string>;
}

/** Reads the questions and resolves their databases (the factory output's catalog, else dbRoot's layout). */
export function readPredictInputs(cfg: Pick<PredictConfig, 'data' | 'dbRoot' | 'factory'>): PredictInputs {
  const dataset = readDataset(cfg.data);
  const ids = dataset.items.map((it) => it.dbId);
  if (!cfg.factory) return { dataset, databases: resolveDatabases(cfg.dbRoot, ids) };
  const catalog = catalogFromFactoryOutput(cfg.factory);
  return { dataset, databases: new Map([...new Set(ids)].map((id) => [id, catalog.resolve(id).path])) };
}

export async function runPredict(
  input: z.input<typeof predictConfigSchema>,
  policy: Policy,
  executor: SqlExecutor,
  hooks: PredictHooks = {},
  envDeps: SqlEnvDeps = {},
  inputs?: PredictInputs,
): Promise<PredictResult> {
  const parsed = predictConfigSchema.safeParse(input);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw new AgroError('usage', `predict: ${i.path.join('.') || 'config'}: ${i.message}`);
  }
  const cfg = parsed.data;
  const temperature = cfg.temperature ?? (cfg.samples > 1 ? 0.7 : 0);
  if (cfg.samples > 1 && temperature === 0) throw new AgroError('usage', 'predict: --samples > 1 needs --temperature > 0 (greedy samples are all the same)');
  // All input is read and checked before the first episode: bad input costs nothing.
  const { dataset, databases: dbs } = inputs ?? readPredictInputs(cfg);
  const tasks = new Map(dataset.items.map((it) => [it.index, sqlTaskOf(it, dbs.get(it.dbId) as string, [])]));
  const out = resolve(cfg.out);
  ensureDir(out);
  const { settings: prompt, warning } = resolvePromptSettings(policy.promptContract, { maxTurns: cfg.maxTurns, schemaChars: cfg.schemaChars, schemaFormat: cfg.schemaFormat, valueHints: cfg.valueHints, docs: cfg.docs });
  if (warning) hooks.onWarning?.(warning);
  const { maxTurnTokens, warning: tokensWarning } = turnTokens(policy.promptContract, cfg.maxTurnTokens);
  if (tokensWarning) hooks.onWarning?.(tokensWarning);
  if (cfg.mode === 'direct') prompt.maxTurns = 1;
  const envConfig = sqlEnvConfigSchema.parse({ ...prompt, execTimeoutMs: Math.min(cfg.execTimeoutMs, TOOL_TIMEOUT_MS), judge: { mode: cfg.compare, timeoutMs: cfg.execTimeoutMs } });
  // The prompt as run (contract and flags resolved) is part of the settings a rerun must match.
  const runInfo = { version: 1, settings: { ...cfg, data: resolve(cfg.data), dbRoot: isPostgresUrl(cfg.dbRoot) ? redactUrl(cfg.dbRoot) : resolve(cfg.dbRoot), out: undefined, temperature, maxTurnTokens, prompt: promptContract(envConfig) }, policy: policy.name };
  const runPath = join(out, FILES.run);
  if (existsSync(runPath)) {
    const prev = JSON.parse(readFileSync(runPath, 'utf8')) as typeof runInfo;
    if (JSON.stringify(prev.settings) !== JSON.stringify(runInfo.settings) || prev.policy !== runInfo.policy) {
      throw new AgroError('usage', `${cfg.out} holds a predict run with other settings or another policy; choose another --out or delete it`);
    }
  } else writeJsonAtomic(runPath, runInfo);
  const trajPath = join(out, FILES.traj);
  const done = loadDone(trajPath, dataset.items.length);

  const env = new SqlEnvironment(executor, envConfig, envDeps);
  // The environment's judge scores every answer: the one the RL reward and the in-training evaluation use.
  const judge = env.judge;
  const where = judgedDatabases(dbs, cfg.compare, cfg.suite);
  /** Scores queries of one question; the gold query (and any repeated query) runs once per database however many are scored. */
  const scorer = (item: EvalItem): ((sql: string) => Promise<QuestionResult>) => questionScorer(item, where.get(item.dbId)!, executor, judge, Boolean(cfg.suite));
  const memories = answerMemories(cfg.contractMemory ? policy.promptContract : null, cfg.memory);
  const answerJudge = cfg.search ? loadJudge(cfg.judge, (line) => hooks.onWarning?.(line)) : undefined;
  const answerer = cfg.search ? new Answerer(executor, { memory: memories, config: { execTimeoutMs: Math.min(cfg.execTimeoutMs, TOOL_TIMEOUT_MS), synth: cfg.synthDrafts, chooser: cfg.chooser }, judge: answerJudge }) : undefined;

  const t0 = Date.now();
  let doneHere = 0;
  let hereTools = 0;
  const progress = (): void => {
    const recs = [...done.values()];
    hooks.onProgress?.({
      done: done.size,
      total: dataset.items.length,
      correct: recs.filter((r) => r.result.outcome === 'match').length,
      failed: recs.filter((r) => isFailure(r.samples[r.chosen])).length,
      doneHere,
      elapsedMs: Date.now() - t0,
    });
  };
  progress();

  // With the answer path and one sample: the greedy episode and searchSamples sampled ones.
  const plan = answerer && cfg.samples === 1 ? [{ temperature }, ...Array.from({ length: cfg.searchSamples }, () => ({ temperature: SEARCH_TEMPERATURE }))] : Array.from({ length: cfg.samples }, () => ({ temperature }));
  const runQuestion = async (item: EvalItem): Promise<void> => {
    const task = tasks.get(item.index) as SqlTask;
    const episodes = await Promise.all(
      plan.map((p, s) =>
        runEpisode(env, task, policy, { mode: cfg.mode, maxTurnTokens, temperature: p.temperature, topP: cfg.topP, retries: cfg.retries, seed: sampleSeed(cfg.seed, s), timeoutMs: cfg.episodeTimeoutMs, signal: hooks.signal }, { onEvent: (e) => hooks.onEvent?.(item.index, s, e) }),
      ),
    );
    // An interrupted question is not done: the rerun runs it again.
    if (hooks.signal?.aborted) return;
    const score = scorer(item);
    const samples: SampleRecord[] = episodes.map(({ messages: _m, ...rest }) => rest);
    let chosen = 0;
    let prediction: string;
    let answer: AnswerRecord | undefined;
    // Every SQL predict writes names tables and columns as the schema spells them (the answer path's already do):
    // each episode's answer spelled once, on one line.
    const spell = spellingFor(env, task);
    const own = episodes.map((e) => oneLineSql(e.answer === undefined ? '' : spell(e.answer)));
    if (answerer) {
      const asked: PolicyAnswer[] = episodes.flatMap((e, s) => (e.answer !== undefined ? [{ sql: e.answer, source: s === 0 && plan[0].temperature === 0 ? ('greedy' as const) : ('sample' as const) }] : []));
      const a = await answerer.answer(task.dbPath, task.dbId, task.question, asked, answerConfigFor(task));
      const greedySql = episodes[0].answer === undefined ? undefined : own[0];
      prediction = oneLineSql(a.sql ?? greedySql ?? '');
      const fromEpisode = episodes.findIndex((e, s) => e.answer !== undefined && own[s] === prediction);
      chosen = Math.max(0, fromEpisode);
      const greedyRight = greedySql !== undefined ? (await score(oneLineSql(greedySql))).outcome === 'match' : false;
      answer = {
        reading: a.reading,
        confidence: a.confidence,
        low: a.low,
        sources: a.candidates[0]?.sources ?? [],
        greedy: plan[0].temperature === 0 ? { sql: oneLineSql(greedySql ?? ''), correct: greedyRight } : null,
        candidates: a.candidates.slice(0, ANSWER_KEPT).map((c) => ({ sql: c.sql, sources: c.sources, score: c.score, group: c.group, reading: c.reading })),
        tried: a.tried,
        failed: a.failed,
        empty: a.empty,
        ms: a.ms,
      };
      if (cfg.oracle) answer.oracle = await oracleOf(a.candidates, score);
    } else {
      if (cfg.samples > 1) {
        const execs = await Promise.all(episodes.map((e) => executor.execute(task.dbPath, e.answer ?? '', judge.execOptions)));
        chosen = majorityVote(execs, cfg.compare) ?? 0;
      }
      prediction = own[chosen];
    }
    if (cfg.samples > 1) {
      const scored = await Promise.all(own.map((sql) => score(sql)));
      scored.forEach((r, s) => (samples[s].correct = r.outcome === 'match'));
    }
    const result = await score(prediction);
    // The tool's effect is the chosen episode's, when the answer is that episode's own.
    const tool = answer && own[chosen] !== prediction ? undefined : await toolEffectOf(episodes[chosen], result, score);
    const rec: QuestionRecord = { index: item.index, ...(item.questionId !== undefined ? { question_id: item.questionId } : {}), db_id: item.dbId, question: task.question, prediction, chosen, samples, result, ...(tool ? { tool } : {}), ...(answer ? { answer } : {}) };
    appendFileSync(trajPath, JSON.stringify(rec) + '\n');
    done.set(item.index, rec);
    doneHere++;
    hereTools += episodes[chosen].toolCalls;
    progress();
  };

  const pending = dataset.items.filter((it) => !done.has(it.index));
  await mapConcurrent(pending, cfg.concurrency, hooks.signal, runQuestion);
  const files: PredictResult['files'] = { trajectories: trajPath };
  if (done.size < dataset.items.length) return { interrupted: true, done: done.size, total: dataset.items.length, files };

  const recs = dataset.items.map((it) => done.get(it.index)!);
  const preds = recs.map((r) => ({ sql: r.prediction, dbId: r.db_id }));
  files.bird = join(out, FILES.bird);
  files.spider = join(out, FILES.spider);
  files.report = join(out, FILES.report);
  writeFileAtomic(files.bird, birdPredictions(preds));
  writeFileAtomic(files.spider, spiderPredictions(preds));
  const questions = recs.map((r) => r.result);
  const endReasons: Record<string, number> = {};
  for (const r of recs) endReasons[r.samples[r.chosen].endReason] = (endReasons[r.samples[r.chosen].endReason] ?? 0) + 1;
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const summary: PredictSummary = {
    policy: policy.name,
    mode: cfg.mode,
    samples: cfg.samples,
    temperature,
    failed: recs.filter((r) => isFailure(r.samples[r.chosen])).length,
    endReasons,
    questionsPerSecond: doneHere / Math.max(1e-3, (Date.now() - t0) / 1000),
    toolCalls: doneHere ? hereTools / doneHere : 0,
    toolUse: recs.filter((r) => r.samples[r.chosen].toolCalls > 0).length / Math.max(1, recs.length),
    toolEffect: {
      checked: recs.filter((r) => r.tool).length,
      changed: recs.filter((r) => r.tool && r.tool !== 'unchanged').length,
      fixed: recs.filter((r) => r.tool === 'fixed').length,
      broke: recs.filter((r) => r.tool === 'broke').length,
    },
    maxTurnTokens,
  };
  const answered = recs.filter((r) => r.answer);
  if (answered.length) {
    const share = (f: (r: QuestionRecord) => boolean): number => (100 * recs.filter(f).length) / Math.max(1, recs.length);
    const withOracle = answered.every((r) => r.answer!.oracle);
    const anyRight = share((r) => Boolean(r.answer?.oracle?.any));
    summary.answer = {
      greedyEx: share((r) => Boolean(r.answer?.greedy?.correct)),
      chosenEx: share((r) => r.result.outcome === 'match'),
      memories: memories.length,
      msPerQuestion: mean(answered.map((r) => r.answer!.ms)),
      meanConfidence: mean(answered.map((r) => r.answer!.confidence)),
      judge: Boolean(answerJudge),
      ...(withOracle
        ? {
            oracle: {
              any: anyRight,
              policy: share((r) => Boolean(r.answer?.oracle?.policy)),
              memory: share((r) => Boolean(r.answer?.oracle?.memory)),
              edit: share((r) => Boolean(r.answer?.oracle?.edit)),
              transparent: share((r) => Boolean(r.answer?.oracle?.transparent)),
              rankerShare: anyRight > 0 ? share((r) => r.result.outcome === 'match' && Boolean(r.answer?.oracle?.any)) / anyRight : 0,
            },
          }
        : {}),
    };
  }
  if (cfg.samples > 1) {
    const c = recs.map((r) => r.samples.filter((s) => s.correct).length);
    summary.passAt1 = 100 * mean(c.map((x) => passAtK(cfg.samples, x, 1)));
    summary.passAtK = 100 * mean(c.map((x) => passAtK(cfg.samples, x, cfg.samples)));
    summary.selfConsistency = 100 * mean(questions.map((q) => (q.outcome === 'match' ? 1 : 0)));
  }
  const report: PredictReport = {
    version: 1,
    data: dataset.path,
    pred: dataset.format === 'bird' ? files.bird : files.spider,
    // Where the databases came from: the factory output that named them, or the db-root.
    dbRoot: cfg.factory ?? redactUrl(cfg.dbRoot),
    mode: cfg.compare,
    timeoutMs: cfg.execTimeoutMs,
    summary: summarize(questions, dataset.format),
    questions,
    predict: summary,
  };
  writeJsonAtomic(files.report, report);
  return { interrupted: false, done: done.size, total: dataset.items.length, report, files };
}
