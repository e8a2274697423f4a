/**
 * The main job end to end on one database, with the built-in model:
 *   synthesize verified data (+ variant databases) → split by SQL skeleton into SFT, RL and held-out sets
 *   → diversity-aware cold start (SFT) → sample the SFT policy's pass rate on each RL question → GRPO with
 *   dynamic sampling over an active pool of them (first those it sometimes gets right, 0 < pass rate < 1: the only
 *   groups with a learning signal; the pool follows the policy as it learns) → evaluate.
 * Every stage writes into its own folder of the run directory and is skipped on a rerun once finished,
 * so an interrupted quickstart resumes where it stopped. report.json gathers what each stage produced.
 *
 * The database is a SQLite file or a postgres:// URL (`agro db copy` makes one): every query, the factory's and
 * the agent's, runs on it; a server's variant databases are schemas the factory makes when the URL's role may
 * (else it says so and there are none), and its password is never written or printed.
 */
import { existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import type { DbDocs } from '../prompt/docs-types.ts';
import { addNoise } from '../factory/language/noise.ts';
import { z } from 'zod';
import { AgroError, parseWith } from '../errors.ts';
import { displayPath, readJsonl, writeJsonAtomic, writeFileAtomic } from '../util/fs.ts';
import { Rng } from '../util/rng.ts';
import { runFactory, type Manifest } from '../factory/pipeline.ts';
import type { DatasetRow } from '../data/dataset-row.ts';
import { createExecutor } from '../sql/executor.ts';
import { documentationOf } from '../prompt/sources.ts';
import { dialectOf } from '../sql/dialect.ts';
import { redactUrl } from '../sql/postgres.ts';
import type { SqlExecutor } from '../sql/types.ts';
import { SqlEnvironment, type SqlTask } from '../agent/sql-env.ts';
import { readPromptContract, resolvePromptSettings, TURN_TOKENS, type PromptSettings } from '../prompt/contract.ts';
import { RESPONSE_TOKENS } from '../rl/train-config.ts';
import { resolveModelPath } from '../model/builtin.ts';
import { synthesizeTrajectories } from '../agent/cold-start/trajectories.ts';
import { selectColdStart } from '../train/coldstart.ts';
import { runSft } from '../train/sft.ts';
import type { ChatMessage } from '../agent/types.ts';
import { runGrpo } from '../rl/trainer.ts';
import { anchorSamples, RL_ANCHOR } from '../rl/anchor.ts';
import { resolveAlgo } from '../rl/algo-config.ts';
import type { PolicyEval } from '../rl/evaluate.ts';
import { PassRateHelper, sharedPassRates } from './pass-rate-helper.ts';
import { CheckpointPolicy } from '../agent/policies/checkpoint.ts';
import { runPredict, type QuestionRecord } from './predict.ts';
import { buildMemory } from '../memory/build.ts';
import { MEMORY_STORE, pairsOfDataset } from '../memory/entry.ts';
import { writeMemory } from '../memory/store.ts';
import { introspectDatabase } from '../sql/executor.ts';
import type { StepRecord } from '../rl/phases.ts';
import type { PassRecord } from '../rl/group-math.ts';
import { initBackend, type BackendName } from '../model/backend.ts';
import { Tokenizer } from '../model/tokenizer.ts';
import { LlamaModel } from '../model/llama.ts';
import { presetSchema, resolveModelConfig } from '../model/config.ts';
import { renderChat } from '../model/chat.ts';
import { loadCheckpoint } from '../model/checkpoint.ts';
import { sqlFeatures, structureKey } from '../sql/features.ts';
import { suiteVariants } from '../data/databases.ts';
import { AGENT_SPECIAL_TOKENS } from '../agent/protocol.ts';
import type { ProgressSink } from '../util/progress.ts';
import { sqlTaskOf, withPhrasings } from '../agent/tasks.ts';
import { readDataset } from '../data/read-dataset.ts';
import { rowSqls, splitBySkeleton } from '../data/splits.ts';
import { MEMORY_RECIPE } from '../factory/memory-recipe.ts';

export const quickstartConfigSchema = z.strictObject({
  db: z.string().default('data/databases/music_store/music_store.sqlite'),
  out: z.string().default('runs/quickstart'),
  /** Verified pairs to synthesize: more pairs is what generalizes (docs/training.md#the-defaults-measurements). */
  pairs: z.number().int().min(10).default(MEMORY_RECIPE.pairs),
  variants: z.number().int().min(0).default(MEMORY_RECIPE.variants),
  /** Share of the pairs held out for evaluation (disjoint from SFT and RL by SQL skeleton). */
  heldOutShare: z.number().gt(0).lt(1).default(0.15),
  /** Share of the pairs kept for RL only: questions the SFT policy never saw, so it is unsure of them. */
  rlShare: z.number().min(0).lt(1).default(0.35),
  /** Samples per question for pass@k (headroom) and for the RL prompt filter. */
  passSamples: z.number().int().min(2).default(4),
  /** Held-out questions the headroom (pass@k before and after RL) is sampled on, the same seeded subset both times: a diagnostic, so a subset. */
  headroomQuestions: z.number().int().min(1).default(60),
  /**
   * Which RL questions train, after sampling each passSamples times with the SFT policy. 'filtered': only those it
   * got right sometimes (0 < correct < passSamples: the only groups with a learning signal), all through RL. 'active'
   * (the active-pool sampler, src/rl/trainer-hooks.ts): every RL question, starting from those counts; a question leaves the
   * pool as soon as a group comes out unanimous (all right or all wrong) and is rolled out again every rlRecheck-th
   * visit, so the pool follows the policy as it learns. 'all': every RL question in the run's order. 'active'
   * gained the most (docs/training.md#the-defaults-measurements).
   */
  rlPool: z.enum(['active', 'filtered', 'all']).default('active'),
  rlRecheck: z.number().int().min(1).default(4),
  /** Cold-start trajectories chosen by diversity from the training pairs (0 = all). */
  coldStart: z.number().int().min(0).default(0),
  /** Share of cold-start trajectories that run the query once before answering. */
  verifyShare: z.number().min(0).max(1).default(0.3),
  /** From scratch: tiny, which learns more in the same minutes than `small` (docs/training.md#the-defaults-measurements). */
  preset: presetSchema.default('tiny'),
  vocabSize: z.number().int().min(300).default(2048),
  /**
   * Where the policy starts: 'base' (agro's built-in base model, pretrained on many databases: its weights,
   * tokenizer and prompt contract), 'scratch' (a new `preset` model with a `vocabSize` tokenizer trained on
   * this database's data), or a checkpoint folder. preset and vocabSize apply to 'scratch' only.
   */
  from: z.string().min(1).default('base'),
  /** SFT steps; default: the start's recipe (FROM_SCRATCH, FROM_CHECKPOINT). */
  sftSteps: z.number().int().min(1).optional(),
  sftBatch: z.number().int().min(1).default(8),
  /**
   * Early stopping for the cold start: the loss on the RL questions' trajectories (skeletons SFT never
   * sees, and never the held-out ones) every sftEvalEvery steps; SFT ends after sftPatience evaluations
   * without a new best and keeps the best step. 0 = train every one of sftSteps. Off by default: execution
   * accuracy keeps rising after the loss on unseen skeletons bottoms out (docs/training.md#the-defaults-measurements).
   */
  sftPatience: z.number().int().min(0).default(0),
  sftEvalEvery: z.number().int().min(1).default(100),
  /** Default: 5e-3 from scratch, FROM_CHECKPOINT.sftLr from a checkpoint. */
  sftLr: z.number().positive().optional(),
  algo: z.string().default('grpo'),
  /** Default: 400 from scratch, FROM_CHECKPOINT.rlSteps from a checkpoint (a bigger model's step costs more). */
  rlSteps: z.number().int().min(1).optional(),
  /**
   * RL questions sampled for the pool (their pass rates are what the pool starts from). Default: all of them
   * from scratch, FROM_CHECKPOINT.rlCandidates from a checkpoint (about as many as its steps visit).
   */
  rlCandidates: z.number().int().min(1).optional(),
  /** Samples per RL candidate for those pass rates. Default: passSamples from scratch, FROM_CHECKPOINT.rlPassSamples from a checkpoint. */
  rlPassSamples: z.number().int().min(2).optional(),
  groupSize: z.number().int().min(2).default(4),
  promptsPerStep: z.number().int().min(1).default(4),
  /** Default: 3e-4 from scratch, FROM_CHECKPOINT.rlLr from a checkpoint. */
  rlLr: z.number().positive().optional(),
  /**
   * The RL learning rate decays by a cosine to rlLr × this at the last step (1 = constant): the late steps, on few
   * informative groups, no longer undo what the early ones learned (docs/training.md#the-defaults-measurements).
   */
  rlMinLrRatio: z.number().min(0).max(1).default(0.1),
  /**
   * Weight of the cold-start SFT loss mixed into every RL step (InstructGPT's PPO-ptx; rlAnchorBatch samples
   * a step): it holds the answers to questions RL never samples where SFT left them. 0 = off. Default:
   * FROM_CHECKPOINT.rlAnchor from a checkpoint, 0 from scratch (not measured there).
   */
  rlAnchor: z.number().min(0).optional(),
  rlAnchorBatch: z.number().int().min(1).default(RL_ANCHOR.batch),
  /** Sampling temperature of the RL rollouts (the loss reads the policy at the same temperature). */
  rlTemperature: z.number().positive().default(1),
  /** RL rollouts (and the pass rates that pick the RL pool) decode constrained, as the held-out evaluation and `agro predict` do. */
  rlConstrain: z.boolean().default(false),
  /**
   * Schema characters in the agent's prompt: the prompt dominates the compute of every step. Default: the
   * starting checkpoint's prompt contract (what it was trained to read), 200 from scratch.
   */
  schemaChars: z.number().int().min(200).optional(),
  seed: z.number().int().min(0).default(0),
  backend: z.enum(['wasm', 'cpu']).optional(),
  /**
   * Questions per SQL query the factory writes (the question and up to phrasings-1 paraphrases, each parsed back
   * to the query); SFT trains on every one of them, RL and the held-out set on the first only.
   */
  phrasings: z.number().int().min(1).max(8).default(MEMORY_RECIPE.phrasings),
  /** Share of SFT questions given train-time noise (case, punctuation, a typo; the factory's language/noise.ts). */
  noise: z.number().min(0).max(1).default(0.1),
  /** The database's documentation (BIRD CSVs, a tables.json, agro's JSON); default: found beside the database. */
  docs: z.string().min(1).optional(),
});
export type QuickstartConfig = z.infer<typeof quickstartConfigSchema>;
export type QuickstartConfigInput = z.input<typeof quickstartConfigSchema>;

/** The cold-start trajectories the RL stage's anchor trains on. */
function coldStartConversations(path: string): ChatMessage[][] {
  return readJsonl<{ messages: ChatMessage[] }>(path).map((r) => r.messages);
}

/** The CI-sized run: every stage, a tiny model, a couple of minutes on 2 cores. */
export const SMALL_QUICKSTART: QuickstartConfigInput = {
  pairs: 40,
  variants: 1,
  heldOutShare: 0.2,
  rlShare: 0.25,
  passSamples: 2,
  coldStart: 24,
  preset: 'tiny',
  vocabSize: 600,
  sftSteps: 30,
  sftEvalEvery: 10,
  sftBatch: 4,
  rlSteps: 3,
  groupSize: 2,
  promptsPerStep: 2,
  schemaChars: 500,
};

export interface QuickstartReport {
  config: QuickstartConfig;
  synth?: { rows: number; difficulty: Record<string, number>; variants: number; caughtByVariants: number; seconds: number };
  /** Queries per split; SFT trains on sftQuestions questions (every phrasing of its queries). */
  split?: { sft: number; sftQuestions?: number; rl: number; heldOut: number };
  /** RL questions by how many of passSamples samples the SFT policy got right, and how many were kept. */
  rlFilter?: { candidates: number; kept: number; byCorrect: number[] };
  coldStart?: { candidates: number; selected: number; verify: number; lookup?: number; structures: number; randomStructures: number };
  /** passAt: pass@k on `passOn` held-out questions (headroomQuestions of them, all when fewer). */
  sft?: { steps: number; bestStep?: number; finalLoss: number | null; heldOutLoss: number | null; checkpoint: string; seconds: number; eval: PolicyEval; passAt?: Record<number, number>; passOn?: number };
  rl?: { steps: number; checkpoint: string; seconds: number; eval: PolicyEval; passAt?: Record<number, number>; passOn?: number; firstReward: number; lastReward: number; zeroSignal: number };
}

export interface QuickstartHooks {
  log?: (line: string) => void;
  /** The factory's stages (start/tick/stop per stage). */
  factoryProgress?: ProgressSink;
  /** Each SFT and RL step as it finishes, with the stage's total and what a progress line shows. */
  onStep?: (stage: 'sft' | 'rl', step: number, total: number, fields: Record<string, string | number>) => void;
  signal?: AbortSignal;
}

/** The budget a start implies (each overridable by the config field of the same name). */
interface Recipe { sftSteps: number; schemaChars?: number; sftLr: number; rlSteps: number; rlLr: number; rlCandidates: number; rlPassSamples?: number; rlAnchor: number }

/** From scratch: the tiny model's recipe measured above. */
const FROM_SCRATCH: Recipe = { sftSteps: 6000, sftLr: 5e-3, schemaChars: 200, rlSteps: 400, rlLr: 3e-4, rlCandidates: Infinity, rlAnchor: 0 };
/**
 * From a pretrained checkpoint: fine-tuning needs fewer, gentler steps than learning from nothing, and a step of
 * the base preset costs ~6× one of `tiny`, so the budget is cut to keep the quickstart within minutes (RL samples
 * 400 candidates for its pool, not all); the cold-start loss mixed into each step (RL_ANCHOR) keeps what SFT taught
 * on the questions RL never samples (docs/training.md#rl-from-the-base-model).
 */
const FROM_CHECKPOINT: Recipe = { sftSteps: 300, sftLr: 1e-3, rlSteps: 90, rlLr: 1e-4, rlCandidates: 400, rlAnchor: RL_ANCHOR.coef };

/**
 * What the run starts from, and the settings that follow from it: the checkpoint's folder and prompt
 * contract (its schema budget and format become the environment's), SFT steps and learning rate.
 */
export function startOf(cfg: QuickstartConfig): { dir: string | null; prompt: Partial<PromptSettings>; sftSteps: number; sftLr: number; rlSteps: number; rlLr: number; rlCandidates: number; rlPassSamples: number; rlAnchor: number } {
  const recipe = cfg.from === 'scratch' ? FROM_SCRATCH : FROM_CHECKPOINT;
  const steps = { sftSteps: cfg.sftSteps ?? recipe.sftSteps, sftLr: cfg.sftLr ?? recipe.sftLr, rlSteps: cfg.rlSteps ?? recipe.rlSteps, rlLr: cfg.rlLr ?? recipe.rlLr, rlCandidates: cfg.rlCandidates ?? recipe.rlCandidates, rlPassSamples: cfg.rlPassSamples ?? recipe.rlPassSamples ?? cfg.passSamples, rlAnchor: cfg.rlAnchor ?? recipe.rlAnchor };
  if (cfg.from === 'scratch') return { dir: null, prompt: { schemaChars: cfg.schemaChars ?? FROM_SCRATCH.schemaChars! }, ...steps };
  const dir = resolve(resolveModelPath(cfg.from));
  if (!existsSync(join(dir, 'config.json'))) throw new AgroError('not_found', `--from ${cfg.from}: no checkpoint there (expected base, scratch or a checkpoint folder)`);
  const { settings } = resolvePromptSettings(readPromptContract(dir), cfg.schemaChars !== undefined ? { schemaChars: cfg.schemaChars } : {});
  return { dir, prompt: settings, ...steps };
}

/** Questions the early-stopping loss is measured on: enough for a steady loss, few enough to be cheap every sftEvalEvery steps. */
const STOP_SAMPLES = 256;

/**
 * A folder where the database sits as <root>/<db_id>/<db_id>.sqlite, the layout predict and eval read: its
 * own when it is already laid out so, else a link to it inside the run folder.
 */
function databaseRoot(db: string, dbId: string, out: string): string {
  // A server's root is the database's URL: db_id names the database, which is this one.
  if (dialectOf(db) === 'postgres') return db;
  if (basename(db) === `${dbId}.sqlite` && basename(dirname(db)) === dbId) return dirname(dirname(db));
  const root = join(out, 'databases');
  const link = join(root, dbId, `${dbId}.sqlite`);
  if (!existsSync(link)) {
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(db, link);
  }
  return root;
}

/**
 * The held-out evaluation of a saved checkpoint, run as `agro predict` runs it (the checkpoint's prompt
 * contract, greedy episodes, the evaluator with the variant databases): the figure the quickstart reports
 * is the one a user gets back with the predict command it prints.
 */
async function predictEval(checkpoint: string, data: string, dbRoot: string, suite: string | undefined, out: string, pool: SqlExecutor, signal?: AbortSignal, memory?: string): Promise<PolicyEval> {
  const policy = await CheckpointPolicy.open(checkpoint, { maxBatch: 8 });
  try {
    // With a memory: the answer path too, on the same greedy episodes (no samples, no question-time synthesis: the
    // quickstart keeps to its time), whose own score stays the figure reported. The contract's memory holds the
    // held-out pairs themselves, so only the one given here is used.
    const search = memory ? { search: true, searchSamples: 0, synthDrafts: 0, memory: [memory], contractMemory: false } : { search: false };
    const res = await runPredict({ data, dbRoot, out, concurrency: 8, ...(suite ? { suite } : {}), ...search }, policy, pool, signal ? { signal } : {});
    if (!res.report) throw new AgroError('internal', 'quickstart interrupted during evaluation; run it again to continue');
    const r = res.report;
    const recs = readJsonl<QuestionRecord>(res.files.trajectories).sort((a, b) => a.index - b.index);
    const greedy = (q: QuestionRecord): { sql: string; correct: boolean } => (q.answer ? (q.answer.greedy ?? { sql: '', correct: false }) : { sql: q.prediction, correct: q.result.outcome === 'match' });
    const byDifficulty: PolicyEval['byDifficulty'] = {};
    for (const q of recs) {
      const b = (byDifficulty[q.result.bucket] ??= { n: 0, correct: 0 });
      b.n++;
      if (greedy(q).correct) b.correct++;
    }
    const correct = recs.filter((q) => greedy(q).correct).length;
    return {
      accuracy: recs.length ? correct / recs.length : 0,
      n: recs.length,
      byDifficulty,
      toolCalls: recs.reduce((a, q) => a + q.samples[0].toolCalls, 0) / Math.max(1, recs.length),
      toolUse: r.predict.toolUse,
      predictions: recs.map((q) => greedy(q).sql),
      toolEffect: r.predict.toolEffect,
      endReasons: r.predict.endReasons,
      ...(r.predict.answer ? { chosen: r.predict.answer.chosenEx / 100 } : {}),
    };
  } finally {
    await policy.close();
  }
}

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
const onQuestions = (on: number | undefined, n: number): string => (on !== undefined && on < n ? ` on ${on} of them` : '');
const passText = (p: Record<number, number> | undefined): string => (p ? Object.entries(p).map(([k, v]) => `pass@${k} ${pct(v)}`).join(', ') : '-');

/**
 * The configuration checked at once, the RL stage's algorithm too: an unknown --algo fails here, not
 * after minutes of synthesis and SFT.
 */
export function resolveQuickstartConfig(input: QuickstartConfigInput): QuickstartConfig {
  const cfg = parseWith(quickstartConfigSchema, input, 'quickstart config');
  resolveAlgo(cfg.algo, { kl: { coef: 0 }, dynamicSampling: { enabled: true } });
  return cfg;
}

/**
 * Which RL questions train, given each one's correct answers out of passSamples from the SFT policy (rlPool):
 * 'active' trains on every candidate through the active-pool sampler, which starts from these counts
 * (passRates); an algorithm with a sampler of its own (mmr1) keeps it and gets the filtered questions instead.
 * 'filtered' keeps those answered right sometimes (0 < correct < passSamples); too few of them (under one
 * step's prompts) falls back to every candidate, dynamic sampling still skipping dead groups. 'all': every one.
 */
export function rlPoolPlan<T extends { id: string }>(
  pool: QuickstartConfig['rlPool'],
  candidates: T[],
  correct: readonly number[],
  cfg: Pick<QuickstartConfig, 'passSamples' | 'promptsPerStep'>,
  algo: string,
): { tasks: T[]; kept: T[]; passRates?: Map<string, PassRecord> } {
  const kept = candidates.filter((_, i) => correct[i] > 0 && correct[i] < cfg.passSamples);
  if (pool === 'all') return { tasks: candidates, kept };
  if (pool === 'active' && resolveAlgo(algo).sampler.name === 'order') {
    return { tasks: candidates, kept, passRates: new Map(candidates.map((t, i) => [t.id, { correct: correct[i], samples: cfg.passSamples }])) };
  }
  return { tasks: kept.length >= cfg.promptsPerStep ? kept : candidates, kept };
}

/**
 * The quickstart's RL recipe on top of the algorithm's preset: no KL term (as in DAPO and Dr.GRPO; it would
 * cost a reference forward pass per step on a CPU), dynamic sampling, and the active-pool sampler when the
 * pool plan gave it starting pass counts.
 */
export function rlAlgoOverrides(passRates: ReadonlyMap<string, PassRecord> | undefined, recheck: number): Record<string, unknown> {
  return { kl: { coef: 0 }, dynamicSampling: { enabled: true }, ...(passRates ? { sampler: { name: 'active', recheck } } : {}) };
}

/** What every stage reads: the resolved config, the run's folder and report, the database, the environment, the pool. */
interface RunContext {
  cfg: QuickstartConfig;
  hooks: QuickstartHooks;
  log: (line: string) => void;
  /** The database: a resolved file path or the server's URL. */
  db: string;
  /** How a path or URL is written and printed (a server without its password). */
  shown: (p: string) => string;
  out: string;
  report: QuickstartReport;
  save: () => void;
  backend: string;
  pool: SqlExecutor;
  env: SqlEnvironment;
  start: ReturnType<typeof startOf>;
  /** The pass-rate helper (started on first use; null for a server's database). */
  helper: () => PassRateHelper | null;
  /** The database's documentation, for the factory's wording and the agent's prompt alike. */
  docs: DbDocs | undefined;
  /** Greedy evaluation and pass-rate sampling: the turns the policy trains with. */
  evalOpts: { maxTurnTokens: number; maxResponseTokens: number; seed: number };
}

/** The questions of each stage, from the factory's output split by SQL skeleton, and where predict finds their databases. */
interface Split {
  heldOut: SqlTask[];
  /** The held-out questions the headroom is sampled on: the same seeded subset before and after RL. */
  headroomSet: SqlTask[];
  /** SFT's questions: every phrasing of its queries, a share with noise. */
  train: SqlTask[];
  rlCandidates: SqlTask[];
  heldOutPath: string;
  suiteDir: string | undefined;
  variantsDir: string;
  /** Variant databases the factory made (the reward and the evaluation match on each). */
  variants: number;
  dbRoot: string;
  /** The memory the trained agent answers with (every verified pair), and the one without the held-out pairs its held-out measure uses. */
  memoryPath: string;
  evalMemoryPath: string;
}

/** How a checkpoint of a stage folder names the memory: relative to `<stage>/checkpoints/<step>`, so the run folder can move. */
const contractMemory = (stageDir: string, memoryPath: string): string[] => [relative(join(stageDir, 'checkpoints', 'step'), memoryPath)];

/** The quickstart's split of a factory's rows by SQL skeleton (row indices): seeded, so any caller gets the quickstart's own. */
export function quickstartSplit(rows: readonly DatasetRow[], cfg: Pick<QuickstartConfig, 'heldOutShare' | 'rlShare' | 'seed'>): { sft: number[]; rl: number[]; heldOut: number[] } {
  return splitBySkeleton(rows.map((_, i) => i), (i) => rowSqls(rows[i]), { sft: 1 - cfg.heldOutShare - cfg.rlShare, rl: cfg.rlShare, heldOut: cfg.heldOutShare }, cfg.seed ^ 0x9e37);
}

/** 1. The data factory (skipped once done), then the split by SQL skeleton (recomputed: it is seeded). */
async function dataStage(c: RunContext): Promise<Split> {
  const { cfg, hooks, log, db, shown, out, report, save, pool, start, docs } = c;
  const synthDir = join(out, 'synth');
  if (!report.synth) {
    log(`[1/4] synthesizing ${cfg.pairs} verified pairs from ${shown(cfg.db)} ...`);
    const t0 = performance.now();
    const res = await runFactory({ db, out: synthDir, n: cfg.pairs, seed: cfg.seed, variants: cfg.variants, phrasings: cfg.phrasings, ...(docs ? { docs } : {}) }, { executor: pool, log: (line) => log(`[1/4] ${line}`), ...(hooks.factoryProgress ? { progress: hooks.factoryProgress } : {}) });
    const m: Manifest = res.manifest;
    report.synth = { rows: m.rows, difficulty: m.difficulty, variants: m.variants.length, caughtByVariants: m.caughtByVariants, seconds: Math.round((performance.now() - t0) / 100) / 10 };
    save();
  }
  log(`[1/4] data: ${report.synth.rows} pairs (${Object.entries(report.synth.difficulty).map(([k, v]) => `${k} ${v}`).join(', ')}), ${report.synth.variants} variant databases, ${report.synth.caughtByVariants} pairs rejected only thanks to the variants`);
  const rows = readJsonl<DatasetRow>(join(synthDir, 'dataset.jsonl'));
  if (rows.length < 10) throw new AgroError('invalid_input', `the factory produced only ${rows.length} pairs from ${shown(cfg.db)}; the quickstart needs at least 10`);
  const variantsDir = join(synthDir, 'variants');
  const items = readDataset(join(synthDir, 'dataset.jsonl')).items;
  const toTask = (i: number): SqlTask => sqlTaskOf(items[i], db, report.synth && report.synth.variants > 0 ? suiteVariants(variantsDir, items[i].dbId, db) : []);
  const split = quickstartSplit(rows, cfg);
  if (split.heldOut.length < 5 || split.sft.length < 5) throw new AgroError('invalid_input', `the ${rows.length} pairs of ${shown(cfg.db)} split into too few SQL skeletons (SFT ${split.sft.length}, held out ${split.heldOut.length}); synthesize more pairs`);
  const heldOut = split.heldOut.map(toTask);
  // The same seeded subset before and after RL, so the two headrooms compare.
  const headroomSet = new Rng(cfg.seed ^ 0x4ead).shuffle([...heldOut]).slice(0, cfg.headroomQuestions);
  // SFT reads every phrasing of its queries, a share of them with noise as people type (RL and the held-out
  // set keep the first, clean phrasing).
  const noiseRng = new Rng(cfg.seed ^ 0x5eed);
  const noisy = (t: SqlTask): SqlTask => (noiseRng.next() < cfg.noise ? { ...t, question: addNoise(t.question, noiseRng).text } : t);
  const train = split.sft.flatMap((i) => withPhrasings(toTask(i), rows[i].paraphrases)).map(noisy);
  // A recipe with few RL steps samples the pass rates of as many RL questions as its steps visit, not all.
  const rlAll = split.rl.map(toTask);
  const rlCandidates = rlAll.length > start.rlCandidates ? new Rng(cfg.seed ^ 0x41).shuffle([...rlAll]).slice(0, start.rlCandidates) : rlAll;
  report.split = { sft: split.sft.length, sftQuestions: train.length, rl: rlCandidates.length, heldOut: heldOut.length };
  const writeRows = (name: string, idx: number[]): void => writeFileAtomic(join(out, name), idx.map((i) => JSON.stringify(rows[i])).join('\n') + '\n');
  writeRows('held_out.jsonl', split.heldOut);
  writeRows('train.jsonl', split.sft);
  writeRows('rl.jsonl', split.rl);
  const heldOutPath = join(out, 'held_out.jsonl');
  // The memory the trained agent answers with: every verified pair (named by its checkpoints' prompt contract);
  // and, for the held-out measure of the answer path, one without the held-out pairs.
  const memoryPath = join(synthDir, MEMORY_STORE);
  const evalMemoryPath = join(out, 'memory-train.json');
  if (!existsSync(memoryPath) || !existsSync(evalMemoryPath)) {
    const schema = await introspectDatabase(db);
    const memoryOf = (idx: readonly number[]) => buildMemory(items[0].dbId, schema, pairsOfDataset(idx.map((i) => rows[i])));
    writeMemory(evalMemoryPath, await memoryOf([...split.sft, ...split.rl]));
    writeMemory(memoryPath, await memoryOf(rows.map((_, i) => i)));
  }
  const suiteDir = report.synth.variants > 0 ? variantsDir : undefined;
  const dbRoot = databaseRoot(db, items[0].dbId, out);
  log(`[1/4] split by SQL skeleton (no held-out skeleton is trained on): SFT ${split.sft.length} queries (${train.length} questions with their paraphrases), RL ${rlCandidates.length}${rlCandidates.length < rlAll.length ? ` (sampled from ${rlAll.length})` : ''}, held out ${heldOut.length}`);
  return { heldOut, headroomSet, train, rlCandidates, heldOutPath, suiteDir, variantsDir, variants: report.synth.variants, dbRoot, memoryPath, evalMemoryPath };
}

/** 2. The diversity-aware cold start and its evaluation (skipped once done). */
async function coldStartStage(c: RunContext, s: Split): Promise<NonNullable<QuickstartReport['sft']>> {
  const { cfg, hooks, log, out, report, save, pool, env, start, backend, evalOpts } = c;
  const startHelper = c.helper;
  const { train, rlCandidates, heldOutPath, dbRoot, suiteDir, headroomSet } = s;
  const sftDir = join(out, 'sft');
  if (!report.sft) {
    const trajs = await synthesizeTrajectories(train, env, { verifyShare: cfg.verifyShare, seed: cfg.seed });
    const size = cfg.coldStart > 0 ? Math.min(cfg.coldStart, trajs.length) : trajs.length;
    // The reasoning here is templated from the SQL, so the SQL structure carries most of the signal.
    const ids = new Set(selectColdStart(trajs, size, { seed: cfg.seed, sqlWeight: 0.8 }));
    const chosen = trajs.filter((t) => ids.has(t.id));
    const structures = (ts: typeof trajs): number => new Set(ts.map((t) => structureKey(sqlFeatures(t.sqls[t.sqls.length - 1])))).size;
    const random = new Rng(cfg.seed).shuffle([...trajs]).slice(0, size);
    report.coldStart = { candidates: trajs.length, selected: chosen.length, verify: chosen.filter((t) => t.kind === 'verify').length, lookup: chosen.filter((t) => t.kind === 'lookup').length, structures: structures(chosen), randomStructures: structures(random) };
    writeFileAtomic(join(out, 'cold_start.jsonl'), chosen.map((t) => JSON.stringify({ id: t.id, difficulty: t.difficulty, messages: t.messages })).join('\n') + '\n');
    log(`[2/4] cold start: ${chosen.length} of ${trajs.length} trajectories (${report.coldStart.verify} check the result with a tool call first, ${report.coldStart.lookup ?? 0} look a value up), covering ${report.coldStart.structures} SQL structures (a random subset: ${report.coldStart.randomStructures})`);

    const from = start.dir ? loadCheckpoint(start.dir) : null;
    const tokenizer = from?.tokenizer ?? Tokenizer.train(chosen.flatMap((t) => t.messages.map((m) => m.content)), { vocabSize: cfg.vocabSize, specialTokens: [...AGENT_SPECIAL_TOKENS] });
    const model = from?.model ?? new LlamaModel(resolveModelConfig({ preset: cfg.preset, vocabSize: tokenizer.vocabSize }), { seed: cfg.seed });
    const what = start.dir ? `${cfg.from} (${displayPath(start.dir)})` : `a new ${cfg.preset} model`;
    const samples = chosen.map((t) => renderChat(tokenizer, t.messages));
    const meanLen = Math.round(samples.reduce((a, s) => a + s.ids.length, 0) / samples.length);
    // Early stopping watches questions of skeletons SFT never trains on: the RL ones (the held-out
    // set stays untouched until the end). Without RL questions, SFT holds out a share of its own.
    const stopOn = cfg.sftPatience > 0 && rlCandidates.length >= 5
      ? (await synthesizeTrajectories(new Rng(cfg.seed + 7).shuffle([...rlCandidates]).slice(0, STOP_SAMPLES), env, { verifyShare: cfg.verifyShare, seed: cfg.seed + 7 })).map((t) => renderChat(tokenizer, t.messages))
      : undefined;
    const until = cfg.sftPatience > 0 ? `, stopping when the loss on ${stopOn ? `the ${stopOn.length} RL questions` : 'a held-out share'} has not improved for ${cfg.sftPatience * cfg.sftEvalEvery} steps` : '';
    log(`[2/4] SFT of ${what} on ${backend} (${tokenizer.vocabSize}-token tokenizer, ${meanLen} tokens per sample), up to ${start.sftSteps} steps${until} ...`);
    const t0 = performance.now();
    const res = await runSft({
      prompt: { env: env.config, maxTurnTokens: evalOpts.maxTurnTokens, memory: contractMemory(sftDir, s.memoryPath) },
      outDir: sftDir,
      model,
      tokenizer,
      samples,
      ...(stopOn ? { heldOut: stopOn } : {}),
      config: {
        steps: start.sftSteps, batchSize: cfg.sftBatch, lr: start.sftLr, warmupSteps: Math.min(20, Math.floor(start.sftSteps / 10)),
        evalEvery: cfg.sftPatience > 0 ? cfg.sftEvalEvery : 0, patience: cfg.sftPatience, checkpointEvery: 0, maxSeqLen: model.config.maxPositions, seed: cfg.seed,
      },
      signal: hooks.signal,
      onStep: (m) => hooks.onStep?.('sft', m.step, start.sftSteps, { loss: m.loss.toFixed(3), tps: m.tokens_per_s }),
    });
    if (res.interrupted) throw new AgroError('internal', 'quickstart interrupted during SFT; run it again to continue');
    const seconds = Math.round((performance.now() - t0) / 100) / 10;
    startHelper();
    const ev = await predictEval(res.checkpoint, heldOutPath, dbRoot, suiteDir, join(sftDir, 'predict'), pool, hooks.signal);
    writeJsonAtomic(join(sftDir, 'predictions.json'), ev.predictions);
    const headroom = await sharedPassRates(startHelper(), env, headroomSet, model, tokenizer, res.checkpoint, { ...evalOpts, samples: cfg.passSamples });
    report.sft = { steps: res.steps, ...(res.best ? { bestStep: res.best.step } : {}), finalLoss: res.finalLoss, heldOutLoss: res.heldOutLoss, checkpoint: res.checkpoint, seconds, eval: ev, passAt: headroom.passAt, passOn: headroomSet.length };
    save();
    model.dispose();
  }
  const stopped = report.sft.bestStep !== undefined ? `stopped at step ${report.sft.steps}, kept step ${report.sft.bestStep} (validation loss ${report.sft.heldOutLoss?.toFixed(3)})` : `held-out loss ${report.sft.heldOutLoss?.toFixed(3) ?? '-'}`;
  log(`[2/4] after SFT: ${stopped}, execution accuracy ${pct(report.sft.eval.accuracy)} on ${report.sft.eval.n} held-out questions (${report.sft.seconds}s); headroom${onQuestions(report.sft.passOn, report.sft.eval.n)} ${passText(report.sft.passAt)}`);
  return report.sft;
}

/** 3. GRPO from the cold start and its evaluation (skipped once done). */
async function rlStage(c: RunContext, s: Split, sft: NonNullable<QuickstartReport['sft']>): Promise<NonNullable<QuickstartReport['rl']>> {
  const { cfg, hooks, log, out, report, save, pool, env, start, evalOpts } = c;
  const startHelper = c.helper;
  const { train, rlCandidates, heldOutPath, dbRoot, suiteDir, headroomSet } = s;
  const rlDir = join(out, 'grpo');
  if (!report.rl) {
    const ck = loadCheckpoint(sft.checkpoint);
    let rlTasks = rlCandidates.length ? rlCandidates : train;
    let passRates: Map<string, PassRecord> | undefined;
    if (cfg.rlPool !== 'all' && rlCandidates.length) {
      const samples = start.rlPassSamples;
      const rates = await sharedPassRates(startHelper(), env, rlCandidates, ck.model, ck.tokenizer, sft.checkpoint, { ...evalOpts, samples, seed: cfg.seed + 1, temperature: cfg.rlTemperature, constrain: cfg.rlConstrain });
      const byCorrect = Array.from({ length: samples + 1 }, (_, c) => rates.correct.filter((x) => x === c).length);
      const { tasks, kept, passRates: prior } = rlPoolPlan(cfg.rlPool, rlCandidates, rates.correct, { passSamples: samples, promptsPerStep: cfg.promptsPerStep }, cfg.algo);
      report.rlFilter = { candidates: rlCandidates.length, kept: kept.length, byCorrect };
      rlTasks = tasks;
      passRates = prior;
      const training = passRates
        ? `all ${rlTasks.length}: the ${kept.length} in between first, the others again every ${cfg.rlRecheck}th visit and each one while its groups disagree`
        : `the ${rlTasks.length} ${rlTasks === kept ? 'in between' : 'candidates'}`;
      log(`[3/4] RL questions the SFT policy gets right in 0..${samples} of ${samples} samples: ${byCorrect.join(' / ')}; training on ${training}`);
    }
    const anchored = start.rlAnchor > 0 ? `; the cold-start loss (weight ${start.rlAnchor}, ${cfg.rlAnchorBatch} samples a step) keeps what SFT learned` : '';
    log(`[3/4] ${cfg.algo}: ${start.rlSteps} steps × ${cfg.promptsPerStep} prompts × ${cfg.groupSize} rollouts on questions SFT never saw, reward = execution on the original and ${s.variants} variant databases${anchored} ...`);
    const t0 = performance.now();
    const rewards: number[] = [];
    const zero: number[] = [];
    const res = await runGrpo({
      outDir: rlDir,
      memory: contractMemory(rlDir, s.memoryPath),
      env,
      tasks: rlTasks,
      model: ck.model,
      tokenizer: ck.tokenizer,
      config: {
        algo: cfg.algo,
        // Dynamic sampling re-checks every group as training goes: a question the policy now always (or
        // never) gets right is dropped and replaced, so each step trains on groups with a signal.
        algoOverrides: rlAlgoOverrides(passRates, cfg.rlRecheck),
        steps: start.rlSteps,
        promptsPerStep: cfg.promptsPerStep,
        groupSize: cfg.groupSize,
        lr: start.rlLr,
        minLrRatio: cfg.rlMinLrRatio,
        temperature: cfg.rlTemperature,
        constrain: cfg.rlConstrain,
        maxTurnTokens: evalOpts.maxTurnTokens,
        maxResponseTokens: evalOpts.maxResponseTokens,
        checkpointEvery: 0,
        seed: cfg.seed,
      },
      ...(passRates ? { passRates } : {}),
      ...(start.rlAnchor > 0 ? { anchor: { samples: anchorSamples(coldStartConversations(join(out, 'cold_start.jsonl')), ck.tokenizer, ck.model.config.maxPositions, 'anchor samples'), coef: start.rlAnchor, batch: cfg.rlAnchorBatch } } : {}),
      signal: hooks.signal,
      onStep: (r: StepRecord) => {
        rewards.push(r.reward);
        zero.push(r.zero_signal);
        hooks.onStep?.('rl', r.step, start.rlSteps, { reward: r.reward.toFixed(3), acc: r.accuracy.toFixed(2), calls: r.tool_calls.toFixed(2) });
      },
    });
    if (res.interrupted) throw new AgroError('internal', 'quickstart interrupted during RL; run it again to continue');
    const seconds = Math.round((performance.now() - t0) / 100) / 10;
    const ev = await predictEval(res.checkpoint, heldOutPath, dbRoot, suiteDir, join(rlDir, 'predict'), pool, hooks.signal, s.evalMemoryPath);
    writeJsonAtomic(join(rlDir, 'predictions.json'), ev.predictions);
    const after = await sharedPassRates(startHelper(), env, headroomSet, ck.model, ck.tokenizer, res.checkpoint, { ...evalOpts, samples: cfg.passSamples });
    const k = Math.max(1, Math.floor(rewards.length / 3));
    const avg = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    report.rl = { steps: res.steps, checkpoint: res.checkpoint, seconds, eval: ev, passAt: after.passAt, passOn: headroomSet.length, firstReward: avg(rewards.slice(0, k)), lastReward: avg(rewards.slice(-k)), zeroSignal: avg(zero) };
    save();
    ck.model.dispose();
  }
  log(`[3/4] after ${cfg.algo}: execution accuracy ${pct(report.rl.eval.accuracy)}, headroom${onQuestions(report.rl.passOn, report.rl.eval.n)} ${passText(report.rl.passAt)} (tool calls per episode ${report.rl.eval.toolCalls.toFixed(2)}), mean reward ${report.rl.firstReward.toFixed(3)} → ${report.rl.lastReward.toFixed(3)}, zero-signal groups ${pct(report.rl.zeroSignal ?? 0)} (${report.rl.seconds}s)`);
  return report.rl;
}

/** 4. The summary: the gain from RL, and the commands that check and use the trained agent. */
function summaryStage(c: RunContext, s: Split, sft: NonNullable<QuickstartReport['sft']>, rl: NonNullable<QuickstartReport['rl']>): void {
  const { cfg, log, db, shown, out } = c;
  const { heldOut, dbRoot, suiteDir, variantsDir } = s;
  const rlDir = join(out, 'grpo');
  const gain = 100 * (rl.eval.accuracy - sft.eval.accuracy);
  log(`[4/4] held-out execution accuracy: SFT ${pct(sft.eval.accuracy)} → ${cfg.algo} ${pct(rl.eval.accuracy)} on ${rl.eval.n} questions (${gain >= 0 ? '+' : ''}${gain.toFixed(1)} points from RL)`);
  if (rl.eval.chosen !== undefined) log(`      answer path (the policy's answer, the memory of the other pairs and their edits, ranked; without samples and question-time synthesis here): ${pct(rl.eval.chosen)} beside greedy ${pct(rl.eval.accuracy)}`);
  const te = rl.eval.toolEffect;
  if (te) log(`      tool use: ${te.checked} answers ran a query first; ${te.changed} changed it after seeing the result: ${te.fixed} fixed a wrong query, ${te.broke} broke a right one`);
  for (const d of Object.keys(rl.eval.byDifficulty).sort()) {
    const a = sft.eval.byDifficulty[d] ?? { n: 0, correct: 0 };
    const b = rl.eval.byDifficulty[d];
    log(`      ${d.padEnd(12)} ${a.correct}/${a.n} → ${b.correct}/${b.n}`);
  }
  // The same figure from the evaluator, from the predictions file.
  // Quoted for the shell where needed, so that a printed command can be pasted as it is.
  const sh = (w: string): string => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`);
  const rel = (p: string): string => sh(dialectOf(p) === 'postgres' ? shown(p) : displayPath(p));
  log(`run directory: ${rel(out)} (report.json, synth/, sft/, grpo/)`);
  log(`check with the evaluator: agro eval --data ${rel(join(out, 'held_out.jsonl'))} --pred ${rel(join(rlDir, 'predictions.json'))} --db-root ${rel(dbRoot)}${s.variants > 0 ? ` --suite ${rel(variantsDir)}` : ''}`);
  // How to use the trained agent: the same prompt settings (schema budget) as in training.
  const ck = rel(rl.checkpoint);
  // A question that stands alone: a follow-up ("just the top 3") means nothing asked first.
  const sample = heldOut.find((t) => !t.previous?.length)?.question ?? 'How many rows are there?';
  log(`ask your agent:   agro ask --policy ${ck} --db ${rel(db)} ${sh(sample)}`);
  // The policy's own held-out figure (--no-search); the answer path's with the memory that leaves the held-out pairs out
  // (the checkpoint's own memory holds every pair, the held-out ones too).
  const onFile = `agro predict --policy ${ck} --data ${rel(join(out, 'held_out.jsonl'))} --db-root ${rel(dbRoot)}${suiteDir ? ` --suite ${rel(suiteDir)}` : ''}`;
  log(`run it on a file: ${onFile} --no-search --out ${rel(join(out, 'predict'))}`);
  log(`the answer path:  ${onFile} --memory ${rel(s.evalMemoryPath)} --search-samples 0 --synth-drafts 0 --out ${rel(join(out, 'predict-answer'))}`);
  log(`serve it:         agro serve --policy ${ck}   (OpenAI API on http://127.0.0.1:8000/v1; then agro predict --llm-url http://127.0.0.1:8000/v1 ...)`);
}

export async function runQuickstart(input: QuickstartConfigInput, hooks: QuickstartHooks = {}): Promise<QuickstartReport> {
  const cfg = resolveQuickstartConfig(input);
  const log = hooks.log ?? (() => {});
  const server = dialectOf(cfg.db) === 'postgres';
  const db = server ? cfg.db : resolve(cfg.db);
  if (!server && !existsSync(db)) throw new AgroError('not_found', `database not found: ${cfg.db}`);
  // What is written and printed names a server without its password.
  const shown = (p: string): string => (dialectOf(p) === 'postgres' ? redactUrl(p) : p);
  const written: QuickstartConfig = { ...cfg, db: shown(cfg.db) };
  const out = resolve(cfg.out);
  const reportPath = join(out, 'report.json');
  const report: QuickstartReport = existsSync(reportPath) ? (JSON.parse(readFileSync(reportPath, 'utf8')) as QuickstartReport) : { config: written };
  if (JSON.stringify(report.config) !== JSON.stringify(written)) {
    throw new AgroError('usage', `${out} holds a quickstart run with another configuration; choose another --out or delete it`);
  }
  const save = (): void => writeJsonAtomic(reportPath, report);
  const backend = await initBackend(cfg.backend as BackendName | undefined);
  const pool = createExecutor();
  // The same documentation for the factory's wording and the agent's prompt: given, else found beside the database.
  const docs = await documentationOf(db, cfg.docs);
  const start = startOf(cfg);
  const env = new SqlEnvironment(pool, start.prompt, docs ? { docsFor: () => docs } : {});
  // Pass-rate sampling (the headrooms, the RL pool) on the second core. Started when SFT's training ends, so
  // its start-up overlaps the greedy evaluation: started with the factory, it slowed the factory 15 → 24 s.
  // A server's database stays with this process (the helper has no connection to it).
  let helper = null as PassRateHelper | null;
  const startHelper = (): PassRateHelper | null => (helper ??= server ? null : PassRateHelper.start(backend, env.config, docs));
  const evalOpts = { maxTurnTokens: TURN_TOKENS, maxResponseTokens: RESPONSE_TOKENS, seed: cfg.seed };
  const c: RunContext = { cfg, hooks, log, db, shown, out, report, save, backend, pool, env, start, helper: startHelper, docs, evalOpts };
  try {
    const split = await dataStage(c);
    const sft = await coldStartStage(c, split);
    const rl = await rlStage(c, split, sft);
    summaryStage(c, split, sft, rl);
    save();
    return report;
  } finally {
    await helper?.close();
    await pool.close();
  }
}
