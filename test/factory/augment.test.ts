import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { testSuiteMatch } from '../../src/sql/testsuite.ts';
import { Rng } from '../../src/util/rng.ts';
import { col, emptySelect, lit } from '../../src/factory/ast.ts';
import { ambiguityReason, buildVariants } from '../../src/factory/augment.ts';
import { printQuery } from '../../src/factory/print.ts';
import { buildSchemaGraph } from '../../src/factory/schema-graph.ts';
import { silentProgress } from '../../src/util/progress.ts';
import type { StageContext, SynthPair } from '../../src/factory/types.ts';
import { makeShopDb, tmpDir } from './fixtures.ts';

test('variants keep the schema, keep foreign keys consistent, and are written atomically', async () => {
  const dir = tmpDir();
  const path = makeShopDb(dir);
  const schema = introspectSchema(path);
  const graph = buildSchemaGraph(schema);
  const vdir = join(dir, 'variants', 'shop');
  const paths = await buildVariants(path, schema, graph, { count: 2, seed: 5, dir: vdir, maxRowsPerTable: 200 });
  assert.deepEqual(readdirSync(vdir).sort(), ['variant-1.sqlite', 'variant-2.sqlite']); // no temp files left
  const ddl = (p: string) => {
    const db = new Database(p, { readonly: true });
    const rows = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name").all();
    db.close();
    return rows;
  };
  const orig = new Database(path, { readonly: true });
  for (const v of paths) {
    assert.deepEqual(ddl(v), ddl(path));
    const db = new Database(v, { readonly: true });
    const dangling = db
      .prepare('SELECT COUNT(*) AS n FROM orders WHERE customer_id NOT IN (SELECT customer_id FROM customers)')
      .get() as { n: number };
    assert.equal(dangling.n, 0);
    const danglingItems = db
      .prepare('SELECT COUNT(*) AS n FROM order_items WHERE order_id IS NOT NULL AND order_id NOT IN (SELECT order_id FROM orders)')
      .get() as { n: number };
    assert.equal(danglingItems.n, 0);
    // sizes: min(original rows, 200) per table (INSERT OR IGNORE may drop a few composite-key clashes)
    assert.equal((db.prepare('SELECT COUNT(*) AS n FROM customers').get() as { n: number }).n, 40);
    const items = (db.prepare('SELECT COUNT(*) AS n FROM order_items').get() as { n: number }).n;
    assert.ok(items > 150 && items <= 200, String(items));
    // some rows are copied from the original so filters still hit, and some are new
    const copied = db.prepare('SELECT COUNT(*) AS n FROM products WHERE product_id <= 30').get() as { n: number };
    assert.ok(copied.n > 0);
    db.close();
  }
  orig.close();
  // deterministic for a seed: rebuilding into another directory gives identical contents
  const again = await buildVariants(path, schema, graph, { count: 1, seed: 5, dir: join(dir, 'again'), maxRowsPerTable: 200 });
  const dump = (p: string) => {
    const db = new Database(p, { readonly: true });
    const rows = db.prepare('SELECT * FROM order_items ORDER BY order_id, product_id').raw().all();
    db.close();
    return rows;
  };
  assert.deepEqual(dump(again[0]), dump(paths[0]));
  assert.ok(existsSync(paths[1]));
});

test('augmentation exposes an accidentally-right query', async () => {
  const dir = tmpDir();
  const path = join(dir, 'scores.sqlite');
  const db = new Database(path);
  db.exec('CREATE TABLE player (player_id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER)');
  const ins = db.prepare('INSERT INTO player VALUES (?, ?, ?)');
  // every score in the original is above 10, so dropping the filter changes nothing there
  for (let i = 1; i <= 30; i++) ins.run(i, `p${i}`, 11 + (i % 10));
  db.close();
  const schema = introspectSchema(path);
  const variants = await buildVariants(path, schema, buildSchemaGraph(schema), { count: 3, seed: 1, dir: join(dir, 'v'), maxRowsPerTable: 100 });
  const gold = 'SELECT name FROM player WHERE score > 10';
  const accidental = 'SELECT name FROM player';
  const pool = new SqlPool({ size: 2 });
  try {
    const onOriginal = await testSuiteMatch(pool, accidental, gold, [path], { mode: 'bird' });
    assert.equal(onOriginal.match, true);
    const onSuite = await testSuiteMatch(pool, accidental, gold, [path, ...variants], { mode: 'bird' });
    assert.equal(onSuite.match, false);
    assert.ok(onSuite.perDb.slice(1).some((d) => !d.match));
    // the gold itself holds on every variant
    assert.equal((await testSuiteMatch(pool, gold, gold, [path, ...variants], { mode: 'bird' })).match, true);
  } finally {
    await pool.close();
  }
});

test('ambiguity rule: ties at a LIMIT and join-inflated counts are rejected', async () => {
  const dir = tmpDir();
  const path = makeShopDb(dir);
  const schema = introspectSchema(path);
  const graph = buildSchemaGraph(schema);
  const variants = await buildVariants(path, schema, graph, { count: 2, seed: 2, dir: join(dir, 'v'), maxRowsPerTable: 300 });
  const pool = new SqlPool({ size: 2 });
  const ctx: StageContext = { dbId: 'shop', dbPath: path, schema, executor: pool, rng: new Rng(1), progress: silentProgress, variants, reject() {}, timeoutMs: 3000 };
  const mk = (ast: SynthPair['ast']): SynthPair => ({ id: 'x', dbId: 'shop', sql: printQuery(ast), ast, question: '', evidence: '', style: 'formal', difficulty: 'simple', provenance: { stages: [], checks: [] } });
  try {
    // "the 1 product with the lowest stock" when several products share that stock: the tie-breaker decides
    const db = new Database(path, { readonly: true });
    const tied = db.prepare('SELECT stock FROM products GROUP BY stock HAVING COUNT(*) > 1 ORDER BY stock LIMIT 1').get() as { stock: number };
    db.close();
    const top = emptySelect('products');
    const stock = col('T1', 'products', 'stock');
    top.columns = [col('T1', 'products', 'title')];
    top.where = [{ kind: 'cmp', left: stock, op: '=', right: lit(tied.stock) }];
    top.orderBy = [
      { expr: stock, dir: 'ASC' },
      { expr: col('T1', 'products', 'product_id'), dir: 'ASC' },
    ];
    top.limit = 1;
    assert.equal(await ambiguityReason(ctx, mk(top)), 'ambiguous_ties');

    // "the number of customers where the order status is 'shipped'" counts orders, not customers
    const cnt = emptySelect('customers');
    cnt.columns = [{ kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false }];
    cnt.joins = [{ table: 'orders', alias: 'T2', on: [{ left: col('T1', 'customers', 'customer_id'), right: col('T2', 'orders', 'customer_id') }] }];
    cnt.where = [{ kind: 'cmp', left: col('T2', 'orders', 'status'), op: '=', right: lit('shipped') }];
    assert.equal(await ambiguityReason(ctx, mk(cnt)), 'ambiguous_count');

    // a plain filter has one reading
    const plain = emptySelect('customers');
    plain.columns = [col('T1', 'customers', 'name')];
    plain.where = [{ kind: 'cmp', left: col('T1', 'customers', 'country'), op: '=', right: lit('Japan') }];
    assert.equal(await ambiguityReason(ctx, mk(plain)), null);

    const bad = mk(plain);
    bad.sql = 'SELECT missing_column FROM customers';
    assert.equal(await ambiguityReason(ctx, bad), 'variant_exec_error');
  } finally {
    await pool.close();
  }
});

test('a view comes with the variant and reads the variant\'s rows (what the PostgreSQL variants match: pg-variants.test.ts)', async () => {
  const dir = tmpDir();
  const path = makeShopDb(dir);
  const db = new Database(path);
  db.exec('CREATE VIEW category_prices AS SELECT category, SUM(price) AS total FROM products GROUP BY category');
  db.close();
  const schema = introspectSchema(path);
  const [variant] = await buildVariants(path, schema, buildSchemaGraph(schema), { count: 1, seed: 4, dir: join(dir, 'v'), maxRowsPerTable: 100 });
  const sum = (p: string, sql: string) => {
    const x = new Database(p, { readonly: true });
    const v = (x.prepare(sql).raw().get() as number[])[0];
    x.close();
    return v;
  };
  const viaView = 'SELECT SUM(total) FROM category_prices';
  const viaTable = 'SELECT SUM(price) FROM products';
  // The same sum in another order: equal to float rounding.
  assert.ok(Math.abs(sum(variant, viaView) - sum(variant, viaTable)) < 1e-6);
  assert.ok(Math.abs(sum(variant, viaView) - sum(path, viaView)) > 1);
});

test("a variant indexes both ends of each foreign key that no primary key covers (the factory's joins on it do not scan)", async () => {
  const dir = tmpDir();
  const path = makeShopDb(dir);
  const schema = introspectSchema(path);
  const graph = buildSchemaGraph(schema);
  const [v] = await buildVariants(path, schema, graph, { count: 1, seed: 5, dir: join(dir, 'variants'), maxRowsPerTable: 50 });
  const db = new Database(v, { readonly: true });
  const indexed = new Set<string>();
  for (const { name, tbl_name } of db.prepare("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index'").all() as Array<{ name: string; tbl_name: string }>) {
    const cols = (db.prepare(`PRAGMA index_info("${name}")`).all() as Array<{ name: string }>).map((c) => c.name);
    indexed.add(`${tbl_name}(${cols.join(',')})`);
  }
  db.close();
  assert.ok(graph.edges.length > 0);
  for (const e of graph.edges) {
    const t = schema.tables.find((x) => x.name === e.fromTable)!;
    if (t.primaryKey.join(',') === e.fromColumns.join(',')) continue;
    assert.ok(indexed.has(`${e.fromTable}(${e.fromColumns.join(',')})`), `${e.fromTable}(${e.fromColumns}) in ${[...indexed]}`);
  }
});
