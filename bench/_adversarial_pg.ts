// The adversarial battery's PostgreSQL section (issue 47): a server this bench starts, music_store copied
// into it, a superuser URL and a reader URL (sandboxRoleSql). Every case of each bypass class runs through
// agro's executor as untrusted SQL is run:
//   superuser URL       must be refused before it reaches the server (privileged role);
//   superuser + flag    --allow-privileged-role: the guard and the READ ONLY transaction alone;
//   reader URL          the guard, the transaction and the role;
//   reader, guard off   the connection's own layers alone (transaction, rollback, session reset).
// After each case: the fingerprint of every table of every database, large objects, roles, role and server
// settings (test/support/pg-fingerprint.ts), the files a case tries to write, and what the next request on
// the same pooled connection sees (settings, role, advisory locks, a plain count). A case fails when any of
// them changed, or when the superuser URL ran it.
import { existsSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PgExecutor, copySqliteToPostgres, sandboxRoleSql } from 'agro/sql';
import { runAdminSql } from '../src/sql/pg-copy.ts';
import { pgFingerprint } from '../test/support/pg-fingerprint.ts';
import { PG, startPostgres } from '../test/support/postgres.ts';

const MUSIC = fileURLToPath(new URL('../data/databases/music_store/music_store.sqlite', import.meta.url));
const TAG = `$${'a'.repeat(70)}$`;

/** Files a case tries to create on the server's machine (the server runs on this one). */
const FILE_LO = `/tmp/agro-adv-pg-lo-${process.pid}`;
const FILE_COPY = `/tmp/agro-adv-pg-copy-${process.pid}`;

const CLASSES: Array<[string, string[]]> = [
  ['a plain read (the role alone stops it on a superuser URL)', ['SELECT count(*) FROM genres']],
  [
    'comment ended by \\r',
    [
      "SELECT 1 --\r, set_config('default_transaction_read_only', 'off', false)\n",
      "SELECT 1 --\r, set_config('search_path', 'pg_catalog', false)\n",
      `SELECT 1 --\r, lo_from_bytea(0, 'x')\n`,
    ],
  ],
  [
    'escaped identifiers',
    [
      "SELECT U&\"set\\005fconfig\"('search_path', 'pg_catalog', false)",
      "SELECT U&\"pg\\005fread\\005ffile\"('/etc/hostname')",
      "SELECT U&\"set!005fconfig\" UESCAPE '!' ('default_transaction_read_only', 'off', false)",
      "SELECT U&\"lo\\005ffrom\\005fbytea\"(0, 'x')",
    ],
  ],
  [
    'long dollar tags',
    [
      `SELECT ${TAG} ' ${TAG}, set_config('statement_timeout', '1234', false) --'`,
      `SELECT ${TAG} ' ${TAG}, lo_from_bytea(0, 'x') --'`,
      `SELECT ${TAG} ' ${TAG}, pg_advisory_lock(4711) --'`,
    ],
  ],
  [
    'SQL-running functions',
    [
      "SELECT * FROM ts_stat($$SELECT to_tsvector(set_config('search_path', 'pg_catalog', false))$$)",
      "SELECT ts_rewrite('a'::tsquery, $$SELECT 'a'::tsquery, set_config('default_transaction_read_only', 'off', false)::tsquery$$)",
      "SELECT query_to_xml('UPDATE genres SET name = ''x'' RETURNING 1', true, true, '')",
      "SELECT * FROM ts_stat($$SELECT to_tsvector(lo_from_bytea(0, 'x')::text)$$)",
    ],
  ],
  [
    'session state',
    [
      "SELECT set_config('search_path', 'pg_catalog', false)",
      "SELECT set_config('role', 'agro_admin', false)",
      'SELECT pg_advisory_lock(4712)',
      'SELECT pg_advisory_lock_shared(4713)',
      "SELECT set_config('statement_timeout', '1', false)",
    ],
  ],
  [
    'writes and server files',
    [
      "WITH u AS (UPDATE genres SET name = 'x' RETURNING 1) SELECT * FROM u",
      "WITH i AS (INSERT INTO genres VALUES (997, 'x') RETURNING 1) SELECT * FROM i",
      `SELECT lo_export(lo_from_bytea(0, 'pwned'), '${FILE_LO}')`,
      `COPY (SELECT 1) TO '${FILE_COPY}'`,
      "SELECT pg_read_file('/etc/hostname')",
    ],
  ],
];

const PROBE =
  "SELECT current_setting('search_path') || ' ' || current_setting('default_transaction_read_only') || ' ' || current_setting('statement_timeout') || ' ' || current_user || ' ' || (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) || ' ' || (SELECT count(*) FROM genres)";

export interface PgRecord {
  (c: { name: string; ok: boolean; detail: string }): void;
}

interface Mode {
  name: string;
  url: 'admin' | 'reader';
  exec: () => PgExecutor;
  /** The superuser URL without the flag: every case must be refused before the server. */
  mustRefuse: boolean;
}

/** Runs the section; returns the table rows (markdown) for docs/security.md. */
export async function pgSection(record: PgRecord): Promise<string[]> {
  if (PG.skip) {
    record({ name: 'PostgreSQL section', ok: false, detail: String(PG.skip) });
    return [];
  }
  const server = await startPostgres();
  const table: string[] = [];
  try {
    await copySqliteToPostgres(MUSIC, server.adminUrl('music_store'));
    await runAdminSql(server.adminUrl('music_store'), sandboxRoleSql({ role: 'agro_reader', password: 'reader-pw', database: 'music_store' }));
    const urls = { admin: server.adminUrl('music_store'), reader: server.url('agro_reader', 'reader-pw', 'music_store') };
    const modes: Mode[] = [
      { name: 'superuser URL', url: 'admin', exec: () => new PgExecutor({ size: 1 }), mustRefuse: true },
      { name: 'superuser + --allow-privileged-role', url: 'admin', exec: () => new PgExecutor({ size: 1, allowPrivilegedRole: true }), mustRefuse: false },
      { name: 'reader URL', url: 'reader', exec: () => new PgExecutor({ size: 1 }), mustRefuse: false },
      { name: 'reader URL, guard off', url: 'reader', exec: () => new PgExecutor({ size: 1, guard: () => undefined }), mustRefuse: false },
    ];
    // What the next request sees on a clean connection (as the reader: the superuser's probe differs in its user only).
    const clean: Record<string, string> = {};
    for (const [k, url] of Object.entries(urls)) {
      const e = new PgExecutor({ size: 1, allowPrivilegedRole: true });
      const r = await e.execute(url, PROBE);
      await e.close();
      clean[k] = r.ok ? JSON.stringify(r.rows) : `error ${r.message}`;
    }
    table.push('| Class | Cases | Superuser URL: refused before the server | Superuser + flag: changed / leaked | Reader: changed / leaked | Reader, guard off: changed / leaked |', '|---|---:|---:|---:|---:|---:|');
    for (const [cls, sqls] of CLASSES) {
      const cells: string[] = [];
      for (const mode of modes) {
        let refusedBefore = 0;
        let changed = 0;
        let leaked = 0;
        for (const sql of sqls) {
          const before = await pgFingerprint(server, 'music_store');
          const exec = mode.exec();
          let outcome: string;
          try {
            const r = await exec.execute(urls[mode.url], sql, { timeoutMs: 3000 });
            // The guard's refusals say `refused: ...` before anything is sent; the server's say what it refused.
            const byGuard = !r.ok && r.error === 'refused' && r.message.startsWith('refused: ');
            outcome = r.ok ? 'ran' : byGuard ? 'refused by the guard' : `${r.error} (server)`;
            if (byGuard) refusedBefore++;
          } catch (err) {
            const role = (err as { kind?: string }).kind === 'refused';
            outcome = role ? 'refused: privileged role' : `threw ${String(err)}`;
            if (role) refusedBefore++;
          }
          // The next request on the same (one-connection) pool.
          const probeExec = mode.mustRefuse ? undefined : exec;
          const next = probeExec ? await probeExec.execute(urls[mode.url], PROBE).catch((e: Error) => ({ ok: false as const, message: e.message })) : undefined;
          await exec.close();
          const after = await pgFingerprint(server, 'music_store');
          const files = [FILE_LO, FILE_COPY].filter((f) => existsSync(f));
          const locks = await server.admin(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'`);
          const didChange = before !== after || files.length > 0;
          const didLeak = (next !== undefined && (!next.ok || JSON.stringify(next.rows) !== clean[mode.url])) || Number(locks[0][0]) > 0;
          if (didChange) changed++;
          if (didLeak) leaked++;
          const ok = !didChange && !didLeak && (!mode.mustRefuse || outcome.startsWith('refused'));
          record({ name: `pg ${mode.name}: ${cls}: ${JSON.stringify(sql).slice(0, 90)}`, ok, detail: `${outcome}${didChange ? '; CHANGED the server' : ''}${files.length ? `; wrote ${files.join(', ')}` : ''}${didLeak ? `; the next request saw ${next && next.ok ? JSON.stringify(next.rows) : (next?.message ?? 'advisory locks held')}` : ''}` });
          for (const f of files) rmSync(f, { force: true });
        }
        cells.push(mode.mustRefuse ? `${refusedBefore}/${sqls.length}` : `${changed} / ${leaked}`);
      }
      table.push(`| ${cls} | ${sqls.length} | ${cells.join(' | ')} |`);
    }
  } finally {
    await server.stop();
    for (const f of [FILE_LO, FILE_COPY]) rmSync(f, { force: true });
  }
  return table;
}
