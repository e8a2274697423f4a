import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SqlPool } from '../../src/sql/pool.ts';
import { sqlFeatures } from '../../src/sql/features.ts';
import { Rng } from '../../src/util/rng.ts';
import { col, emptySelect, lit, type QueryAst, type SelectAst } from '../../src/factory/ast.ts';
import { astSqlFeatures } from '../../src/factory/ast-features.ts';
import { printQuery } from '../../src/factory/print.ts';
import { synthesize } from '../../src/factory/synthesize.ts';
import { silentProgress } from '../../src/util/progress.ts';
import type { StageContext } from '../../src/factory/types.ts';
import { makeShopDb, synthInputs, tmpDir } from './fixtures.ts';

/** The parser's reading of the printed SQL, as plain data (the AST's reading must equal it, key for key). */
const parsed = (q: QueryAst) => JSON.parse(JSON.stringify(sqlFeatures(printQuery(q))));
const fromAst = (q: QueryAst) => JSON.parse(JSON.stringify(astSqlFeatures(q)));

test("a query's features read off the factory AST are node-sql-parser's of its printed SQL, node kind by node kind", () => {
  const base = (): SelectAst => ({ ...emptySelect('orders'), columns: [col('T1', 'orders', 'status')] });
  const sub: SelectAst = { ...emptySelect('order_items', 'S1'), columns: [{ kind: 'star' }], where: [{ kind: 'cmp', left: col('S1', 'order_items', 'order_id'), op: '=', right: col('T1', 'orders', 'order_id') }, { kind: 'cmp', left: col('S1', 'order_items', 'quantity'), op: '>', right: lit(2) }] };
  const avg: SelectAst = { ...emptySelect('products'), columns: [{ kind: 'agg', fn: 'AVG', arg: col('T1', 'products', 'price'), distinct: false }] };
  const ids: SelectAst = { ...emptySelect('customers'), columns: [col('T1', 'customers', 'customer_id')], where: [{ kind: 'like', expr: col('T1', 'customers', 'name'), pattern: '%a%' }] };
  const joined: SelectAst = {
    ...base(),
    columns: [col('T1', 'orders', 'status'), { kind: 'agg', fn: 'COUNT', arg: col('T2', 'customers', 'city'), distinct: true }],
    joins: [{ table: 'customers', alias: 'T2', on: [{ left: col('T1', 'orders', 'customer_id'), right: col('T2', 'customers', 'customer_id') }] }],
    groupBy: [col('T1', 'orders', 'status')],
    having: [{ kind: 'cmp', left: { kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false }, op: '>', right: lit(1) }],
    orderBy: [{ expr: { kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false }, dir: 'DESC' }, { expr: col('T1', 'orders', 'status'), dir: 'ASC' }],
    limit: 3,
  };
  const cases: QueryAst[] = [
    base(),
    { ...base(), distinct: true, where: [{ kind: 'null', expr: col('T1', 'orders', 'status'), negated: true }, { kind: 'cmp', left: col('T1', 'orders', 'order_id'), op: '>=', right: lit(-4) }] },
    { ...base(), where: [{ kind: 'exists', query: sub, negated: false }] },
    { ...base(), where: [{ kind: 'exists', query: sub, negated: true }] },
    { ...base(), where: [{ kind: 'in', expr: col('T1', 'orders', 'customer_id'), query: ids, negated: true }, { kind: 'like', expr: col('T1', 'orders', 'status'), pattern: 'sh%', negated: true }] },
    { ...avg, where: [{ kind: 'cmp', left: col('T1', 'products', 'price'), op: '>', right: { kind: 'scalar', query: avg } }] },
    { ...base(), where: [{ kind: 'or', any: [[{ kind: 'cmp', left: col('T1', 'orders', 'status'), op: '=', right: lit('shipped') }, { kind: 'cmp', left: col('T1', 'orders', 'order_id'), op: '<', right: lit(9.5) }], [{ kind: 'null', expr: col('T1', 'orders', 'order_date'), negated: false }]] }] },
    { ...base(), columns: [{ kind: 'datepart', part: 'year', arg: col('T1', 'orders', 'order_date') }, { kind: 'pct', cond: { kind: 'cmp', left: col('T1', 'orders', 'status'), op: '=', right: lit('pending') } }], groupBy: [col('T1', 'orders', 'order_date')] },
    { ...avg, columns: [{ kind: 'arith', op: '/', left: { kind: 'agg', fn: 'SUM', arg: col('T1', 'products', 'stock'), distinct: false }, right: { kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false } }], orderBy: [{ expr: { kind: 'arith', op: '-', left: { kind: 'agg', fn: 'MAX', arg: col('T1', 'products', 'price'), distinct: false }, right: { kind: 'agg', fn: 'MIN', arg: col('T1', 'products', 'price'), distinct: false } }, dir: 'DESC' }], groupBy: [col('T1', 'products', 'category')], limit: 1 },
    joined,
    ...(['UNION', 'INTERSECT', 'EXCEPT'] as const).map((op): QueryAst => ({ kind: 'setop', op, left: { ...ids, columns: [col('T1', 'customers', 'city')] }, right: { ...emptySelect('customers'), columns: [col('T1', 'customers', 'city')], where: [{ kind: 'cmp', left: col('T1', 'customers', 'country'), op: '=', right: lit("O'Neill") }] } })),
  ];
  for (const q of cases) assert.deepEqual(fromAst(q), parsed(q), printQuery(q));
  // Where the printed SQL leaves the common ground, it says so rather than guess.
  assert.equal(astSqlFeatures({ ...emptySelect('my table'), columns: [col('T1', 'my table', 'x')] }), null);
  assert.equal(astSqlFeatures(base(), 'postgres'), null);
});

test('on every synthesized candidate of the shop database the AST reading and the parser agree', async () => {
  const dir = tmpDir();
  const path = makeShopDb(dir);
  const { schema, graph, profiles } = synthInputs(path);
  const pool = new SqlPool({ size: 2 });
  try {
    const ctx: StageContext = { dbId: 'shop', dbPath: path, schema, executor: pool, rng: new Rng(3), progress: silentProgress, variants: [], reject() {}, timeoutMs: 3000 };
    const pairs = await synthesize(ctx, { graph, profiles }, 400);
    assert.ok(pairs.length >= 300);
    let read = 0;
    for (const p of pairs) {
      if (printQuery(p.ast) !== p.sql) continue;
      const f = astSqlFeatures(p.ast);
      if (!f) continue;
      read++;
      assert.deepEqual(JSON.parse(JSON.stringify(f)), JSON.parse(JSON.stringify(sqlFeatures(p.sql))), p.sql);
    }
    assert.ok(read > pairs.length * 0.9, `${read} of ${pairs.length}`);
  } finally {
    await pool.close();
  }
});
