// `agro db copy`: the bundled SQLite databases loaded into a real PostgreSQL server, row for row, keys kept;
// `agro sql` and `agro schema` on the copy.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cellKey } from '../../src/sql/compare.ts';
import { introspectDatabase } from '../../src/sql/executor.ts';
import { copySqliteToPostgres, pgTypeFor } from '../../src/sql/pg-copy.ts';
import type { ExecResult, Row } from '../../src/sql/types.ts';
import { PG, postgresForTests } from '../support/postgres.ts';
import { makeDb, tempDir } from './helpers.ts';

const BIN = fileURLToPath(new URL('../../bin/agro.js', import.meta.url));
const DATA = fileURLToPath(new URL('../../data/databases/', import.meta.url));
const sqliteOf = (id: string): string => join(DATA, id, `${id}.sqlite`);

function agro(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, ...env } });
}

function rowsOf(r: ExecResult): Row[] {
  assert.ok(r.ok, r.ok ? '' : r.message);
  return r.rows;
}
/** A table's rows as a sorted multiset of Python-equality keys. */
const bag = (rows: Row[]): string[] => rows.map((r) => r.map(cellKey).join('\u0001')).sort();

test('column types follow the values SQLite holds', () => {
  const m = (o: Record<string, number>) => new Map(Object.entries(o));
  assert.equal(pgTypeFor(m({ integer: 3 }), 'TEXT', true), 'integer');
  assert.equal(pgTypeFor(m({ integer: 3 }), 'INT', false), 'bigint');
  assert.equal(pgTypeFor(m({ integer: 3, real: 1 }), 'FLOAT', true), 'numeric');
  assert.equal(pgTypeFor(m({ integer: 3, text: 1 }), 'INTEGER', true), 'text');
  assert.equal(pgTypeFor(m({ blob: 1 }), '', true), 'bytea');
  assert.equal(pgTypeFor(m({ null: 4 }), 'VARCHAR(10)', true), 'text');
  assert.equal(pgTypeFor(m({}), 'DECIMAL(10,2)', true), 'numeric');
});

describe('agro db copy into a real server', { skip: PG.skip }, () => {
  // Checks as the copy's owner (the test's own queries, not untrusted SQL).
  const live = postgresForTests();
  const tmp = tempDir('agro-pgcopy-');
  after(() => tmp.cleanup());

  test('the bundled databases arrive row for row with their keys, and a read-only role is made', async () => {
    const cli = agro(['db', 'copy', sqliteOf('music_store'), live.server.adminUrl('music_store'), '--reader', 'agro_reader'], { AGRO_READER_PASSWORD: 'reader-pw' });
    assert.equal(cli.status, 0, cli.stderr);
    assert.match(cli.stdout, /^tracks: \d+ rows/m);
    assert.match(cli.stdout, /role agro_reader may read music_store \(read-only\)/);
    for (const id of ['retail', 'school']) {
      const r = await copySqliteToPostgres(sqliteOf(id), live.server.adminUrl(id));
      assert.deepEqual(r.skipped, [], id);
    }
    for (const id of ['music_store', 'retail', 'school']) {
      const lite = await introspectDatabase(sqliteOf(id), { samples: 0 });
      const pgUrl = live.server.adminUrl(id);
      const pgs = await introspectDatabase(pgUrl, { samples: 0 });
      assert.deepEqual(pgs.tables.map((t) => t.name), lite.tables.map((t) => t.name), id);
      for (const t of lite.tables) {
        const p = pgs.tables.find((x) => x.name === t.name)!;
        assert.equal(p.rowCount, t.rowCount, `${id}.${t.name} rows`);
        assert.deepEqual(p.primaryKey, t.primaryKey, `${id}.${t.name} primary key`);
        const fk = (fks: typeof t.foreignKeys) => fks.map((f) => `${f.fromColumns}->${f.toTable}(${f.toColumns})`).sort();
        assert.deepEqual(fk(p.foreignKeys), fk(t.foreignKeys), `${id}.${t.name} foreign keys`);
        const cols = t.columns.map((c) => `"${c.name}"`).join(', ');
        const [a, b] = await Promise.all([live.exec.execute(sqliteOf(id), `SELECT ${cols} FROM "${t.name}"`, { safeIntegers: true }), live.exec.execute(pgUrl, `SELECT ${cols} FROM "${t.name}"`, { safeIntegers: true })]);
        assert.deepEqual(bag(rowsOf(b)), bag(rowsOf(a)), `${id}.${t.name} contents`);
      }
    }
    // The role the copy made reads and cannot write, even past the guard's back (a function the guard allows).
    const reader = live.server.url('agro_reader', 'reader-pw', 'music_store');
    assert.ok(rowsOf(await live.exec.execute(reader, 'SELECT count(*) FROM tracks')).length === 1);
    const grants = await live.server.admin(`SELECT count(*) FROM information_schema.role_table_grants WHERE grantee = 'agro_reader' AND privilege_type <> 'SELECT'`, 'music_store');
    assert.equal(Number(grants[0][0]), 0);
  });

  test('an existing table is refused on one line unless --replace', () => {
    const again = agro(['db', 'copy', sqliteOf('school'), live.server.adminUrl('school')]);
    assert.equal(again.status, 4);
    assert.match(again.stderr.trim(), /^agro: .*already has table \w+; copy with --replace/);
    assert.equal(again.stderr.trim().split('\n').length, 1);
    const replaced = agro(['db', 'copy', sqliteOf('school'), live.server.adminUrl('school'), '--replace']);
    assert.equal(replaced.status, 0, replaced.stderr);
  });

  test('names from the SQLite file are printed with control characters escaped (no terminal title, no screen clear)', () => {
    const file = makeDb(join(tmp.dir, 'esc.sqlite'), 'CREATE TABLE "t\u001b[2J" ("c\u001b]0;pwned\u0007" TEXT); INSERT INTO "t\u001b[2J" VALUES (\'x\');');
    const cli = agro(['db', 'copy', file, live.server.adminUrl('esc')]);
    assert.equal(cli.status, 0, cli.stderr);
    assert.match(cli.stdout, /^t\\x1b\[2j: 1 rows \(c\\x1b\]0;pwned\\x07 text\)$/m);
    // eslint-disable-next-line no-control-regex -- no control character but the newlines may reach the terminal
    assert.doesNotMatch(cli.stdout, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
  });

  test('SQLite data PostgreSQL would refuse: mixed types become text, broken keys are skipped and reported', async () => {
    const file = makeDb(
      join(tmp.dir, 'messy.sqlite'),
      `PRAGMA foreign_keys = OFF;
       CREATE TABLE Parent (Code TEXT PRIMARY KEY, Label TEXT);
       CREATE TABLE child (id INTEGER PRIMARY KEY, parent_code TEXT REFERENCES Parent (Code), Score INTEGER, note TEXT);
       INSERT INTO Parent VALUES ('a', 'A'), (NULL, 'no code');
       INSERT INTO child VALUES (1, 'a', 10, 'x'), (2, 'zz', 'n/a', 'nul' || char(0) || 'byte'), (3, NULL, 2.5, NULL);`,
    );
    const r = await copySqliteToPostgres(file, live.server.adminUrl('messy'));
    assert.deepEqual(
      r.tables.map((t) => [t.name, t.rows, t.columns.map((c) => c.type).join(',')]),
      [
        ['parent', 2, 'text,text'],
        ['child', 3, 'integer,text,text,text'],
      ],
    );
    assert.equal(r.skipped.length, 2, r.skipped.join('\n'));
    assert.match(r.skipped.join('\n'), /primary key of parent/);
    assert.match(r.skipped.join('\n'), /foreign key child\(parent_code\) -> parent\(code\)/);
    // Unquoted mixed-case names, as SQL written for SQLite has them, find the folded tables.
    const rows = rowsOf(await live.exec.execute(live.server.adminUrl('messy'), 'SELECT Score, Note FROM Child ORDER BY ID'));
    assert.deepEqual(rows, [['10', 'x'], ['n/a', 'nulbyte'], ['2.5', null]]);
  });

  test('agro sql and agro schema take a postgres URL', () => {
    const url = live.server.url('agro_reader', 'reader-pw', 'music_store');
    const sql = agro(['sql', '--db', url, '--json', 'SELECT name FROM genres ORDER BY genre_id LIMIT 2']);
    assert.equal(sql.status, 0, sql.stderr);
    assert.equal((JSON.parse(sql.stdout) as { rows: unknown[][] }).rows.length, 2);
    const refused = agro(['sql', '--db', url, "SELECT pg_read_file('/etc/passwd')"]);
    assert.equal(refused.status, 5);
    assert.match(refused.stderr, /^agro: refused: function pg_read_file\(\)/);
    const schema = agro(['schema', '--db', url]);
    assert.equal(schema.status, 0, schema.stderr);
    assert.match(schema.stdout, /CREATE TABLE tracks/);
    assert.match(schema.stdout, /REFERENCES albums/);
    const missing = agro(['schema', '--db', live.server.url('agro_reader', 'reader-pw', 'nosuch')]);
    assert.equal(missing.status, 3);
  });

  test('--reader refuses the login role and any role with more than reading, before anything changes', async () => {
    await live.server.admin(`CREATE ROLE agro_maker2 LOGIN CREATEDB PASSWORD 'm2-pw'`);
    const before = await live.server.admin(`SELECT rolname, rolsuper, rolcreatedb, rolpassword FROM pg_authid ORDER BY rolname`);
    for (const role of ['agro_admin', 'agro_maker2', 'pg_write_server_files']) {
      const r = agro(['db', 'copy', sqliteOf('music_store'), live.server.adminUrl('reader_check'), '--reader', role], { AGRO_READER_PASSWORD: 'x-pw' });
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`^agro: --reader ${role}: refused, nothing changed: the role is `));
      assert.equal(r.stderr.trim().split('\n').length, 1);
    }
    assert.deepEqual(await live.server.admin(`SELECT rolname, rolsuper, rolcreatedb, rolpassword FROM pg_authid ORDER BY rolname`), before);
    assert.deepEqual(await live.server.admin(`SELECT datname FROM pg_database WHERE datname = 'reader_check' OR datname LIKE 'agro_copy_%'`), []);
  });

  test('a failed copy drops the database it created; a killed one leaves the name unused', async () => {
    // Two table names PostgreSQL cuts to the same 63 characters: the second CREATE TABLE fails mid-copy.
    const long = 'x'.repeat(63);
    const bad = makeDb(join(tmp.dir, 'collide.sqlite'), `CREATE TABLE ${long}a (a INTEGER); CREATE TABLE ${long}b (b INTEGER); INSERT INTO ${long}a VALUES (1);`);
    const r = agro(['db', 'copy', bad, live.server.adminUrl('failed_copy')]);
    assert.equal(r.status, 4, r.stderr);
    assert.deepEqual(await live.server.admin(`SELECT datname FROM pg_database WHERE datname = 'failed_copy' OR datname LIKE 'agro_copy_%'`), []);

    // Killed (SIGKILL: no clean-up runs) while the copy is under way: the URL's database name stays unused.
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, [BIN, 'db', 'copy', sqliteOf('music_store'), live.server.adminUrl('killed_copy')], { stdio: 'ignore' });
    const exited = new Promise((res) => child.once('exit', res));
    let seen = false;
    for (let i = 0; i < 400 && !seen; i++) {
      seen = (await live.server.admin(`SELECT 1 FROM pg_database WHERE datname LIKE 'agro_copy_%'`)).length > 0;
      if (!seen) await new Promise((res) => setTimeout(res, 25));
    }
    child.kill('SIGKILL');
    await exited;
    assert.ok(seen, 'the copy never made its temporary database');
    assert.deepEqual(await live.server.admin(`SELECT datname FROM pg_database WHERE datname = 'killed_copy'`), []);
    // A copy that completes is renamed into place under the URL's name.
    const ok = agro(['db', 'copy', sqliteOf('music_store'), live.server.adminUrl('renamed_copy')]);
    assert.equal(ok.status, 0, ok.stderr);
    assert.deepEqual(await live.server.admin(`SELECT datname FROM pg_database WHERE datname = 'renamed_copy'`), [['renamed_copy']]);
  });
});
