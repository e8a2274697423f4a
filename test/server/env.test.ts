import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { serveEnv, type RunningEnvServer } from '../../src/server/env.ts';
import { catalogFromDbRoot } from '../../src/data/catalog.ts';
import { SqlEnvironment } from '../../src/agent/sql-env.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { makeEnvFixture } from '../support/env-server.ts';

const fx = makeEnvFixture();
const catalog = catalogFromDbRoot(fx.dbRoot, fx.variants);
let srv: RunningEnvServer;

before(async () => {
  srv = await serveEnv({ catalog, sessionTtlMs: 60_000 });
});
after(async () => {
  await srv.close();
  rmSync(fx.dir, { recursive: true, force: true });
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each route answers its own JSON shape
type Json = any;

async function call(path: string, body?: unknown, init: RequestInit = {}, base = srv.url): Promise<{ status: number; json: Json }> {
  const res = await fetch(base + path, {
    method: body === undefined ? (init.method ?? 'GET') : (init.method ?? 'POST'),
    headers: { 'content-type': 'application/json', ...(init.headers ?? {}) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

const answer = (sql: string): string => `<think>ok</think>\n<answer>${sql}</answer>`;
const GOLD = 'SELECT name FROM singer WHERE age > 40';

test('health and schema: the schema is the text agro puts in the prompt', async () => {
  assert.deepEqual((await call('/health')).json.ok, true);
  const r = await call('/v1/schema?db_id=concert');
  assert.equal(r.status, 200);
  const pool = new SqlPool({ size: 1 });
  const env = new SqlEnvironment(pool);
  assert.equal(r.json.schema, env.schemaFor(join(fx.dbRoot, 'concert', 'concert.sqlite')));
  await pool.close();
  assert.equal(r.json.variants, 1);
  assert.deepEqual(r.json.tables[0].columns.map((c: { name: string }) => c.name), ['singer_id', 'name', 'age']);
  assert.equal((await call('/v1/schema?db_id=nope')).status, 404);
  assert.equal((await call('/v1/schema?db_id=..')).status, 400);
});

test('/v1/sql runs read-only SQL in the sandbox and refuses writes', async () => {
  const ok = await call('/v1/sql', { db_id: 'concert', sql: 'SELECT name FROM singer ORDER BY age DESC' });
  assert.equal(ok.status, 200);
  assert.deepEqual(ok.json.rows, [['Cid'], ['Bob'], ['Ann']]);
  assert.match(ok.json.observation, /^name\nCid\nBob\nAnn\n\(3 rows\)$/);
  const refused = await call('/v1/sql', { db_id: 'concert', sql: 'DROP TABLE singer' });
  assert.equal(refused.json.ok, false);
  assert.equal(refused.json.error, 'refused');
  const still = await call('/v1/sql', { db_id: 'concert', sql: 'SELECT COUNT(*) AS n FROM singer' });
  assert.deepEqual(still.json.rows, [[3]]);
  assert.equal((await call('/v1/sql', '{not json')).status, 400);
  assert.equal((await call('/v1/sql', { db_id: 'concert' })).status, 400);
  assert.equal((await call('/v1/sql', { db_id: 'concert', sql: 'SELECT 1', extra: 1 })).status, 400);
});

test('/v1/reward scores a batch like agro train: test suite, format, weights', async () => {
  const r = await call('/v1/reward', {
    rewards: [
      { name: 'execution', weight: 1 },
      { name: 'format', weight: 0.5 },
    ],
    items: [
      { db_id: 'concert', gold_sql: GOLD, completion: answer(GOLD) },
      // Right on the original, wrong on the variant: the test suite catches it.
      { db_id: 'concert', gold_sql: GOLD, completion: answer('SELECT name FROM singer WHERE singer_id > 1') },
      { db_id: 'concert', gold_sql: GOLD, completion: 'SELECT name FROM singer WHERE age > 40' },
      { db_id: 'concert', gold_sql: GOLD, turns: ['<think></think><sql>SELECT age FROM singer</sql>', answer(GOLD)] },
    ],
  });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.deepEqual(r.json.labels, ['execution', 'format']);
  assert.deepEqual(
    r.json.results.map((x: { total: number }) => x.total),
    [1.5, 0.5, 0, 1.5],
  );
  assert.equal(r.json.results[1].parts.execution.reason, 'mismatch on db 1');
  assert.equal(r.json.results[2].pred_sql, '');
  assert.deepEqual(r.json.results.map((x: { correct: boolean }) => x.correct), [true, false, false, true]);
});

test('/v1/reward: groups give OTC its optimum; bad rewards and items are the client\'s error', async () => {
  const sqlTurn = '<think></think><sql>SELECT 1</sql>';
  const r = await call('/v1/reward', {
    rewards: [{ name: 'tool_efficiency', weight: 1 }],
    items: [
      { db_id: 'concert', gold_sql: GOLD, turns: [answer(GOLD)], group: 'g' },
      { db_id: 'concert', gold_sql: GOLD, turns: [sqlTurn, sqlTurn, answer(GOLD)], group: 'g' },
    ],
  });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  // n = 0 (the fewest calls of a correct answer): m = 0 → 1; m = 2 → cos(2π/(4+1)) = cos(72°).
  assert.equal(r.json.results[0].total, 1);
  assert.ok(Math.abs(r.json.results[1].total - Math.cos((2 * Math.PI) / 5)) < 1e-12);
  const unknown = await call('/v1/reward', { rewards: [{ name: 'nope', weight: 1 }], items: [{ db_id: 'concert', gold_sql: GOLD, sql: GOLD }] });
  assert.equal(unknown.status, 400);
  assert.match(unknown.json.error, /unknown reward "nope"/);
  const noTurns = await call('/v1/reward', { rewards: [{ name: 'format', weight: 1 }], items: [{ db_id: 'concert', gold_sql: GOLD, sql: GOLD }] });
  assert.equal(noTurns.status, 400);
  const both = await call('/v1/reward', { items: [{ db_id: 'concert', gold_sql: GOLD, sql: GOLD, completion: 'x' }] });
  assert.equal(both.status, 400);
  assert.match(both.json.error, /^items\.0: give exactly one/);
  assert.equal((await call('/v1/reward', { items: [{ db_id: 'gone', gold_sql: GOLD, sql: GOLD }] })).status, 404);
});

test('sessions: an episode over HTTP is agro\'s SQL environment, with its reward at the end', async () => {
  const open = await call('/v1/env/sessions', { db_id: 'concert', question: 'Singers over 40?', evidence: 'over 40 means age > 40', gold_sql: GOLD });
  assert.equal(open.status, 201);
  const pool = new SqlPool({ size: 1 });
  const env = new SqlEnvironment(pool);
  const task = { id: '', dbId: 'concert', dbPath: join(fx.dbRoot, 'concert', 'concert.sqlite'), question: 'Singers over 40?', evidence: 'over 40 means age > 40', goldSql: GOLD };
  assert.deepEqual(open.json.messages, env.openingFor(task));
  await pool.close();
  const id = open.json.session_id;
  const s1 = await call(`/v1/env/sessions/${id}/step`, { text: '<think>look</think><sql>SELECT COUNT(*) FROM singer</sql>' });
  assert.deepEqual(s1.json, { done: false, observation: '<observation>COUNT(*)\n3\n(1 rows)</observation>', turn: 1 });
  const s2 = await call(`/v1/env/sessions/${id}/step`, { text: answer(GOLD) });
  assert.equal(s2.json.done, true);
  assert.equal(s2.json.reason, 'answer');
  assert.equal(s2.json.reward.total, 1);
  assert.equal((await call(`/v1/env/sessions/${id}/step`, { text: answer(GOLD) })).status, 409);
  assert.equal((await call(`/v1/env/sessions/${id}`, undefined, { method: 'DELETE' })).status, 204);
  assert.equal((await call(`/v1/env/sessions/${id}`, undefined, { method: 'DELETE' })).status, 404);
  assert.equal((await call(`/v1/env/sessions/${id}/step`, { text: 'x' })).status, 404);
});

test('sessions do not cross: interleaved episodes on two databases each see their own', async () => {
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) {
    const r = await call('/v1/env/sessions', { db_id: i % 2 ? 'club' : 'concert', question: `q${i}` });
    ids.push(r.json.session_id);
  }
  const steps = await Promise.all(
    ids.map((id, i) => call(`/v1/env/sessions/${id}/step`, { text: `<think></think><sql>SELECT ${i % 2 ? 'nickname FROM member' : 'name FROM singer'} LIMIT 1 OFFSET 0</sql>` })),
  );
  steps.forEach((s, i) => assert.match(s.json.observation, i % 2 ? /nickname\nzed/ : /name\nAnn/));
  const ends = await Promise.all(ids.map((id) => call(`/v1/env/sessions/${id}/step`, { text: 'no tags at all' })));
  for (const e of ends) {
    assert.equal(e.json.done, true);
    assert.equal(e.json.reason, 'invalid_action');
    assert.equal(e.json.reward, null);
  }
});

test('sessions expire after their idle time', async () => {
  const s = await serveEnv({ catalog, sessionTtlMs: 40 });
  try {
    const open = await call('/v1/env/sessions', { db_id: 'club', question: 'q' }, {}, s.url);
    await new Promise((r) => setTimeout(r, 120));
    assert.equal((await call(`/v1/env/sessions/${open.json.session_id}/step`, { text: answer('SELECT 1') }, {}, s.url)).status, 404);
    assert.ok(s.routes.stats().sessionsExpired >= 1);
  } finally {
    await s.close();
  }
});

test('limits: bearer token, body size, concurrency, and a runaway query stopped on time', async () => {
  await assert.rejects(serveEnv({ catalog, host: '0.0.0.0' }), /needs a token/);
  const s = await serveEnv({ catalog, token: 'secret-token', maxInFlight: 1, maxQueued: 0, maxBodyBytes: 2048, sqlTimeoutMs: 600, fastLaneMs: 100 });
  const auth = { headers: { authorization: 'Bearer secret-token' } };
  try {
    assert.equal((await call('/v1/sql', { db_id: 'club', sql: 'SELECT 1' }, {}, s.url)).status, 401);
    assert.equal((await call('/health', undefined, {}, s.url)).status, 200);
    assert.equal((await call('/v1/sql', { db_id: 'club', sql: 'SELECT 1' }, auth, s.url)).status, 200);
    assert.equal((await call('/v1/sql', { db_id: 'club', sql: `SELECT '${'x'.repeat(4000)}'` }, auth, s.url)).status, 413);
    const runaway = 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c';
    const slow = call('/v1/sql', { db_id: 'club', sql: runaway }, auth, s.url);
    await new Promise((r) => setTimeout(r, 50));
    const busy = await call('/v1/sql', { db_id: 'club', sql: 'SELECT 1' }, auth, s.url);
    assert.equal(busy.status, 503);
    const done = await slow;
    assert.equal(done.json.ok, false);
    assert.equal(done.json.error, 'timeout');
    assert.ok(s.routes.stats().rejected >= 1);
  } finally {
    await s.close();
  }
});

test('sessions are capped by the bytes of text they hold, not only by count; a deleted session frees its bytes', async () => {
  const cap = 1024 * 1024;
  const s = await serveEnv({ catalog, maxSessionBytes: cap, maxBodyBytes: 4 * 1024 * 1024 });
  try {
    const question = 'q'.repeat(300_000);
    const ids: string[] = [];
    let refused: { status: number; json: Json } | undefined;
    for (let i = 0; i < 10 && !refused; i++) {
      const r = await call('/v1/env/sessions', { db_id: 'concert', question }, {}, s.url);
      if (r.status === 201) ids.push(r.json.session_id);
      else refused = r;
    }
    // The question is held twice (the task and the opening prompt): one session fits in 1 MiB, not four.
    assert.ok(ids.length >= 1 && ids.length < 4, `${ids.length} sessions`);
    assert.equal(refused?.status, 503);
    assert.match(refused!.json.error, /bytes of text/);
    assert.ok(s.routes.stats().sessionBytes <= cap);
    // A turn that would pass the cap is refused too, and the session is still there.
    const big = await call(`/v1/env/sessions/${ids[0]}/step`, { text: 'x'.repeat(cap) }, {}, s.url);
    assert.equal(big.status, 503);
    for (const id of ids) assert.equal((await call(`/v1/env/sessions/${id}`, undefined, { method: 'DELETE' }, s.url)).status, 204);
    assert.equal(s.routes.stats().sessionBytes, 0);
    assert.equal((await call('/v1/env/sessions', { db_id: 'concert', question }, {}, s.url)).status, 201);
  } finally {
    await s.close();
  }
});

test('graceful shutdown lets a running request finish', async () => {
  const s = await serveEnv({ catalog, sqlTimeoutMs: 400, fastLaneMs: 100 });
  const runaway = 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c';
  const pending = call('/v1/sql', { db_id: 'club', sql: runaway }, {}, s.url);
  await new Promise((r) => setTimeout(r, 50));
  await s.close();
  const r = await pending;
  assert.equal(r.status, 200);
  assert.equal(r.json.error, 'timeout');
  await assert.rejects(fetch(`${s.url}/health`));
});
