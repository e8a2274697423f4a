import { test } from 'node:test';
import assert from 'node:assert/strict';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { Rng } from '../../src/util/rng.ts';
import { col, emptySelect, lit, type QueryAst, type SelectAst } from '../../src/factory/ast.ts';
import { printQuery } from '../../src/factory/print.ts';
import { buildSchemaGraph } from '../../src/factory/schema-graph.ts';
import { verifyPair } from '../../src/factory/verify.ts';
import { realizeEvidence, realizeQuestion } from '../../src/factory/language/realize.ts';
import { alignStage, roundTrip } from '../../src/factory/align.ts';
import { makeParseEnv, parseQuestion } from '../../src/factory/language/general-parse.ts';
import { silentProgress } from '../../src/util/progress.ts';
import type { StageContext, SynthPair } from '../../src/factory/types.ts';
import { customerNamesIn, makeShopDb, tmpDir } from './fixtures.ts';
import { withPool } from '../support/with.ts';

const dir = tmpDir();
const path = makeShopDb(dir);
const schema = introspectSchema(path);
const graph = buildSchemaGraph(schema);

function pair(ast: QueryAst): SynthPair {
  return { id: 'p', dbId: 'shop', sql: printQuery(ast), ast, question: '', evidence: '', style: 'formal', difficulty: 'simple', provenance: { stages: [], checks: [] } };
}

function ctxWith(pool: SqlPool, rejected: string[] = []): StageContext {
  return { dbId: 'shop', dbPath: path, schema, executor: pool, rng: new Rng(1), progress: silentProgress, variants: [], reject: (_i, r) => rejected.push(r), timeoutMs: 3000 };
}

const C = (column: string) => col('T1', 'customers', column);

test('verification: rejects empty results, always-true filters, empty aggregates; keeps a good query', async () => {
  await withPool({ size: 2 }, async (pool) => {
    const ctx = ctxWith(pool);
    const good = customerNamesIn('Japan');
    assert.equal(await verifyPair(ctx, pair(good)), null);

    const empty: SelectAst = { ...good, where: [{ kind: 'cmp', left: C('country'), op: '=', right: lit('Atlantis') }] };
    assert.equal(await verifyPair(ctx, pair(empty)), 'empty_result');

    // customer_id >= 1 holds for every row: dropping it changes nothing
    const redundant: SelectAst = { ...good, where: [good.where[0], { kind: 'cmp', left: C('customer_id'), op: '>=', right: lit(1) }] };
    assert.equal(await verifyPair(ctx, pair(redundant)), 'redundant_filter');

    const agg = emptySelect('customers');
    agg.columns = [{ kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false }];
    agg.where = [{ kind: 'cmp', left: C('country'), op: '=', right: lit('Atlantis') }];
    assert.equal(await verifyPair(ctx, pair(agg)), 'empty_aggregate');

    const broken = pair(good);
    broken.sql = 'SELECT nope FROM customers';
    assert.equal(await verifyPair(ctx, broken), 'exec_error');
  });
});

function shapes(): Array<[string, QueryAst]> {
  const out: Array<[string, QueryAst]> = [];
  const join = emptySelect('orders');
  join.columns = [{ kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false }];
  join.joins = [{ table: 'customers', alias: 'T2', on: [{ left: col('T1', 'orders', 'customer_id'), right: col('T2', 'customers', 'customer_id') }] }];
  join.where = [
    { kind: 'cmp', left: col('T2', 'customers', 'country'), op: '=', right: lit('France') },
    { kind: 'cmp', left: { kind: 'datepart', part: 'year', arg: col('T1', 'orders', 'order_date') }, op: '=', right: lit('2021') },
  ];
  out.push(['join + date', join]);
  const group = emptySelect('orders');
  const status = col('T1', 'orders', 'status');
  const count = { kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false } as const;
  group.columns = [status, count];
  group.groupBy = [status];
  group.orderBy = [
    { expr: count, dir: 'DESC' },
    { expr: status, dir: 'ASC' },
  ];
  group.limit = 2;
  out.push(['group + order + limit', group]);
  const sub = emptySelect('products', 'S1');
  sub.columns = [{ kind: 'agg', fn: 'AVG', arg: col('S1', 'products', 'price'), distinct: false }];
  const nested = emptySelect('products');
  nested.columns = [col('T1', 'products', 'title')];
  nested.where = [{ kind: 'cmp', left: col('T1', 'products', 'price'), op: '>', right: { kind: 'scalar', query: sub } }];
  out.push(['scalar subquery', nested]);
  const ex = emptySelect('orders', 'S1');
  ex.columns = [{ kind: 'star' }];
  ex.where = [
    { kind: 'cmp', left: col('S1', 'orders', 'customer_id'), op: '=', right: col('T1', 'customers', 'customer_id') },
    { kind: 'cmp', left: col('S1', 'orders', 'status'), op: '=', right: lit('returned') },
  ];
  const exists = emptySelect('customers');
  exists.columns = [C('name')];
  exists.where = [{ kind: 'exists', query: ex, negated: true }];
  out.push(['not exists', exists]);
  const l = emptySelect('products');
  l.columns = [col('T1', 'products', 'category')];
  l.where = [{ kind: 'cmp', left: col('T1', 'products', 'price'), op: '>', right: lit(50) }];
  const r: SelectAst = { ...l, where: [{ kind: 'like', expr: col('T1', 'products', 'title'), pattern: '%Lamp%' }] };
  out.push(['except', { kind: 'setop', op: 'EXCEPT', left: l, right: r }]);
  const pct = emptySelect('orders');
  pct.columns = [{ kind: 'pct', cond: { kind: 'cmp', left: status, op: '=', right: lit('shipped') } }];
  out.push(['percentage', pct]);
  return out;
}

test('realizer + round-trip parser: every shape comes back to the same SQL in every style', () => {
  const env = makeParseEnv(schema, graph);
  for (const [name, ast] of shapes()) {
    for (const style of ['formal', 'colloquial', 'imperative', 'terse'] as const) {
      const q = realizeQuestion(ast, style, 1);
      assert.equal(printQuery(parseQuestion(q, env)), printQuery(ast), `${name} / ${style}: ${q}`);
    }
  }
  const [, joinAst] = shapes()[0];
  assert.equal(
    realizeQuestion(joinAst, 'formal'),
    "What is the number of orders where the customer country is 'France' and the year of the order date is 2021?",
  );
  assert.equal(realizeEvidence(joinAst), "'France' refers to customers.country = 'France'; the year of order date refers to strftime('%Y', orders.order_date)");
});

test('alignment drops a pair whose question says something else, and keeps a faithful one', async () => {
  await withPool({ size: 2 }, async (pool) => {
    const rejected: string[] = [];
    const ctx = ctxWith(pool, rejected);
    const env = makeParseEnv(schema, graph);
    const [, ast] = shapes()[0];
    const faithful = pair(ast);
    faithful.question = realizeQuestion(ast, 'imperative');
    assert.equal(await roundTrip(ctx, env, faithful), 'ok');
    const wrong = pair(ast);
    wrong.question = "What is the number of orders where the customer country is 'Japan' and the year of the order date is 2021?";
    assert.equal(await roundTrip(ctx, env, wrong), 'roundtrip_mismatch');
    const gibberish = pair(ast);
    gibberish.question = 'How many moons does Jupiter have?';
    assert.equal(await roundTrip(ctx, env, gibberish), 'roundtrip_unparsed');
    // the stage repairs by re-realizing: a garbled question is replaced by a faithful one
    const repaired = await alignStage(env).run([gibberish], ctx);
    assert.equal(repaired.length, 1);
    assert.equal(repaired[0].provenance.repairedFrom, 'p:roundtrip_unparsed');
    assert.deepEqual(rejected, []);
  });
});
