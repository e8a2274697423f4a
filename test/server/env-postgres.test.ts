// The environment API on a PostgreSQL --db-root: /v1/sql, /v1/reward and episode steps run on the server (they
// answered "database not found: postgres://user:password@..." from the SQLite executor before, every reward 0,
// the password inside the observation a policy reads).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { catalogFromDbRoot } from '../../src/data/catalog.ts';
import { envRoutes, type EnvRoutes } from '../../src/server/env.ts';
import { copySqliteToPostgres, runAdminSql } from '../../src/sql/pg-copy.ts';
import { sandboxRoleSql } from '../../src/sql/pg-setup.ts';
import { PG, startPostgres, type PgServer } from '../support/postgres.ts';

const MUSIC = fileURLToPath(new URL('../../data/databases/music_store/music_store.sqlite', import.meta.url));
const PASSWORD = 'env-Secret-pw';
const GOLD = 'SELECT count(*) FROM genres';

describe('the environment API on a PostgreSQL db-root', { skip: PG.skip }, () => {
  let server: PgServer;
  let app: EnvRoutes;
  const bodies: string[] = [];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the API's JSON, read field by field below
  const call = async (path: string, body: unknown): Promise<{ status: number; json: any }> => {
    const res = await app.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const text = await res.text();
    bodies.push(text);
    return { status: res.status, json: JSON.parse(text) };
  };

  before(async () => {
    server = await startPostgres();
    await copySqliteToPostgres(MUSIC, server.adminUrl('music_store'));
    await runAdminSql(server.adminUrl('music_store'), sandboxRoleSql({ role: 'agro_env', password: PASSWORD, database: 'music_store' }));
    app = envRoutes({ catalog: catalogFromDbRoot(server.url('agro_env', PASSWORD, '')) });
  });
  after(async () => {
    await app?.close();
    await server?.stop();
  });

  test('/v1/sql, /v1/reward and an episode run on the server, and no answer holds the password', async () => {
    const sql = await call('/v1/sql', { db_id: 'music_store', sql: GOLD });
    assert.equal(sql.status, 200, JSON.stringify(sql.json));
    assert.equal(sql.json.ok, true, JSON.stringify(sql.json));
    assert.equal(Number(sql.json.rows[0][0]) > 0, true);
    const bad = await call('/v1/sql', { db_id: 'music_store', sql: "SELECT set_config('search_path', 'x', false)" });
    assert.equal(bad.json.ok, false);
    assert.equal(bad.json.error, 'refused');

    const reward = await call('/v1/reward', {
      items: [
        { db_id: 'music_store', gold_sql: GOLD, sql: GOLD },
        { db_id: 'music_store', gold_sql: GOLD, sql: 'SELECT count(*) FROM tracks' },
      ],
    });
    assert.equal(reward.status, 200, JSON.stringify(reward.json));
    assert.deepEqual(reward.json.results.map((r: { correct: boolean }) => r.correct), [true, false]);

    const open = await call('/v1/env/sessions', { db_id: 'music_store', question: 'How many genres?', gold_sql: GOLD });
    assert.equal(open.status, 201, JSON.stringify(open.json));
    const step = await app.request(`/v1/env/sessions/${open.json.session_id}/step`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: `<think></think><answer>${GOLD}</answer>` }) });
    const stepText = await step.text();
    bodies.push(stepText);
    const done = JSON.parse(stepText);
    assert.equal(done.done, true, stepText);
    assert.equal(done.reward.correct, true, stepText);

    const missing = await call('/v1/sql', { db_id: 'no_such_db', sql: 'SELECT 1' });
    assert.equal(missing.json.ok, false);
    for (const b of bodies) assert.ok(!b.includes(PASSWORD), b);
  });
});
