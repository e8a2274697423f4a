// The factory's SQL in each engine's dialect (src/sql/dialect.ts, print.ts): every construct the printer emits
// runs on SQLite and on PostgreSQL (a real server, music_store copied by `agro db copy`'s code) with the same
// result; and what reads a database for the prompt (schema, value index) reads both alike.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { col, emptySelect, lit, type Expr, type QueryAst, type SelectAst } from '../../src/factory/ast.ts';
import { printQuery, printSelect } from '../../src/factory/print.ts';
import { isNotTrue, nameIn } from '../../src/sql/dialect.ts';
import { introspectDatabase } from '../../src/sql/executor.ts';
import { databaseValueIndex } from '../../src/prompt/sources.ts';
import { resultsMatch, hasOrderBy } from '../../src/sql/compare.ts';
import { copySqliteToPostgres, runAdminSql } from '../../src/sql/pg-copy.ts';
import { sandboxRoleSql } from '../../src/sql/pg-setup.ts';
import { SqlEnvironment } from '../../src/agent/sql-env.ts';
import { PG, postgresForTests } from '../support/postgres.ts';
import { tempDir } from '../sql/helpers.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MUSIC = join(ROOT, 'data/databases/music_store/music_store.sqlite');

const count: Expr = { kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false };
const agg = (fn: 'SUM' | 'AVG' | 'MIN' | 'MAX' | 'COUNT', arg: Expr, distinct = false): Expr => ({ kind: 'agg', fn, arg, distinct });
const sel = (table: string, patch: Partial<SelectAst>): SelectAst => ({ ...emptySelect(table), ...patch });
const T = (table: string, column: string, alias = 'T1') => col(alias, table, column);

/** One query per construct the printer emits, each on music_store, named by what it exercises. */
const CASES: Array<[string, QueryAst]> = [
  ['integer division made real', sel('tracks', { columns: [T('tracks', 'track_id'), { kind: 'arith', op: '/', left: T('tracks', 'bytes'), right: T('tracks', 'milliseconds') }], where: [{ kind: 'cmp', left: T('tracks', 'track_id'), op: '<', right: lit(40) }], orderBy: [{ expr: T('tracks', 'track_id'), dir: 'ASC' }] })],
  ['integer arithmetic', sel('invoice_lines', { columns: [{ kind: 'arith', op: '*', left: T('invoice_lines', 'quantity'), right: T('invoice_lines', 'invoice_line_id') }, { kind: 'arith', op: '-', left: T('invoice_lines', 'invoice_id'), right: lit(3) }], where: [{ kind: 'cmp', left: T('invoice_lines', 'invoice_id'), op: '<=', right: lit(5) }] })],
  ['percentage of rows', sel('tracks', { columns: [{ kind: 'pct', cond: { kind: 'cmp', left: T('tracks', 'milliseconds'), op: '>', right: lit(250000) } }] })],
  ['year of an ISO date', sel('invoices', { distinct: true, columns: [{ kind: 'datepart', part: 'year', arg: T('invoices', 'invoice_date') }] })],
  ['month of an ISO date, compared', sel('invoices', { columns: [count], where: [{ kind: 'cmp', left: { kind: 'datepart', part: 'month', arg: T('invoices', 'invoice_date') }, op: '=', right: lit('03') }] })],
  ['year of a date-time text, grouped', sel('employees', { columns: [{ kind: 'datepart', part: 'year', arg: T('employees', 'hire_date') }, T('employees', 'last_name')], where: [{ kind: 'null', expr: T('employees', 'hire_date'), negated: true }] })],
  ['LIKE ignores case', sel('tracks', { columns: [T('tracks', 'name')], where: [{ kind: 'like', expr: T('tracks', 'name'), pattern: '%SKIES%' }] })],
  ['LIKE with a lower-case pattern', sel('artists', { columns: [T('artists', 'name')], where: [{ kind: 'like', expr: T('artists', 'name'), pattern: 'the%' }] })],
  ['IS NULL and IS NOT NULL', sel('customers', { columns: [T('customers', 'last_name'), T('customers', 'company')], where: [{ kind: 'null', expr: T('customers', 'state'), negated: false }, { kind: 'null', expr: T('customers', 'company'), negated: true }] })],
  ['string comparison is case-sensitive', sel('customers', { columns: [count], where: [{ kind: 'cmp', left: T('customers', 'country'), op: '=', right: lit('usa') }] })],
  ['join, group, having, order, limit', (() => {
    const g = col('T1', 'artists', 'name');
    return sel('artists', {
      columns: [g, count],
      joins: [{ table: 'albums', alias: 'T2', on: [{ left: col('T1', 'artists', 'artist_id'), right: col('T2', 'albums', 'artist_id') }] }],
      groupBy: [g],
      having: [{ kind: 'cmp', left: count, op: '>=', right: lit(2) }],
      orderBy: [{ expr: count, dir: 'DESC' }, { expr: g, dir: 'ASC' }],
      limit: 5,
    });
  })()],
  ['aggregates of integers and reals', sel('tracks', { columns: [agg('SUM', T('tracks', 'milliseconds')), agg('AVG', T('tracks', 'milliseconds')), agg('MIN', T('tracks', 'unit_price')), agg('MAX', T('tracks', 'bytes')), agg('COUNT', T('tracks', 'composer'), true)] })],
  ['average of a REAL column', sel('invoices', { columns: [T('invoices', 'billing_country'), agg('AVG', T('invoices', 'total'))], groupBy: [T('invoices', 'billing_country')] })],
  ['scalar subquery', sel('tracks', { columns: [T('tracks', 'name')], where: [{ kind: 'cmp', left: T('tracks', 'milliseconds'), op: '>', right: { kind: 'scalar', query: sel('tracks', { columns: [agg('AVG', T('tracks', 'milliseconds'))] }) } }, { kind: 'cmp', left: T('tracks', 'album_id'), op: '=', right: lit(3) }] })],
  ['IN and NOT IN subqueries', sel('artists', { columns: [T('artists', 'name')], where: [{ kind: 'in', expr: T('artists', 'artist_id'), negated: true, query: sel('albums', { columns: [T('albums', 'artist_id')], where: [{ kind: 'cmp', left: T('albums', 'release_year'), op: '<', right: lit(2000) }] }) }] })],
  ['correlated NOT EXISTS', (() => {
    const inner = sel('invoices', { from: { table: 'invoices', alias: 'S1' }, columns: [lit(1)], where: [{ kind: 'cmp', left: col('S1', 'invoices', 'customer_id'), op: '=', right: col('T1', 'customers', 'customer_id') }, { kind: 'cmp', left: col('S1', 'invoices', 'total'), op: '>', right: lit(10) }] });
    return sel('customers', { columns: [T('customers', 'first_name'), T('customers', 'last_name')], where: [{ kind: 'exists', negated: true, query: inner }] });
  })()],
  ...(['UNION', 'INTERSECT', 'EXCEPT'] as const).map((op): [string, QueryAst] => [
    `set operation ${op}`,
    { kind: 'setop', op, left: sel('customers', { columns: [T('customers', 'country')] }), right: sel('invoices', { columns: [T('invoices', 'billing_country')], where: [{ kind: 'cmp', left: T('invoices', 'total'), op: '>', right: lit(op === 'EXCEPT' ? 15 : 5) }] }) },
  ]),
  ['DISTINCT with ORDER BY a selected column and a real literal', sel('tracks', { distinct: true, columns: [T('tracks', 'unit_price')], where: [{ kind: 'cmp', left: T('tracks', 'unit_price'), op: '>=', right: lit(0.99) }], orderBy: [{ expr: T('tracks', 'unit_price'), dir: 'DESC' }] })],
];

describe('the factory dialect on both engines', { skip: PG.skip }, () => {
  let url: string;
  const tmp = tempDir('agro-pgdialect-');
  const live = postgresForTests(async (server) => {
    await copySqliteToPostgres(MUSIC, server.adminUrl('music_store'));
    await runAdminSql(server.adminUrl('music_store'), sandboxRoleSql({ role: 'agro_d', password: 'd-pw', database: 'music_store' }));
    url = server.url('agro_d', 'd-pw', 'music_store');
  });
  after(() => tmp.cleanup());

  for (const [name, q] of CASES) {
    test(name, async () => {
      const lite = printQuery(q);
      const pg = printQuery(q, 'postgres');
      const [a, b] = await Promise.all([live.exec.execute(MUSIC, lite), live.exec.execute(url, pg)]);
      assert.ok(a.ok, `SQLite: ${lite}: ${a.ok ? '' : a.message}`);
      assert.ok(b.ok, `PostgreSQL: ${pg}: ${b.ok ? '' : b.message}`);
      assert.ok(a.rows.length > 0, `${lite} returns rows on music_store`);
      // Reals summed in SQLite's binary floats and PostgreSQL's numeric differ past the 12th digit (docs/postgres.md).
      const ordered = hasOrderBy(lite);
      assert.ok(resultsMatch(b.rows, a.rows, { mode: 'spider', ordered, floatTol: 1e-9 }), `${name}\n  ${lite}\n  ${JSON.stringify(a.rows.slice(0, 4))}\n  ${pg}\n  ${JSON.stringify(b.rows.slice(0, 4))}`);
    });
  }

  test('the SQLite spelling of the constructs that differ fails on PostgreSQL (so the dialect is needed)', async () => {
    const sqliteOnly = [
      CASES.find(([n]) => n === 'year of an ISO date')![1],
      CASES.find(([n]) => n === 'LIKE ignores case')![1],
    ];
    const strftime = await live.exec.execute(url, printQuery(sqliteOnly[0]));
    assert.ok(!strftime.ok, 'strftime is not PostgreSQL');
    const like = await live.exec.execute(url, printQuery(sqliteOnly[1]));
    const ilike = await live.exec.execute(url, printQuery(sqliteOnly[1], 'postgres'));
    assert.ok(like.ok && ilike.ok && like.rows.length < ilike.rows.length, 'LIKE is case-sensitive on PostgreSQL');
    const division = sel('invoice_lines', { columns: [{ kind: 'arith', op: '/', left: T('invoice_lines', 'quantity'), right: lit(2) }], where: [{ kind: 'cmp', left: T('invoice_lines', 'invoice_line_id'), op: '=', right: lit(1) }] });
    const real = await live.exec.execute(url, printSelect(division, false, 'postgres'));
    assert.ok(real.ok && real.rows[0][0] === 0.5, `real division: ${JSON.stringify(real.ok && real.rows)}`);
    const notTrue = await live.exec.execute(url, `SELECT COUNT(*) FROM customers WHERE ${isNotTrue("state = 'CA'", 'postgres')}`);
    const notTrueLite = await live.exec.execute(MUSIC, `SELECT COUNT(*) FROM customers WHERE ${isNotTrue("state = 'CA'")}`);
    assert.ok(notTrue.ok && notTrueLite.ok && notTrue.rows[0][0] === notTrueLite.rows[0][0] && Number(notTrue.rows[0][0]) > 0, 'false or NULL: the same rows');
    assert.ok(!(await live.exec.execute(url, "SELECT COUNT(*) FROM customers WHERE (state = 'CA') IS NOT 1")).ok);
  });

  test('names: mixed case and reserved words are quoted for PostgreSQL (a --keep-case copy)', async () => {
    const path = join(tmp.dir, 'names.sqlite');
    const db = new Database(path);
    db.exec(`CREATE TABLE "Order" (id INTEGER PRIMARY KEY, "user" TEXT, "Total" INTEGER, "analyse" TEXT);
      INSERT INTO "Order" VALUES (1, 'ann', 10, 'x'), (2, 'bob', 20, 'y'), (3, 'ann', 5, 'z');`);
    db.close();
    await copySqliteToPostgres(path, live.server.adminUrl('names_db'), { keepCase: true });
    const q = sel('Order', { columns: [T('Order', 'user'), agg('SUM', T('Order', 'Total'))], where: [{ kind: 'cmp', left: T('Order', 'analyse'), op: '<>', right: lit('y') }], groupBy: [T('Order', 'user')] });
    const pg = printQuery(q, 'postgres');
    assert.equal(pg, 'SELECT "user", SUM("Total") FROM "Order" WHERE "analyse" <> \'y\' GROUP BY "user"');
    // SQLite leaves a name bare when it is unambiguous there (case-insensitive, USER and ANALYSE not reserved).
    assert.equal(printQuery(q), 'SELECT user, SUM(Total) FROM "Order" WHERE analyse <> \'y\' GROUP BY user');
    const [a, b] = await Promise.all([live.exec.execute(path, printQuery(q)), live.exec.execute(live.server.adminUrl('names_db'), pg)]);
    assert.ok(a.ok && b.ok, JSON.stringify([a, b]));
    assert.ok(resultsMatch(b.rows, a.rows, { mode: 'bird' }));
    assert.equal(nameIn('track_id', 'postgres'), 'track_id');
    assert.equal(nameIn('Track', 'postgres'), '"Track"');
    assert.equal(nameIn('user', 'postgres'), '"user"');
    assert.equal(nameIn('user'), 'user');
  });

  test('schema and value index read alike from both engines', async () => {
    const [lite, pg] = await Promise.all([introspectDatabase(MUSIC), introspectDatabase(url)]);
    const shape = (s: typeof lite) => s.tables.map((t) => `${t.name}(${t.columns.map((c) => `${c.name}:${c.affinity === 'NUMERIC' ? 'REAL' : c.affinity}`).join(',')}) pk=${t.primaryKey} fk=${t.foreignKeys.map((f) => `${f.fromColumns}->${f.toTable}`).join(';')} rows=${t.rowCount}`);
    assert.deepEqual(shape(pg), shape(lite));
    assert.equal(pg.dbId, 'music_store');
    const [a, b] = await Promise.all([databaseValueIndex(MUSIC), databaseValueIndex(url)]);
    assert.deepEqual(b.stats(), a.stats());
    assert.ok(a.stats().values > 100);
    for (const question of ['tracks by velvet wolfs', 'customers in sao paulo', 'rock albums from the usa', 'invoices billed in berlin']) {
      assert.deepEqual(b.lookup(question), a.lookup(question), question);
    }
  });

  test("the agent's grounded prompt is the same on both engines; a server is read by prepare() only", async () => {
    const env = new SqlEnvironment(live.exec, { schemaChars: 900 });
    const question = 'How many tracks by velvet wolfs were bought by customers in sao paulo?';
    assert.throws(() => env.promptSchema(url, question), /prepare\(\)/);
    await env.prepare(url);
    const lite = env.promptSchema(MUSIC, question);
    assert.match(lite, /Values: .*'Sao Paulo'/);
    assert.equal(env.promptSchema(url, question), lite);
    // An episode prepares its own database: a fresh environment starts on the server without being told.
    const ep = await new SqlEnvironment(live.exec).start({ id: '1', dbId: 'music_store', dbPath: url, question, goldSql: 'SELECT 1' });
    assert.match(ep.opening[0].content, /tracks\(track_id/);
  });
});
