import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgroError } from '../../src/errors.ts';
import { assertReadOnlyStatement, assertSingleReadQuery, tokenizeSql } from '../../src/sql/guard.ts';

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
  const t = tokenizeSql("SELECT 'it''s;', [a b], (x) FROM t");
  assert.deepEqual(
    t.map((x) => [x.kind, x.text, x.depth]),
    [
      ['word', 'SELECT', 0],
      ['string', "it's;", 0],
      ['punct', ',', 0],
      ['ident', 'a b', 0],
      ['punct', ',', 0],
      ['punct', '(', 0],
      ['word', 'X', 1],
      ['punct', ')', 0],
      ['word', 'FROM', 0],
      ['word', 'T', 0],
    ],
  );
});

test('the prepared-statement gate refuses writers and non-readers', () => {
  assert.throws(() => assertReadOnlyStatement({ reader: false, readonly: false }), /would write/);
  assert.throws(() => assertReadOnlyStatement({ reader: false, readonly: true }), /returns no rows/);
  assert.doesNotThrow(() => assertReadOnlyStatement({ reader: true, readonly: true }));
});

test('a first word that starts no SQLite statement is a syntax error, not a refusal', () => {
  for (const [sql, near] of [['SELEC name FROM t', 'SELEC'], ["'SELECT' DELETE", 'SELECT'], ['(SELECT 1)', '(']]) {
    assert.throws(
      () => assertSingleReadQuery(sql),
      (e: unknown) => e instanceof AgroError && e.kind === 'sql_error' && e.message === `near "${near}": syntax error`,
    );
  }
});
