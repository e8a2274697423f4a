// The shapes people ask that from-sql.ts reads since #57: OR filters, NOT LIKE, lists in IN, one ON for several
// JOINs, joins no key declares (matched by name, or by values with a JoinProbe). Each is read, printed back and run
// on a small database built here, and must give the original query's result; OR and NOT LIKE are also worded
// as a question and parsed back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openDatabase } from '../../src/sql/open-database.mjs';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { hasOrderBy, resultsMatch } from '../../src/sql/compare.ts';
import { buildSchemaGraph } from '../../src/factory/schema-graph.ts';
import { astFromSql, joinProbeOn, type FromSqlOptions } from '../../src/factory/from-sql.ts';
import { printQuery } from '../../src/factory/print.ts';
import { realizeQuestion } from '../../src/factory/language/realize.ts';
import { makeParseEnv, parseQuestion } from '../../src/factory/language/general-parse.ts';
import { buildLexicon } from '../../src/factory/language/names.ts';
import type { QueryAst } from '../../src/factory/ast.ts';
import { tmpDir } from './fixtures.ts';

/** Depots, their vans and drivers, repair bills: no foreign key declared anywhere. */
function makeFleet(): string {
  const path = join(tmpDir('agro-shapes-'), 'fleet.sqlite');
  const db = openDatabase(path);
  db.exec(`
    CREATE TABLE depots (id INTEGER PRIMARY KEY, town TEXT, label TEXT);
    CREATE TABLE vans (van_id INTEGER PRIMARY KEY, home_depot_id INTEGER, driver TEXT, mileage INTEGER, model TEXT);
    CREATE TABLE drivers (driver TEXT PRIMARY KEY, shift TEXT, born INTEGER);
    CREATE TABLE repairs (repair_id INTEGER PRIMARY KEY, garage TEXT, cost REAL);
    INSERT INTO depots VALUES (1, 'Quillby', 'North yard'), (2, 'Marrowdale', 'River yard'), (3, 'Quillby', 'Hill yard'), (4, 'Tansford', 'Old yard');
    INSERT INTO vans VALUES (10, 1, 'ada', 52000, 'Kestrel'), (11, 2, 'bo', 18000, 'Kestrel XL'), (12, 3, 'cy', 91000, 'Heron'),
      (13, 1, 'ada', 7000, 'Heron'), (14, 2, 'dee', 33000, 'Osprey'), (15, 4, 'bo', 64000, 'Kestrel');
    INSERT INTO drivers VALUES ('ada', 'early', 1984), ('bo', 'late', 1991), ('cy', 'early', 1979), ('dee', 'night', 2000);
    INSERT INTO repairs VALUES (100, 'North yard', 120.5), (101, 'River yard', 80), (102, 'North yard', 310), (103, 'Old yard', 45);
  `);
  db.close();
  return path;
}

const fleet = makeFleet();
const schema = introspectSchema(fleet);
const graph = buildSchemaGraph(schema);

function read(sql: string, opts: FromSqlOptions = {}): QueryAst {
  const r = astFromSql(sql, schema, graph, opts);
  assert.ok(r.ok, `${sql}: ${r.ok ? '' : r.reason}`);
  return r.ast;
}

/** Read, printed back and run: the same result as the query itself (and a result that can tell). */
async function samePrinted(sql: string, opts: FromSqlOptions = {}): Promise<QueryAst> {
  const ast = read(sql, opts);
  const printed = printQuery(ast);
  const pool = new SqlPool({ size: 1 });
  try {
    const [a, b] = await Promise.all([pool.execute(fleet, sql), pool.execute(fleet, printed)]);
    assert.ok(a.ok && b.ok, `${sql} / ${printed}`);
    assert.ok(a.rows.length > 0, `a query that returns nothing tests nothing: ${sql}`);
    assert.ok(resultsMatch(b.rows, a.rows, { mode: 'spider', ordered: hasOrderBy(sql) }), `${sql}\n  printed: ${printed}`);
  } finally {
    await pool.close();
  }
  return ast;
}

/** Worded in the general grammar and parsed back by the factory's parser: the same result again. */
async function roundTrip(ast: QueryAst): Promise<string> {
  const lex = buildLexicon(schema);
  const question = realizeQuestion(ast, 'formal', 0, lex, false);
  const back = printQuery(parseQuestion(question, makeParseEnv(schema, graph, lex)));
  const pool = new SqlPool({ size: 1 });
  try {
    const [a, b] = await Promise.all([pool.execute(fleet, printQuery(ast)), pool.execute(fleet, back)]);
    assert.ok(a.ok && b.ok && resultsMatch(b.rows, a.rows, { mode: 'spider' }), `${question} -> ${back}`);
  } finally {
    await pool.close();
  }
  return question;
}

test('from SQL: an OR filter (also parenthesized beside AND) reads, prints with the same result, and is asked as "either ... or ..."', async () => {
  const q = await samePrinted("SELECT driver FROM vans WHERE model = 'Heron' OR mileage > 60000");
  assert.ok(q.kind === 'select' && q.where.length === 1 && q.where[0].kind === 'or' && q.where[0].any.length === 2);
  // AND binds tighter than OR: the printed OR keeps its parentheses, or the conjunction would change.
  await samePrinted("SELECT van_id FROM vans WHERE (model = 'Kestrel' OR driver = 'cy') AND mileage > 55000");
  await samePrinted("SELECT van_id FROM vans WHERE model = 'Kestrel' AND mileage > 20000 OR driver = 'cy' OR (driver = 'dee' OR mileage < 8000)");
  const question = await roundTrip(q);
  assert.match(question, /either .* or /);
});

test('from SQL: NOT LIKE reads, prints with the same result, and is asked as "does not contain"', async () => {
  const q = await samePrinted("SELECT van_id, model FROM vans WHERE model NOT LIKE '%XL%' ORDER BY van_id");
  assert.ok(q.kind === 'select' && q.where[0].kind === 'like' && q.where[0].negated === true);
  assert.match(await roundTrip(q), /does not contain 'XL'/);
});

test('from SQL: IN and NOT IN of several values read as OR of equalities and a conjunction of <>', async () => {
  const q = await samePrinted("SELECT van_id FROM vans WHERE driver IN ('ada', 'dee')");
  assert.ok(q.kind === 'select' && q.where[0].kind === 'or');
  const n = await samePrinted("SELECT van_id FROM vans WHERE driver NOT IN ('ada', 'dee', 'zed')");
  assert.deepEqual(n.kind === 'select' && n.where.map((c) => c.kind === 'cmp' && c.op), ['<>', '<>', '<>']);
});

test('from SQL: one ON for several JOINs puts each equality on the later of its tables', async () => {
  const q = await samePrinted('SELECT T1.label, T3.shift FROM depots AS T1 JOIN vans AS T2 JOIN drivers AS T3 ON T1.id = T2.home_depot_id AND T2.driver = T3.driver');
  assert.ok(q.kind === 'select');
  assert.deepEqual(q.joins.map((j) => [j.alias, j.on.map((p) => `${p.left.alias}.${p.left.column}=${p.right.alias}.${p.right.column}`)]), [
    ['T2', ['T1.id=T2.home_depot_id']],
    ['T3', ['T2.driver=T3.driver']],
  ]);
});

test('from SQL: joins no key declares read when their columns match by name, with the same result', async () => {
  assert.equal(graph.edges.length, 0, 'the fleet declares no foreign key');
  // The same name on both sides.
  await samePrinted("SELECT T1.van_id FROM vans AS T1 JOIN drivers AS T2 ON T1.driver = T2.driver WHERE T2.shift = 'early'");
  // <x>_id against the key of the table x names (home_depot_id -> depots.id), written either way round.
  await samePrinted("SELECT T2.town, count(*) FROM depots AS T2 JOIN vans AS T1 ON T2.id = T1.home_depot_id GROUP BY T2.town");
  // A column of another type, or names that say nothing, stay unread without the data.
  assert.deepEqual(astFromSql('SELECT T1.van_id FROM vans AS T1 JOIN drivers AS T2 ON T1.model = T2.shift', schema, graph), { ok: false, reason: 'join_not_on_foreign_key' });
  assert.deepEqual(astFromSql('SELECT T1.van_id FROM vans AS T1 JOIN depots AS T2 ON T1.driver = T2.id', schema, graph), { ok: false, reason: 'join_not_on_foreign_key' });
});

test('from SQL: a join whose names say nothing reads when a JoinProbe finds the values of one column among the other', async () => {
  const db = openDatabase(fleet, { readonly: true, fileMustExist: true });
  try {
    const joinProbe = joinProbeOn((sql) => db.prepare(sql).raw().get() as unknown[] | undefined);
    const sql = 'SELECT T1.town, sum(T2.cost) FROM depots AS T1 JOIN repairs AS T2 ON T1.label = T2.garage GROUP BY T1.town';
    assert.deepEqual(astFromSql(sql, schema, graph), { ok: false, reason: 'join_not_on_foreign_key' }, 'by name alone it stays unread');
    await samePrinted(sql, { joinProbe });
    // Values that are not among the other column's: still unread.
    assert.deepEqual(astFromSql('SELECT T1.van_id FROM vans AS T1 JOIN depots AS T2 ON T1.model = T2.town', schema, graph, { joinProbe }), { ok: false, reason: 'join_not_on_foreign_key' });
  } finally {
    db.close();
  }
});

test('from SQL: "X and the number of Y" as people write it (the count before its group, or beside another column of it) is worded with every column', async () => {
  // The count first: said "the number of vans for each driver", parsed back with the same result.
  const q = await samePrinted('SELECT count(*), driver FROM vans GROUP BY driver');
  assert.match(await roundTrip(q), /the number of vans for each .*driver/);
  // A column shown beside the count that is not the group: both are said (the question parser would add the group).
  const label = await samePrinted('SELECT T1.label, count(*) FROM depots AS T1 JOIN vans AS T2 ON T1.id = T2.home_depot_id GROUP BY T1.id');
  const lex = buildLexicon(schema);
  for (const intents of [false, true]) {
    const question = realizeQuestion(label, 'formal', 0, lex, intents);
    assert.match(question, /label.* and the number of /, question);
  }
});

test('from SQL: a query that shows only its group (HAVING a count) is asked with the group as its target, and parsed back', async () => {
  const q = await samePrinted('SELECT driver FROM vans GROUP BY driver HAVING count(*) >= 2');
  const lex = buildLexicon(schema);
  const question = realizeQuestion(q, 'formal', 0, lex, false);
  assert.match(question, /driver for each .*driver, keeping only groups where the number of vans is at least 2/, question);
  await roundTrip(q);
  const back = parseQuestion(question, makeParseEnv(schema, graph, lex));
  assert.ok(back.kind === 'select' && back.columns.length === 1, 'the repeated group is one column');
});
