// The dashboard on PostgreSQL: a server database given to it (`agro dashboard --db <url>`) and a factory output made
// on a server (its manifest names the URL without the password, which PGPASSWORD gives) are listed without the
// password, and the SQL runner, the Playground (prompt and episode) and the Data page's coverage run on the server.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { copySqliteToPostgres, runAdminSql } from '../../src/sql/pg-copy.ts';
import { sandboxRoleSql } from '../../src/sql/pg-setup.ts';
import { redactUrl, withoutRedactedPassword } from '../../src/sql/postgres.ts';
import { createExecutor } from '../../src/sql/executor.ts';
import { dashboardRoutes } from '../../src/server/dashboard.ts';
import { formatAction } from '../../src/agent/protocol.ts';
import type { DatasetDetail, PlaygroundEvent } from '../../src/server/dashboard/api-types.ts';
import { startFakeOpenAI } from '../support/fake-openai.ts';
import { DEV, MUSIC, tempDir } from '../adversarial/support.ts';
import { PG, startPostgres, type PgServer } from '../support/postgres.ts';

const PASSWORD = 'dash-pg-secret';

function sseEvents(body: string): PlaygroundEvent[] {
  return body
    .split('\n\n')
    .map((block) => /^data: (.*)$/m.exec(block)?.[1])
    .filter((d): d is string => d !== undefined)
    .map((d) => JSON.parse(d) as PlaygroundEvent);
}

describe('dashboard on PostgreSQL', { skip: PG.skip }, () => {
  let server: PgServer;
  let url: string;
  const tmp = tempDir();
  const savedPassword = process.env.PGPASSWORD;

  before(async () => {
    server = await startPostgres();
    await copySqliteToPostgres(MUSIC, server.adminUrl('music_store'));
    await runAdminSql(server.adminUrl('music_store'), sandboxRoleSql({ role: 'agro_dash', password: PASSWORD, database: 'music_store' }));
    url = server.url('agro_dash', PASSWORD, 'music_store');
    const synth = join(tmp.dir, 'runs', 'synth');
    mkdirSync(synth, { recursive: true });
    const rows = (JSON.parse(readFileSync(DEV, 'utf8')) as Array<{ db_id: string; SQL: string }>).filter((r) => r.db_id === 'music_store').slice(0, 4);
    writeFileSync(join(synth, 'dataset.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
    writeFileSync(join(synth, 'manifest.json'), JSON.stringify({ dbId: 'music_store', db: redactUrl(url) }));
    process.env.PGPASSWORD = PASSWORD;
  });
  after(async () => {
    if (savedPassword === undefined) delete process.env.PGPASSWORD;
    else process.env.PGPASSWORD = savedPassword;
    await server?.stop();
    tmp.cleanup();
  });

  test('SQL runner, Playground and Data page on a server database', { timeout: 120_000 }, async () => {
    const llm = await startFakeOpenAI((req) => ({
      kind: 'reply',
      content: req.body.messages?.some((m) => m.role === 'tool')
        ? formatAction({ kind: 'answer', think: 'done', content: 'SELECT COUNT(*) FROM genres' })
        : formatAction({ kind: 'sql', think: 'look first', content: 'SELECT genre_id FROM genres ORDER BY genre_id LIMIT 3' }),
    }));
    const exec = createExecutor({ size: 2 });
    const app = dashboardRoutes({ dir: join(tmp.dir, 'runs'), executor: exec, webDir: join(tmp.dir, 'no-bundle'), databaseRoots: [], databases: [url], policies: { extra: [{ spec: { llmUrl: llm.baseUrl, llmModel: 'm' } }] } });
    try {
      const ovText = await (await app.request('/api/overview')).text();
      assert.ok(!ovText.includes(PASSWORD), 'the overview holds the password');
      const ov = JSON.parse(ovText) as { databases: { id: string; label: string }[] };
      const given = redactUrl(url);
      const fromManifest = withoutRedactedPassword(redactUrl(url));
      assert.deepEqual(ov.databases.map((d) => d.id), [given, fromManifest]);
      for (const db of [given, fromManifest]) {
        const res = await app.request('/api/sql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ db, sql: 'SELECT COUNT(*) FROM genres' }) });
        assert.equal(res.status, 200, await res.clone().text());
        assert.deepEqual(((await res.json()) as { rows: unknown[][] }).rows, [[12]]);
      }
      // The guard holds on the server too.
      const write = await app.request('/api/sql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ db: given, sql: 'DELETE FROM genres' }) });
      const writeBody = (await write.json()) as { error?: string };
      assert.ok(writeBody.error, JSON.stringify(writeBody));
      assert.equal(Number((await server.admin('SELECT count(*) FROM genres', 'music_store'))[0][0]), 12);

      const policy = `${llm.baseUrl}#m`;
      const prompt = (await (await app.request(`/api/playground/prompt?${new URLSearchParams({ policy, db: given, question: 'How many genres?' })}`)).json()) as { prompt?: string; error?: string };
      assert.ok(prompt.prompt, JSON.stringify(prompt));
      assert.match(prompt.prompt, /\bgenres\b/);
      const ev = sseEvents(await (await app.request(`/api/playground/ask?${new URLSearchParams({ policy, db: fromManifest, question: 'How many genres?' })}`)).text());
      assert.deepEqual(ev.map((e) => e.type), ['start', 'text', 'assistant', 'observation', 'text', 'assistant', 'end'], JSON.stringify(ev));
      assert.deepEqual((ev[3] as Extract<PlaygroundEvent, { type: 'observation' }>).table?.rows, [[1], [2], [3]]);
      const end = ev[6] as Extract<PlaygroundEvent, { type: 'end' }>;
      assert.equal(end.reason, 'answer');
      assert.deepEqual(end.result?.rows, [[12]]);

      const data = (await (await app.request('/api/dataset?id=synth')).json()) as DatasetDetail;
      assert.equal(data.dbAvailable, true);
      assert.equal(data.db, fromManifest);
      assert.ok(data.coverage.some((t) => t.table === 'genres' && t.pairs > 0), JSON.stringify(data.coverage.map((t) => [t.table, t.pairs])));
    } finally {
      await app.close();
      await llm.close();
      await exec.close();
    }
  });
});
