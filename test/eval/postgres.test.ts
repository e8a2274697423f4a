// `agro eval` on PostgreSQL: the bundled dev set and predictions, run on copies of the bundled databases on a real
// server, agree question by question with the same run on SQLite, except where the SQL itself is SQLite's own.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveDatabase } from '../../src/data/databases.ts';
import { copySqliteToPostgres, runAdminSql } from '../../src/sql/pg-copy.ts';
import { sandboxRoleSql } from '../../src/sql/pg-setup.ts';
import type { EvalReport } from '../../src/eval/types.ts';
import { PG, startPostgres, type PgServer } from '../support/postgres.ts';
import { tempDir } from '../sql/helpers.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin/agro.js');
const IDS = ['music_store', 'retail', 'school'];

/**
 * The dev set's questions whose gold SQL is SQLite's own dialect, and why PostgreSQL cannot run it. Each is a
 * gold_error on PostgreSQL (scored wrong, as BIRD's script scores a question whose queries raise).
 */
const SQLITE_ONLY: Record<number, RegExp> = {
  2: /strftime/, // strftime('%Y', d): PostgreSQL has to_char / EXTRACT
  21: /strftime/,
  28: /strftime/,
  23: /julianday/, // julianday(d): PostgreSQL subtracts dates
  27: /subquery in FROM must have an alias/, // SQLite (and PostgreSQL 16+) allow an unnamed subquery in FROM
};

test('a postgres:// root names each db_id as a database on that server', () => {
  assert.equal(resolveDatabase('postgres://u:p@127.0.0.1:5432/', 'retail'), 'postgres://u:p@127.0.0.1:5432/retail');
  assert.equal(resolveDatabase('postgres://u:p@h/postgres?sslmode=disable', 'retail'), 'postgres://u:p@h/retail?sslmode=disable');
  assert.equal(resolveDatabase('postgres://u:p@h/bird_{db_id}', 'retail'), 'postgres://u:p@h/bird_retail');
  assert.throws(() => resolveDatabase('postgres://u:p@h/', '../x'), /not a plain name/);
});

describe('agro eval on PostgreSQL', { skip: PG.skip }, () => {
  let server: PgServer;
  const tmp = tempDir('agro-pgeval-');

  before(async () => {
    server = await startPostgres();
    for (const id of IDS) {
      await copySqliteToPostgres(join(ROOT, 'data/databases', id, `${id}.sqlite`), server.adminUrl(id));
      await runAdminSql(server.adminUrl(id), sandboxRoleSql({ role: 'agro_eval', password: 'eval-pw', database: id }));
    }
  });
  after(async () => {
    await server?.stop();
    tmp.cleanup();
  });

  function evalRun(dbRoot: string, extra: string[], out: string): EvalReport {
    const r = spawnSync(process.execPath, [BIN, 'eval', '--data', join(ROOT, 'data/dev.json'), '--db-root', dbRoot, '--timeout', '2000', '--out', out, ...extra], { encoding: 'utf8', timeout: 180_000 });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(readFileSync(out, 'utf8')) as EvalReport;
  }

  test('the bundled predictions score question by question as on SQLite, but for SQLite-only gold SQL', () => {
    const root = server.url('agro_eval', 'eval-pw', '');
    for (const [label, extra] of [
      ['partly-wrong', ['--pred', join(ROOT, 'data/predictions/partly-wrong.json')]],
      ['gold', ['--gold']],
    ] as const) {
      const lite = evalRun(join(ROOT, 'data/databases'), [...extra], join(tmp.dir, `${label}-sqlite.json`));
      const pg = evalRun(root, [...extra], join(tmp.dir, `${label}-pg.json`));
      assert.equal(pg.questions.length, 45);
      const differ: number[] = [];
      for (let i = 0; i < lite.questions.length; i++) {
        const a = lite.questions[i];
        const b = pg.questions[i];
        if (a.outcome === b.outcome && a.errorKind === b.errorKind) continue;
        differ.push(i);
        const why = SQLITE_ONLY[i];
        assert.ok(why, `${label} #${i}: ${a.outcome} on SQLite, ${b.outcome} on PostgreSQL (${b.message})`);
        assert.equal(b.outcome, 'gold_error', `${label} #${i}`);
        assert.match(b.message ?? '', why, `${label} #${i}`);
      }
      // Every listed difference shows up (the gold fails on PostgreSQL whatever the prediction).
      assert.deepEqual(differ.filter((i) => lite.questions[i].outcome !== 'gold_error'), differ);
      for (const i of Object.keys(SQLITE_ONLY).map(Number)) assert.equal(pg.questions[i].outcome, 'gold_error', `${label} #${i}`);
      if (label === 'partly-wrong') {
        // The deliberate errors are the same kind of error on both engines: a syntax error, a DELETE refused, a runaway stopped.
        assert.deepEqual([7, 38, 22].map((i) => [pg.questions[i].outcome, pg.questions[i].errorKind]), [['pred_error', 'syntax'], ['pred_error', 'refused'], ['timeout', undefined]]);
        assert.equal(lite.summary.correct, 38);
        assert.equal(pg.summary.correct, 38 - differ.filter((i) => lite.questions[i].outcome === 'match').length);
      }
      // The server's password stays out of the report.
      assert.ok(!JSON.stringify(pg).includes('eval-pw'));
    }
  });
});
