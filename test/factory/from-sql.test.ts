// SQL text -> the factory's AST (from-sql.ts), on hand-written SQL over the bundled databases: what the AST
// can say converts and means the same (the AST printed gives the query's result), the rest is refused with its reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { hasOrderBy, resultsMatch } from '../../src/sql/compare.ts';
import { buildSchemaGraph } from '../../src/factory/schema-graph.ts';
import { astFromSql } from '../../src/factory/from-sql.ts';
import { printQuery } from '../../src/factory/print.ts';
import type { QueryAst, SelectAst } from '../../src/factory/ast.ts';

const dbPath = (id: string) => join('data', 'databases', id, `${id}.sqlite`);
const envOf = (id: string) => {
  const schema = introspectSchema(dbPath(id));
  return { schema, graph: buildSchemaGraph(schema) };
};
const music = envOf('music_store');
const school = envOf('school');

function convert(sql: string, env = music): QueryAst {
  const r = astFromSql(sql, env.schema, env.graph);
  assert.ok(r.ok, `${sql}: ${r.ok ? '' : r.reason}`);
  return r.ast;
}
const select = (sql: string, env = music): SelectAst => {
  const q = convert(sql, env);
  assert.equal(q.kind, 'select');
  return q as SelectAst;
};

/** Queries the AST can say, in the ways people write them (aliases, case, double-quoted values, BETWEEN ...). */
const CONVERTIBLE: Array<[string, string]> = [
  ['music_store', 'SELECT count(*) FROM tracks WHERE milliseconds  >  300000'],
  ['music_store', 'SELECT name AS composer, composer AS name FROM tracks WHERE composer IS NOT NULL AND name LIKE \'%e%\' ORDER BY composer, name LIMIT 7'],
  ['music_store', 'select name, composer from TRACKS where unit_price >= 0.99 and composer is not null order by name limit 5'],
  ['music_store', 'SELECT T1.title FROM albums AS T1 JOIN artists AS T2 ON T1.artist_id = T2.artist_id WHERE T2.country = "USA"'],
  ['music_store', 'SELECT DISTINCT T2.name FROM tracks AS T1 JOIN genres AS T2 ON T2.genre_id = T1.genre_id WHERE T1.bytes BETWEEN 1000000 AND 5000000'],
  ['music_store', 'SELECT T2.name, count(*) FROM albums AS T1 JOIN artists AS T2 ON T1.artist_id = T2.artist_id GROUP BY T2.artist_id ORDER BY count(*) DESC LIMIT 3'],
  ['music_store', 'SELECT country, avg(total) AS mean FROM invoices JOIN customers ON invoices.customer_id = customers.customer_id GROUP BY country HAVING count(*) >= 2 ORDER BY mean DESC'],
  ['music_store', 'SELECT name FROM tracks WHERE track_id NOT IN (SELECT track_id FROM invoice_lines)'],
  ['music_store', 'SELECT name FROM tracks WHERE unit_price > (SELECT avg(unit_price) FROM tracks) AND name LIKE "%a%"'],
  ['music_store', 'SELECT country FROM customers WHERE city IS NOT NULL INTERSECT SELECT country FROM employees'],
  ['music_store', 'SELECT name FROM genres EXCEPT SELECT T2.name FROM tracks AS T1 JOIN genres AS T2 ON T1.genre_id = T2.genre_id WHERE T1.milliseconds > 400000'],
  ['music_store', 'SELECT count(DISTINCT billing_country), max(total) - min(total) FROM invoices WHERE strftime(\'%Y\', invoice_date) = \'2021\''],
  ['music_store', 'SELECT T3.name FROM invoice_lines AS T1 JOIN tracks AS T2 ON T1.track_id = T2.track_id JOIN media_types AS T3 ON T2.media_type_id = T3.media_type_id WHERE T1.quantity != 1 AND T3.name IN ("MPEG audio file");'],
  ['school', 'SELECT T1.title, T2.name FROM courses AS T1 JOIN departments AS T2 ON T1.dept_id = T2.dept_id WHERE T1.credits = 4 UNION SELECT title, "none" FROM courses WHERE credits < 3'],
  ['school', 'SELECT T1.first_name FROM students AS T1 JOIN enrollments AS T2 ON T1.student_id = T2.student_id JOIN sections AS T3 ON T2.course_id = T3.course_id AND T2.term = T3.term WHERE T3.capacity >= 30 AND T2.grade >= 3.5'],
];

test('from SQL: what the AST can say converts, and the AST printed gives the same result on the database', async () => {
  const pool = new SqlPool({ size: 1 });
  try {
    for (const [id, sql] of CONVERTIBLE) {
      const env = id === 'school' ? school : music;
      const printed = printQuery(convert(sql, env));
      const [a, b] = await Promise.all([pool.execute(dbPath(id), sql), pool.execute(dbPath(id), printed)]);
      assert.ok(a.ok && b.ok, `${sql} / ${printed}`);
      assert.ok(a.rows.length > 0, `a query that returns nothing tests nothing: ${sql}`);
      assert.ok(resultsMatch(b.rows, a.rows, { mode: 'spider', ordered: hasOrderBy(sql) }), `${sql}\n  printed: ${printed}`);
    }
  } finally {
    await pool.close();
  }
});

test('from SQL: names resolve as SQLite resolves them', () => {
  // Aliases become the AST's T1, T2 in FROM order; unqualified columns go to the one table that has them.
  const j = select('SELECT title, T2.name FROM albums AS a JOIN artists AS T2 ON a.artist_id = T2.artist_id');
  assert.deepEqual(j.columns, [
    { kind: 'col', alias: 'T1', table: 'albums', column: 'title' },
    { kind: 'col', alias: 'T2', table: 'artists', column: 'name' },
  ]);
  assert.deepEqual(j.joins[0].on, [{ left: { kind: 'col', alias: 'T1', table: 'albums', column: 'artist_id' }, right: { kind: 'col', alias: 'T2', table: 'artists', column: 'artist_id' } }]);
  // Case-insensitive names come back as the schema spells them.
  assert.deepEqual(select('SELECT NAME FROM Artists').columns[0], { kind: 'col', alias: 'T1', table: 'artists', column: 'name' });
  // A double-quoted name that names no column is a string (SQLite's rule); one that names a column is the column.
  const w = select('SELECT name FROM artists WHERE country = "USA" AND name <> "country"').where;
  assert.deepEqual(w[0], { kind: 'cmp', left: { kind: 'col', alias: 'T1', table: 'artists', column: 'country' }, op: '=', right: { kind: 'lit', value: 'USA' } });
  assert.deepEqual(w[1], { kind: 'cmp', left: { kind: 'col', alias: 'T1', table: 'artists', column: 'name' }, op: '<>', right: { kind: 'col', alias: 'T1', table: 'artists', column: 'country' } });
});

test('from SQL: BETWEEN, one-value IN and != are said as the AST says them; a result alias in ORDER BY is its expression', () => {
  const q = select('SELECT name FROM tracks WHERE bytes BETWEEN 10 AND 20 AND genre_id IN (3) AND composer != \'x\'');
  assert.deepEqual(
    q.where.map((c) => (c.kind === 'cmp' ? [c.op, c.right] : c.kind)),
    [['>=', { kind: 'lit', value: 10 }], ['<=', { kind: 'lit', value: 20 }], ['=', { kind: 'lit', value: 3 }], ['<>', { kind: 'lit', value: 'x' }]],
  );
  const o = select('SELECT genre_id, count(*) AS n FROM tracks GROUP BY genre_id ORDER BY n DESC LIMIT 2');
  assert.deepEqual(o.orderBy, [{ expr: { kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false }, dir: 'DESC' }]);
  assert.equal(o.limit, 2);
  // SQLite: in ORDER BY a result alias wins over a column of the same name; elsewhere the column does.
  const shadow = select('SELECT name AS composer FROM tracks WHERE composer IS NOT NULL ORDER BY composer');
  assert.deepEqual([shadow.orderBy[0].expr.kind === 'col' && shadow.orderBy[0].expr.column, shadow.where[0].kind === 'null' && shadow.where[0].expr.column], ['name', 'composer']);
  const sub = select('SELECT name FROM artists WHERE artist_id IN (SELECT artist_id FROM albums WHERE release_year > 2000)');
  const c = sub.where[0];
  assert.ok(c.kind === 'in' && !c.negated && c.query.from.alias === 'S1' && c.query.where.length === 1);
});

test('from SQL: what the AST cannot say is refused with its reason', () => {
  const refused: Array<[string, string]> = [
    ['SELECT T1.name FROM artists AS T1 LEFT JOIN albums AS T2 ON T1.artist_id = T2.artist_id', 'outer_join'],
    ['SELECT name FROM artists WHERE country NOT IN (\'USA\', NULL)', 'in_list'],
    ['SELECT T1.first_name FROM customers AS T1 JOIN employees AS T2 ON T1.city = T2.country', 'join_not_on_foreign_key'],
    // The same name that keys neither side: two tables' countries are no key (by name; their values may say otherwise).
    ['SELECT T1.first_name FROM customers AS T1 JOIN employees AS T2 ON T1.country = T2.country', 'join_not_on_foreign_key'],
    ['SELECT T1.first_name FROM customers AS T1 JOIN invoices AS T2 JOIN genres AS T3 ON T1.customer_id = T2.customer_id', 'join_without_on'],
    ['SELECT name FROM artists UNION ALL SELECT name FROM genres', 'union_all'],
    ['SELECT count(*) FROM (SELECT DISTINCT country FROM artists)', 'derived_table'],
    ['SELECT CASE WHEN bytes > 10 THEN 1 ELSE 0 END FROM tracks', 'case'],
    ['SELECT name FROM artists AS A WHERE EXISTS (SELECT 1 FROM albums AS B WHERE B.artist_id = A.artist_id)', 'exists'],
    ['SELECT name FROM artists AS A WHERE 1 IN (SELECT 1 FROM albums AS B WHERE B.artist_id = A.artist_id)', 'in_on_expression'],
    ['SELECT name FROM artists WHERE artist_id IN (SELECT A.artist_id FROM albums WHERE title = A.name)', 'unknown_alias'],
    ['SELECT name FROM artists AS A WHERE artist_id IN (SELECT artist_id FROM albums WHERE title = A.name)', 'correlated_subquery'],
    ['SELECT nickname FROM artists', 'unknown_column'],
    ['SELECT name FROM tracks ORDER BY name LIMIT 5 OFFSET 10', 'offset'],
    ['SELECT upper(name) FROM artists', 'function_upper'],
    ['SELECT name FROM artists, albums', 'comma_join'],
    ['SELECT album_id FROM tracks JOIN albums ON tracks.album_id = albums.album_id', 'ambiguous_column'],
    ['SELECT name FROM artists UNION SELECT name FROM genres UNION SELECT name FROM media_types', 'nested_set_operation'],
    ['SELECT name FROM artists WHERE', 'syntax'],
  ];
  for (const [sql, reason] of refused) {
    const r = astFromSql(sql, music.schema, music.graph);
    assert.deepEqual(r, { ok: false, reason }, sql);
  }
});
