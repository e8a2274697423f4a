// `npm run bench -- parsers [--root ../shared/data/spider-train] [--reasons 8]`
// agro reads SQL with two parsers, for two jobs, and this bench measures what each can read on people's SQL:
// Spider train's 8,475 human-written gold queries (gold.jsonl) over their 143 databases.
//  - node-sql-parser (src/sql/features.ts): any query → its structure for features, hardness and skeletons;
//    set operations are split and parsed part by part, and anything left falls back to a token-level analysis.
//  - factory/from-sql.ts: a query → the factory's own algebra (QueryAst) over the database's schema graph, the
//    form the factory's language words back into a question (the answer path's readings, gold-pair import);
//    it reads only what the factory can say, by design.
// Prints, per parser, how many queries it reads, the time, and the most common reasons from-sql gives up.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pkg from 'node-sql-parser';
import { introspectSchema } from '../src/sql/introspect.ts';
import { sqlFeatures } from '../src/sql/features.ts';
import { astFromSql } from '../src/factory/from-sql.ts';
import { buildSchemaGraph } from '../src/factory/schema-graph.ts';
import { flag, num } from './_args.ts';

export async function run(args: string[]): Promise<void> {
  const root = flag(args, '--root', '../shared/data/spider-train');
  const topReasons = num(args, '--reasons', 8);
  const goldFile = join(root, 'gold.jsonl');
  if (!existsSync(goldFile)) throw new Error(`bench parsers: no ${goldFile}`);
  const gold = readFileSync(goldFile, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as { db_id: string; query: string });
  const parser = new pkg.Parser();
  let raw = 0;
  let features = 0;
  let fromSql = 0;
  let noDb = 0;
  const reasons = new Map<string, number>();
  const t = { raw: 0, features: 0, fromSql: 0 };
  const schemas = new Map<string, { schema: ReturnType<typeof introspectSchema>; graph: ReturnType<typeof buildSchemaGraph> } | null>();
  for (const g of gold) {
    let s = schemas.get(g.db_id);
    if (s === undefined) {
      const path = join(root, 'database', g.db_id, `${g.db_id}.sqlite`);
      s = existsSync(path) ? (() => { const schema = introspectSchema(path); return { schema, graph: buildSchemaGraph(schema) }; })() : null;
      schemas.set(g.db_id, s);
    }
    let t0 = performance.now();
    try {
      parser.astify(g.query, { database: 'sqlite' });
      raw++;
    } catch {
      // counted as unread
    }
    t.raw += performance.now() - t0;
    t0 = performance.now();
    if (sqlFeatures(g.query).parsed) features++;
    t.features += performance.now() - t0;
    if (!s) {
      noDb++;
      continue;
    }
    t0 = performance.now();
    const r = astFromSql(g.query, s.schema, s.graph);
    t.fromSql += performance.now() - t0;
    if (r.ok) fromSql++;
    else {
      // The reason's kind, without the query's own names and values.
      const kind = r.reason.replace(/'[^']*'|"[^"]*"|`[^`]*`/g, '…').replace(/\b\d+\b/g, 'N').slice(0, 70);
      reasons.set(kind, (reasons.get(kind) ?? 0) + 1);
    }
  }
  const n = gold.length;
  const pct = (x: number, of = n): string => `${((100 * x) / of).toFixed(1)}%`;
  const ms = (x: number): string => `${(x / 1000).toFixed(1)} s`;
  console.log(`${n} gold queries over ${schemas.size} databases${noDb ? ` (${noDb} without their database, not given to from-sql)` : ''}`);
  console.log(`node-sql-parser, whole query (sqlite dialect): ${raw} (${pct(raw)}) in ${ms(t.raw)}`);
  console.log(`node-sql-parser as features.ts uses it (set operations split): ${features} (${pct(features)}) in ${ms(t.features)}`);
  console.log(`factory/from-sql.ts into the factory's algebra: ${fromSql} (${pct(fromSql, n - noDb)}) in ${ms(t.fromSql)}`);
  console.log(`from-sql's most common reasons to give up:`);
  for (const [k, v] of [...reasons.entries()].sort((a, b) => b[1] - a[1]).slice(0, topReasons)) console.log(`  ${String(v).padStart(5)}  ${k}`);
}
