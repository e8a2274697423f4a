// Issue 34, the factory on a server: variant databases as schemas of the database (sql/pg-variants.ts,
// factory/augment.ts buildServerVariants), made by a role that may create them, skipped with one line by one
// that may not, read back through the sandbox by URL.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runFactory } from '../../src/factory/pipeline.ts';
import { suiteVariants } from '../../src/data/databases.ts';
import { introspectDatabase } from '../../src/sql/executor.ts';
import { copySqliteToPostgres, runAdminSql } from '../../src/sql/pg-copy.ts';
import { sandboxRoleSql } from '../../src/sql/pg-setup.ts';
import { buildPgVariant, dropVariantSchemas, variantUrl } from '../../src/sql/pg-variants.ts';
import { testSuiteMatch } from '../../src/sql/testsuite.ts';
import { col, emptySelect, lit } from '../../src/factory/ast.ts';
import { ambiguityReason } from '../../src/factory/augment.ts';
import { printQuery } from '../../src/factory/print.ts';
import { silentProgress } from '../../src/util/progress.ts';
import type { StageContext, SynthPair } from '../../src/factory/types.ts';
import { Rng } from '../../src/util/rng.ts';
import { PG, postgresForTests } from '../support/postgres.ts';
import { makeShopDb, tmpDir } from './fixtures.ts';

describe('variant databases on a PostgreSQL server', { skip: PG.skip }, () => {
  let maker: string; // may create schemas in shop (and read its tables)
  let reader: string; // the sandboxed role: read grants only
  const live = postgresForTests(async (server) => {
    await copySqliteToPostgres(makeShopDb(tmpDir()), server.adminUrl('shop'));
    await runAdminSql(server.adminUrl('shop'), [
      ...sandboxRoleSql({ role: 'agro_r', password: 'r-pw', database: 'shop' }),
      "CREATE ROLE agro_maker LOGIN PASSWORD 'm-pw'",
      'GRANT CONNECT, CREATE ON DATABASE shop TO agro_maker',
      'GRANT USAGE ON SCHEMA public TO agro_maker',
      'GRANT SELECT ON ALL TABLES IN SCHEMA public TO agro_maker',
    ]);
    maker = server.url('agro_maker', 'm-pw', 'shop');
    reader = server.url('agro_r', 'r-pw', 'shop');
  });
  const schemas = async (): Promise<Array<[string, number]>> =>
    (await live.server.admin(`SELECT nspname, oid::int FROM pg_namespace WHERE nspname LIKE 'agro\\_variant\\_%' ORDER BY nspname`, 'shop')) as Array<[string, number]>;

  test('a role that may create schemas gets variants: same tables, other rows, recorded, reused, and the test suite compares on them', async () => {
    const out = join(tmpDir(), 'out');
    const logs: string[] = [];
    const r = await runFactory({ db: maker, out, n: 30, seed: 1, variants: 2, variantRows: 200 }, { executor: live.exec, log: (l) => logs.push(l) });
    assert.deepEqual(logs, []);
    const made = await schemas();
    assert.equal(made.length, 2);
    // The manifest names each variant by the database's URL with its schema as search_path, without the password.
    assert.equal(r.manifest.variants.length, 2);
    for (const [i, v] of r.manifest.variants.entries()) {
      assert.ok(v.startsWith('postgres://agro_maker:***@'), v);
      assert.match(v, new RegExp(`options=-c%20search_path%3D${made[i][0]}$`));
    }
    assert.ok(!readFileSync(join(out, 'manifest.json'), 'utf8').includes('m-pw'));
    // What the suite readers find: the same URLs, with the password of the database's URL.
    const urls = suiteVariants(join(out, 'variants'), r.manifest.dbId, maker);
    assert.deepEqual(urls, made.map(([s]) => variantUrl(maker, s)));
    // The same tables and columns as the original, read through the sandboxed executor by URL.
    const shape = (s: Awaited<ReturnType<typeof introspectDatabase>>) => s.tables.map((t) => `${t.name}(${t.columns.map((c) => c.name).join(',')})`);
    const original = await introspectDatabase(maker);
    for (const u of urls) assert.deepEqual(shape(await introspectDatabase(u)), shape(original));
    // Other rows: perturbed prices, foreign keys pointing at rows the variant has.
    const one = async (db: string, sql: string) => {
      const x = await live.exec.execute(db, sql);
      assert.ok(x.ok, x.ok ? '' : x.message);
      return x.rows[0][0];
    };
    const sum = await one(maker, 'SELECT SUM(price) FROM products');
    for (const u of urls) {
      assert.notEqual(await one(u, 'SELECT SUM(price) FROM products'), sum);
      assert.equal(await one(u, 'SELECT COUNT(*) FROM orders WHERE customer_id NOT IN (SELECT customer_id FROM customers)'), 0);
      // The session is still read-only on a variant's URL.
      assert.equal(await one(u, "SELECT current_setting('default_transaction_read_only')"), 'on');
    }
    // The sandboxed role reads the original's tables, so it reads the variants' (the reward may run as it).
    for (const [s] of made) assert.equal(await one(variantUrl(reader, s), 'SELECT SUM(price) FROM products'), await one(urls[made.findIndex(([x]) => x === s)], 'SELECT SUM(price) FROM products'));
    // Every written pair ran on every variant (the ambiguity stage requires it).
    for (const row of r.rows.slice(0, 10)) for (const u of urls) assert.ok((await live.exec.execute(u, row.SQL)).ok, row.SQL);
    // Test-suite comparison (what the reward and `agro eval --suite` do): a constant right on the original is wrong on a variant.
    const lit = await testSuiteMatch(live.exec, `SELECT ${String(sum)}`, 'SELECT SUM(price) FROM products', [maker, ...urls], { mode: 'spider' });
    assert.equal(lit.perDb[0].match, true);
    assert.equal(lit.match, false);
    assert.equal((await testSuiteMatch(live.exec, 'SELECT SUM(T1.price) FROM products AS T1', 'SELECT SUM(price) FROM products', [maker, ...urls], { mode: 'spider' })).match, true);
    // A rerun with the same arguments reuses them; other arguments rebuild them.
    await runFactory({ db: maker, out, n: 30, seed: 1, variants: 2, variantRows: 200 }, { executor: live.exec });
    assert.deepEqual(await schemas(), made);
    await runFactory({ db: maker, out, n: 30, seed: 2, variants: 1, variantRows: 200 }, { executor: live.exec });
    const remade = await schemas();
    assert.equal(remade.length, 1);
    assert.notEqual(remade[0][1], made[0][1]);
    assert.deepEqual(await dropVariantSchemas(maker), [remade[0][0]]);
    assert.deepEqual(await schemas(), []);
  });

  test('views come with the variants: made again over the variant\'s tables in dependency order, read by the sandboxed role, dropped with the variant', async () => {
    // A database of its own (shopv), with views: one over the tables, one over that view (named so that it sorts
    // first: made in dependency order, not name order), a materialized view, and one whose definition must name
    // the original's table with its schema (a CTE takes its name): that one cannot read the variant's rows.
    await copySqliteToPostgres(makeShopDb(tmpDir()), live.server.adminUrl('shopv'));
    const spendSql = `SELECT c.customer_id, c.name, SUM(p.price * i.quantity) AS spent
      FROM customers c JOIN orders o ON o.customer_id = c.customer_id JOIN order_items i ON i.order_id = o.order_id JOIN products p ON p.product_id = i.product_id
      GROUP BY c.customer_id, c.name`;
    await runAdminSql(live.server.adminUrl('shopv'), [
      `CREATE VIEW customer_spend AS ${spendSql}`,
      'CREATE VIEW big_spenders AS SELECT name, spent FROM customer_spend WHERE spent > 100',
      'CREATE MATERIALIZED VIEW category_prices AS SELECT category, SUM(price) AS total FROM products GROUP BY category',
      'CREATE VIEW odd_count AS WITH customers AS (SELECT 1 AS x) SELECT (SELECT COUNT(*) FROM public.customers) AS n FROM customers',
      ...sandboxRoleSql({ role: 'agro_vr', password: 'vr-pw', database: 'shopv' }),
      "CREATE ROLE agro_vm LOGIN PASSWORD 'vm-pw'",
      'GRANT CONNECT, CREATE ON DATABASE shopv TO agro_vm',
      'GRANT USAGE ON SCHEMA public TO agro_vm',
      'GRANT SELECT ON ALL TABLES IN SCHEMA public TO agro_vm',
    ]);
    const makerV = live.server.url('agro_vm', 'vm-pw', 'shopv');
    const readerV = live.server.url('agro_vr', 'vr-pw', 'shopv');
    const out = join(tmpDir(), 'out');
    const logs: string[] = [];
    const r = await runFactory({ db: makerV, out, n: 20, seed: 3, variants: 2, variantRows: 200 }, { executor: live.exec, log: (l) => logs.push(l) });
    const urls = suiteVariants(join(out, 'variants'), r.manifest.dbId, makerV);
    assert.equal(urls.length, 2);
    const made = (await live.server.admin(`SELECT nspname FROM pg_namespace WHERE nspname LIKE 'agro\\_variant\\_%' ORDER BY nspname`, 'shopv')).map((x) => String(x[0]));
    assert.deepEqual(
      logs,
      made.map((s) => `variant ${s}: view odd_count left out (it would read the original's public.customers)`),
    );
    // The variant has the original's tables and views (odd_count aside), by name and kind.
    const shape = (s: Awaited<ReturnType<typeof introspectDatabase>>) => s.tables.filter((t) => t.name !== 'odd_count').map((t) => `${t.kind} ${t.name}(${t.columns.map((c) => c.name).join(',')})`);
    const original = shape(await introspectDatabase(makerV));
    assert.ok(original.includes('view customer_spend(customer_id,name,spent)') && original.includes('view category_prices(category,total)'), original.join('; '));
    for (const u of urls) assert.deepEqual(shape(await introspectDatabase(u)), original);

    const one = async (db: string, sql: string) => {
      const x = await live.exec.execute(db, sql);
      assert.ok(x.ok, x.ok ? '' : `${sql}: ${x.message}`);
      return x.rows[0][0];
    };
    // Each view reads the variant's rows: what it gives equals its definition run on the variant's tables, and differs from the original's.
    const checks: Array<[string, string]> = [
      ['SELECT SUM(spent) FROM customer_spend', `SELECT SUM(spent) FROM (${spendSql}) s`],
      ['SELECT COUNT(*) FROM big_spenders', `SELECT COUNT(*) FROM (${spendSql}) s WHERE spent > 100`],
      ['SELECT SUM(total) FROM category_prices', 'SELECT SUM(price) FROM products'],
    ];
    for (const [viaView, viaTables] of checks) {
      const onOriginal = await one(makerV, viaView);
      assert.equal(onOriginal, await one(makerV, viaTables));
      for (const [i, u] of urls.entries()) {
        const v = await one(u, viaView);
        assert.equal(v, await one(u, viaTables), `${viaView} on variant ${i + 1}`);
        assert.notEqual(v, onOriginal, `${viaView} on variant ${i + 1} gives the original's answer`);
        // The sandboxed role reads the original's views, so it reads the variants' (read-only session and all).
        assert.equal(await one(variantUrl(readerV, made[i]), viaView), v);
      }
    }
    assert.equal(await one(variantUrl(readerV, made[0]), "SELECT current_setting('default_transaction_read_only')"), 'on');

    // A factory pair over a view survives the factory's checks on the variants (the ambiguity stage runs it on
    // each, and the test suite compares it on all): it failed on every variant when the views were not copied.
    const schema = await introspectDatabase(makerV);
    const ctx: StageContext = { dbId: 'shopv', dbPath: makerV, dialect: 'postgres', schema, executor: live.exec, rng: new Rng(1), progress: silentProgress, variants: urls, reject() {}, timeoutMs: 5000 };
    const big = emptySelect('customer_spend');
    big.columns = [col('T1', 'customer_spend', 'name')];
    big.where = [{ kind: 'cmp', left: col('T1', 'customer_spend', 'spent'), op: '>', right: lit(150) }];
    const sql = printQuery(big, 'postgres');
    const pair: SynthPair = { id: 'v', dbId: 'shopv', sql, ast: big, question: '', evidence: '', style: 'formal', difficulty: 'simple', provenance: { stages: [], checks: [] } };
    assert.equal(await ambiguityReason(ctx, pair), null);
    const viaTables = `SELECT name FROM (${spendSql}) s WHERE spent > 150`;
    const suite = await testSuiteMatch(live.exec, sql, viaTables, [makerV, ...urls], { mode: 'spider' });
    assert.deepEqual(suite.perDb.map((d) => d.match), [true, true, true]);

    // Dropped with the variant (`agro db drop-variants`); the original's views stay.
    assert.deepEqual(await dropVariantSchemas(makerV), made);
    assert.deepEqual(await live.server.admin(`SELECT count(*)::int FROM pg_class WHERE relkind IN ('v', 'm') AND relnamespace <> 'public'::regnamespace AND relnamespace::regnamespace::text LIKE 'agro%'`, 'shopv'), [[0]]);
    assert.deepEqual(await live.server.admin(`SELECT relname FROM pg_class WHERE relkind IN ('v', 'm') AND relnamespace = 'public'::regnamespace ORDER BY 1`, 'shopv'), [['big_spenders'], ['category_prices'], ['customer_spend'], ['odd_count']]);
  });

  test('the sandboxed role may not create schemas: one line says so, and the pairs are checked on the original alone', async () => {
    const logs: string[] = [];
    const r = await runFactory({ db: reader, out: join(tmpDir(), 'out'), n: 20, seed: 1, variants: 2 }, { executor: live.exec, log: (l) => logs.push(l) });
    assert.equal(logs.length, 1);
    assert.match(logs[0], /^no variant databases on PostgreSQL \(2 asked; role agro_r may not CREATE schemas in database shop\): pairs are checked on postgres:\/\/agro_r:\*\*\*@/);
    assert.deepEqual(r.manifest.variants, []);
    assert.ok(r.rows.length > 0);
    assert.deepEqual(await schemas(), []);
  });

  test('a variant whose making fails leaves nothing behind (one transaction)', async () => {
    await assert.rejects(
      buildPgVariant(maker, 'agro_variant_broken_1', ['customers'], async (w) => {
        await w.insert('customers', ['customer_id', 'name'], [[1, 'a']]);
        throw new Error('interrupted');
      }),
      /cannot make variant agro_variant_broken_1 .*interrupted/,
    );
    assert.deepEqual(await schemas(), []);
  });

  test('a URL\'s own options come before the session\'s: they cannot turn the read-only session off', async () => {
    // agro_maker's role sets nothing: the session's options alone keep it read-only.
    const u = new URL(maker);
    u.search = `?options=${encodeURIComponent('-c default_transaction_read_only=off -c search_path=pg_catalog,public')}`;
    const x = await live.exec.execute(u.toString(), "SELECT current_setting('default_transaction_read_only'), current_setting('search_path')");
    assert.ok(x.ok, x.ok ? '' : x.message);
    assert.deepEqual(x.rows[0], ['on', 'pg_catalog,public']);
  });
});
