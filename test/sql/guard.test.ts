import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgroError } from '../../src/errors.ts';
import { assertReadOnlyStatement, assertSingleReadQuery } from '../../src/sql/guard.ts';
import { tablesRead, tokenize } from '../../src/sql/lexer.ts';

function refusal(sql: string): string {
  try {
    assertSingleReadQuery(sql);
  } catch (err) {
    assert.ok(err instanceof AgroError, 'an AgroError');
    assert.equal(err.kind, 'refused');
    return err.message;
  }
  assert.fail(`not refused: ${sql}`);
}

test('every write and schema statement is refused, naming the keyword', () => {
  for (const kw of ['INSERT', 'UPDATE', 'DELETE', 'REPLACE', 'CREATE', 'DROP', 'ALTER']) {
    const sql = { INSERT: 'INSERT INTO t VALUES (1)', UPDATE: 'update t set a = 1', DELETE: 'delete from t', REPLACE: 'REPLACE INTO t VALUES (1)', CREATE: 'create table x(a)', DROP: 'DROP TABLE t', ALTER: 'alter table t add column b' }[kw]!;
    assert.match(refusal(sql), new RegExp(`\\(${kw}\\)`), sql);
  }
});

test('ATTACH, DETACH, PRAGMA, VACUUM, REINDEX, ANALYZE and transaction control are refused', () => {
  assert.match(refusal("ATTACH DATABASE '/tmp/x.db' AS x"), /ATTACH/);
  assert.match(refusal('detach x'), /DETACH/);
  assert.match(refusal('PRAGMA user_version=3'), /PRAGMA/);
  assert.match(refusal('pragma table_info(t)'), /PRAGMA/);
  assert.match(refusal('VACUUM'), /VACUUM/);
  assert.match(refusal('REINDEX'), /REINDEX/);
  assert.match(refusal('ANALYZE'), /ANALYZE/);
  for (const s of ['BEGIN', 'COMMIT', 'END', 'ROLLBACK', 'SAVEPOINT a', 'RELEASE a']) assert.match(refusal(s), /transaction control/, s);
  assert.match(refusal('EXPLAIN SELECT 1'), /EXPLAIN/);
});

test('several statements are refused; a trailing semicolon and comments are fine', () => {
  assert.match(refusal('SELECT 1; SELECT 2'), /several statements/);
  assert.match(refusal('SELECT 1;; DROP TABLE t'), /several statements/);
  assert.equal(assertSingleReadQuery('SELECT 1;'), 'SELECT 1;');
  assert.equal(assertSingleReadQuery('SELECT 1; -- the end\n;  /* done */'), 'SELECT 1; -- the end\n;  /* done */');
  assert.equal(assertSingleReadQuery("SELECT ';' AS a, \"x;y\" FROM t -- ; DROP TABLE t"), "SELECT ';' AS a, \"x;y\" FROM t -- ; DROP TABLE t");
  assert.equal(assertSingleReadQuery('/* DROP TABLE t; */ WITH a AS (SELECT 1) SELECT * FROM a'), '/* DROP TABLE t; */ WITH a AS (SELECT 1) SELECT * FROM a');
  assert.equal(assertSingleReadQuery('values (1), (2)'), 'values (1), (2)');
});

test('a comment or string cannot hide the first keyword', () => {
  assert.match(refusal('-- SELECT\nDELETE FROM t'), /DELETE/);
  assert.match(refusal('/* SELECT */ DROP TABLE t'), /DROP/);
  assert.match(refusal('   '), /empty query/);
  assert.match(refusal(' ; ; '), /empty query/);
});

test('the tokenizer keeps strings with doubled quotes whole and tracks parenthesis depth', () => {
  const t = tokenize("SELECT 'it''s;', [a b], (x) FROM t -- FROM comment\n WHERE \"a\"\"b\" <> 1.5e3");
  assert.deepEqual(
    t.map((x) => [x.kind, x.text, x.depth]),
    [
      ['word', 'SELECT', 0],
      ['str', "it's;", 0],
      ['punct', ',', 0],
      ['qid', 'a b', 0],
      ['punct', ',', 0],
      ['punct', '(', 0],
      ['word', 'x', 1],
      ['punct', ')', 0],
      ['word', 'FROM', 0],
      ['word', 't', 0],
      ['word', 'WHERE', 0],
      ['qid', 'a"b', 0],
      ['op', '<>', 0],
      ['num', '1.5e3', 0],
    ],
  );
  // Offsets give back the token as written, quotes included.
  const sql = 'SELECT "x" FROM t';
  assert.equal(sql.slice(t[0].start, t[0].end), 'SELECT');
  const q = tokenize(sql)[1];
  assert.equal(sql.slice(q.start, q.end), '"x"');
  assert.equal(q.quote, '"');
});

test('tablesRead follows FROM lists, JOINs and subqueries, never comments or strings', () => {
  assert.deepEqual(tablesRead("SELECT a FROM t1 AS x, t2 JOIN \"t 3\" ON 1 WHERE b IN (SELECT c FROM t4) -- FROM t5\n AND d = 'FROM t6'"), ['t1', 't2', 't 3', 't4']);
});

test('the prepared-statement gate refuses writers and non-readers', () => {
  assert.throws(() => assertReadOnlyStatement({ reader: false, readonly: false }), /would write/);
  assert.throws(() => assertReadOnlyStatement({ reader: false, readonly: true }), /returns no rows/);
  assert.doesNotThrow(() => assertReadOnlyStatement({ reader: true, readonly: true }));
});

test('a first word that starts no SQLite statement is a syntax error, not a refusal', () => {
  for (const [sql, near] of [['selec name FROM t', 'selec'], ["'SELECT' DELETE", "'SELECT'"], ['(SELECT 1)', '(']]) {
    assert.throws(
      () => assertSingleReadQuery(sql),
      (e: unknown) => e instanceof AgroError && e.kind === 'sql_error' && e.message === `near "${near}": syntax error`,
    );
  }
});

test('the guard reads in full what its SELECT shortcut must not settle: semicolons and comments anywhere', () => {
  for (const sql of ['select 1; DELETE FROM t', 'SELECT 1 /* ; */; DROP TABLE t', 'SELECT 1 --\n; UPDATE t SET a = 1']) {
    assert.throws(() => assertSingleReadQuery(sql), (e: unknown) => e instanceof AgroError && e.kind === 'refused', sql);
  }
  for (const sql of ["SELECT 'a;b' FROM t", 'SELECT 1 -- note', 'select * from t;', 'SELECT 1 /* a */']) assert.equal(assertSingleReadQuery(sql), sql);
  assert.throws(() => assertSingleReadQuery('SELECTED 1'), (e: unknown) => e instanceof AgroError && e.kind === 'sql_error');
});
