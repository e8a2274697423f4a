// Writes behind a token (#58): every route that stores, removes or starts work refuses a request the guard did not
// let write — no token, a wrong one, one in a query string of a POST, a forged Origin or Host, a cross-site form —
// while reads stay open on loopback. Then the CLI: a token made at start and shown only in the start line, the
// printed link's cookie, --no-token's warning, and no token off loopback.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { serve, type ServerType } from '@hono/node-server';
import { createApp } from '../../src/server/app.ts';
import { policyRouteGroups } from '../../src/server/policy-routes.ts';
import { dashboardRoutes, type DashboardRoutes } from '../../src/server/dashboard.ts';
import { openPolicy } from '../../src/agent/policies/open.ts';
import type { Policy } from '../../src/agent/policies/types.ts';
import { catalogFromDbRoot } from '../../src/data/catalog.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { formatAction } from '../../src/agent/protocol.ts';
import { buildMemory } from '../../src/memory/build.ts';
import { writeMemory } from '../../src/memory/store.ts';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { raw, startCli, type RawReply, type RawRequest } from '../support/raw-http.ts';
import { jsonBody } from '../support/server-routes.ts';
import { forgeries, refusedForgery } from '../support/forged-writes.ts';
import { saveTinyCheckpoint } from '../support/tiny-checkpoint.ts';

const BIN = resolve('bin/agro.js');
const MUSIC = resolve('data/databases/music_store/music_store.sqlite');
const TOKEN = randomBytes(32).toString('base64url');
const tmp = mkdtempSync(join(tmpdir(), 'agro-token-'));
const pool = new SqlPool({ size: 2 });
const memoryPath = join(tmp, 'memory.db');
let llm: FakeOpenAI;
let policy: Policy;
let dash: DashboardRoutes;
let server: ServerType;
let port = 0;
let dbId = '';
let playPolicy = '';

const SQL = 'SELECT name FROM genres ORDER BY name';

before(async () => {
  llm = await startFakeOpenAI(() => ({ kind: 'reply', content: formatAction({ kind: 'answer', think: 'count', content: 'SELECT COUNT(*) FROM genres' }) }));
  policy = await openPolicy({ llmUrl: llm.baseUrl, llmModel: 'fake', concurrency: 2 });
  writeMemory(memoryPath, await buildMemory('music_store', introspectSchema(MUSIC), [{ sql: 'SELECT COUNT(*) FROM customers', question: 'How many customers are there?' }], pool, MUSIC));
  mkdirSync(join(tmp, 'runs'));
  mkdirSync(join(tmp, 'cli-runs'));
  dash = dashboardRoutes({ dir: join(tmp, 'runs'), executor: pool, webDir: join(tmp, 'no-bundle'), policies: { extra: [{ spec: { llmUrl: llm.baseUrl, llmModel: 'm' } }] } });
  const app = createApp({
    groups: [...policyRouteGroups({ openai: { policy }, ask: { catalog: catalogFromDbRoot(resolve('data/databases')), executor: pool, memory: [memoryPath] } }), { prefix: '/dashboard', app: dash }],
    // As `agro serve --dashboard` on loopback with no token given: a made one guards the writes only.
    guard: { listenHost: '127.0.0.1', token: TOKEN, tokenScope: 'writes', isPage: (p) => p.startsWith('/dashboard') && !p.startsWith('/dashboard/api/') },
  });
  server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((r) => server.once('listening', r));
  port = (server.address() as AddressInfo).port;
  const ov = JSON.parse((await raw(port, { path: '/dashboard/api/overview' })).body) as { databases: { id: string; label: string }[]; policies: { id: string }[] };
  dbId = ov.databases.find((d) => d.label === 'music_store')!.id;
  playPolicy = ov.policies[0].id;
});

after(async () => {
  server?.close();
  await dash?.close();
  await policy?.close();
  await llm?.close();
  await pool.close();
  rmSync(tmp, { recursive: true, force: true });
});

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const play = (extra: Record<string, string> = {}) => new URLSearchParams({ policy: playPolicy, db: dbId, ...extra }).toString();

/** Every route that writes or starts work, as a request that would succeed with the token. */
function writeRoutes(): RawRequest[] {
  return [
    { method: 'POST', path: '/v1/corrections', ...jsonBody({ db_id: 'music_store', question: 'Which genres are there, by name?', sql: SQL }) },
    { method: 'DELETE', path: '/v1/corrections/1?db_id=music_store' },
    { path: `/dashboard/api/playground/ask?${play({ question: 'How many genres?' })}` },
    { method: 'POST', path: '/dashboard/api/playground/correct', ...jsonBody({ policy: playPolicy, db: dbId, question: 'Which genres are there, by name?', sql: SQL }) },
    { method: 'DELETE', path: `/dashboard/api/playground/corrections/1?${play()}` },
  ];
}

/** What the memories hold: the people's corrections over HTTP (removed ones too), as ids. */
async function held(): Promise<string> {
  const api = JSON.parse((await raw(port, { path: '/v1/corrections?db_id=music_store&removed=1' })).body) as { corrections: { id: number; removed?: true }[] };
  const pg = JSON.parse((await raw(port, { path: `/dashboard/api/playground/corrections?${play()}` })).body) as { corrections?: unknown[]; error?: string };
  return JSON.stringify([api.corrections, pg.corrections ?? pg.error]);
}

test('no forged request writes: every write route refuses ≥ 50 forgeries, and nothing changes in the memories', async () => {
  const before = await held();
  const sent: Array<[string, string, RawReply]> = [];
  for (const r of writeRoutes()) for (const [how, f] of forgeries(r, TOKEN, port)) sent.push([how, `${r.method ?? 'GET'} ${r.path}`, await raw(port, f)]);
  assert.ok(sent.length >= 50, `${sent.length} forged requests`);
  assert.deepEqual(sent.filter(([, , res]) => !refusedForgery(res, TOKEN)).map(([how, route, res]) => `${route} with ${how}: ${res.status}`), []);
  assert.equal(await held(), before, 'the memories are as they were');
});

test('reads stay open; the token by header, or the cookie the printed link sets, stores and undoes a correction', async () => {
  // Open reads: listing, the overview (which says the page may not write), the schema prompt.
  const list = await raw(port, { path: '/v1/corrections?db_id=music_store' });
  assert.equal(list.status, 200);
  const ov0 = JSON.parse((await raw(port, { path: '/dashboard/api/overview' })).body) as { writable: boolean };
  assert.equal(ov0.writable, false);
  assert.equal((await raw(port, { path: `/dashboard/api/playground/prompt?${play({ question: 'How many genres?' })}` })).status, 200);
  // A bad listing query is one line naming the field.
  const badSince = await raw(port, { path: '/v1/corrections?db_id=music_store&since=yesterday' });
  assert.equal(badSince.status, 400);
  assert.match(badSince.body, /since: an ISO date/);

  const stored = await raw(port, { ...writeRoutes()[0], headers: { ...writeRoutes()[0].headers, ...bearer(TOKEN) } });
  assert.equal(stored.status, 200, stored.body);
  const live = JSON.parse((await raw(port, { path: '/v1/corrections?db_id=music_store' })).body) as { corrections: { id: number; sql: string; questions: string[]; at: string }[] };
  const mine = live.corrections.find((c) => c.sql === SQL)!;
  assert.ok(mine && mine.questions.includes('Which genres are there, by name?') && !Number.isNaN(Date.parse(mine.at)), JSON.stringify(live));
  const since = JSON.parse((await raw(port, { path: `/v1/corrections?db_id=music_store&since=${new Date(Date.now() + 60_000).toISOString()}` })).body) as { corrections: unknown[] };
  assert.deepEqual(since.corrections, [], 'nothing stored after a time to come');
  const undo = await raw(port, { method: 'DELETE', path: `/v1/corrections/${mine.id}?db_id=music_store`, headers: bearer(TOKEN) });
  assert.equal(undo.status, 200, undo.body);
  assert.equal((await raw(port, { method: 'DELETE', path: `/v1/corrections/${mine.id}?db_id=music_store`, headers: bearer(TOKEN) })).status, 404, 'undone once');
  const after = JSON.parse((await raw(port, { path: '/v1/corrections?db_id=music_store&removed=1' })).body) as { corrections: { id: number; removed?: true }[] };
  assert.equal(after.corrections.find((c) => c.id === mine.id)?.removed, true, 'kept as removed');
  assert.equal((await raw(port, { method: 'DELETE', path: '/v1/corrections/abc?db_id=music_store', headers: bearer(TOKEN) })).status, 400);

  // The printed link: ?token= on a page sets the cookie and drops the token from the address.
  const link = await raw(port, { path: `/dashboard/?token=${encodeURIComponent(TOKEN)}`, headers: { 'sec-fetch-mode': 'navigate', 'sec-fetch-site': 'none' } });
  assert.equal(link.status, 302);
  assert.equal(link.headers.location, '/dashboard/');
  const cookie = String(link.headers['set-cookie']).split(';')[0];
  assert.match(String(link.headers['set-cookie']), /HttpOnly/i);
  assert.match(String(link.headers['set-cookie']), /SameSite=Strict/i);
  const withCookie = { cookie, origin: `http://127.0.0.1:${port}` };
  const ov1 = JSON.parse((await raw(port, { path: '/dashboard/api/overview', headers: withCookie })).body) as { writable: boolean };
  assert.equal(ov1.writable, true);
  const r = writeRoutes()[3];
  const correct = await raw(port, { ...r, headers: { ...r.headers, ...withCookie } });
  assert.equal(correct.status, 200, correct.body);
  const pg = JSON.parse((await raw(port, { path: `/dashboard/api/playground/corrections?${play()}` })).body) as { corrections: { id: number; sql: string }[] };
  const taught = pg.corrections.find((c) => c.sql === SQL)!;
  assert.ok(taught, JSON.stringify(pg));
  assert.equal((await raw(port, { method: 'DELETE', path: `/dashboard/api/playground/corrections/${taught.id}?${play()}` })).status, 401, 'not without the cookie');
  const removed = await raw(port, { method: 'DELETE', path: `/dashboard/api/playground/corrections/${taught.id}?${play()}`, headers: withCookie });
  assert.equal(removed.status, 200, removed.body);
  const pg2 = JSON.parse((await raw(port, { path: `/dashboard/api/playground/corrections?${play()}` })).body) as { corrections: { id: number }[] };
  assert.equal(pg2.corrections.some((c) => c.id === taught.id), false);
});

test('agro dashboard: a token made at start, shown once in the start line; a given one guards every route; --no-token warns once', { timeout: 120_000 }, async () => {
  const env = { ...process.env, AGRO_TOKEN: '' };
  const runs = join(tmp, 'cli-runs');
  const d = await startCli(['dashboard', runs, '--port', '0', '--no-open'], env);
  try {
    const m = /\?token=([A-Za-z0-9_-]{43})/.exec(d.out());
    assert.ok(m, d.out());
    const token = m[1];
    assert.equal(d.out().split(token).length - 1, 1, 'printed once');
    assert.equal((await raw(d.port, { path: '/api/overview' })).status, 200, 'reads open');
    const post = { method: 'POST', path: '/api/playground/correct', ...jsonBody({ policy: 'nope', db: 'nope', question: 'q', sql: 'SELECT 1' }) };
    assert.equal((await raw(d.port, post)).status, 401);
    const link = await raw(d.port, { path: `/?token=${token}` });
    const cookie = String(link.headers['set-cookie']).split(';')[0];
    // Past the token: the body's unknown policy answers, not the guard.
    assert.equal((await raw(d.port, { ...post, headers: { ...post.headers, cookie } })).status, 404);
  } finally {
    await d.stop();
  }
  // Given a token: it guards every route (as before), and the start line's link carries it.
  const given = 'a-token-of-mine-1234';
  const g = await startCli(['dashboard', runs, '--port', '0', '--no-open', '--token', given], env);
  try {
    assert.equal((await raw(g.port, { path: '/api/overview' })).status, 401);
    assert.equal((await raw(g.port, { path: '/api/overview', headers: bearer(given) })).status, 200);
  } finally {
    await g.stop();
  }
  const n = await startCli(['dashboard', runs, '--port', '0', '--no-open', '--no-token'], env);
  try {
    assert.doesNotMatch(n.out(), /token=/);
    assert.match(n.err(), /^agro dashboard: warning: --no-token: any local user or process can store and remove corrections/);
    assert.equal(n.err().trim().split('\n').length, 1, n.err());
    const post = { method: 'POST', path: '/api/playground/correct', ...jsonBody({ policy: 'nope', db: 'nope', question: 'q', sql: 'SELECT 1' }) };
    assert.equal((await raw(n.port, post)).status, 404, 'no token asked');
  } finally {
    await n.stop();
  }
});

test('agro serve: a made token reaches only the start line; --no-token warns once on loopback and is refused off it', { timeout: 180_000 }, async () => {
  const ck = join(tmp, 'ck');
  await saveTinyCheckpoint(ck, ['SELECT COUNT(*) FROM genres']);
  const env = { ...process.env, AGRO_TOKEN: '' };
  const s = await startCli(['serve', '--policy', ck, '--port', '0'], env);
  try {
    const m = /need: Authorization: Bearer ([A-Za-z0-9_-]{43})/.exec(s.out());
    assert.ok(m, s.out());
    const post = { method: 'POST', path: '/v1/corrections', ...jsonBody({ db_id: 'music_store', question: 'q', sql: 'SELECT 1' }) };
    assert.equal((await raw(s.port, post)).status, 401);
    const withToken = await raw(s.port, { ...post, headers: { ...post.headers, ...bearer(m[1]) } });
    assert.notEqual(withToken.status, 401, withToken.body);
    assert.ok(!withToken.body.includes(m[1]));
    assert.equal(s.out().split(m[1]).length - 1, 1, 'printed once');
  } finally {
    await s.stop();
  }
  const n = await startCli(['serve', '--policy', ck, '--port', '0', '--no-token'], env);
  try {
    assert.doesNotMatch(n.out(), /Bearer/);
    assert.equal(n.err().trim().split('\n').length, 1, n.err());
    assert.match(n.err(), /^agro serve: warning: --no-token/);
  } finally {
    await n.stop();
  }
  const child = spawnSync(process.execPath, [BIN, 'serve', '--policy', ck, '--port', '0', '--no-token', '--host', '::'], { encoding: 'utf8', env, timeout: 30_000 });
  assert.equal(child.status, 2, child.stderr);
  assert.equal(child.stderr.trim().split('\n').length, 1, child.stderr);
});
