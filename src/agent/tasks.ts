/** Dataset questions (BIRD, Spider or agro's dataset.jsonl) as SQL-agent tasks: the one row → task mapping. */
import { join } from 'node:path';
import { AgroError } from '../errors.ts';
import { readDataset } from '../data/read-dataset.ts';
import { resolveDatabases, suiteVariants } from '../data/databases.ts';
import { catalogFromDbRoot, catalogFromFactoryOutput, factoryOutputOf, type DatabaseCatalog } from '../data/catalog.ts';
import type { EvalItem } from '../data/types.ts';
import type { SqlTask } from './sql-env.ts';

/** One question as a task on `dbPath`; `variantPaths` are its test-suite databases (the answer must match on each). */
export function sqlTaskOf(it: EvalItem, dbPath: string, variantPaths: string[]): SqlTask {
  // Evaluation does without the question text; an agent task does not.
  if (it.question === undefined) throw new AgroError('invalid_input', `item ${it.index}: missing field "question" (a task needs the question text)`);
  return {
    id: String(it.questionId ?? it.index),
    dbId: it.dbId,
    dbPath,
    question: it.question,
    evidence: it.evidence,
    goldSql: it.gold,
    difficulty: it.difficulty,
    variantPaths,
    ...(it.previous?.length ? { previous: it.previous } : {}),
  };
}

/** Every question of a data file, databases at `<dbRoot>/<db_id>/<db_id>.sqlite`, variants under `<variantsDir>/<db_id>/`. */
export function loadSqlTasks(dataPath: string, dbRoot: string, variantsDir?: string): SqlTask[] {
  const ds = readDataset(dataPath);
  const dbs = resolveDatabases(dbRoot, ds.items.map((it) => it.dbId));
  return ds.items.map((it) => sqlTaskOf(it, dbs.get(it.dbId) as string, variantsDir ? suiteVariants(variantsDir, it.dbId, dbs.get(it.dbId) as string) : []));
}

/** Every question of a data file, each with its database and variants from a catalog (db-root or factory output). */
export function tasksFromCatalog(dataPath: string, catalog: DatabaseCatalog): SqlTask[] {
  return readDataset(dataPath).items.map((it) => {
    const db = catalog.resolve(it.dbId);
    return sqlTaskOf(it, db.path, db.variants);
  });
}

export interface TaskSource {
  dataPath: string;
  catalog: DatabaseCatalog;
}

/**
 * Where `--data` rows and their databases come from: a factory output (its folder, or its dataset.jsonl
 * with manifest.json beside it) names its own database and variants; any other file needs --db-root, or
 * the command's `defaultDbRoot`.
 */
export function resolveTaskSource(data: string, opts: { dbRoot?: string; variants?: string; defaultDbRoot?: string }): TaskSource {
  const factory = factoryOutputOf(data);
  if (factory !== undefined) {
    const catalog = opts.dbRoot ? catalogFromDbRoot(opts.dbRoot, opts.variants ?? join(factory, 'variants')) : catalogFromFactoryOutput(factory);
    return { dataPath: factory === data ? join(factory, 'dataset.jsonl') : data, catalog };
  }
  const dbRoot = opts.dbRoot ?? opts.defaultDbRoot;
  if (!dbRoot) throw new AgroError('usage', `--db-root is required for ${data} (only a factory output, its folder or its dataset.jsonl beside manifest.json, names its own database)`);
  return { dataPath: data, catalog: catalogFromDbRoot(dbRoot, opts.variants) };
}

/**
 * A task and one more per paraphrase of its question (ids `<id>~k`), the same query and databases: what SFT
 * reads when the factory wrote several phrasings of each query (quickstart and pretrain).
 */
export function withPhrasings(task: SqlTask, paraphrases: readonly string[] = []): SqlTask[] {
  return [task, ...paraphrases.map((question, k) => ({ ...task, id: `${task.id}~${k + 1}`, question }))];
}
