// `agro sft`, `agro train` and `agro export` on a dataset whose database is on a PostgreSQL server: a `--db-root`
// URL, or a factory output whose manifest names the server (without its password, which then comes from
// PGPASSWORD). They make prompts synchronously, so each must read the server's schema first (SqlEnvironment.prepare).
// One throwaway server for all, the bundled music_store copied into it, the sandboxed read-only role; tiny sizes.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { copySqliteToPostgres, runAdminSql } from '../../src/sql/pg-copy.ts';
import { sandboxRoleSql } from '../../src/sql/pg-setup.ts';
import { redactUrl } from '../../src/sql/postgres.ts';
import { readParquet } from '../../src/data/parquet.ts';
import { SqlEnvironment } from '../../src/agent/sql-env.ts';
import { rowDatabases, rowsToConversations } from '../../src/agent/cold-start/row-conversations.ts';
import { readRows } from '../../src/data/read-json.ts';
import { createExecutor } from '../../src/sql/executor.ts';
import { BIN, DB_ROOT, DEV, MUSIC, tempDir } from '../adversarial/support.ts';
import { PG, startPostgres, type PgServer } from '../support/postgres.ts';
import { filesUnder } from '../support/files.ts';

const PASSWORD = 'train-pg-secret';
const TABLES = ['tracks', 'customers', 'invoices'];

function agro(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 300_000, env: { ...process.env, ...env } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('sft, train and export on PostgreSQL', { skip: PG.skip }, () => {
  let server: PgServer;
  let url: string;
  const tmp = tempDir();
  /** Rows of data/dev.json on music_store whose SQL PostgreSQL runs (no strftime, julianday). */
  const rowsPath = join(tmp.dir, 'rows.jsonl');
  /** A factory output as `agro synth --db <url>` writes it: dataset.jsonl, and a manifest naming the server without its password. */
  const factory = join(tmp.dir, 'factory');
  const sftOut = join(tmp.dir, 'sft');
  /** Statements run on music_store so far (every role). */
  const statements = async (): Promise<number> => Number((await server.admin(`SELECT COALESCE(SUM(xact_commit + xact_rollback), 0) FROM pg_stat_database WHERE datname = 'music_store'`))[0][0]);

  before(async () => {
    server = await startPostgres();
    await copySqliteToPostgres(MUSIC, server.adminUrl('music_store'));
    await runAdminSql(server.adminUrl('music_store'), sandboxRoleSql({ role: 'agro_tr', password: PASSWORD, database: 'music_store' }));
    url = server.url('agro_tr', PASSWORD, 'music_store');
    const dev = (JSON.parse(readFileSync(DEV, 'utf8')) as Array<{ db_id: string; SQL: string }>).filter((r) => r.db_id === 'music_store' && !/strftime|julianday/i.test(r.SQL)).slice(0, 6);
    assert.equal(dev.length, 6);
    writeFileSync(rowsPath, dev.map((r) => JSON.stringify(r)).join('\n') + '\n');
    mkdirSync(factory);
    writeFileSync(join(factory, 'dataset.jsonl'), dev.map((r) => JSON.stringify(r)).join('\n') + '\n');
    writeFileSync(join(factory, 'manifest.json'), JSON.stringify({ dbId: 'music_store', db: redactUrl(url) }));
  });
  after(async () => {
    await server?.stop();
    tmp.cleanup();
  });

  test('the prompts sft makes from a server are the ones it makes from the SQLite file', async () => {
    const rows = readRows(rowsPath);
    const root = `postgres://agro_tr:${PASSWORD}@127.0.0.1:${server.port}/`;
    const exec = createExecutor({ size: 1 });
    let onServer;
    try {
      const pgEnv = new SqlEnvironment(exec);
      // Without prepare() a server's prompt is refused (what sft did before it prepared).
      assert.throws(() => rowsToConversations(rows, root, rowsPath, pgEnv), /call SqlEnvironment\.prepare\(\)/);
      const dbs = rowDatabases(rows, root);
      assert.deepEqual(dbs, [`${root}music_store`]);
      await pgEnv.prepareAll(dbs);
      onServer = rowsToConversations(rows, root, rowsPath, pgEnv);
    } finally {
      await exec.close();
    }
    const onFile = rowsToConversations(rows, DB_ROOT, rowsPath);
    for (const t of TABLES) assert.match(onServer[0][0].content, new RegExp(`\\b${t}\\b`));
    // The same tables in the same order, the same questions and answers (column types are each engine's own).
    const tables = (c: typeof onFile): string[][] => c.map((m) => [...m[0].content.matchAll(/CREATE TABLE (\w+)/g)].map((x) => x[1]));
    assert.deepEqual(tables(onServer), tables(onFile));
    assert.deepEqual(onServer.map((m) => m.slice(1)), onFile.map((m) => m.slice(1)));
  });

  test('agro sft on a factory output made on a server (the password from PGPASSWORD)', { timeout: 300_000 }, async () => {
    const before = await statements();
    // The manifest holds no password: without one the server refuses the role.
    const refused = agro(['sft', '--data', factory, '--out', join(tmp.dir, 'sft-refused'), '--preset', 'tiny', '--vocab-size', '300', '--steps', '2', '--backend', 'wasm', '--json'], { PGPASSWORD: 'wrong' });
    assert.notEqual(refused.status, 0);
    assert.ok(!refused.stderr.includes(PASSWORD));
    const r = agro(['sft', '--data', factory, '--out', sftOut, '--preset', 'tiny', '--vocab-size', '300', '--steps', '2', '--schema-chars', '300', '--value-hints', '0', '--backend', 'wasm', '--json'], { PGPASSWORD: PASSWORD });
    assert.equal(r.status, 0, r.stderr);
    assert.equal((JSON.parse(r.stdout) as { samples: number }).samples, 6);
    assert.ok((await statements()) > before, 'sft read the schema on the server');
  });

  test('agro export (TRL with --db-root <url> and --prompt-from, verl from the factory output)', { timeout: 300_000 }, async () => {
    const ck = join(sftOut, 'checkpoints', 'step-2');
    const trl = join(tmp.dir, 'trl');
    const r = agro(['export', '--format', 'trl', '--data', rowsPath, '--db-root', `postgres://agro_tr:${PASSWORD}@127.0.0.1:${server.port}/`, '--prompt-from', ck, '--out', trl, '--val', '0', '--json']);
    assert.equal(r.status, 0, r.stderr);
    const rows = readFileSync(join(trl, 'train.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { prompt: { role: string; content: string }[]; db_path: string });
    assert.equal(rows.length, 6);
    // --prompt-from: the checkpoint's schema of 300 characters (tables as one line each), with the server's tables.
    const system = rows[0].prompt[0].content;
    assert.doesNotMatch(system, /CREATE TABLE/);
    for (const t of ['tracks', 'genres']) assert.match(system, new RegExp(`\\b${t}\\(`));
    const exp = JSON.parse(readFileSync(join(trl, 'export.json'), 'utf8')) as { prompt: { schemaChars: number; valueHints: number } };
    assert.equal(exp.prompt.schemaChars, 300);
    assert.equal(exp.prompt.valueHints, 0);
    assert.equal(rows[0].db_path, redactUrl(`${url}`));

    const verl = join(tmp.dir, 'verl');
    const v = agro(['export', '--format', 'verl', '--data', factory, '--out', verl, '--val', '0', '--json'], { PGPASSWORD: PASSWORD });
    assert.equal(v.status, 0, v.stderr);
    const parquet = readdirSync(verl).find((f) => f.endsWith('.parquet') && f.startsWith('train'));
    assert.ok(parquet, `a train parquet in ${readdirSync(verl).join(', ')}`);
    const vrows = (await readParquet(join(verl, parquet))) as Array<{ prompt: { content: string }[] }>;
    assert.equal(vrows.length, 6);
    for (const t of TABLES) assert.match(vrows[0].prompt[0].content, new RegExp(`\\b${t}\\b`));
    for (const dir of [trl, verl]) for (const f of filesUnder(dir)) assert.ok(!readFileSync(f).includes(PASSWORD), `${f} holds the password`);
  });

  test('agro train with --db-root <url>: GRPO steps and the held-out evaluation on the server', { timeout: 600_000 }, async () => {
    const before = await statements();
    const out = join(tmp.dir, 'train');
    const root = `postgres://agro_tr:${PASSWORD}@127.0.0.1:${server.port}/`;
    const r = agro(['train', '--data', rowsPath, '--held-out', rowsPath, '--db-root', root, '--init', join(sftOut, 'checkpoints', 'step-2'), '--out', out, '--algo', 'dr_grpo', '--steps', '2', '--group-size', '2', '--prompts', '1', '--max-turns', '1', '--schema-chars', '200', '--json']);
    assert.equal(r.status, 0, r.stderr);
    const summary = JSON.parse(r.stdout) as { steps: number; eval: { n: number } | null };
    assert.equal(summary.steps, 2);
    assert.equal(summary.eval?.n, 6);
    // The gold queries (rewards, evaluation) ran on the server.
    assert.ok((await statements()) - before >= 6, 'train queried the server');
    for (const f of filesUnder(out)) {
      if (/\.(safetensors|bin)$/.test(f)) continue;
      assert.ok(!readFileSync(f, 'utf8').includes(PASSWORD), `${f} holds the password`);
    }
  });
});
