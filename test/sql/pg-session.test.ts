// Read-only by the connection, not by the guard: every query in a READ ONLY transaction agro rolls back, and a
// pooled connection's session reset before its next request. The guard is switched off here (PgExecutor's
// `guard` option) so that only the connection's own layers stand between a request and the server, on a
// reader URL and on a superuser URL.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { copySqliteToPostgres, runAdminSql } from '../../src/sql/pg-copy.ts';
import { sandboxRoleSql } from '../../src/sql/pg-setup.ts';
import { PgExecutor } from '../../src/sql/postgres.ts';
import { PG, startPostgres, type PgServer } from '../support/postgres.ts';
import { pgFingerprint } from '../support/pg-fingerprint.ts';

const MUSIC = fileURLToPath(new URL('../../data/databases/music_store/music_store.sqlite', import.meta.url));
const BIN = fileURLToPath(new URL('../../bin/agro.js', import.meta.url));

function agro(...args: string[]) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 60_000 });
}

/** Requests that try to leave something behind in the session or the database (issue 47's four bypasses among them). */
const STATE_CHANGERS = [
  "SELECT set_config('search_path', 'pg_catalog', false)",
  "SELECT set_config('default_transaction_read_only', 'off', false)",
  "SELECT set_config('statement_timeout', '1234', false)",
  "SELECT set_config('transaction_read_only', 'off', false)",
  "SELECT set_config('role', 'agro_admin', false)",
  'SELECT pg_advisory_lock(4711)',
  'SELECT pg_advisory_lock_shared(4712)',
  "SELECT 1 --\r, set_config('default_transaction_read_only', 'off', false)\n",
  "SELECT U&\"set\\005fconfig\"('search_path', 'pg_catalog', false)",
  "SELECT U&\"set!005fconfig\" UESCAPE '!' ('search_path', 'pg_catalog', false)",
  `SELECT $${'a'.repeat(70)}$ ' $${'a'.repeat(70)}$, set_config('statement_timeout', '1234', false) --'`,
  "SELECT * FROM ts_stat($$SELECT to_tsvector(set_config('search_path', 'pg_catalog', false))$$)",
  "SELECT ts_rewrite('a'::tsquery, $$SELECT 'a'::tsquery, set_config('default_transaction_read_only', 'off', false)::tsquery$$)",
  "WITH u AS (UPDATE genres SET name = 'x' RETURNING 1) SELECT * FROM u",
  "WITH i AS (INSERT INTO genres VALUES (997, 'x') RETURNING 1) SELECT * FROM i",
  "SELECT lo_from_bytea(0, 'x')",
  "SELECT nextval('genres_seq')",
];

/** What the next request on the same connection sees: its settings, role, locks. */
const PROBE =
  "SELECT current_setting('search_path') || ' ' || current_setting('default_transaction_read_only') || ' ' || current_setting('statement_timeout') || ' ' || current_user || ' ' || (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) || ' ' || (SELECT count(*) FROM genres)";

describe('the PostgreSQL connection enforces read-only and resets its session', { skip: PG.skip }, () => {
  let server: PgServer;
  let reader: string;
  let admin: string;

  before(async () => {
    server = await startPostgres();
    await copySqliteToPostgres(MUSIC, server.adminUrl('music_store'));
    await runAdminSql(server.adminUrl('music_store'), sandboxRoleSql({ role: 'agro_reader', password: 'reader-pw', database: 'music_store' }));
    await server.admin(`CREATE SEQUENCE genres_seq; GRANT USAGE ON genres_seq TO agro_reader`, 'music_store');
    reader = server.url('agro_reader', 'reader-pw', 'music_store');
    admin = server.adminUrl('music_store');
  });
  after(async () => {
    await server?.stop();
  });

  for (const who of ['reader', 'superuser'] as const) {
    test(`a request leaves nothing for the next one on a pooled connection (${who} URL, no guard)`, async () => {
      const url = who === 'reader' ? reader : admin;
      // One connection: every request is the next one on the same session.
      const exec = new PgExecutor({ size: 1, guard: () => undefined, allowPrivilegedRole: true });
      try {
        const clean = await exec.execute(url, PROBE);
        assert.ok(clean.ok, JSON.stringify(clean));
        const before = await pgFingerprint(server, 'music_store');
        const leaks: string[] = [];
        for (const sql of STATE_CHANGERS) {
          await exec.execute(url, sql, { timeoutMs: 2000 });
          const next = await exec.execute(url, PROBE);
          if (!next.ok || JSON.stringify(next.rows) !== JSON.stringify(clean.rows)) leaks.push(`${JSON.stringify(sql)} -> ${next.ok ? JSON.stringify(next.rows) : next.message}`);
        }
        assert.deepEqual(leaks, []);
        assert.equal(await pgFingerprint(server, 'music_store'), before);
        // No advisory lock outlives its request, on any session.
        const locks = await server.admin(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'`);
        assert.equal(Number(locks[0][0]), 0);
      } finally {
        await exec.close();
      }
    });
  }

  test('a write inside a query fails in the READ ONLY transaction even on a superuser URL', async () => {
    const exec = new PgExecutor({ size: 1, guard: () => undefined, allowPrivilegedRole: true });
    try {
      const r = await exec.execute(admin, "WITH u AS (UPDATE genres SET name = 'x' RETURNING 1) SELECT * FROM u");
      assert.equal(r.ok, false);
      assert.ok(!r.ok && r.error === 'refused', JSON.stringify(r));
    } finally {
      await exec.close();
    }
  });

  test('a connection whose reset fails is closed, not reused', async () => {
    const exec = new PgExecutor({ size: 1, guard: () => undefined });
    try {
      const pid1 = await exec.execute(reader, 'SELECT pg_backend_pid()');
      assert.ok(pid1.ok);
      // The reset of this request cannot run: the backend is gone by then (terminated from outside).
      await server.admin(`SELECT pg_terminate_backend(${String(pid1.rows[0][0])})`);
      await exec.execute(reader, 'SELECT 1');
      const pid2 = await exec.execute(reader, 'SELECT pg_backend_pid()');
      assert.ok(pid2.ok, JSON.stringify(pid2));
      assert.notEqual(pid2.rows[0][0], pid1.rows[0][0]);
      const again = await exec.execute(reader, PROBE);
      assert.ok(again.ok, JSON.stringify(again));
    } finally {
      await exec.close();
    }
  });

  test('untrusted SQL on a role that can do more than read is refused before it reaches the server, unless the flag says so', async () => {
    await server.admin(`CREATE ROLE agro_writer LOGIN PASSWORD 'writer-pw'; GRANT CONNECT ON DATABASE music_store TO agro_writer; GRANT USAGE ON SCHEMA public TO agro_writer; GRANT SELECT ON ALL TABLES IN SCHEMA public TO agro_writer; GRANT UPDATE ON genres TO agro_writer`, 'music_store');
    await server.admin(`CREATE ROLE agro_files LOGIN PASSWORD 'files-pw' IN ROLE pg_read_server_files; GRANT CONNECT ON DATABASE music_store TO agro_files; GRANT USAGE ON SCHEMA public TO agro_files; GRANT SELECT ON ALL TABLES IN SCHEMA public TO agro_files`, 'music_store');
    const writer = server.url('agro_writer', 'writer-pw', 'music_store');
    const files = server.url('agro_files', 'files-pw', 'music_store');
    for (const [url, why] of [
      [admin, /a superuser/],
      [writer, /allowed to write, 1 table \(public\.genres\)/],
      [files, /pg_read_server_files/],
    ] as const) {
      const exec = new PgExecutor({ size: 1 });
      try {
        // Had it reached the server, this would come back as a division-by-zero result, not a refusal.
        await assert.rejects(exec.execute(url, 'SELECT 1 / 0 FROM genres'), (err: Error & { kind?: string }) => {
          assert.equal(err.kind, 'refused');
          assert.match(err.message, why);
          assert.match(err.message, /agro db copy .*--reader/);
          assert.match(err.message, /--allow-privileged-role/);
          assert.ok(!err.message.includes('-pw') && !err.message.includes('agro-test-admin'), err.message);
          return true;
        });
      } finally {
        await exec.close();
      }
    }
    // The reader runs; the CLI says it in one line with exit 5, and the flag that names the risk lets it run.
    const ok = new PgExecutor({ size: 1 });
    try {
      assert.ok((await ok.execute(reader, 'SELECT count(*) FROM genres')).ok);
    } finally {
      await ok.close();
    }
    const refused = agro('sql', '--db', admin, 'SELECT count(*) FROM genres');
    assert.equal(refused.status, 5, refused.stderr);
    assert.equal(refused.stderr.trim().split('\n').length, 1);
    assert.match(refused.stderr, /^agro: refused: the PostgreSQL role "agro_admin"/);
    assert.ok(!refused.stderr.includes('agro-test-admin'));
    const allowed = agro('sql', '--db', admin, '--allow-privileged-role', 'SELECT count(*) FROM genres');
    assert.equal(allowed.status, 0, allowed.stderr);
    assert.match(allowed.stdout, /1 row/);
  });
});
