// The servers a web page must not reach (issue #35), tested against `agro serve` and `agro dashboard` as a
// user starts them: a foreign Host (DNS rebinding) or Origin, a cross-site request, a non-JSON body, a
// symlink out of the folder or in a loop, a huge body: each refused, on every route.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeEnvFixture } from '../support/env-server.ts';
import { raw, startCli, type RawRequest, type StartedCli } from '../support/raw-http.ts';
import { dashboardRoutes, jsonBody, serveRoutes } from '../support/server-routes.ts';
import { agroBatch } from '../support/cli-batch.ts';

const fx = makeEnvFixture();
const tmp = mkdtempSync(join(tmpdir(), 'agro-sec-'));
const runs = join(tmp, 'runs');
const outside = join(tmp, 'outside');

/** A run folder the scan lists: metrics and the SFT config. */
function makeRun(dir: string, steps = 3): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'metrics.jsonl'), Array.from({ length: steps }, (_, i) => JSON.stringify({ step: i + 1, loss: 3 - i / 10 })).join('\n') + '\n');
  writeFileSync(join(dir, 'sft_config.json'), '{}');
}

let serve: StartedCli;
let dash: StartedCli;
let music: string;

before(async () => {
  makeRun(join(runs, 'a', 'sft'));
  makeRun(join(runs, 'b', 'sft'));
  makeRun(join(outside, 'secret', 'sft'), 7);
  // A link to a folder outside the served one, and six loops back to the folder itself.
  symlinkSync(outside, join(runs, 'escape'));
  for (let i = 0; i < 6; i++) symlinkSync(runs, join(runs, `loop${i}`));
  // A run of the folder whose config and eval report are links to files outside it.
  mkdirSync(join(runs, 'c'));
  writeFileSync(join(runs, 'c', 'metrics.jsonl'), '{"step":1,"loss":1}\n');
  writeFileSync(join(outside, 'config.json'), JSON.stringify({ secret: 'outside config' }));
  writeFileSync(join(outside, 'eval.json'), JSON.stringify({ secret: 'outside eval' }));
  symlinkSync(join(outside, 'config.json'), join(runs, 'c', 'train_config.json'));
  symlinkSync(join(outside, 'eval.json'), join(runs, 'c', 'eval.json'));
  [serve, dash] = await Promise.all([
    startCli(['serve', '--db-root', fx.dbRoot, '--dashboard', runs, '--port', '0']),
    startCli(['dashboard', runs, '--no-open', '--port', '0']),
  ]);
  const ov = JSON.parse((await raw(dash.port, { path: '/api/overview' })).body) as { databases: { id: string; label: string }[] };
  music = ov.databases.find((d) => d.label === 'music_store')!.id;
});
after(async () => {
  await Promise.all([serve?.stop(), dash?.stop()]);
  rmSync(tmp, { recursive: true, force: true });
  rmSync(fx.dir, { recursive: true, force: true });
});

const json = jsonBody;

const servers = (): [string, StartedCli, RawRequest[]][] => [
  ['serve', serve, serveRoutes('concert', music)],
  ['dashboard', dash, dashboardRoutes(music)],
];

/** The routes answer their own client (the control: a 403 below is the guard, not a missing route). */
test('control: every route answers a request from the server\'s own origin', async () => {
  for (const [name, srv, routes] of servers()) {
    for (const r of routes) {
      const own = `http://127.0.0.1:${srv.port}`;
      for (const headers of [{}, { origin: own, 'sec-fetch-site': 'same-origin' }, { host: `localhost:${srv.port}` }] as Record<string, string>[]) {
        const res = await raw(srv.port, { ...r, headers: { ...r.headers, ...headers } });
        assert.ok(res.status !== 403 && res.status !== 415 && res.status < 500, `${name} ${r.method ?? 'GET'} ${r.path} ${JSON.stringify(headers)}: ${res.status} ${res.body.slice(0, 200)}`);
      }
    }
  }
});

test('DNS rebinding: a foreign Host gets 403 with one JSON error line on every route of both servers', async () => {
  for (const [name, srv, routes] of servers()) {
    for (const host of ['evil.example', `evil.example:${srv.port}`, `127.0.0.1.evil.example:${srv.port}`, `localhost:${srv.port + 1}`, '']) {
      for (const r of routes) {
        const res = await raw(srv.port, { ...r, headers: { ...r.headers, host } });
        assert.equal(res.status, 403, `${name} ${r.method ?? 'GET'} ${r.path} Host '${host}': ${res.status} ${res.body.slice(0, 200)}`);
        assert.match(res.body, /^\{"error":.*Host.*\}$/);
        assert.doesNotMatch(res.body, /\n/);
      }
    }
  }
});

test('cross-site: a foreign Origin, or Sec-Fetch-Site cross-site / same-site, is refused on every route, GET included', async () => {
  for (const [name, srv, routes] of servers()) {
    for (const hostile of [{ origin: 'http://evil.example' }, { origin: 'null' }, { origin: `http://localhost:${srv.port}` }, { origin: `https://127.0.0.1:${srv.port}` }, { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' }, { 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'cors' }] as Record<string, string>[]) {
      for (const r of routes) {
        const res = await raw(srv.port, { ...r, headers: { ...r.headers, ...hostile } });
        assert.equal(res.status, 403, `${name} ${r.method ?? 'GET'} ${r.path} ${JSON.stringify(hostile)}: ${res.status} ${res.body.slice(0, 200)}`);
      }
    }
  }
  // A link to the page from another site opens it (a navigation reads no data); its API stays closed.
  const nav = { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' };
  assert.equal((await raw(dash.port, { path: '/', headers: nav })).status, 200);
  assert.equal((await raw(serve.port, { path: '/dashboard/', headers: nav })).status, 200);
  assert.equal((await raw(dash.port, { path: '/api/overview', headers: nav })).status, 403);
  assert.equal((await raw(dash.port, { path: `/api/playground/ask?${new URLSearchParams({ policy: 'nope', db: music, question: 'q' })}`, headers: nav })).status, 403);
});

test('a simple cross-site POST (text/plain, a form) is refused with 415 before it runs', async () => {
  for (const [srv, path, body] of [
    [serve, '/v1/sql', { db_id: 'concert', sql: 'SELECT name FROM singer' }],
    [dash, '/api/sql', { db: music, sql: 'SELECT COUNT(*) FROM genres' }],
  ] as const) {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', undefined]) {
      const res = await raw(srv.port, { method: 'POST', path, body: JSON.stringify(body), headers: type ? { 'content-type': type } : {} });
      assert.equal(res.status, 415, `${path} ${type}: ${res.status} ${res.body.slice(0, 200)}`);
      assert.doesNotMatch(res.body, /rows/);
    }
    const ok = await raw(srv.port, { method: 'POST', path, body: JSON.stringify(body), headers: { 'content-type': 'application/json; charset=utf-8' } });
    assert.equal(ok.status, 200);
  }
});

test('path safety: symlink loops and a link out of the folder; /api/overview lists the real runs in under 1 s', async () => {
  for (const srv of [dash, serve]) {
    const prefix = srv === serve ? '/dashboard' : '';
    const res = await raw(srv.port, { path: `${prefix}/api/overview` });
    assert.equal(res.status, 200);
    assert.ok(res.ms < 1000, `overview took ${res.ms.toFixed(0)} ms`);
    const ov = JSON.parse(res.body) as { runs: { id: string }[] };
    assert.deepEqual(ov.runs.map((r) => r.id).sort(), ['a/sft', 'b/sft', 'c']);
    // A file of a listed run that links out of the folder reads as missing (it was served before).
    const c = await raw(srv.port, { path: `${prefix}/api/run?id=c` });
    assert.equal(c.status, 200, c.body.slice(0, 200));
    assert.doesNotMatch(c.body, /outside/);
    const detail = JSON.parse(c.body) as { config: unknown; eval: unknown; run: { hasEval: boolean } };
    assert.deepEqual([detail.config, detail.eval, detail.run.hasEval], [null, null, false]);
    for (const id of ['escape/secret/sft', '../outside/secret/sft', `${outside}/secret/sft`, 'loop0/a/sft', '%2e%2e/outside/secret/sft']) {
      const r = await raw(srv.port, { path: `${prefix}/api/run?id=${encodeURIComponent(id)}` });
      assert.equal(r.status, 404, `${id}: ${r.status} ${r.body.slice(0, 100)}`);
    }
    for (const path of ['/assets/..%2f..%2fpackage.json', '/assets/%2e%2e', '/assets/..', '/assets/%2e%2e%2f%2e%2e%2fpackage.json', '/..%2f..%2fpackage.json']) {
      const r = await raw(srv.port, { path: prefix + path });
      assert.ok(r.status === 404 || /<div id="app">/.test(r.body), `${path}: ${r.status} ${r.body.slice(0, 100)}`);
      assert.doesNotMatch(r.body, /"name": "agro"/);
    }
  }
});

test('unknown API routes are a JSON 404, not the page', async () => {
  for (const [srv, path] of [[dash, '/api/nope'], [serve, '/dashboard/api/nope'], [dash, '/api/run/x']] as const) {
    const r = await raw(srv.port, { path });
    assert.equal(r.status, 404);
    assert.match(r.body, /^\{"error":/);
  }
});

test('body limits: a huge body is refused with 413 before it is read, on both servers', async () => {
  for (const [srv, path] of [[dash, '/api/sql'], [serve, '/dashboard/api/sql'], [serve, '/v1/sql']] as const) {
    // The client claims 250 MB and sends 1 KB: the answer comes at once, not after the server waited for it.
    const r = await raw(srv.port, { method: 'POST', path, headers: { 'content-type': 'application/json', 'content-length': String(250 * 2 ** 20) }, body: 'x'.repeat(1024), hangAfterHeaders: true, timeoutMs: 5000 });
    assert.equal(r.status, 413, `${path}: ${r.status}`);
  }
});

test('token: required off loopback; the printed link sets a SameSite=Strict HttpOnly cookie and redirects to the clean URL', async () => {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.AGRO_TOKEN;
  const refusals = [
    ['dashboard', '--cors', 'not-an-origin', /^agro: --cors: not an origin/],
    ['dashboard', '--allowed-host', 'bad host', /^agro: --allowed-host: not a host name/],
    ['serve', '--cors', 'http://x.example/path', /^agro: --cors: not an origin/],
    ['serve', '--token', 'short', /^agro: --token: at least 8 characters/],
  ] as const;
  // The usage errors in one process (test/support/cli-batch.ts): each stops before the server listens.
  const [off, ...refused] = agroBatch([
    ['dashboard', runs, '--no-open', '--host', '0.0.0.0', '--port', '0'],
    ...refusals.map(([cmd, flag, value]) => [...(cmd === 'serve' ? ['serve', '--db-root', fx.dbRoot] : ['dashboard', runs, '--no-open']), '--port', '0', flag, value]),
  ], { env, timeoutMs: 60_000 });
  assert.equal(off.status, 2, off.stderr);
  assert.match(off.stderr, /^agro: binding to 0\.0\.0\.0 needs a token/);
  for (const [i, [cmd, flag, value, re]] of refusals.entries()) {
    const r = refused[i];
    assert.equal(r.status, 2, `${cmd} ${flag} ${value}: ${r.stderr}`);
    assert.match(r.stderr, re);
  }
  const token = 'tok-0123456789abcdef';
  const d = await startCli(['dashboard', runs, '--no-open', '--port', '0', '--token', token], env);
  try {
    const link = new RegExp(`http://127\\.0\\.0\\.1:${d.port}/\\?token=${token}`);
    assert.match(d.out(), link);
    for (const path of ['/api/overview', '/', '/api/run?id=a/sft']) assert.equal((await raw(d.port, { path })).status, 401, path);
    assert.equal((await raw(d.port, { path: '/api/overview', headers: { authorization: 'Bearer wrong-token-xx' } })).status, 401);
    assert.equal((await raw(d.port, { path: '/?token=wrong' })).status, 401);
    assert.equal((await raw(d.port, { path: '/api/overview', headers: { authorization: `Bearer ${token}` } })).status, 200);
    const click = await raw(d.port, { path: `/?token=${token}` });
    assert.equal(click.status, 302);
    assert.equal(click.headers.location, '/');
    const cookie = String(click.headers['set-cookie']);
    assert.match(cookie, new RegExp(`^agro_token_${d.port}=${token}; Path=/; HttpOnly; SameSite=Strict$`));
    const jar = cookie.split(';')[0];
    assert.equal((await raw(d.port, { path: '/api/overview', headers: { cookie: jar } })).status, 200);
    assert.match((await raw(d.port, { path: '/', headers: { cookie: jar } })).body, /<div id="app">/);
    // The token does not open the door to a foreign Host or a cross-site request.
    assert.equal((await raw(d.port, { path: '/api/overview', headers: { cookie: jar, host: 'evil.example' } })).status, 403);
    assert.equal((await raw(d.port, { path: '/api/overview', headers: { cookie: jar, 'sec-fetch-site': 'cross-site' } })).status, 403);
  } finally {
    await d.stop();
  }
  // agro serve: the token guards every route but /health, and the printed dashboard link carries it.
  const s = await startCli(['serve', '--db-root', fx.dbRoot, '--dashboard', runs, '--port', '0', '--token', token], env);
  try {
    assert.match(s.out(), new RegExp(`dashboard: http://127\\.0\\.0\\.1:${s.port}/dashboard/\\?token=${token}`));
    assert.equal((await raw(s.port, { path: '/health' })).status, 200);
    assert.equal((await raw(s.port, { path: '/v1/schema?db_id=concert' })).status, 401);
    assert.equal((await raw(s.port, { path: '/dashboard/api/overview' })).status, 401);
    const click = await raw(s.port, { path: `/dashboard/?token=${token}` });
    assert.equal(click.headers.location, '/dashboard/');
    const jar = String(click.headers['set-cookie']).split(';')[0];
    assert.equal((await raw(s.port, { path: '/dashboard/api/overview', headers: { cookie: jar } })).status, 200);
    assert.equal((await raw(s.port, { path: '/v1/schema?db_id=concert', headers: { authorization: `Bearer ${token}` } })).status, 200);
  } finally {
    await s.stop();
  }
});

test('CORS: a --cors origin gets its preflight and its answers; any other origin stays refused', async () => {
  const front = 'http://front.example:5173';
  const s = await startCli(['serve', '--db-root', fx.dbRoot, '--port', '0', '--cors', front, '--allowed-host', 'agro.example', '--allowed-host', 'localhost:9000']);
  try {
    const pre = await raw(s.port, { method: 'OPTIONS', path: '/v1/sql', headers: { origin: front, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' } });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers['access-control-allow-origin'], front);
    assert.match(String(pre.headers['access-control-allow-methods']), /POST/);
    assert.match(String(pre.headers['access-control-allow-headers']), /Content-Type/i);
    const post = await raw(s.port, { method: 'POST', path: '/v1/sql', ...json({ db_id: 'concert', sql: 'SELECT name FROM singer' }), headers: { 'content-type': 'application/json', origin: front, 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' } });
    assert.equal(post.status, 200);
    assert.equal(post.headers['access-control-allow-origin'], front);
    const other = await raw(s.port, { method: 'OPTIONS', path: '/v1/sql', headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' } });
    assert.equal(other.status, 403);
    assert.equal(other.headers['access-control-allow-origin'], undefined);
    // A reverse proxy's name is accepted as Host and as Origin.
    assert.equal((await raw(s.port, { path: '/health', headers: { host: 'agro.example' } })).status, 200);
    assert.equal((await raw(s.port, { path: '/v1/schema?db_id=concert', headers: { host: '127.0.0.1:' + s.port, origin: 'https://agro.example' } })).status, 200);
    assert.equal((await raw(s.port, { path: '/health', headers: { host: 'agro.example.evil' } })).status, 403);
    // A tunnel (ssh -L 9000:127.0.0.1:PORT) is another port on localhost: allowed by name and port, no other port.
    assert.equal((await raw(s.port, { path: '/v1/schema?db_id=concert', headers: { host: 'localhost:9000', origin: 'http://localhost:9000' } })).status, 200);
    assert.equal((await raw(s.port, { path: '/health', headers: { host: 'localhost:9001' } })).status, 403);
  } finally {
    await s.stop();
  }
});

test('bounds: body bytes in flight over all requests (503 beyond), and SQL text past MAX_SQL_CHARS refused before it is parsed', async () => {
  const { Hono } = await import('hono');
  const { serve: listen } = await import('@hono/node-server');
  const { guardedApp } = await import('../../src/server/guard.ts');
  const { MAX_SQL_CHARS } = await import('../../src/sql/guard.ts');
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const routes = new Hono().post('/slow', async (c) => {
    await c.req.json();
    await gate;
    return c.json({ ok: true });
  });
  const app = guardedApp(routes, { listenHost: '127.0.0.1', maxBodyBytes: 1024 * 1024, maxBodyBytesInFlight: 2 * 1024 * 1024 });
  const server = listen({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 });
  await new Promise((r) => server.once('listening', r));
  const port = (server.address() as { port: number }).port;
  try {
    const body = JSON.stringify({ x: 'y'.repeat(900 * 1024) });
    const held = [raw(port, { method: 'POST', path: '/slow', ...json(null), body }), raw(port, { method: 'POST', path: '/slow', ...json(null), body })];
    await new Promise((r) => setTimeout(r, 200));
    const third = await raw(port, { method: 'POST', path: '/slow', ...json(null), body });
    assert.equal(third.status, 503);
    assert.equal(third.headers['retry-after'], '1');
    // Small bodies still pass while the big ones wait.
    const small = raw(port, { method: 'POST', path: '/slow', ...json({ x: 1 }) });
    release();
    assert.deepEqual((await Promise.all([...held, small])).map((r) => r.status), [200, 200, 200]);
  } finally {
    server.close();
  }
  const long = await raw(serve.port, { method: 'POST', path: '/v1/sql', ...json({ db_id: 'concert', sql: `SELECT '${'x'.repeat(MAX_SQL_CHARS)}'` }) });
  assert.equal(long.status, 200);
  assert.deepEqual(JSON.parse(long.body).error, 'refused');
  assert.match(JSON.parse(long.body).message, /at most 100000/);
});

test('the OpenAI routes of agro serve sit behind the same guard', async () => {
  const { serve: listen } = await import('@hono/node-server');
  const { createApp } = await import('../../src/server/app.ts');
  const { openaiRoutes } = await import('../../src/server/openai.ts');
  const { askRoutes } = await import('../../src/server/ask.ts');
  const policy = { kind: 'endpoint', name: 'echo', description: 'echo', complete: async () => ({ text: 'ok', finish: 'stop' as const }), close: async () => {} };
  // A correction route whose store only counts the calls that reach it.
  let stored = 0;
  const asker = Object.assign(async () => { throw new Error('not asked here'); }, { correct: async (r: { db_id: string; question: string; sql: string }) => ({ ...r, id: stored + 1, stored: true as const, columns: [], rows: ++stored }) });
  const app = createApp({ groups: [{ app: openaiRoutes({ policy: policy as never }) }, { app: askRoutes({ ask: asker }) }], guard: { listenHost: '127.0.0.1', token: 'tok-0123456789' } });
  const server = listen({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 });
  await new Promise((r) => server.once('listening', r));
  const port = (server.address() as { port: number }).port;
  const auth = { authorization: 'Bearer tok-0123456789' };
  const chat = { method: 'POST', path: '/v1/chat/completions', body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }) };
  try {
    assert.equal((await raw(port, { path: '/v1/models', headers: auth })).status, 200);
    assert.equal((await raw(port, { ...chat, headers: { ...auth, 'content-type': 'application/json' } })).status, 200);
    assert.equal((await raw(port, { path: '/v1/models' })).status, 401);
    for (const h of [{ host: 'evil.example' }, { origin: 'http://evil.example' }, { 'sec-fetch-site': 'cross-site' }] as Record<string, string>[]) {
      assert.equal((await raw(port, { path: '/v1/models', headers: { ...auth, ...h } })).status, 403);
      const r = await raw(port, { ...chat, headers: { ...auth, 'content-type': 'application/json', ...h } });
      assert.equal(r.status, 403);
      // The OpenAI error shape, as every route of agro serve answers.
      assert.match(r.body, /^\{"error":\{"message":".*","type":"invalid_request_error","code":"forbidden_/);
    }
    assert.equal((await raw(port, { ...chat, headers: { ...auth, 'content-type': 'text/plain' } })).status, 415);
    // POST /v1/corrections (it writes a memory file): the same checks, before the store is reached.
    const fix = { method: 'POST', path: '/v1/corrections', body: JSON.stringify({ db_id: 'music_store', question: 'q', sql: 'SELECT 1' }) };
    for (const h of [{ host: 'evil.example' }, { origin: 'http://evil.example' }, { 'sec-fetch-site': 'cross-site' }] as Record<string, string>[]) assert.equal((await raw(port, { ...fix, headers: { ...auth, 'content-type': 'application/json', ...h } })).status, 403);
    assert.equal((await raw(port, { ...fix, headers: { ...auth, 'content-type': 'text/plain' } })).status, 415);
    assert.equal((await raw(port, { ...fix, headers: { 'content-type': 'application/json' } })).status, 401);
    assert.equal(stored, 0);
    assert.equal((await raw(port, { ...fix, headers: { ...auth, 'content-type': 'application/json' } })).status, 200);
    assert.equal(stored, 1);
  } finally {
    server.close();
  }
});
