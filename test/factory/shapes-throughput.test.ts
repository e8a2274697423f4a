// Issue #15, round two: the shapes people ask (and their mix), question text of odd column names,
// and what keeps the factory fast (a per-run query cache, a plan-based cost gate on big databases).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { SqlPool } from '../../src/sql/pool.ts';
import type { ExecOptions, ExecResult, SqlExecutor } from '../../src/sql/types.ts';
import { columnPhrase } from '../../src/factory/language/names.ts';
import { realizeQuestion } from '../../src/factory/language/realize.ts';
import { col, emptySelect, lit } from '../../src/factory/ast.ts';
import { runFactory } from '../../src/factory/pipeline.ts';
import { astShape, roundThreshold } from '../../src/factory/synthesize.ts';
import { identifierLeaks, queryShape } from '../../src/factory/realism.ts';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { CachingExecutor } from '../../src/factory/exec-cache.ts';
import { QueryCost, rowsRead, MAX_ROWS_READ } from '../../src/factory/cost.ts';
import { diversityStage } from '../../src/factory/diversity/index.ts';
import { Rng } from '../../src/util/rng.ts';
import { silentProgress } from '../../src/util/progress.ts';
import type { StageContext, SynthPair } from '../../src/factory/types.ts';
import { makeEventsDb, makeShopDb, tmpDir } from './fixtures.ts';

test('round thresholds: two significant digits from 100 up, two decimals below', () => {
  assert.equal(roundThreshold(1234), 1200);
  assert.equal(roundThreshold(-1234), -1200);
  assert.equal(roundThreshold(150), 150);
  assert.equal(roundThreshold(98765), 99000);
  assert.equal(roundThreshold(99), 99);
  assert.equal(roundThreshold(56.789), 56.79);
});

test('a column name ending in a grammar word is spoken without it (no "is is")', () => {
  assert.equal(columnPhrase('song', 'genre_is'), 'song genre');
  assert.equal(columnPhrase('country', 'IsOfficial'), 'country is official');
  const q = emptySelect('song');
  q.columns = [col('T1', 'song', 'song_name')];
  q.where = [{ kind: 'cmp', left: col('T1', 'song', 'genre_is'), op: '=', right: lit('pop') }];
  const text = realizeQuestion(q, 'formal');
  assert.doesNotMatch(text, /\bis is\b/);
  const dir = tmpDir();
  const db = new Database(join(dir, 's.sqlite'));
  db.exec('CREATE TABLE song (song_name TEXT, genre_is TEXT)');
  db.close();
  assert.deepEqual(identifierLeaks(text, introspectSchema(join(dir, 's.sqlite'))), []);
});

test('shapes people ask: which X has the most Y, HAVING over a join, LIKE, DISTINCT over a join, set operations; every pair verified', async () => {
  const dir = tmpDir();
  const r = await runFactory({ db: makeShopDb(dir), out: join(dir, 'out'), n: 120, seed: 1, variants: 1 });
  const sqls = r.rows.map((x) => x.SQL);
  const has = (re: RegExp, what: string) => assert.ok(sqls.some((s) => re.test(s)), `${what}\n${sqls.join('\n')}`);
  // As people write it: the group alone, the count in ORDER BY only, no tie-breaker (ties were rejected).
  has(/^SELECT [\w.]+ FROM .* GROUP BY [\w.]+ ORDER BY COUNT\(\*\) DESC LIMIT 1$/, 'which X has the most Y');
  for (const s of sqls.filter((x) => / LIMIT \d+$/.test(x) && !/ (UNION|INTERSECT|EXCEPT) /.test(x))) assert.doesNotMatch(s, /ORDER BY [^,]+, /, `a second sort key: ${s}`);
  has(/JOIN .* GROUP BY .* HAVING COUNT\(\*\) >= \d+/, 'HAVING over a join');
  has(/LIKE '%\w+%'/, 'a LIKE');
  has(/^SELECT DISTINCT T1\.\w+ FROM \w+ AS T1 INNER JOIN/, 'DISTINCT over a join');
  has(/\b(UNION|INTERSECT|EXCEPT)\b/, 'a set operation');
  has(/^SELECT [^()]*FROM (customers|products|orders)( WHERE [^()]*)?$/, 'a plain list');
  // A follow-up is checked by execution, not parsed back (its question leans on the turn before it).
  for (const row of r.rows) assert.ok(row.provenance.checks.includes('exec') && row.provenance.checks.includes(row.previous ? 'changed' : 'roundtrip'), row.SQL);
  // The mix follows what people ask: the most asked shapes are all there.
  const shapes = new Set(sqls.map(queryShape));
  for (const s of ['plain', 'join', 'agg', 'join+distinct', 'group+agg', 'join+group+top+agg']) assert.ok(shapes.has(s), `${s} missing: ${[...shapes].join(' ')}`);
  // A HAVING threshold is one the data splits: without it the result has more groups.
  const db = new Database(join(dir, 'shop.sqlite'), { readonly: true });
  for (const s of sqls.filter((x) => /HAVING/.test(x))) {
    const withHaving = db.prepare(s).all().length;
    const without = db.prepare(s.replace(/ HAVING COUNT\(\*\) >= \d+/, '')).all().length;
    assert.ok(without > withHaving && withHaving > 0, s);
  }
  db.close();
});

test('grouping by a small-domain number (a year-like column with few values) is synthesized', async () => {
  const dir = tmpDir();
  const path = join(dir, 'cars.sqlite');
  const db = new Database(path);
  db.exec('CREATE TABLE cars (id INTEGER PRIMARY KEY, model TEXT, cylinders INTEGER, horsepower INTEGER)');
  const rng = new Rng(5);
  for (let i = 1; i <= 120; i++) db.prepare('INSERT INTO cars VALUES (?, ?, ?, ?)').run(i, `model ${i}`, rng.pick([4, 6, 8]), 60 + rng.int(200));
  db.close();
  const r = await runFactory({ db: path, out: join(dir, 'out'), n: 40, seed: 3, variants: 1, templateWeights: { groupAgg: 10, groupTop: 10 } });
  assert.ok(r.rows.some((x) => /GROUP BY cylinders/.test(x.SQL)), r.rows.map((x) => x.SQL).join('\n'));
});

test('astShape reads the same shape off the AST as queryShape off the SQL, for every synthesized candidate', async () => {
  const dir = tmpDir();
  const out = join(dir, 'out');
  await runFactory({ db: makeShopDb(dir), out, n: 60, seed: 4, variants: 0 }, { stopAfter: 'synthesize' }).catch((e: Error) => assert.match(e.message, /stopped after synthesize/));
  const cands = readFileSync(join(out, '.work', 'synthesize.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as SynthPair);
  assert.ok(cands.length > 50);
  for (const p of cands) assert.equal(astShape(p.ast), queryShape(p.sql), p.sql);
});

function pairOf(i: number, sql: string, shape: string): SynthPair {
  const ast = emptySelect(`t${i}`);
  ast.columns = [col('T1', `t${i}`, 'c')];
  return { id: `p${i}`, dbId: 'd', sql, ast, question: `question number ${i} about ${shape} ${'w'.repeat(i)}`, evidence: '', style: 'formal', difficulty: 'simple', provenance: { stages: [], checks: [] }, result: JSON.stringify([[i]]) };
}

test('diversity cover: most-asked shapes first, then a quota per shape in proportion to its share', async () => {
  // 3 shapes: a (share 60), b (30), c (10); 10 candidates each, distinct SQL; keep 10.
  const items: SynthPair[] = [];
  const shapeOf = new Map<string, string>();
  for (const [k, s] of [['c', 0], ['b', 1], ['a', 2]] as const) {
    for (let j = 0; j < 10; j++) {
      const p = pairOf(s * 10 + j, `SELECT ${k}${j} FROM t${s * 10 + j}`, k);
      shapeOf.set(p.id, k);
      items.push(p);
    }
  }
  const ctx: StageContext = { dbId: 'd', dbPath: ':memory:', schema: { dbId: 'd', path: '', tables: [] } as never, executor: null as never, rng: new Rng(1), progress: silentProgress, variants: [], reject: () => {}, timeoutMs: 1000 };
  const kept = await diversityStage({ size: 10, cover: (p) => shapeOf.get(p.id)!, coverMix: { a: 60, b: 30, c: 10 } }).run(items, ctx);
  const count = (k: string) => kept.filter((p) => shapeOf.get(p.id) === k).length;
  assert.equal(kept.length, 10);
  // cover: one of each (3); the other 7 by share 60:30:10 -> 4, 2, 1 more (largest remainder)
  assert.deepEqual([count('a'), count('b'), count('c')], [5, 3, 2]);
});

class CountingExecutor implements SqlExecutor {
  calls = 0;
  closed = false;
  async execute(_db: string, sql: string, _opts: ExecOptions = {}): Promise<ExecResult> {
    this.calls++;
    const n = Number(/LIMIT (\d+)/.exec(sql)?.[1] ?? 1);
    return { ok: true, columns: ['x'], rows: Array.from({ length: n }, (_, i) => [i]), truncated: false, elapsedMs: 0 } as ExecResult;
  }
  async close(): Promise<void> {
    this.closed = true;
  }
}

test('query cache: the same query with the same limits runs once; other limits run again; big results are not kept; close leaves the pool open', async () => {
  const inner = new CountingExecutor();
  const c = new CachingExecutor(inner);
  const [a, b] = await Promise.all([c.execute('db', 'SELECT 1 LIMIT 3', { timeoutMs: 10 }), c.execute('db', 'SELECT 1 LIMIT 3', { timeoutMs: 10 })]);
  assert.equal(inner.calls, 1);
  assert.deepEqual(a, b);
  await c.execute('db', 'SELECT 1 LIMIT 3', { timeoutMs: 20 });
  await c.execute('other.db', 'SELECT 1 LIMIT 3', { timeoutMs: 10 });
  assert.equal(inner.calls, 3);
  await c.execute('db', 'SELECT 1 LIMIT 5000');
  await new Promise((r) => setImmediate(r));
  await c.execute('db', 'SELECT 1 LIMIT 5000');
  assert.equal(inner.calls, 5, 'a result of 5000 rows is not remembered');
  assert.equal(c.hits, 1);
  await c.close();
  assert.equal(inner.closed, false);
});

test('cost from the plan, by hand: scans, primary-key and index joins, outer index lookups, list subqueries', () => {
  const rows = (n: string) => ({ T1: 1000, T2: 500, big: 200_000 })[n] ?? 0;
  const L = (id: number, parent: number, detail: string) => ({ id, parent, detail });
  // scan 1000, then a PK lookup per row: 1000 + 1000
  assert.equal(rowsRead([L(1, 0, 'SCAN T1'), L(2, 0, 'SEARCH T2 USING INTEGER PRIMARY KEY (rowid=?)')], rows), 2000);
  // a join through a non-PK index may read the whole child table: 1000 + 500
  assert.equal(rowsRead([L(1, 0, 'SCAN T1'), L(2, 0, 'SEARCH T2 USING INDEX t2_fk (a=?)')], rows), 1500);
  // an outer lookup by a value reads about 1% of the table
  assert.equal(rowsRead([L(1, 0, 'SEARCH big USING INDEX big_x (x=?)')], rows), 2000);
  // ... but not when the values come from a subquery's list
  assert.equal(rowsRead([L(1, 0, 'SEARCH big USING INDEX big_x (x=?)'), L(2, 0, 'LIST SUBQUERY 1'), L(3, 2, 'SCAN T2')], rows), 200_500);
  // a SEARCH naming no index reads like a scan
  assert.equal(rowsRead([L(1, 0, 'SEARCH big')], rows), 200_000);
  // a correlated subquery's index lookup runs per outer row: every child row, 1000 + 200,000 ...
  assert.equal(rowsRead([L(2, 0, 'SCAN T1'), L(5, 0, 'CORRELATED SCALAR SUBQUERY 1'), L(10, 5, 'SEARCH big USING INDEX big_fk (a=?)')], rows), 201_000);
  // ... but by primary key it reads one row each time (counted as an outer lookup, 1% of the table): 1000 + 2000
  assert.equal(rowsRead([L(2, 0, 'SCAN T1'), L(5, 0, 'CORRELATED SCALAR SUBQUERY 1'), L(10, 5, 'SEARCH big USING INTEGER PRIMARY KEY (rowid=?)')], rows), 3000);
});

test('cost gate: on a database with a big table, a full scan is too costly and a key lookup is not; small databases are never checked', () => {
  const dir = tmpDir();
  const path = makeEventsDb(dir);
  const schema = introspectSchema(path, { statsRowLimit: 1000 });
  const cost = new QueryCost(path, schema);
  try {
    assert.ok(cost.active);
    assert.equal(cost.estimate('SELECT AVG(score) FROM events'), 150_000); // one scan
    assert.ok(cost.estimate('SELECT T2.name, COUNT(*) FROM events AS T1 INNER JOIN kinds AS T2 ON T1.kind_id = T2.kind_id GROUP BY T2.name') > MAX_ROWS_READ);
    assert.ok(cost.tooCostly('SELECT T2.name, COUNT(*) FROM events AS T1 INNER JOIN kinds AS T2 ON T1.kind_id = T2.kind_id GROUP BY T2.name'));
    assert.ok(!cost.tooCostly('SELECT score FROM events WHERE event_id = 7'));
    assert.ok(!cost.tooCostly('SELECT name FROM kinds WHERE kind_id NOT IN (SELECT kind_id FROM events)'));
  } finally {
    cost.close();
  }
  const small = makeShopDb(dir);
  const c2 = new QueryCost(small, introspectSchema(small));
  assert.equal(c2.active, false);
  assert.equal(c2.tooCostly('SELECT * FROM orders'), false);
  c2.close();
});

test('a database with a big table: synthesis drops too-costly queries before running them, and every written query is within the gate', async () => {
  const dir = tmpDir();
  const path = makeEventsDb(dir);
  const pool = new SqlPool({ size: 2 });
  try {
    const r = await runFactory({ db: path, out: join(dir, 'out'), n: 20, seed: 1, variants: 1 }, { executor: pool });
    assert.ok((r.manifest.rejections.synthesize?.too_costly ?? 0) > 0, JSON.stringify(r.manifest.rejections));
    // Every written query reads no more than the gate allows (by the plan, not by a clock: the machine may be busy).
    const cost = new QueryCost(path, introspectSchema(path, { statsRowLimit: 1000 }));
    try {
      for (const row of r.rows) assert.ok(cost.estimate(row.SQL) <= MAX_ROWS_READ, row.SQL);
    } finally {
      cost.close();
    }
    assert.ok(r.rows.length >= 10 || r.manifest.shortfall, 'filled or explained');
  } finally {
    await pool.close();
  }
});
