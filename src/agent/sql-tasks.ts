/**
 * SQL agent tasks from a dataset: a factory output folder (`agro synth --out DIR`: dataset.jsonl,
 * manifest.json, variants/) or any BIRD/Spider file (JSON array or JSONL) with a database root.
 */
import { join } from 'node:path';
import { AgroError } from '../errors.ts';
import { readDataset } from '../data/read-dataset.ts';
import { catalogFromDbRoot, catalogFromFactoryOutput, isFactoryOutput, type DatabaseCatalog } from '../data/catalog.ts';
import type { SqlTask } from './sql-env.ts';

/** Dataset rows as SQL agent tasks, each with its database and variant databases from the catalog. */
export function tasksFromDataset(dataPath: string, catalog: DatabaseCatalog): SqlTask[] {
  const ds = readDataset(dataPath);
  return ds.items.map((it) => {
    const db = catalog.resolve(it.dbId);
    return {
      id: String(it.questionId ?? it.index),
      dbId: it.dbId,
      dbPath: db.path,
      question: it.question,
      evidence: it.evidence,
      goldSql: it.gold,
      difficulty: it.difficulty,
      variantPaths: db.variants,
    };
  });
}

export interface TaskSource {
  dataPath: string;
  catalog: DatabaseCatalog;
}

/** Where the rows and the databases of `--data` come from: a factory output folder needs no --db-root. */
export function resolveTaskSource(data: string, opts: { dbRoot?: string; variants?: string }): TaskSource {
  if (isFactoryOutput(data)) {
    const catalog = opts.dbRoot ? undefined : catalogFromFactoryOutput(data);
    return { dataPath: join(data, 'dataset.jsonl'), catalog: catalog ?? catalogFromDbRoot(opts.dbRoot as string, opts.variants ?? join(data, 'variants')) };
  }
  if (!opts.dbRoot) throw new AgroError('usage', `--db-root is required for ${data} (only a factory output folder names its own database)`);
  return { dataPath: data, catalog: catalogFromDbRoot(opts.dbRoot, opts.variants) };
}
