/** Dataset questions (BIRD, Spider or agro's dataset.jsonl) as SQL-agent tasks: the one row → task mapping. */
import { readDataset } from '../data/read-dataset.ts';
import { resolveDatabases, suiteVariants } from '../data/databases.ts';
import type { EvalItem } from '../data/types.ts';
import type { SqlTask } from './sql-env.ts';

/** One question as a task on `dbPath`; `variantPaths` are its test-suite databases (the answer must match on each). */
export function sqlTaskOf(it: EvalItem, dbPath: string, variantPaths: string[]): SqlTask {
  return {
    id: String(it.questionId ?? it.index),
    dbId: it.dbId,
    dbPath,
    question: it.question,
    evidence: it.evidence,
    goldSql: it.gold,
    difficulty: it.difficulty,
    variantPaths,
  };
}

/** Every question of a data file, databases at `<dbRoot>/<db_id>/<db_id>.sqlite`, variants under `<variantsDir>/<db_id>/`. */
export function loadSqlTasks(dataPath: string, dbRoot: string, variantsDir?: string): SqlTask[] {
  const ds = readDataset(dataPath);
  const dbs = resolveDatabases(dbRoot, ds.items.map((it) => it.dbId));
  return ds.items.map((it) => sqlTaskOf(it, dbs.get(it.dbId) as string, variantsDir ? suiteVariants(variantsDir, it.dbId) : []));
}
