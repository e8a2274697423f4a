// The guard in PostgreSQL's dialect: PostgreSQL's lexical rules, and the writes, locks and server functions it refuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgroError } from '../../src/errors.ts';
import { assertSingleReadQuery } from '../../src/sql/guard.ts';
import { tokenizePg } from '../../src/sql/pg-lexer.ts';

function verdict(sql: string): string {
  try {
    assertSingleReadQuery(sql, 'postgres');
    return 'ok';
  } catch (err) {
    assert.ok(err instanceof AgroError);
    return err.kind;
  }
}

test('read queries pass in the PostgreSQL dialect', () => {
  for (const sql of [
    'SELECT 1',
    'select count(*) from "Order" o where o.total::numeric > 10;',
    "WITH t AS (SELECT * FROM x) SELECT EXTRACT(YEAR FROM d), date_trunc('month', d) FROM t",
    "SELECT name FROM customer WHERE name ILIKE 'a%' ORDER BY 1 LIMIT 5 OFFSET 2",
    'SELECT t.update, t."delete" FROM t', // columns named like keywords: qualified or quoted
    "SELECT $$it's$$, E'a\\'b', arr[1] FROM t /* nested /* comment */ still */",
    "SELECT pg_sleep(0.1), generate_series(1, 3), 'lo_import' AS word",
    'VALUES (1), (2)',
  ]) {
    assert.equal(verdict(sql), 'ok', sql);
  }
});

test('writes, locks, settings and server functions are refused before they run', () => {
  for (const sql of [
    'INSERT INTO t VALUES (1)',
    'WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d',
    'WITH u AS (UPDATE t SET a = 1 RETURNING a) SELECT * FROM u',
    'SELECT * INTO copy_of_t FROM t',
    'SELECT * FROM t FOR UPDATE',
    'SELECT * FROM t FOR KEY SHARE',
    'COPY t TO STDOUT',
    "COPY (SELECT 1) TO PROGRAM 'id'",
    'SET ROLE postgres',
    'SET SESSION AUTHORIZATION postgres',
    'RESET ALL',
    'LISTEN x',
    "NOTIFY x, 'y'",
    "SELECT pg_notify('x', 'y')",
    'DO $$ BEGIN PERFORM 1; END $$',
    'TRUNCATE t',
    'MERGE INTO t USING s ON true WHEN MATCHED THEN DELETE',
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT pg_catalog.pg_ls_dir('.')",
    "SELECT \"pg_read_binary_file\"('/etc/passwd')",
    "SELECT lo_import('/etc/passwd')",
    "SELECT loread(lo_open(1, 262144), 10)",
    "SELECT * FROM dblink('dbname=x', 'select 1') AS t(a int)",
    "SELECT set_config('default_transaction_read_only', 'off', false)",
    "SELECT query_to_xml('delete from t', true, true, '')",
    'SELECT pg_terminate_backend(1)',
    "SELECT nextval('s')",
    'SELECT pg_advisory_lock(1)',
    "IMPORT FOREIGN SCHEMA public FROM SERVER s INTO x",
    "LOAD 'plpgsql'",
    'SELECT 1; SELECT 2',
    'TABLE t',
  ]) {
    assert.equal(verdict(sql), 'refused', sql);
  }
});

test("PostgreSQL's quoting is read as the server reads it", () => {
  // SQLite's rules would take `[1 + f(x)]` for a quoted name and miss the call inside.
  assert.equal(verdict("SELECT arr[1 + length(pg_read_file('/etc/passwd'))] FROM t"), 'refused');
  // A dollar-quoted string hides nothing from the guard, and a quote inside it ends nothing.
  assert.equal(verdict("SELECT $$'$$, pg_read_file('x'), '$$'"), 'refused');
  assert.equal(verdict("SELECT $tag$; DELETE FROM t; $tag$"), 'ok');
  // An E'' string's \\' does not end it.
  assert.equal(verdict("SELECT E'\\'; DELETE FROM t; --'"), 'ok');
  const toks = tokenizePg("SELECT E'a\\'b', $q$x$q$, U&\"d\\0061t\", 1::int");
  assert.deepEqual(
    toks.map((t) => [t.kind, t.text]),
    [['word', 'SELECT'], ['str', "a'b"], ['punct', ','], ['str', 'x'], ['punct', ','], ['qid', 'd\\0061t'], ['punct', ','], ['num', '1'], ['punct', ':'], ['punct', ':'], ['word', 'int']],
  );
});

test('the SQLite dialect is unchanged', () => {
  assert.doesNotThrow(() => assertSingleReadQuery('SELECT * FROM t'));
  // Not refused lexically on SQLite: the prepared statement's readonly flag catches it there.
  assert.doesNotThrow(() => assertSingleReadQuery('WITH d AS (SELECT 1) SELECT pg_read_file(1)'));
});
