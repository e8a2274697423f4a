/**
 * `agro pretrain`: a base model that has read many databases. The factory writes verified (question, SQL)
 * pairs for every database of the given folders; each pair becomes an agent episode in the grounded prompt
 * (direct answers, checks, value lookups: the cold start's trajectories); one tokenizer is trained on all of
 * it and one model from scratch, with SFT. A policy that saw thousands of schemas must read the schema in its
 * prompt instead of memorizing one database, which is what transfers to a database it has never seen.
 *
 * Every stage resumes: databases already synthesized are kept, the episodes and the tokenizer are written
 * once, and training continues bit for bit from its newest checkpoint (runSft's resume). Whole databases
 * are held out for the validation loss, so it measures transfer, not memory.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { AgroError, parseWith } from '../errors.ts';
import { readJsonl, writeFileAtomic, writeJsonAtomic } from '../util/fs.ts';
import { Rng } from '../util/rng.ts';
import { fnv1a } from '../util/hash.ts';
import { runFactory } from '../factory/pipeline.ts';
import { goldPairs, readGoldSql, summarizeGold, type GoldOutcome, type GoldSql, type GoldSummary } from '../factory/gold.ts';
import { createExecutor, introspectDatabase } from '../sql/executor.ts';
import type { DbSchema } from '../sql/types.ts';
import { respellEpisode, respellings } from '../agent/cold-start/identifier-forms.ts';
import { resolveModelPath } from '../model/builtin.ts';
import { findDocs } from '../prompt/docs.ts';
import { SqlEnvironment } from '../agent/sql-env.ts';
import { PROMPT_CONTRACT_FILE, readPromptContract } from '../prompt/contract.ts';
import { synthesizeTrajectories } from '../agent/cold-start/trajectories.ts';
import { sqlTaskOf, withPhrasings } from '../agent/tasks.ts';
import type { SqlTask } from '../agent/sql-env.ts';
import type { DatasetRow } from '../data/dataset-row.ts';
import type { SynthPair } from '../factory/types.ts';
import { addNoise } from '../factory/language/noise.ts';
import { AGENT_SPECIAL_TOKENS } from '../agent/protocol.ts';
import type { ChatMessage } from '../agent/types.ts';
import { readDataset } from '../data/read-dataset.ts';
import { initBackend, type BackendName } from '../model/backend.ts';
import { Tokenizer } from '../model/tokenizer.ts';
import { LlamaModel } from '../model/llama.ts';
import { presetSchema, resolveModelConfig } from '../model/config.ts';
import { renderChat } from '../model/chat.ts';
import { loadCheckpoint, saveCheckpoint } from '../model/checkpoint.ts';
import { runSft, type SftResult, type StepMetrics } from '../train/sft.ts';
import { cleanRunCheckpoints, listCheckpoints } from '../train/run-state.ts';

export const pretrainConfigSchema = z.strictObject({
  /** Folders of databases laid out as <dir>/<db_id>/<db_id>.sqlite. */
  dbs: z.array(z.string().min(1)).min(1),
  out: z.string().min(1).default('runs/pretrain'),
  /** Verified pairs asked of the factory per database (a database gives fewer when it has less to ask about). */
  pairs: z.number().int().min(10).max(5000).default(300),
  /** Databases held out whole for the validation loss. */
  heldOutDbs: z.number().int().min(0).default(4),
  /** Questions per query the factory writes: each paraphrase is one more episode (as the quickstart's SFT reads them). */
  phrasings: z.number().int().min(1).max(8).default(2),
  /** Share of questions given train-time noise (case, punctuation, a typo; the factory's language/noise.ts). */
  noise: z.number().min(0).max(1).default(0.1),
  /** Share of episodes that run the query once before answering (value lookups come on top, where they matter). */
  verifyShare: z.number().min(0).max(1).default(0.2),
  preset: presetSchema.default('base'),
  vocabSize: z.number().int().min(300).max(65_536).default(4096),
  steps: z.number().int().min(1).default(4000),
  batchSize: z.number().int().min(1).default(16),
  lr: z.number().positive().default(3e-3),
  evalEvery: z.number().int().min(0).default(500),
  checkpointEvery: z.number().int().min(1).default(500),
  /** The prompt the base is trained on: grounded, wide enough to show several tables with their columns. */
  schemaChars: z.number().int().min(200).default(600),
  seed: z.number().int().min(0).default(0),
  /**
   * Human gold SQL (JSON lines with db_id and query, e.g. Spider's train gold) asked in the factory's words
   * (factory/gold.ts): each query that survives the round trip is one more pair of its database. None by default.
   */
  gold: z.string().min(1).optional(),
  /**
   * Share of training episodes whose table and column names are respelled (src/agent/cold-start/identifier-forms.ts: case,
   * snake/camel, a plural, a prefix) in the schema, SQL and observations but not the question, so the names
   * must be copied from the prompt rather than remembered per database. 0 (default) = none.
   */
  respell: z.number().min(0).max(1).default(0),
  /**
   * Start from this checkpoint (or `base`) instead of a new model: its weights and tokenizer (no tokenizer is
   * trained); preset and vocabSize do not apply.
   */
  init: z.string().min(1).optional(),
  backend: z.enum(['wasm', 'cpu']).optional(),
});
export type PretrainConfig = z.infer<typeof pretrainConfigSchema>;
export type PretrainConfigInput = z.input<typeof pretrainConfigSchema>;

/** Share of a respelled episode's names that change (the rest keep their spelling). */
const RESPELL_NAMES = 0.5;

export interface PretrainReport {
  config: PretrainConfig;
  databases: { dbId: string; pairs: number; heldOut: boolean; skipped?: string; goldPairs?: number }[];
  /** With --gold: what became of the human queries (converted, kept, by shape), and the episodes they gave. */
  gold?: GoldSummary & { file: string; otherDatabases: number; skippedDatabases: number; episodes: number };
  episodes?: { train: number; heldOut: number; lookup: number; verify: number; meanTokens: number; respelled?: number };
  tokenizer?: { vocabSize: number };
  sft?: { steps: number; finalLoss: number | null; heldOutLoss: number | null; checkpoint: string; seconds: number };
  /** The finished base as agro ships it: F16 weights, tokenizer, prompt contract, no trainer state. */
  model?: string;
}

export interface PretrainHooks {
  log?: (line: string) => void;
  onStep?: (m: StepMetrics, total: number) => void;
  signal?: AbortSignal;
}

/** Every database under the folders, sorted by db_id (duplicates: the first folder wins). */
export function listDatabases(dirs: readonly string[]): { dbId: string; path: string }[] {
  const found = new Map<string, string>();
  for (const dir of dirs) {
    if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new AgroError('not_found', `database folder not found: ${dir}`);
    for (const id of readdirSync(dir).sort()) {
      const p = join(dir, id, `${id}.sqlite`);
      if (!found.has(id) && existsSync(p)) found.set(id, resolve(p));
    }
  }
  if (found.size === 0) throw new AgroError('invalid_input', `no databases laid out as <dir>/<db_id>/<db_id>.sqlite in ${dirs.join(', ')}`);
  return [...found].sort((a, b) => a[0].localeCompare(b[0])).map(([dbId, path]) => ({ dbId, path }));
}

/** The databases held out whole: chosen by seed, the same on every rerun. */
export function heldOutDatabases(ids: readonly string[], n: number, seed: number): Set<string> {
  if (ids.length < 2) return new Set();
  return new Set([...ids].sort((a, b) => (fnv1a(a, seed) - fnv1a(b, seed)) || a.localeCompare(b)).slice(0, Math.min(n, ids.length - 1)));
}

/** The gold queries on the listed databases, by database, and how many name a database that is not listed. */
function goldByDatabase(items: GoldSql[], dbs: readonly { dbId: string }[]): { byDb: Map<string, GoldSql[]>; otherDatabases: number } {
  const listed = new Set(dbs.map((d) => d.dbId));
  const byDb = new Map<string, GoldSql[]>();
  let otherDatabases = 0;
  for (const it of items) {
    if (!listed.has(it.dbId)) otherDatabases++;
    else byDb.set(it.dbId, [...(byDb.get(it.dbId) ?? []), it]);
  }
  return { byDb, otherDatabases };
}

/** The gold run's coverage from its per-database files (a resumed run reads them again). */
function goldReport(dir: string, gold: { byDb: Map<string, GoldSql[]>; otherDatabases: number }, file: string, episodes: number): NonNullable<PretrainReport['gold']> {
  const outcomes: GoldOutcome[] = [];
  const pairs: SynthPair[] = [];
  let skippedDatabases = 0;
  for (const [dbId, items] of gold.byDb) {
    const f = join(dir, `${dbId}.json`);
    if (!existsSync(f)) {
      skippedDatabases += items.length; // a database the factory skipped (no rows, no tables)
      continue;
    }
    const r = JSON.parse(readFileSync(f, 'utf8')) as { pairs: SynthPair[]; outcomes: GoldOutcome[] };
    outcomes.push(...r.outcomes);
    pairs.push(...r.pairs);
  }
  return { file, otherDatabases: gold.otherDatabases, skippedDatabases, episodes, ...summarizeGold(outcomes, pairs) };
}

export async function runPretrain(input: PretrainConfigInput, hooks: PretrainHooks = {}): Promise<PretrainReport> {
  const cfg = parseWith(pretrainConfigSchema, input, 'pretrain config');
  const log = hooks.log ?? (() => {});
  const out = resolve(cfg.out);
  const reportPath = join(out, 'report.json');
  const dbs = listDatabases(cfg.dbs.map((d) => resolve(d)));
  if (existsSync(reportPath)) {
    // Through the schema again: a setting added since the run began reads as its default, not as a change.
    const parsed = pretrainConfigSchema.safeParse((JSON.parse(readFileSync(reportPath, 'utf8')) as PretrainReport).config);
    const prev = parsed.success ? parsed.data : null;
    const same = prev !== null && JSON.stringify({ ...prev, dbs: prev.dbs.map((d) => resolve(d)) }) === JSON.stringify({ ...cfg, dbs: cfg.dbs.map((d) => resolve(d)) });
    if (!same) throw new AgroError('usage', `${cfg.out} holds a pretraining run with other settings; choose another --out or delete it`);
  }
  const held = heldOutDatabases(dbs.map((d) => d.dbId), cfg.heldOutDbs, cfg.seed);
  const report: PretrainReport = { config: cfg, databases: [] };
  const save = (): void => writeJsonAtomic(reportPath, report);
  const backend = await initBackend(cfg.backend as BackendName | undefined);
  const pool = createExecutor();
  const env = new SqlEnvironment(pool, { schemaChars: cfg.schemaChars });
  try {
    // ---- 1. the factory on every database (each one kept as it finishes) ----
    const episodesPath = join(out, 'episodes.jsonl');
    type Episode = { dbId: string; heldOut: boolean; kind: string; messages: ChatMessage[]; source?: 'gold' };
    const goldDir = join(out, 'gold');
    const gold = cfg.gold ? goldByDatabase(readGoldSql(resolve(cfg.gold)), dbs) : null;
    if (!existsSync(episodesPath)) {
      const all: Episode[] = [];
      const noiseRng = new Rng(cfg.seed ^ 0x5eed);
      for (const [i, db] of dbs.entries()) {
        const dir = join(out, 'synth', db.dbId);
        if (!existsSync(join(dir, 'dataset.jsonl'))) {
          log(`[1/3] ${i + 1}/${dbs.length} ${db.dbId}: synthesizing up to ${cfg.pairs} pairs ...`);
          try {
            const docs = findDocs(db.path)?.docs;
            await runFactory({ db: db.path, out: dir, n: cfg.pairs, seed: cfg.seed, variants: 0, phrasings: cfg.phrasings, ...(docs ? { docs } : {}) }, { executor: pool });
          } catch (err) {
            // A database the factory cannot use (no rows, no tables) is skipped with its reason, not fatal.
            if (!(err instanceof AgroError)) throw err;
            report.databases.push({ dbId: db.dbId, pairs: 0, heldOut: held.has(db.dbId), skipped: err.message });
            save();
            continue;
          }
        }
        const items = readDataset(join(dir, 'dataset.jsonl')).items;
        const rows = readJsonl<DatasetRow>(join(dir, 'dataset.jsonl'));
        const noisy = (t: SqlTask): SqlTask => (noiseRng.next() < cfg.noise ? { ...t, question: addNoise(t.question, noiseRng).text } : t);
        const tasks = items.flatMap((it, k) => withPhrasings(sqlTaskOf(it, db.path, []), rows[k].paraphrases)).map(noisy);
        const trajs = await synthesizeTrajectories(tasks, env, { verifyShare: cfg.verifyShare, seed: cfg.seed + i });
        for (const t of trajs) all.push({ dbId: db.dbId, heldOut: held.has(db.dbId), kind: t.kind, messages: t.messages });
        const entry: PretrainReport['databases'][number] = { dbId: db.dbId, pairs: items.length, heldOut: held.has(db.dbId) };
        const mine = gold?.byDb.get(db.dbId);
        if (mine) {
          // The human queries of this database, asked by the factory; kept as they finish, like its synthesis.
          const file = join(goldDir, `${db.dbId}.json`);
          if (!existsSync(file)) {
            log(`[1/3] ${i + 1}/${dbs.length} ${db.dbId}: asking ${mine.length} human gold queries in the factory's words ...`);
            const docs = findDocs(db.path)?.docs;
            const r = await goldPairs(db, mine, { executor: pool, seed: cfg.seed, phrasings: cfg.phrasings, ...(docs ? { docs } : {}) });
            writeJsonAtomic(file, r);
          }
          const { pairs } = JSON.parse(readFileSync(file, 'utf8')) as { pairs: SynthPair[] };
          const goldTasks = pairs
            .flatMap((p, k) => withPhrasings(sqlTaskOf({ index: k, questionId: p.id, dbId: db.dbId, question: p.question, evidence: p.evidence, gold: p.sql, difficulty: p.difficulty }, db.path, []), p.paraphrases))
            .map(noisy);
          // Their own draws, so the factory's episodes are the same with and without --gold.
          const goldTrajs = await synthesizeTrajectories(goldTasks, env, { verifyShare: cfg.verifyShare, seed: (cfg.seed + i) ^ 0x601d });
          for (const t of goldTrajs) all.push({ dbId: db.dbId, heldOut: held.has(db.dbId), kind: t.kind, messages: t.messages, source: 'gold' });
          entry.goldPairs = pairs.length;
        }
        report.databases.push(entry);
        save();
      }
      if (all.length === 0) throw new AgroError('invalid_input', `the factory wrote no pairs for any database in ${cfg.dbs.join(', ')}`);
      writeFileAtomic(episodesPath, all.map((e) => JSON.stringify(e)).join('\n') + '\n');
    }
    const episodes = readJsonl<Episode>(episodesPath);
    if (gold) report.gold = goldReport(goldDir, gold, cfg.gold!, episodes.filter((e) => e.source === 'gold').length);
    if (report.databases.length === 0) {
      const byDb = new Map<string, number>();
      for (const e of episodes) byDb.set(e.dbId, (byDb.get(e.dbId) ?? 0) + 1);
      report.databases = [...byDb].map(([dbId, pairs]) => ({ dbId, pairs, heldOut: held.has(dbId) }));
    }
    const train = episodes.filter((e) => !e.heldOut);
    const valid = episodes.filter((e) => e.heldOut);
    log(`[1/3] ${episodes.length} episodes from ${report.databases.filter((d) => d.pairs > 0).length} databases (${valid.length} on ${held.size} held-out databases); ${episodes.filter((e) => e.kind === 'lookup').length} value lookups, ${episodes.filter((e) => e.kind === 'verify').length} checks${report.gold ? `; ${report.gold.episodes} from ${report.gold.kept} of ${report.gold.queries} human gold queries` : ''}`);

    // ---- 2. one tokenizer for every schema and question ----
    const tokPath = join(out, 'tokenizer.json');
    const initDir = cfg.init ? resolve(resolveModelPath(cfg.init)) : null;
    let tokenizer: Tokenizer;
    if (initDir) tokenizer = Tokenizer.load(join(initDir, 'tokenizer.json'));
    else if (existsSync(tokPath)) tokenizer = Tokenizer.load(tokPath);
    else {
      log(`[2/3] training a ${cfg.vocabSize}-token tokenizer on ${train.length} episodes ...`);
      tokenizer = Tokenizer.train(train.flatMap((e) => e.messages.map((m) => m.content)), { vocabSize: cfg.vocabSize, specialTokens: [...AGENT_SPECIAL_TOKENS] });
      tokenizer.save(tokPath);
    }
    report.tokenizer = { vocabSize: tokenizer.vocabSize };
    // Respelled names, drawn once per episode (the same on a rerun); held-out episodes keep the real names.
    const respellRng = new Rng(cfg.seed ^ 0x7e5b);
    const schemas = new Map<string, DbSchema>();
    const trained = new Set(train.map((e) => e.dbId));
    if (cfg.respell > 0) for (const db of dbs) if (trained.has(db.dbId)) schemas.set(db.dbId, await introspectDatabase(db.path));
    let respelled = 0;
    const trainText = train.map((e) => {
      const schema = schemas.get(e.dbId);
      if (!schema || respellRng.next() >= cfg.respell) return e.messages;
      respelled++;
      return respellEpisode(e.messages, respellings(schema, RESPELL_NAMES, respellRng));
    });
    const samples = new Rng(cfg.seed).shuffle(trainText.map((m) => renderChat(tokenizer, m)));
    const heldOut = valid.map((e) => renderChat(tokenizer, e.messages));
    const meanTokens = Math.round(samples.reduce((a, s) => a + s.ids.length, 0) / Math.max(1, samples.length));
    report.episodes = { train: train.length, heldOut: valid.length, lookup: episodes.filter((e) => e.kind === 'lookup').length, verify: episodes.filter((e) => e.kind === 'verify').length, meanTokens, respelled };
    save();

    // ---- 3. SFT from scratch, resumable ----
    const sftDir = join(out, 'sft');
    // A checkpoint write cut by a kill leaves temp folders, or the last whole checkpoint under an .old name: clean first.
    for (const line of cleanRunCheckpoints(sftDir)) log(`[3/3] checkpoints: ${line} (left by a write that was cut)`);
    const latest = listCheckpoints(sftDir).at(-1);
    let model: LlamaModel;
    let resumeFrom: Parameters<typeof runSft>[0]['resumeFrom'];
    if (latest) {
      const ck = loadCheckpoint(latest.dir);
      model = ck.model;
      resumeFrom = ck.trainerState ? { trainerState: ck.trainerState, optimizerState: ck.optimizerState } : undefined;
      log(`[3/3] resuming from ${latest.dir}`);
    } else if (initDir) {
      model = loadCheckpoint(initDir).model;
      log(`[3/3] starting from ${cfg.init}`);
    } else model = new LlamaModel(resolveModelConfig({ preset: cfg.preset, vocabSize: tokenizer.vocabSize }), { seed: cfg.seed });
    log(`[3/3] SFT of ${initDir ? cfg.init : `a ${cfg.preset} model`} on ${backend}: ${samples.length} episodes of ${meanTokens} tokens on average, ${cfg.steps} steps of ${cfg.batchSize} ...`);
    const t0 = performance.now();
    let res: SftResult;
    try {
      res = await runSft({
        outDir: sftDir,
        model,
        tokenizer,
        samples,
        ...(heldOut.length ? { heldOut: heldOut.slice(0, 512) } : {}),
        config: {
          steps: cfg.steps, batchSize: cfg.batchSize, lr: cfg.lr, warmupSteps: Math.min(500, Math.floor(cfg.steps / 20)),
          evalEvery: heldOut.length ? cfg.evalEvery : 0, checkpointEvery: cfg.checkpointEvery, maxSeqLen: model.config.maxPositions, seed: cfg.seed,
        },
        ...(resumeFrom ? { resumeFrom } : {}),
        prompt: { env: env.config },
        signal: hooks.signal,
        onStep: (m) => hooks.onStep?.(m, cfg.steps),
      });
    } finally {
      model.dispose();
    }
    report.sft = { steps: res.steps, finalLoss: res.finalLoss, heldOutLoss: res.heldOutLoss, checkpoint: res.checkpoint, seconds: Math.round((performance.now() - t0) / 100) / 10 };
    save();
    if (res.interrupted) log(`interrupted at step ${res.steps}; run the same command again to continue`);
    else {
      const final = loadCheckpoint(res.checkpoint);
      report.model = join(out, 'model');
      try {
        saveCheckpoint(report.model, { model: final.model, tokenizer: final.tokenizer, sideFiles: { [PROMPT_CONTRACT_FILE]: readPromptContract(res.checkpoint) } }, { dtype: 'F16' });
      } finally {
        final.model.dispose();
      }
      save();
      log(`base model: ${report.model} (F16; loss ${res.finalLoss?.toFixed(3) ?? '-'}, held-out databases ${res.heldOutLoss?.toFixed(3) ?? '-'})`);
    }
    return report;
  } finally {
    await pool.close();
  }
}
