/**
 * A throwaway PostgreSQL server for tests: `initdb` in a temporary folder, `postgres` on a free loopback
 * port with its unix socket in that folder, torn down (and the folder removed) by stop().
 *
 * PostgreSQL refuses to run as root, so under root both programs run as an unprivileged system user
 * (`postgres` when Debian's package made one, else `nobody`) through spawn's uid/gid. The superuser
 * `agro_admin` logs in with a password over TCP (scram-sha-256) as any client would; the socket trusts
 * local users, which only the tests' own processes can reach (the folder is private to the run).
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, chownSync, writeFileSync, readdirSync, existsSync, realpathSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { after, before } from 'node:test';
import { createExecutor } from '../../src/sql/executor.ts';
import type { SqlExecutor } from '../../src/sql/types.ts';
import { needsProgram, type SystemProgram } from './system-program.ts';

/** Where Debian puts the server programs (not on PATH): /usr/lib/postgresql/<major>/bin. */
function debianBinDirs(): string[] {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .sort((a, b) => Number(b) - Number(a))
    .map((v) => join(root, v, 'bin'));
}

/** `describe('...', { skip: PG.skip }, ...)`: skipped with one line when Debian's postgresql is missing (fails under CI=true). */
export const PG: SystemProgram = needsProgram('postgresql', 'initdb', 'the PostgreSQL tests', debianBinDirs());

export const ADMIN_USER = 'agro_admin';
export const ADMIN_PASSWORD = 'agro-test-admin';

export interface PgServer {
  port: number;
  /** The folder holding the data directory and the unix socket. */
  dir: string;
  /** postgres://agro_admin:…@127.0.0.1:port/<db>: a superuser URL (setup and checks only, never the sandbox). */
  adminUrl(db?: string): string;
  /** postgres://<user>:<password>@127.0.0.1:port/<db>. */
  url(user: string, password: string, db: string): string;
  /** Runs SQL as the superuser on `db` (default `postgres`) and returns the rows as arrays. */
  admin(sql: string, db?: string): Promise<unknown[][]>;
  createDatabase(name: string): Promise<void>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** The uid/gid to run the server as: ourselves, or an unprivileged system user when we are root. */
function serverIdentity(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const user of ['postgres', 'nobody']) {
    try {
      const uid = Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }).trim());
      return { uid, gid };
    } catch {
      // no such user: try the next one
    }
  }
  throw new Error('running as root and no unprivileged user (postgres, nobody) to run PostgreSQL as');
}

function run(program: string, args: string[], ident: { uid: number; gid: number } | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: ['ignore', 'ignore', 'pipe'], ...ident, env: { ...process.env, LC_ALL: 'C' } });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${program} exited ${code}: ${err.trim()}`))));
  });
}

/** Servers still running, stopped if the test process exits without stop(). */
const LIVE = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of LIVE) c.kill('SIGQUIT');
});

export async function startPostgres(): Promise<PgServer> {
  // /usr/local/bin/initdb may be a link: the server binary sits beside the real one.
  const initdb = PG.path ? realpathSync(PG.path) : 'initdb';
  const bin = initdb.slice(0, initdb.lastIndexOf('/') + 1);
  const ident = serverIdentity();
  const dir = mkdtempSync(join(tmpdir(), 'agro-pg-'));
  const data = join(dir, 'data');
  const pwfile = join(dir, 'pw');
  writeFileSync(pwfile, `${ADMIN_PASSWORD}\n`, { mode: 0o600 });
  if (ident) {
    chownSync(dir, ident.uid, ident.gid);
    chownSync(pwfile, ident.uid, ident.gid);
  }
  await run(initdb, ['-D', data, '-U', ADMIN_USER, '--pwfile', pwfile, '--auth-host=scram-sha-256', '--auth-local=trust', '-E', 'UTF8', '--locale=C', '--no-sync'], ident);
  rmSync(pwfile);
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    // fsync off and small buffers: a test server holds nothing worth keeping and shares a small machine.
    const server = spawn(
      `${bin}postgres`,
      ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'shared_buffers=32MB', '-c', 'max_connections=60', '-c', 'log_min_messages=fatal'],
      { stdio: ['ignore', 'ignore', 'pipe'], ...ident, env: { ...process.env, LC_ALL: 'C' } },
    );
    let log = '';
    server.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
    LIVE.add(server);
    const exited = new Promise<void>((res) => server.once('exit', () => res()));
    server.once('exit', () => LIVE.delete(server));
    const adminUrl = (db = 'postgres'): string => `postgres://${ADMIN_USER}:${ADMIN_PASSWORD}@127.0.0.1:${port}/${db}`;
    const deadline = Date.now() + 30_000;
    let up = false;
    while (Date.now() < deadline && server.exitCode === null) {
      const c = new pg.Client({ connectionString: adminUrl() });
      try {
        await c.connect();
        await c.query('SELECT 1');
        up = true;
        break;
      } catch (err) {
        lastError = err;
        await new Promise((r) => setTimeout(r, 100));
      } finally {
        await c.end().catch(() => undefined);
      }
    }
    if (!up) {
      server.kill('SIGQUIT');
      await exited;
      lastError = new Error(`postgres did not start: ${log.trim() || String(lastError)}`);
      continue;
    }
    const admin = async (sql: string, db = 'postgres'): Promise<unknown[][]> => {
      const c = new pg.Client({ connectionString: adminUrl(db) });
      await c.connect();
      try {
        const r = await c.query({ text: sql, rowMode: 'array' });
        return (Array.isArray(r) ? r.at(-1)! : r).rows as unknown[][];
      } finally {
        await c.end();
      }
    };
    return {
      port,
      dir,
      adminUrl,
      url: (user, password, db) => `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${port}/${db}`,
      admin,
      createDatabase: async (name) => {
        await admin(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
      },
      stop: async () => {
        if (server.exitCode === null) {
          server.kill('SIGINT'); // fast shutdown: ends the sessions, no checkpoint wait worth having
          await exited;
        }
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  rmSync(dir, { recursive: true, force: true });
  throw lastError instanceof Error ? lastError : new Error(String(lastError));
}

/**
 * Inside a describe block: a PostgreSQL server started before its tests (then `setup` on it), and an executor
 * for the tests' own queries, made on first use, which may run as the owner as the factory's do
 * (src/sql/pg-role.ts); both closed after the tests. Read its fields in the tests, once they run.
 */
export function postgresForTests(setup?: (server: PgServer) => Promise<void>): { readonly server: PgServer; readonly exec: SqlExecutor } {
  let server: PgServer | undefined;
  let exec: SqlExecutor | undefined;
  before(async () => {
    server = await startPostgres();
    await setup?.(server);
  });
  after(async () => {
    await exec?.close();
    await server?.stop();
  });
  return {
    get server(): PgServer {
      if (!server) throw new Error('the PostgreSQL server starts before the tests: read it inside one');
      return server;
    },
    get exec(): SqlExecutor {
      return (exec ??= createExecutor({ size: 2, allowPrivilegedRole: true }));
    },
  };
}
