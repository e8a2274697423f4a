// `npm run bench -- realism [--n 30] [--dbs 30] [--variants 2] [--seed 1] [--only db1,db2] [--examples 0] [--detail] [--root DIR] [--people SHARE]`
// --people: the factory's share of questions in people's variety (default: the factory's; 0 = the plain intents).
// With 30 pairs per database the shape share moves by about a point between seeds: run several (--seed).
// --detail: per database, the human shapes it missed and the human-used tables/columns left unused (with the manifest's reason).
// How close the factory comes to what people ask, on real databases it has never seen: a fixed,
// evenly spaced sample of ../shared/data/spider-train (train split only; human gold SQL in
// gold.jsonl). Per database and on average: (a) the share of human gold queries whose shape
// (joins, GROUP BY, HAVING, ORDER BY+LIMIT, nesting, set ops, NOT IN, LIKE, DISTINCT, aggregates)
// the synthesized SQL also has, (b) the share of the tables and columns the human gold uses that
// the synthesized SQL also uses, (c) pairs asked vs written and pairs/s, (d) the share of
// questions that leak an identifier (snake_case, CamelCase, a doubled word, a truncated singular), and
// (e) the share of questions in the general grammar's template sentences ("... where the X is Y"), not
// the intent sentences people use (provenance.grammar), (f) the share asked in people's variety
// (provenance.people), (g) distinct sentence openers (first two words) per 100 questions, and (h) the
// distance (total variation, 0..1) of all written pairs' shapes from the human mix (shapes.ts).
// --root ../shared/data/kaggledbqa measures the same on KaggleDBQA (questions.json, {db_id, query}).
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSchema, runFactory } from '../src/factory/pipeline.ts';
import { identifierLeaks, queryShape, schemaItems } from '../src/factory/realism.ts';
import { HUMAN_SHAPES } from '../src/factory/shapes.ts';
import { SqlPool } from '../src/sql/pool.ts';
import { flag, num } from './_args.ts';

function loadGold(root: string): Map<string, string[]> {
  const gold = new Map<string, string[]>();
  const add = (r: { db_id: string; query: string }) => gold.set(r.db_id, [...(gold.get(r.db_id) ?? []), r.query]);
  if (existsSync(join(root, 'gold.jsonl'))) {
    for (const line of readFileSync(join(root, 'gold.jsonl'), 'utf8').split('\n')) if (line.trim()) add(JSON.parse(line) as { db_id: string; query: string });
  } else if (existsSync(join(root, 'questions.json'))) {
    for (const r of JSON.parse(readFileSync(join(root, 'questions.json'), 'utf8')) as Array<{ db_id: string; query: string }>) add(r);
  }
  return gold;
}

interface DbResult {
  db: string;
  gold: number;
  shapeShare: number;
  itemShare: number;
  asked: number;
  written: number;
  secs: number;
  leakShare: number;
  templateShare: number;
  peopleShare: number;
  shortfall: string;
}

export async function run(args: string[]): Promise<void> {
  const n = num(args, '--n', 30);
  const count = num(args, '--dbs', 30);
  const variants = num(args, '--variants', 2);
  const examples = num(args, '--examples', 0);
  const seed = num(args, '--seed', 1);
  const people = args.includes('--people') ? num(args, '--people', 0.5) : undefined;
  const openers = new Set<string>();
  const allShapes: string[] = [];
  const ROOT = flag(args, '--root', '../shared/data/spider-train');
  if (/spider/i.test(ROOT) && !/train/i.test(ROOT)) throw new Error('realism: only the Spider train split may be used');
  const gold = loadGold(ROOT);
  if (!gold.size) {
    console.log(`realism: no gold.jsonl or questions.json under ${ROOT}; nothing to measure`);
    return;
  }
  const all = readdirSync(join(ROOT, 'database')).filter((d) => gold.has(d)).sort();
  const only = flag(args, '--only', '');
  const sample = only ? only.split(',') : Array.from({ length: Math.min(count, all.length) }, (_, i) => all[Math.floor((i * all.length) / Math.min(count, all.length))]);
  const tmp = mkdtempSync(join(tmpdir(), 'agro-bench-realism-'));
  const pool = new SqlPool({ size: 2 });
  const results: DbResult[] = [];
  const missing = new Map<string, number>();
  const leakKinds = new Map<string, number>();
  const unusedWhy = new Map<string, number>();
  const detail = args.includes('--detail');
  const leakExamples: string[] = [];
  console.log(`sample: ${sample.length} databases of ${ROOT}, --n ${n}, --variants ${variants}, --seed ${seed}`);
  console.log('db                               gold  shape%  items%  asked  written  pairs/s  leak%  tmpl%  shortfall');
  try {
    for (const db of sample) {
      const path = join(ROOT, 'database', db, `${db}.sqlite`);
      const schema = await loadSchema(path);
      const t0 = performance.now();
      let r;
      try {
        r = await runFactory({ db: path, out: join(tmp, db), n, seed, variants, ...(people === undefined ? {} : { people }) }, { executor: pool });
      } catch (e) {
        console.log(`${db.padEnd(32)} failed: ${(e as Error).message}`);
        continue;
      }
      const secs = (performance.now() - t0) / 1000;
      const humans = gold.get(db)!;
      const synthShapes = new Set(r.rows.map((x) => queryShape(x.SQL)));
      const humanShapes = humans.map(queryShape);
      const missedHere = new Map<string, number>();
      for (const s of humanShapes) if (!synthShapes.has(s)) missedHere.set(s, (missedHere.get(s) ?? 0) + 1);
      for (const [s, c] of missedHere) missing.set(s, (missing.get(s) ?? 0) + c);
      const synthItems = new Set(r.rows.flatMap((x) => [...schemaItems(x.SQL, schema)]));
      const humanItems = new Set(humans.flatMap((q) => [...schemaItems(q, schema)]));
      // Why a human-used table or column stayed unused: the manifest's reason for it.
      const why = new Map((r.manifest.unused ?? []).map((u) => [u.what.replace(/^(table|view) /, 't:').replace(/^column /, 'c:').toLowerCase(), u.why]));
      const unusedHere = [...humanItems].filter((x) => !synthItems.has(x));
      for (const u of unusedHere) {
        const reason = why.get(u) ?? 'used by a pair, but not with the human query\'s table';
        unusedWhy.set(reason, (unusedWhy.get(reason) ?? 0) + 1);
      }
      const leaks = r.rows.map((x) => ({ q: x.question, why: identifierLeaks(x.question, schema) })).filter((x) => x.why.length);
      for (const l of leaks) {
        for (const w of l.why) leakKinds.set(w, (leakKinds.get(w) ?? 0) + 1);
        if (leakExamples.length < 12) leakExamples.push(`${db}: [${l.why.join(',')}] ${l.q}`);
      }
      const res: DbResult = {
        db,
        gold: humans.length,
        shapeShare: humanShapes.filter((s) => synthShapes.has(s)).length / humans.length,
        itemShare: humanItems.size ? [...humanItems].filter((x) => synthItems.has(x)).length / humanItems.size : 1,
        asked: n,
        written: r.rows.length,
        secs,
        leakShare: r.rows.length ? leaks.length / r.rows.length : 0,
        templateShare: r.rows.length ? r.rows.filter((x) => x.provenance.grammar === 'general').length / r.rows.length : 0,
        peopleShare: r.rows.length ? r.rows.filter((x) => x.provenance.people).length / r.rows.length : 0,
        shortfall: (r.manifest as { shortfall?: string }).shortfall ?? '',
      };
      results.push(res);
      for (const x of r.rows) {
        openers.add(x.question.split(' ').slice(0, 2).join(' '));
        allShapes.push(queryShape(x.SQL));
      }
      const pct = (x: number) => (100 * x).toFixed(0).padStart(5) + '%';
      console.log(
        `${db.padEnd(32)} ${String(res.gold).padStart(5)} ${pct(res.shapeShare)}  ${pct(res.itemShare)}  ${String(n).padStart(5)}  ${String(res.written).padStart(7)}  ${(res.written / secs).toFixed(1).padStart(7)}  ${pct(res.leakShare)} ${pct(res.templateShare)}  ${res.shortfall}`,
      );
      if (detail) {
        console.log(`    missed shapes: ${[...missedHere].sort((a, b) => b[1] - a[1]).map(([k, c]) => `${k} ${c}`).join(', ') || 'none'}`);
        if (unusedHere.length) console.log(`    unused human items: ${unusedHere.map((u) => `${u} (${why.get(u) ?? 'used, but not under that table'})`).join('; ')}`);
      }
      if (examples > 0) for (const x of r.rows.slice(0, examples)) console.log(`    ${x.question}\n      ${x.SQL}`);
    }
  } finally {
    await pool.close();
    rmSync(tmp, { recursive: true, force: true });
  }
  if (!results.length) return;
  // A database with no rows (explained by its shortfall line) has nothing to measure a, b or d on.
  const measured = results.filter((r) => r.written > 0);
  const avg = (f: (r: DbResult) => number, over = measured) => over.reduce((a, r) => a + f(r), 0) / Math.max(1, over.length);
  const met = results.filter((r) => r.written >= r.asked || r.shortfall).length;
  console.log(
    `\naverage over ${measured.length} dbs with pairs (of ${results.length}): (a) shapes ${(100 * avg((r) => r.shapeShare)).toFixed(1)}% (goal >= 90)  (b) tables/columns ${(100 * avg((r) => r.itemShare)).toFixed(1)}% (goal >= 95)` +
      `  (c) --n met or explained ${met}/${results.length}, filled ${results.filter((r) => r.written >= r.asked).length}/${results.length}, ${avg((r) => r.written / r.secs).toFixed(1)} pairs/s (whole run, n small: fixed costs dominate)  (d) leaked identifiers ${(100 * avg((r) => r.leakShare)).toFixed(1)}% (goal 0)  (e) template sentences ${(100 * avg((r) => r.templateShare)).toFixed(1)}%`,
  );
  const total = Object.values(HUMAN_SHAPES).reduce((a, b) => a + b, 0);
  const got = new Map<string, number>();
  for (const sh of allShapes) got.set(sh, (got.get(sh) ?? 0) + 1 / allShapes.length);
  const tv = [...new Set([...Object.keys(HUMAN_SHAPES), ...got.keys()])].reduce((a, k) => a + Math.abs((got.get(k) ?? 0) - (HUMAN_SHAPES[k] ?? 0) / total), 0) / 2;
  console.log(
    `(f) people's variety ${(100 * avg((r) => r.peopleShare)).toFixed(1)}%  (g) sentence openers ${((100 * openers.size) / Math.max(1, allShapes.length)).toFixed(1)} per 100 questions (${openers.size})  (h) shape distance to the human mix ${tv.toFixed(3)}`,
  );
  console.log('human shapes never synthesized (queries): ' + [...missing].sort((a, b) => b[1] - a[1]).slice(0, 12).map(([s, c]) => `${s} ${c}`).join(', '));
  const features = new Map<string, number>();
  for (const [s, c] of missing) for (const f of s.split('+')) features.set(f, (features.get(f) ?? 0) + c);
  console.log('features of the missed human queries (queries): ' + [...features].sort((a, b) => b[1] - a[1]).map(([s, c]) => `${s} ${c}`).join(', '));
  console.log('why human-used tables/columns stayed unused (items): ' + [...unusedWhy].sort((a, b) => b[1] - a[1]).map(([s, c]) => `${s} ${c}`).join('; '));
  console.log('leak kinds: ' + ([...leakKinds].map(([k, c]) => `${k} ${c}`).join(', ') || 'none'));
  for (const e of leakExamples) console.log('  ' + e);
}
