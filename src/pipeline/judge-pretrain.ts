/**
 * `agro judge pretrain`: the judge's pretraining, resumable. Stage 1 collects each training database's labelled
 * candidate lists (judge-data.ts) into `<work>/lists/<db>.jsonl`, one file per database written atomically, so a
 * killed run resumes at the next database. Stage 2 trains the judge on the lists of most databases, calibrates
 * it on the rest (whole databases held out: the judge meets databases it has not seen), and writes the checkpoint.
 */
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import type { LabelledList } from '../judge/types.ts';
import { trainJudge, type TrainReport } from '../judge/train.ts';
import { writeJudge } from '../judge/checkpoint.ts';
import { collectJudgeLists, isValidationDb, JUDGE_MEMORY_VARIANTS } from './judge-data.ts';
import { MEMORY_RECIPE } from '../factory/memory-recipe.ts';

export const judgePretrainSchema = z.strictObject({
  /** A Spider-layout folder: database/<db>/<db>.sqlite and gold.jsonl (db_id, query). */
  spider: z.string().min(1),
  work: z.string().min(1),
  out: z.string().min(1),
  /** The memory each database gets: the quickstart's size. */
  memoryPairs: z.number().int().positive().default(MEMORY_RECIPE.pairs),
  goldQuestions: z.number().int().min(0).default(40),
  factoryQuestions: z.number().int().min(0).default(20),
  /** Share of the databases (whole) held out to calibrate and report on. */
  valShare: z.number().gt(0).lt(1).default(0.2),
  /** Databases used, at most (0: all): a quick run for tests. */
  maxDbs: z.number().int().min(0).default(0),
  seed: z.number().int().nonnegative().default(0),
});
export type JudgePretrainConfig = z.output<typeof judgePretrainSchema>;
export const JUDGE_PRETRAIN_DEFAULTS = judgePretrainSchema.parse({ spider: '-', work: '-', out: '-' });

/** `command` is what reproduces the run: the judge's card names it. */
export async function runJudgePretrain(input: z.input<typeof judgePretrainSchema>, log: (line: string) => void, command: string): Promise<TrainReport> {
  const cfg = judgePretrainSchema.parse(input);
  const byDb = await collectJudgeLists(cfg, log);
  const train: LabelledList[] = [];
  const val: LabelledList[] = [];
  for (const [dbId, lists] of byDb) (isValidationDb(dbId, cfg.valShare, cfg.seed) ? val : train).push(...lists);
  if (train.length === 0 || val.length === 0) throw new AgroError('invalid_input', `too few databases to train and hold out (${byDb.size})`);
  const { model, report } = trainJudge(train, val, { seed: cfg.seed, log });
  const dbs = (lists: readonly LabelledList[]): number => new Set(lists.map((l) => l.dbId)).size;
  writeJudge(cfg.out, model, { ...report, databases: { train: dbs(train), validation: dbs(val) }, memoryPairs: cfg.memoryPairs, memoryVariants: JUDGE_MEMORY_VARIANTS, made: new Date().toISOString().slice(0, 10), command });
  return report;
}
