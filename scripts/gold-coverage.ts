/**
 * How much of a human gold file the factory can ask in its own words (factory/gold.ts, what `agro pretrain
 * --gold` runs per database): how many queries convert to the AST, run with an answer, and survive the round
 * trip, by query shape (realism.ts queryShape), why the rest were dropped, and the seconds it took. Prints
 * JSON. Never run it on a measurement set (spider-dev-open, kaggledbqa): the train split only.
 *
 *   node --import tsx scripts/gold-coverage.ts [gold.jsonl] [database folder] [phrasings]
 *   (defaults: ../shared/data/spider-train/gold.jsonl ../shared/data/spider-train/database 2)
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { goldPairs, readGoldSql, summarizeGold, type GoldOutcome, type GoldSql } from '../src/factory/gold.ts';
import type { SynthPair } from '../src/factory/types.ts';
import { createExecutor } from '../src/sql/executor.ts';
import { findDocs } from '../src/prompt/docs.ts';

const file = process.argv[2] ?? '../shared/data/spider-train/gold.jsonl';
const root = process.argv[3] ?? '../shared/data/spider-train/database';
const phrasings = Number(process.argv[4] ?? 2);
if (/dev|kaggle/i.test(file)) throw new Error('gold-coverage: the train split only');

const items = readGoldSql(file);
const byDb = new Map<string, GoldSql[]>();
for (const it of items) byDb.set(it.dbId, [...(byDb.get(it.dbId) ?? []), it]);
const executor = createExecutor();
const outcomes: GoldOutcome[] = [];
const pairs: SynthPair[] = [];
let missing = 0;
const t0 = performance.now();
try {
  for (const [k, [dbId, mine]] of [...byDb].entries()) {
    const path = resolve(join(root, dbId, `${dbId}.sqlite`));
    if (!existsSync(path)) {
      missing += mine.length;
      continue;
    }
    const docs = findDocs(path)?.docs;
    const r = await goldPairs({ dbId, path }, mine, { executor, seed: 0, phrasings, ...(docs ? { docs } : {}) });
    outcomes.push(...r.outcomes);
    pairs.push(...r.pairs);
    process.stderr.write(`${k + 1}/${byDb.size} ${dbId}: kept ${r.pairs.length} of ${mine.length} (${Math.round((performance.now() - t0) / 1000)} s)\n`);
  }
} finally {
  await executor.close();
}
const seconds = Math.round((performance.now() - t0) / 100) / 10;
console.log(JSON.stringify({ file, databases: byDb.size, missingDatabaseQueries: missing, phrasings, seconds, ...summarizeGold(outcomes, pairs) }, null, 2));
