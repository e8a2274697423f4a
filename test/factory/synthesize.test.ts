import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { SqlPool } from '../../src/sql/pool.ts';
import { Rng } from '../../src/util/rng.ts';
import { col, emptySelect, lit, type SelectAst } from '../../src/factory/ast.ts';
import { printQuery } from '../../src/factory/print.ts';
import { sqlName } from '../../src/sql/lexer.ts';
import { columnPhrase, words } from '../../src/factory/language/names.ts';
import { difficultyOf, synthesize } from '../../src/factory/synthesize.ts';
import { silentProgress } from '../../src/util/progress.ts';
import type { StageContext } from '../../src/factory/types.ts';
import { makeShopDb, synthInputs, tmpDir } from './fixtures.ts';

test('printer quotes odd identifiers and the SQL runs', () => {
  assert.equal(sqlName('price'), 'price');
  assert.equal(sqlName('select'), '"select"');
  assert.equal(sqlName('full name'), '"full name"');
  assert.equal(sqlName('quote"d'), '"quote""d"');
  assert.equal(sqlName('städte'), '"städte"');
  const q = emptySelect('my table');
  q.columns = [col('T1', 'my table', 'select'), col('T1', 'my table', 'quote"d')];
  q.where = [{ kind: 'cmp', left: col('T1', 'my table', 'städte'), op: '=', right: lit("O'Hare") }];
  const sql = printQuery(q);
  assert.equal(sql, `SELECT "select", "quote""d" FROM "my table" WHERE "städte" = 'O''Hare'`);
  const db = new Database(':memory:');
  db.exec(`CREATE TABLE "my table" ("select" TEXT, "quote""d" INTEGER, "städte" TEXT); INSERT INTO "my table" VALUES ('a', 1, 'O''Hare'), ('b', 2, 'Rome');`);
  assert.deepEqual(db.prepare(sql).raw().all(), [['a', 1]]);
  db.close();
});

test('readable names from identifiers', () => {
  assert.equal(words('InvoiceLine_id'), 'invoice line id');
  assert.equal(words('unitPrice'), 'unit price');
  assert.equal(columnPhrase('order_items', 'quantity'), 'order item quantity');
  assert.equal(columnPhrase('customers', 'customer_id'), 'customer id');
  assert.equal(columnPhrase('categories', 'name'), 'category name');
});

test('difficulty rule from structure', () => {
  const simple = emptySelect('t');
  simple.columns = [col('T1', 't', 'a')];
  simple.where = [{ kind: 'cmp', left: col('T1', 't', 'b'), op: '=', right: lit(1) }];
  assert.deepEqual(difficultyOf(simple), { difficulty: 'simple', score: 0 });
  const grouped: SelectAst = { ...simple, joins: [{ table: 'u', alias: 'T2', on: [] }], groupBy: [col('T2', 'u', 'g')], limit: 3 };
  // 1 join + GROUP BY + LIMIT = 3
  assert.deepEqual(difficultyOf(grouped), { difficulty: 'moderate', score: 3 });
  const sub = emptySelect('u', 'S1');
  sub.columns = [{ kind: 'star' }];
  sub.where = [
    { kind: 'cmp', left: col('S1', 'u', 't_id'), op: '=', right: col('T1', 't', 'id') },
    { kind: 'cmp', left: col('S1', 'u', 'x'), op: '>', right: lit(2) },
  ];
  const nested: SelectAst = { ...simple, where: [{ kind: 'exists', query: sub, negated: false }] };
  // subquery 2 + correlated 1 + its extra condition 1 = 4
  assert.deepEqual(difficultyOf(nested), { difficulty: 'challenging', score: 4 });
});

test('synthesis is deterministic for a seed, uses literals from the data, and covers joins, grouping and nesting', async () => {
  const dir = tmpDir();
  const path = makeShopDb(dir);
  const { schema, graph, profiles } = synthInputs(path);
  const pool = new SqlPool({ size: 2 });
  const run = async (seed: number) => {
    const ctx: StageContext = { dbId: 'shop', dbPath: path, schema, executor: pool, rng: new Rng(seed), progress: silentProgress, variants: [], reject() {}, timeoutMs: 3000 };
    return synthesize(ctx, { graph, profiles }, 60);
  };
  try {
    const a = await run(11);
    const b = await run(11);
    const c = await run(12);
    assert.deepEqual(a.map((p) => p.sql), b.map((p) => p.sql));
    assert.notDeepEqual(a.map((p) => p.sql), c.map((p) => p.sql));
    assert.equal(a.length, 60);
    const sqls = a.map((p) => p.sql);
    assert.ok(sqls.some((s) => / JOIN /.test(s)), 'joins');
    assert.ok(sqls.some((s) => / GROUP BY /.test(s)), 'grouping');
    assert.ok(sqls.some((s) => /\(SELECT /.test(s)), 'nesting');
    // every equality literal on a text column exists in the database
    const db = new Database(path, { readonly: true });
    for (const p of a) {
      if (p.ast.kind !== 'select') continue;
      for (const w of p.ast.where) {
        if (w.kind === 'cmp' && w.op === '=' && w.left.kind === 'col' && w.right.kind === 'lit' && typeof w.right.value === 'string') {
          const n = db.prepare(`SELECT COUNT(*) AS n FROM ${sqlName(w.left.table)} WHERE ${sqlName(w.left.column)} = ?`).get(w.right.value) as { n: number };
          assert.ok(n.n > 0, `${w.right.value} in ${w.left.table}.${w.left.column}`);
        }
      }
    }
    db.close();
    // every synthesized query at least prepares on the database
    for (const p of a) {
      const r = await pool.execute(path, p.sql);
      assert.ok(r.ok, p.sql);
    }
  } finally {
    await pool.close();
  }
});
