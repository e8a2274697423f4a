// `npm run bench -- parsers [--root ../shared/data/spider-train] [--reasons 8] [--misses 0] [--no-values]`
// agro reads SQL with two parsers, for two jobs, and this bench measures what each can read on people's SQL:
// Spider train's 8,475 human-written gold queries (gold.jsonl) over their 143 databases.
//  - node-sql-parser (src/sql/features.ts): any query → its structure for features, hardness and skeletons;
//    set operations are split and parsed part by part, and anything left falls back to a token-level analysis.
//  - factory/from-sql.ts: a query → the factory's own algebra (QueryAst) over the database's schema graph, the
//    form the factory's language words back into a question (the answer path's readings, gold-pair import);
//    it reads only what the factory can say, by design. A query counts as read only when the algebra printed
//    back (factory/print.ts) returns the gold query's result on its database (Spider's comparison; a gold query
//    that fails or times out cannot be checked and is counted apart). Joins that follow no foreign key are read
//    when their columns match by name, or by values (the bench looks at the data; --no-values: by name only,
//    as the answer path and gold import read today).
// Prints, per parser, how many queries it reads, the time, and the most common reasons from-sql gives up;
// --misses N also prints N example queries per reason, and the queries whose printed algebra changed the result.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pkg from 'node-sql-parser';
import type Database from 'better-sqlite3';
import { introspectSchema } from '../src/sql/introspect.ts';
import { openDatabase } from '../src/sql/open-database.mjs';
import { SqlPool } from '../src/sql/pool.ts';
import { hasOrderBy, resultsMatch } from '../src/sql/compare.ts';
import { sqlFeatures } from '../src/sql/features.ts';
import { astFromSql, joinProbeOn, type JoinProbe } from '../src/factory/from-sql.ts';
import { printQuery } from '../src/factory/print.ts';
import { buildSchemaGraph } from '../src/factory/schema-graph.ts';
import { mapConcurrent } from '../src/util/concurrency.ts';
import { flag, num } from './_args.ts';

export async function run(args: string[]): Promise<void> {
  const root = flag(args, '--root', '../shared/data/spider-train');
  const topReasons = num(args, '--reasons', 8);
  const examples = num(args, '--misses', 0);
  const byValues = !args.includes('--no-values');
  const goldFile = join(root, 'gold.jsonl');
  if (!existsSync(goldFile)) throw new Error(`bench parsers: no ${goldFile}`);
  const gold = readFileSync(goldFile, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as { db_id: string; query: string });
  const parser = new pkg.Parser();
  let raw = 0;
  let features = 0;
  let noDb = 0;
  const reasons = new Map<string, Array<{ db: string; sql: string }>>();
  const unread = (kind: string, g: { db_id: string; query: string }) => {
    const list = reasons.get(kind) ?? [];
    list.push({ db: g.db_id, sql: g.query });
    reasons.set(kind, list);
  };
  const t = { raw: 0, features: 0, fromSql: 0, check: 0 };
  const dbs = new Map<string, { path: string; schema: ReturnType<typeof introspectSchema>; graph: ReturnType<typeof buildSchemaGraph>; probe?: JoinProbe; db?: Database.Database } | null>();
  const read: Array<{ g: { db_id: string; query: string }; path: string; printed: string }> = [];
  for (const g of gold) {
    let s = dbs.get(g.db_id);
    if (s === undefined) {
      const path = join(root, 'database', g.db_id, `${g.db_id}.sqlite`);
      s = null;
      if (existsSync(path)) {
        const schema = introspectSchema(path);
        const db = byValues ? openDatabase(path, { readonly: true, fileMustExist: true }) : undefined;
        s = { path, schema, graph: buildSchemaGraph(schema), db, probe: db && joinProbeOn((sql) => db.prepare(sql).raw().get() as unknown[] | undefined) };
      }
      dbs.set(g.db_id, s);
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
    const r = astFromSql(g.query, s.schema, s.graph, { joinProbe: s.probe });
    t.fromSql += performance.now() - t0;
    if (r.ok) read.push({ g, path: s.path, printed: printQuery(r.ast) });
    // The reason's kind, without the query's own names and values.
    else unread(r.reason.replace(/'[^']*'|"[^"]*"|`[^`]*`/g, '…').replace(/\b\d+\b/g, 'N').slice(0, 70), g);
  }
  for (const s of dbs.values()) s?.db?.close();
  // Read means the same result: the gold query and the printed algebra, run on the database.
  const t0 = performance.now();
  const pool = new SqlPool({ defaults: { timeoutMs: 10_000, maxRows: 100_000 } });
  let goldFailed = 0;
  let same = 0;
  let empty = 0;
  const changed: Array<{ db: string; sql: string; printed: string }> = [];
  try {
    const outcomes = await mapConcurrent(read, pool.size * 2, undefined, async (x) => {
      const [a, b] = await Promise.all([pool.execute(x.path, x.g.query), pool.execute(x.path, x.printed)]);
      if (!a.ok) return 'gold_failed';
      if (b.ok && a.rows.length === 0 && b.rows.length === 0) return 'same_empty';
      return b.ok && resultsMatch(b.rows, a.rows, { mode: 'spider', ordered: hasOrderBy(x.g.query) }) ? 'same' : 'changed';
    });
    for (const [i, o] of outcomes.entries()) {
      if (o === 'same_empty') empty++;
      if (o === 'same' || o === 'same_empty') same++;
      else if (o === 'gold_failed') goldFailed++;
      else changed.push({ db: read[i].g.db_id, sql: read[i].g.query, printed: read[i].printed });
    }
  } finally {
    await pool.close();
  }
  t.check = performance.now() - t0;
  const n = gold.length;
  const given = n - noDb;
  const pct = (x: number, of = n): string => `${((100 * x) / of).toFixed(1)}%`;
  const ms = (x: number): string => `${(x / 1000).toFixed(1)} s`;
  console.log(`${n} gold queries over ${dbs.size} databases${noDb ? ` (${noDb} without their database, not given to from-sql)` : ''}`);
  console.log(`node-sql-parser, whole query (sqlite dialect): ${raw} (${pct(raw)}) in ${ms(t.raw)}`);
  console.log(`node-sql-parser as features.ts uses it (set operations split): ${features} (${pct(features)}) in ${ms(t.features)}`);
  console.log(
    `factory/from-sql.ts into the factory's algebra (joins by name${byValues ? ' and values' : ' only'}): ${same} (${pct(same, given)}) read with the gold result (${empty} of them empty, which tells little) ` +
      `[${read.length} parsed in ${ms(t.fromSql)}; printed back and run in ${ms(t.check)}: ${changed.length} changed the result, ${goldFailed} gold queries failed to run]`,
  );
  if (changed.length) unread('printed_result_differs', { db_id: changed[0].db, query: changed[0].sql });
  console.log(`from-sql's most common reasons to give up:`);
  for (const [k, v] of [...reasons.entries()].sort((a, b) => b[1].length - a[1].length).slice(0, topReasons)) {
    const count = k === 'printed_result_differs' ? changed.length : v.length;
    console.log(`  ${String(count).padStart(5)}  ${k}`);
    if (k === 'printed_result_differs') continue;
    for (const e of [...new Map(v.map((x) => [x.sql, x])).values()].slice(0, examples)) console.log(`           ${e.db}: ${e.sql}`);
  }
  for (const c of changed.slice(0, examples)) console.log(`  result changed, ${c.db}: ${c.sql}\n                    printed: ${c.printed}`);
}
