import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { buildJoins, buildSchemaGraph, inferForeignKeys, shortestPath } from '../../src/factory/schema-graph.ts';
import { makeOddDb, makeShopDb, tmpDir } from './fixtures.ts';

test('schema graph: composite keys, topological order, shortest join paths', () => {
  const dir = tmpDir();
  const g = buildSchemaGraph(introspectSchema(makeShopDb(dir)));
  assert.equal(g.edges.length, 3);
  // parents before children; ties broken alphabetically
  assert.deepEqual(g.topoOrder, ['customers', 'products', 'orders', 'order_items']);
  const p = shortestPath(g, 'customers', 'products')!;
  assert.deepEqual(
    p.map((h) => `${h.from}.${h.fromColumns}->${h.to}.${h.toColumns}`),
    ['customers.customer_id->orders.customer_id', 'orders.order_id->order_items.order_id', 'order_items.product_id->products.product_id'],
  );
  const j = buildJoins(g, 'orders', ['products'])!;
  assert.deepEqual(j.joins.map((s) => `${s.table} ${s.alias}`), ['order_items T2', 'products T3']);
});

test('schema graph: self-references and cycles are handled deterministically', () => {
  const dir = tmpDir();
  const path = join(dir, 'cyc.sqlite');
  const db = new Database(path);
  db.exec(`
    CREATE TABLE emp (id INTEGER PRIMARY KEY, boss_id INTEGER REFERENCES emp(id), dept_id INTEGER REFERENCES dept(id));
    CREATE TABLE dept (id INTEGER PRIMARY KEY, head_id INTEGER REFERENCES emp(id));
    CREATE TABLE a (x INTEGER, y INTEGER, PRIMARY KEY (x, y));
    CREATE TABLE b (id INTEGER PRIMARY KEY, ax INTEGER, ay INTEGER, FOREIGN KEY (ax, ay) REFERENCES a(x, y));
  `);
  db.close();
  const g = buildSchemaGraph(introspectSchema(path));
  // dept <-> emp is a cycle: it is broken at the alphabetically first table (dept), which loses its edge to emp
  assert.deepEqual(g.topoOrder, ['a', 'b', 'dept', 'emp']);
  assert.deepEqual(g.cycleEdges.map((e) => `${e.fromTable}->${e.toTable}`), ['dept->emp']);
  const composite = g.edges.find((e) => e.fromTable === 'b')!;
  assert.deepEqual([composite.fromColumns, composite.toColumns], [['ax', 'ay'], ['x', 'y']]);
  // self-joins are never walked
  assert.ok(g.edges.some((e) => e.fromTable === 'emp' && e.toTable === 'emp'));
  assert.equal(buildJoins(g, 'emp', ['emp'])!.joins.length, 0);
  assert.deepEqual(shortestPath(g, 'emp', 'dept')!.length, 1);
  const j = buildJoins(g, 'b', ['a'])!;
  assert.equal(j.joins[0].on.length, 2);
});

test('schema graph: foreign keys inferred from names and value containment when none are declared', async () => {
  const dir = tmpDir();
  const schema = introspectSchema(makeOddDb(dir));
  assert.equal(buildSchemaGraph(schema).edges.length, 0);
  const pool = new SqlPool({ size: 1 });
  try {
    // author has no declared primary key: the inference falls back to its "id" column
    const fks = await inferForeignKeys(schema, pool);
    assert.deepEqual(fks, [{ fromTable: 'book', fromColumns: ['author_id'], toTable: 'author', toColumns: ['id'], inferred: true }]);
  } finally {
    await pool.close();
  }
});
