// `agro quickstart --db postgres://…` end to end on a real server: the bundled music_store copied with `agro db copy`'s
// code, the factory's SQL in PostgreSQL's dialect and verified there, SFT, GRPO and the held-out evaluation all on
// the server, as the sandboxed read-only role, and the password nowhere in what the run writes or prints.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { copySqliteToPostgres, runAdminSql } from '../../src/sql/pg-copy.ts';
import { sandboxRoleSql } from '../../src/sql/pg-setup.ts';
import { createExecutor } from '../../src/sql/executor.ts';
import type { QuickstartReport } from '../../src/pipeline/quickstart.ts';
import { PG, startPostgres, type PgServer } from '../support/postgres.ts';
import { tempDir } from '../sql/helpers.ts';
import { filesUnder } from '../support/files.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin/agro.js');
const PASSWORD = 'qs-secret-pw';

describe('agro quickstart on PostgreSQL', { skip: PG.skip }, () => {
  let server: PgServer;
  const tmp = tempDir('agro-pgqs-');

  before(async () => {
    server = await startPostgres();
    await copySqliteToPostgres(join(ROOT, 'data/databases/music_store/music_store.sqlite'), server.adminUrl('music_store'));
    await runAdminSql(server.adminUrl('music_store'), sandboxRoleSql({ role: 'agro_qs', password: PASSWORD, database: 'music_store' }));
  });
  after(async () => {
    await server?.stop();
    tmp.cleanup();
  });

  test('synth → SFT → GRPO → held-out EX, every query on the server', { timeout: 900_000 }, async () => {
    const url = server.url('agro_qs', PASSWORD, 'music_store');
    const out = join(tmp.dir, 'run');
    // Statements the role runs on the server, counted before and after: the run's queries go there.
    const calls = async (): Promise<number> => Number((await server.admin(`SELECT COALESCE(SUM(xact_commit + xact_rollback), 0) FROM pg_stat_database WHERE datname = 'music_store'`))[0][0]);
    const before = await calls();
    const r = spawnSync(process.execPath, [BIN, 'quickstart', '--small', '--db', url, '--out', out, '--json'], { encoding: 'utf8', timeout: 840_000 });
    assert.equal(r.status, 0, r.stderr);
    const report = JSON.parse(r.stdout) as QuickstartReport;
    const { synth, split, sft, rl } = report;
    assert.ok(synth && split && sft && rl, 'every stage reported');
    assert.ok(synth.rows >= 30, `synth produced ${synth.rows} rows`);
    assert.equal(synth.variants, 0, 'the read-only role may not make variant databases');
    assert.equal(split.sft + split.rl + split.heldOut, synth.rows);
    for (const ev of [sft.eval, rl.eval]) {
      assert.equal(ev.n, split.heldOut);
      assert.ok(ev.accuracy >= 0 && ev.accuracy <= 1);
    }
    // The reports are written, and name the server without its password.
    for (const f of ['report.json', 'held_out.jsonl', 'train.jsonl', 'synth/dataset.jsonl', 'synth/manifest.json', 'sft/predict/report.json', 'grpo/predict/report.json']) {
      assert.ok(existsSync(join(out, f)), `${f} written`);
    }
    for (const f of filesUnder(out)) {
      if (/\.(safetensors|bin)$/.test(f)) continue;
      assert.ok(!readFileSync(f, 'utf8').includes(PASSWORD), `${f} holds the password`);
    }
    assert.ok(!r.stdout.includes(PASSWORD) && !r.stderr.includes(PASSWORD));
    const manifest = JSON.parse(readFileSync(join(out, 'synth/manifest.json'), 'utf8')) as { dbId: string; db: string };
    assert.equal(manifest.dbId, 'music_store');
    assert.match(manifest.db, /^postgres:\/\/agro_qs:\*+@127\.0\.0\.1:\d+\/music_store$/);
    // The gold SQL is PostgreSQL's: every pair runs on the server as the read-only role.
    const rows = readFileSync(join(out, 'synth/dataset.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { SQL: string });
    const exec = createExecutor({ size: 2 });
    try {
      for (const row of rows) {
        const res = await exec.execute(url, row.SQL, { timeoutMs: 5000 });
        assert.ok(res.ok, `${row.SQL}: ${res.ok ? '' : res.message}`);
      }
    } finally {
      await exec.close();
    }
    // The held-out EX the run reports is the evaluator's, computed on the server: `agro eval` with the server as root.
    const evOut = join(tmp.dir, 'eval.json');
    const ev = spawnSync(process.execPath, [BIN, 'eval', '--data', join(out, 'held_out.jsonl'), '--pred', join(out, 'grpo', 'predictions.json'), '--db-root', url, '--timeout', '5000', '--out', evOut], { encoding: 'utf8' });
    assert.equal(ev.status, 0, ev.stderr);
    const evReport = JSON.parse(readFileSync(evOut, 'utf8')) as { summary: { count: number; correct: number } };
    assert.equal(evReport.summary.count, split.heldOut);
    assert.equal(evReport.summary.correct, Math.round(rl.eval.accuracy * rl.eval.n));
    // Thousands of statements from the factory, the agent's episodes and the evaluation reached the server.
    assert.ok((await calls()) - before > 1000, 'the run queried the server');
  });
});
