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
    [['word', 'SELECT'], ['str', "a'b"], ['punct', ','], ['str', 'x'], ['punct', ','], ['qid', 'dat'], ['punct', ','], ['num', '1'], ['punct', ':'], ['punct', ':'], ['word', 'int']],
  );
});

test("issue 47's four disagreements with the server's lexer are gone", () => {
  // 1. A line comment ends at a carriage return too.
  assert.equal(verdict("SELECT 1 --\r, set_config('default_transaction_read_only','off',false)\n"), 'refused');
  assert.deepEqual(tokenizePg('SELECT 1 --x\r, 2').map((t) => t.text), ['SELECT', '1', ',', '2']);
  // 2. Unicode-escaped names are decoded as the server decodes them, UESCAPE included.
  assert.equal(verdict('SELECT U&"set\\005fconfig"(\'a\', \'b\', false)'), 'refused');
  assert.equal(verdict('SELECT U&"pg\\005fread\\005ffile"(\'/etc/passwd\')'), 'refused');
  assert.equal(verdict("SELECT U&\"set!005fconfig\" UESCAPE '!' ('a', 'b', false)"), 'refused');
  assert.equal(verdict("SELECT U&\"set!005fconfig\" /* c */ UESCAPE '!' ('a', 'b', false)"), 'refused');
  assert.equal(verdict('SELECT U&"\\0063ount"(*) FROM t'), 'ok');
  assert.equal(verdict("SELECT U&\"!0063ount\" UESCAPE '!' (*) FROM t"), 'ok');
  assert.equal(verdict('SELECT U&"\\zzzz"(1)'), 'refused'); // malformed escapes name nothing known
  // 3. A dollar-quote tag of any length.
  const tag = `$${'a'.repeat(70)}$`;
  assert.equal(verdict(`SELECT ${tag} ' ${tag}, set_config('statement_timeout','1234',false) --'`), 'refused');
  assert.deepEqual(tokenizePg(`SELECT ${tag}x${tag}`).map((t) => [t.kind, t.text]), [['word', 'SELECT'], ['str', 'x']]);
  // 4. Functions that run SQL given as text are not on the allow list.
  assert.equal(verdict("SELECT * FROM ts_stat($$SELECT to_tsvector(set_config('a','b',false))$$)"), 'refused');
  assert.equal(verdict("SELECT ts_rewrite('a'::tsquery, $$SELECT 'a'::tsquery, 'b'::tsquery$$)"), 'refused');
});

test('only allow-listed functions run; an unknown one is refused with one line naming it', () => {
  for (const sql of [
    'SELECT count(*), sum(x), avg(x), round(avg(x)::numeric, 2), max(length(name)) FROM t GROUP BY y HAVING count(*) > 1',
    'SELECT rank() OVER (PARTITION BY a ORDER BY b DESC), lag(x, 1) OVER w FROM t WINDOW w AS (ORDER BY a)',
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x), count(*) FILTER (WHERE x > 1), string_agg(n, ',' ORDER BY n) FROM t",
    "SELECT CAST(x AS numeric(10, 2)), x::varchar(20), EXTRACT(YEAR FROM d), substring(n FROM 1 FOR 2), trim(BOTH ' ' FROM n) FROM t",
    'SELECT coalesce(a, 0), nullif(b, 0), greatest(a, b), least(a, b), abs(a - b) FROM t WHERE a IN (1, 2) AND EXISTS (SELECT 1)',
    'WITH r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r',
    'WITH r(n) AS MATERIALIZED (SELECT 1) SELECT * FROM r, generate_series(1, 3) AS g(i)',
    'SELECT pg_catalog.lower(n), "upper"(n) FROM t',
    "SELECT ARRAY(SELECT 1), ROW(1, 2), DATE '2020-01-01', now() - INTERVAL '1 day'",
  ]) {
    assert.equal(verdict(sql), 'ok', sql);
  }
  for (const [sql, name] of [
    ["SELECT set_config('a', 'b', false)", 'set_config'],
    ['SELECT myschema.lower(n) FROM t', 'myschema.lower'],
    ["SELECT public.pg_read_file('x')", 'public.pg_read_file'],
    ["SELECT pg_ls_dir('.')", 'pg_ls_dir'],
    ['SELECT "LOWER"(n) FROM t', 'LOWER'],
    ['SELECT txid_current()', 'txid_current'],
    ["SELECT xmlexists('//x' PASSING '<x/>')", 'xmlexists'],
  ]) {
    try {
      assertSingleReadQuery(sql, 'postgres');
      assert.fail(`ran: ${sql}`);
    } catch (err) {
      assert.ok(err instanceof AgroError && err.kind === 'refused', sql);
      assert.match(err.message, new RegExp(`function ${name.replace('.', '\\.')}\\(\\)`));
      assert.ok(!err.message.includes('\n'));
    }
  }
});

test('the SQLite dialect is unchanged', () => {
  assert.doesNotThrow(() => assertSingleReadQuery('SELECT * FROM t'));
  // Not refused lexically on SQLite: the prepared statement's readonly flag catches it there.
  assert.doesNotThrow(() => assertSingleReadQuery('WITH d AS (SELECT 1) SELECT pg_read_file(1)'));
});
