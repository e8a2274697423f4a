// Human gold SQL asked in the factory's words (gold.ts): hand-written SQL over a bundled database is read into
// the AST, realized, and kept only when the question parses back to a query with the SQL's result.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { SqlPool } from '../../src/sql/pool.ts';
import { testSuiteMatch } from '../../src/sql/testsuite.ts';
import { resultsMatch } from '../../src/sql/compare.ts';
import { goldPairs, readGoldSql, realizableForm, rootAtCounted, summarizeGold, tidySql } from '../../src/factory/gold.ts';
import { astFromSql } from '../../src/factory/from-sql.ts';
import { databaseLanguage, loadSchema } from '../../src/factory/pipeline.ts';
import { makeParseEnv, parseQuestion } from '../../src/factory/language/general-parse.ts';
import { printQuery } from '../../src/factory/print.ts';
import type { SelectAst } from '../../src/factory/ast.ts';
import { buildSchemaGraph } from '../../src/factory/schema-graph.ts';
import { tmpDir } from './fixtures.ts';

const db = { dbId: 'music_store', path: join('data', 'databases', 'music_store', 'music_store.sqlite') };

test('tidySql: one space where the SQL had whitespace, quoted text and comments as SQL reads them', () => {
  assert.equal(tidySql("SELECT count(*)  FROM  tracks\n WHERE name  =  'a  b' -- why\n;"), "SELECT count(*) FROM tracks WHERE name = 'a  b'");
  assert.equal(tidySql('SELECT T1.name FROM t AS T1'), 'SELECT T1.name FROM t AS T1');
});

test('realizableForm: the group first, SELECT * as its columns, count(*) > k as >= k + 1, an unshown group by its shown column', async () => {
  const schema = await loadSchema(db.path);
  const graph = buildSchemaGraph(schema);
  const form = (sql: string) => {
    const r = astFromSql(sql, schema, graph);
    assert.ok(r.ok, sql);
    const q = realizableForm(r.ast, schema, graph);
    assert.deepEqual(realizableForm(q, schema, graph), q, 'a second pass changes nothing');
    return q as SelectAst;
  };
  const a = form('SELECT count(*), genre_id FROM tracks GROUP BY genre_id HAVING count(*) > 3');
  assert.deepEqual(a.columns.map((e) => e.kind), ['col', 'agg']);
  assert.deepEqual(a.having[0].kind === 'cmp' && [a.having[0].op, a.having[0].right], ['>=', { kind: 'lit', value: 4 }]);
  assert.deepEqual(form('SELECT * FROM genres').columns.map((e) => e.kind === 'col' && e.column), ['genre_id', 'name']);
  const b = form('SELECT T2.name FROM tracks AS T1 JOIN genres AS T2 ON T1.genre_id = T2.genre_id GROUP BY T1.genre_id ORDER BY count(*) DESC LIMIT 1');
  assert.deepEqual(b.groupBy, [{ kind: 'col', alias: 'T2', table: 'genres', column: 'name' }]);
  const c = form('SELECT name FROM tracks WHERE bytes > 1 AND milliseconds >= 2 GROUP BY name HAVING count(*) > 1.5');
  assert.deepEqual(c.having[0].kind === 'cmp' && c.having[0].op, '>', 'only a whole k');
  // The first three say the same query: the rewritten AST printed gives the SQL's result.
  const pool = new SqlPool({ size: 1 });
  try {
    for (const sql of ['SELECT count(*), genre_id FROM tracks GROUP BY genre_id HAVING count(*) > 3', 'SELECT * FROM genres WHERE name LIKE \'%o%\'']) {
      const [x, y] = await Promise.all([pool.execute(db.path, sql), pool.execute(db.path, printQuery(form(sql)))]);
      assert.ok(x.ok && y.ok && x.rows.length > 0 && resultsMatch(y.rows, x.rows, { mode: 'spider' }), sql);
    }
  } finally {
    await pool.close();
  }
});

test('rootAtCounted: a join that counts rows is rooted at the table whose rows it counts, with the same result', async () => {
  const schema = await loadSchema(db.path);
  const graph = buildSchemaGraph(schema);
  const ast = (sql: string) => {
    const r = astFromSql(sql, schema, graph);
    assert.ok(r.ok && r.ast.kind === 'select', sql);
    return r.ast as SelectAst;
  };
  const chain = 'SELECT T1.name, count(*) FROM artists AS T1 JOIN albums AS T2 ON T1.artist_id = T2.artist_id JOIN tracks AS T3 ON T2.album_id = T3.album_id GROUP BY T1.name';
  const q = rootAtCounted(ast(chain), graph);
  assert.deepEqual([q.from.table, ...q.joins.map((j) => j.table)], ['tracks', 'albums', 'artists']);
  assert.ok(q.joins.every((j, k) => j.on.every((p) => p.right.alias === j.alias && [q.from.alias, ...q.joins.slice(0, k).map((x) => x.alias)].includes(p.left.alias))), 'each ON names an earlier table first');
  const plain = ast('SELECT T1.name FROM artists AS T1 JOIN albums AS T2 ON T1.artist_id = T2.artist_id');
  assert.equal(rootAtCounted(plain, graph), plain, 'nothing counted: as it was');
  const pool = new SqlPool({ size: 1 });
  try {
    const [x, y] = await Promise.all([pool.execute(db.path, chain), pool.execute(db.path, printQuery(q))]);
    assert.ok(x.ok && y.ok && x.rows.length > 0 && resultsMatch(y.rows, x.rows, { mode: 'spider' }));
  } finally {
    await pool.close();
  }
});

test('goldPairs: queries that convert and pass the round trip are kept with the human SQL; the rest say where they stopped', async () => {
  const sqls = [
    'SELECT count(*) FROM tracks WHERE milliseconds  >  300000',
    'SELECT name FROM artists WHERE country = "USA"',
    'SELECT T1.title FROM albums AS T1 JOIN artists AS T2 ON T1.artist_id = T2.artist_id WHERE T2.country = \'Japan\'',
    'SELECT billing_country, count(*) FROM invoices GROUP BY billing_country',
    'SELECT name FROM tracks ORDER BY milliseconds DESC LIMIT 1',
    'SELECT count(DISTINCT composer) FROM tracks',
    'SELECT avg(total) FROM invoices WHERE billing_country = \'Germany\'',
    'SELECT name FROM artists WHERE country = \'USA\' OR country = \'Japan\'', // OR: said "either ... or ...", and parsed back
    'SELECT name FROM artists WHERE country = \'Atlantis\'', // no answer: proves nothing in a round trip
    'SELECT upper(name) FROM artists', // a function the AST cannot say
  ];
  const items = sqls.map((sql, index) => ({ index, dbId: db.dbId, sql }));
  const pool = new SqlPool({ size: 1 });
  try {
    const { pairs, outcomes } = await goldPairs(db, items, { executor: pool, seed: 0, phrasings: 2 });
    assert.equal(outcomes.length, sqls.length);
    assert.deepEqual(outcomes[7], { index: 7, shape: 'plain', step: 'kept' });
    assert.deepEqual(outcomes[8], { index: 8, shape: 'plain', step: 'execute', reason: 'empty_result' });
    assert.deepEqual(outcomes[9], { index: 9, shape: 'plain', step: 'convert', reason: 'function_upper' });
    assert.ok(pairs.length >= 6, `kept ${pairs.length}: ${JSON.stringify(outcomes)}`);
    assert.equal(pairs.length, outcomes.filter((o) => o.step === 'kept').length);
    // Each kept question (and paraphrase) leads back, by the factory's parser alone, to the human query's result.
    const schema = await loadSchema(db.path);
    const { graph, lex } = await databaseLanguage(schema, pool, 5000);
    const env = makeParseEnv(schema, graph, lex);
    for (const p of pairs) {
      assert.equal(p.sql, tidySql(sqls[Number(p.id.slice('gold-'.length))]), 'the pair keeps the human SQL');
      assert.ok(p.question.length > 0 && !/SELECT/i.test(p.question));
      for (const q of [p.question, ...(p.paraphrases ?? [])]) {
        const back = printQuery(parseQuestion(q, env));
        assert.ok((await testSuiteMatch(pool, back, p.sql, [db.path], { mode: 'spider' })).match, `${q} -> ${back} vs ${p.sql}`);
      }
    }
    const s = summarizeGold(outcomes, pairs);
    assert.equal(s.queries, sqls.length);
    assert.equal(s.converted, sqls.length - 1);
    assert.equal(s.runnable, sqls.length - 2);
    assert.equal(s.kept, pairs.length);
    assert.equal(Object.values(s.byShape).reduce((a, r) => a + r.kept, 0), s.kept);
    assert.equal(Object.values(s.dropped).reduce((a, n) => a + n, 0), s.queries - s.kept);
    assert.equal(s.dropped['convert:function_upper'], 1);
  } finally {
    await pool.close();
  }
});

test('readGoldSql: JSON lines with db_id and query; anything else is one line naming the line', () => {
  const dir = tmpDir();
  const good = join(dir, 'gold.jsonl');
  writeFileSync(good, '{"db_id": "a", "query": "SELECT 1 FROM t"}\n\n{"db_id": "b", "query": "SELECT 2 FROM t", "extra": 1}\n');
  assert.deepEqual(readGoldSql(good), [
    { index: 0, dbId: 'a', sql: 'SELECT 1 FROM t' },
    { index: 2, dbId: 'b', sql: 'SELECT 2 FROM t' },
  ]);
  const bad = join(dir, 'bad.jsonl');
  writeFileSync(bad, '{"db_id": "a", "query": "SELECT 1"}\n{"db_id": "a"}\n');
  assert.throws(() => readGoldSql(bad), /bad\.jsonl:2: not a JSON object/);
  assert.throws(() => readGoldSql(join(dir, 'none.jsonl')), /gold file not found/);
});
