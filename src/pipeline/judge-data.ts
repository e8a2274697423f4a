/**
 * The judge's pretraining data: for one database, the answer path's own candidate lists, labelled by execution.
 * The database's memory is what `agro synth` builds for it less the variant check (JUDGE_MEMORY_VARIANTS; the
 * factory alone, no question of anyone's); the
 * questions are the database's human gold SQL worded by the factory (factory/gold.ts: people's SQL, the factory's
 * words, never a human question) and factory pairs held out of that memory. Each question goes through the
 * answer path as a person's would (memory neighbours, edits, question-time synthesis); each candidate is labelled
 * right when its result matches the gold's as Spider's evaluator compares them. The near-misses it offers are the
 * hard negatives the judge learns from.
 */
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { AgroError } from '../errors.ts';
import { Answerer } from '../answer/resources.ts';
import { buildMemory } from '../memory/build.ts';
import { MEMORY_STORE, pairsOfDataset } from '../memory/entry.ts';
import { writeMemory } from '../memory/store.ts';
import { goldPairs, readGoldSql, type GoldSql } from '../factory/gold.ts';
import { runFactory } from '../factory/pipeline.ts';
import { MEMORY_RECIPE } from '../factory/memory-recipe.ts';
import { createExecutor, introspectDatabase } from '../sql/executor.ts';
import { Judge } from '../sql/judge.ts';
import type { SqlExecutor } from '../sql/types.ts';
import { readJsonl, writeFileAtomic } from '../util/fs.ts';
import { Rng } from '../util/rng.ts';
import { labelledListSchema, type LabelledList } from '../judge/types.ts';

export interface JudgeDataOptions {
  executor: SqlExecutor;
  /** Where the database's factory output and memory go. */
  work: string;
  /** Pairs the memory is built from (`agro synth --n`). */
  memoryPairs: number;
  /** Human gold queries asked of the database, at most. */
  goldQuestions: number;
  /** Factory pairs held out of the memory and asked, at most. */
  factoryQuestions: number;
  seed: number;
}

/**
 * The pretraining memories skip the memory recipe's variant databases (MEMORY_RECIPE.variants): checking every pair
 * on two more copies of each of 136 databases would double collection, and the shipped judge was made without
 * them, so its reproducing command must be too. Its memories therefore keep a few pairs the answer path's would
 * drop (those a variant rejects); phrasings and size are the recipe's.
 */
export const JUDGE_MEMORY_VARIANTS = 0;

/** The correctness judge of predict and eval, as Spider's official evaluator compares results. */
const EXECUTION_JUDGE = new Judge({ mode: 'spider' });

/** Candidates labelled per group: the group's first member is run once and judged against the gold. */
async function label(executor: SqlExecutor, db: string, goldSql: string, candidates: ReadonlyArray<{ sql: string; signature: string }>): Promise<boolean[] | null> {
  const gold = EXECUTION_JUDGE.gold(goldSql);
  const g = await EXECUTION_JUDGE.run(executor, db, gold.query);
  if (!g.ok || g.rows.length === 0) return null;
  const bySignature = new Map<string, boolean>();
  const out: boolean[] = [];
  for (const c of candidates) {
    let right = bySignature.get(c.signature);
    if (right === undefined) {
      const p = await EXECUTION_JUDGE.run(executor, db, EXECUTION_JUDGE.prediction(c.sql));
      right = EXECUTION_JUDGE.verdict(gold, g, p).outcome === 'match';
      bySignature.set(c.signature, right);
    }
    out.push(right);
  }
  return out;
}

export async function judgeListsOf(db: { dbId: string; path: string }, gold: readonly GoldSql[], o: JudgeDataOptions): Promise<LabelledList[]> {
  const rng = new Rng(o.seed);
  const out = join(o.work, 'factory');
  const factory = await runFactory({ db: db.path, out, n: o.memoryPairs, seed: o.seed, variants: JUDGE_MEMORY_VARIANTS, phrasings: MEMORY_RECIPE.phrasings }, { executor: o.executor });
  const rows = factory.rows.filter((r) => !r.previous?.length);
  const held = new Set(rng.shuffle(rows.map((_, i) => i)).slice(0, Math.min(o.factoryQuestions, Math.floor(rows.length / 10))));
  const schema = await introspectDatabase(db.path);
  const memoryPath = join(o.work, MEMORY_STORE);
  const heldSql = new Set([...held].map((i) => rows[i].SQL));
  writeMemory(memoryPath, await buildMemory(db.dbId, schema, pairsOfDataset(rows.filter((r) => !heldSql.has(r.SQL))), o.executor, db.path));

  const asked: Array<{ origin: LabelledList['origin']; question: string; gold: string }> = [];
  for (const i of held) {
    const r = rows[i];
    asked.push({ origin: 'factory', question: rng.pick([r.question, ...(r.paraphrases ?? [])]), gold: r.SQL });
  }
  const items = rng.shuffle([...gold]).slice(0, o.goldQuestions * 2);
  const { pairs } = await goldPairs(db, items, { executor: o.executor, seed: o.seed, phrasings: 1, people: 1 });
  for (const p of pairs.slice(0, o.goldQuestions)) asked.push({ origin: 'gold', question: p.question, gold: p.sql });

  const answerer = new Answerer(o.executor, { memory: [memoryPath] });
  const lists: LabelledList[] = [];
  for (const q of asked) {
    const a = await answerer.answer(db.path, db.dbId, q.question, []);
    if (a.candidates.length === 0) continue;
    const right = await label(o.executor, db.path, q.gold, a.candidates);
    if (!right) continue;
    lists.push({
      dbId: db.dbId,
      origin: q.origin,
      question: q.question,
      gold: q.gold,
      candidates: a.candidates.map((c, i) => ({ sql: c.sql, sources: c.sources, reading: c.reading, features: c.features, score: c.score, rows: c.rows, columns: c.columns, signature: c.signature, right: right[i] })),
    });
  }
  return lists;
}

/** What collecting needs of the pretraining's configuration (judge-pretrain.ts judgePretrainSchema). */
export interface CollectConfig {
  spider: string;
  work: string;
  memoryPairs: number;
  goldQuestions: number;
  factoryQuestions: number;
  maxDbs: number;
  seed: number;
}

/** Databases of a Spider-layout folder, sorted, each with its file. */
function databasesOf(root: string): Array<{ dbId: string; path: string }> {
  const dir = join(root, 'database');
  if (!existsSync(dir)) throw new AgroError('usage', `${root} has no database/ folder (a Spider-layout folder: database/<db>/<db>.sqlite and gold.jsonl)`);
  return readdirSync(dir)
    .filter((d) => existsSync(join(dir, d, `${d}.sqlite`)))
    .sort()
    .map((d) => ({ dbId: d, path: join(dir, d, `${d}.sqlite`) }));
}

/** Whether a database is held out: by a hash of its name, so the split does not move as databases are added. */
export function isValidationDb(dbId: string, share: number, seed: number): boolean {
  let h = 2166136261 ^ seed;
  for (let i = 0; i < dbId.length; i++) h = Math.imul(h ^ dbId.charCodeAt(i), 16777619);
  return (h >>> 0) / 4294967296 < share;
}

export async function collectJudgeLists(cfg: CollectConfig, log: (line: string) => void): Promise<Map<string, LabelledList[]>> {
  const dbs = databasesOf(cfg.spider);
  const chosen = cfg.maxDbs ? dbs.slice(0, cfg.maxDbs) : dbs;
  const gold = readGoldSql(join(cfg.spider, 'gold.jsonl'));
  const listsDir = join(cfg.work, 'lists');
  mkdirSync(listsDir, { recursive: true });
  const executor = createExecutor({ size: 2, allowPrivilegedRole: true });
  const out = new Map<string, LabelledList[]>();
  const t0 = performance.now();
  try {
    for (const [i, db] of chosen.entries()) {
      const file = join(listsDir, `${db.dbId}.jsonl`);
      if (!existsSync(file)) {
        const work = join(cfg.work, 'db', db.dbId);
        rmSync(work, { recursive: true, force: true });
        let lists: LabelledList[] = [];
        try {
          lists = await judgeListsOf(db, gold.filter((g) => g.dbId === db.dbId), { executor, work, memoryPairs: cfg.memoryPairs, goldQuestions: cfg.goldQuestions, factoryQuestions: cfg.factoryQuestions, seed: cfg.seed });
        } catch (e) {
          // A database the factory refuses (no rows, nothing to draft) gives no lists: said, recorded empty, not retried.
          if (!(e instanceof AgroError)) throw e;
          log(`judge pretrain: ${db.dbId}: skipped (${e.message})`);
        }
        writeFileAtomic(file, lists.map((l) => JSON.stringify(l)).join('\n') + (lists.length ? '\n' : ''));
        rmSync(work, { recursive: true, force: true });
        const secs = (performance.now() - t0) / 1000;
        log(`judge pretrain: ${i + 1}/${chosen.length} ${db.dbId}: ${lists.length} questions (${Math.round(secs)} s)`);
      }
      out.set(db.dbId, readJsonl<unknown>(file).map((l) => labelledListSchema.parse(l)));
    }
  } finally {
    await executor.close();
  }
  return out;
}

