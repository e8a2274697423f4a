// `npm run bench -- adversarial-server [--sessions N] [--slow N] [--answers N]`
// Issue #35's server section of the adversarial run: `agro serve --db-root --dashboard` and `agro dashboard`
// started through the CLI on loopback, attacked as a hostile web page and a hostile client would:
//   host / origin / site   a foreign Host (DNS rebinding), Origin, or Sec-Fetch-Site cross-site/same-site
//                          on every route of both servers: 403
//   type                   a non-JSON POST (text/plain, form, multipart, none) on every POST route: 415
//   malformed              bodies that are not the route's JSON (broken, an array, 100,000-deep nesting,
//                          wrong types): 4xx, never 5xx, and the server still answers
//   huge                   a body that claims 250 MB (answered before it is sent) and a 10 MB chunked one: 413
//   paths                  `..` (plain and encoded), absolute paths, a symlink out of the folder, 6 symlink
//                          loops: 404 or the real runs only; /api/overview under 1 s
//   unknown                /api/* routes that do not exist: a JSON 404
//   sessions               environment sessions of 3.9 MB questions until the byte cap refuses them (503)
//   slow                   N clients (default 200) that stop mid-headers or never finish a body:
//                          /health still answers in under 1 s meanwhile
//   memory                 16 queries at the body limit, then N (default 64, the API's maxInFlight)
//                          queries whose answers fill the 8 MiB result cap, all at once
// Prints cases tried / failed, the server's memory (process tree RSS) with every cap filled, and whether
// the bundled databases are byte-identical after the run. Exits 1 when a case fails or memory passes 1 GiB.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { num } from './_args.ts';
import { treeRss } from './_tree-rss.ts';
import { raw, startCli, type RawReply, type RawRequest, type StartedCli } from '../test/support/raw-http.ts';
import { dashboardRoutes, hostileHeaders, jsonBody, serveRoutes } from '../test/support/server-routes.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DB_ROOT = join(ROOT, 'data', 'databases');
const GiB = 2 ** 30;

interface Case {
  group: string;
  name: string;
  ok: boolean;
  detail: string;
}

const cases: Case[] = [];
function check(group: string, name: string, ok: boolean, detail: string): void {
  cases.push({ group, name, ok, detail });
  if (!ok) console.log(`  FAIL ${group}: ${name}: ${detail}`);
}

function makeRun(dir: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'metrics.jsonl'), '{"step":1,"loss":3}\n{"step":2,"loss":2.5}\n');
  writeFileSync(join(dir, 'sft_config.json'), '{}');
}

function databasesDigest(): string {
  const h = createHash('sha256');
  for (const id of readdirSync(DB_ROOT).sort()) {
    for (const f of readdirSync(join(DB_ROOT, id)).sort()) {
      try {
        h.update(`${id}/${f}`).update(readFileSync(join(DB_ROOT, id, f)));
      } catch {
        // a folder
      }
    }
  }
  return h.digest('hex');
}

/** A chunked body of `total` bytes sent 64 KiB at a time, stopped as soon as the server answers. */
function streamBody(port: number, path: string, total: number): Promise<{ status: number; sent: number }> {
  return new Promise((resolve) => {
    let sent = 0;
    let answered = false;
    const req = request({ host: '127.0.0.1', port, method: 'POST', path, headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, agent: false }, (res) => {
      answered = true;
      res.resume();
      resolve({ status: res.statusCode ?? 0, sent });
      req.destroy();
    });
    req.on('error', () => resolve({ status: answered ? 0 : -1, sent }));
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const pump = (): void => {
      while (!answered && sent < total) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      if (!answered) req.end();
    };
    pump();
  });
}

const json = jsonBody;
const show = (r: RawRequest): string => `${r.method ?? 'GET'} ${r.path.slice(0, 80)}`;

export async function run(args: string[]): Promise<void> {
  const maxSessions = num(args, '--sessions', 60);
  const slowClients = num(args, '--slow', 200);
  // As many as the environment API runs at once (its maxInFlight): every slot holding an answer at the result cap.
  const answers = num(args, '--answers', 64);
  const tmp = mkdtempSync(join(tmpdir(), 'agro-adv-server-'));
  const runs = join(tmp, 'runs');
  makeRun(join(runs, 'a', 'sft'));
  makeRun(join(runs, 'b', 'grpo'));
  makeRun(join(tmp, 'outside', 'secret', 'sft'));
  symlinkSync(join(tmp, 'outside'), join(runs, 'escape'));
  // A listed run's eval report that links to a file outside the folder.
  writeFileSync(join(tmp, 'outside', 'eval.json'), JSON.stringify({ secret: 'outside eval' }));
  symlinkSync(join(tmp, 'outside', 'eval.json'), join(runs, 'a', 'sft', 'eval.json'));
  for (let i = 0; i < 6; i++) symlinkSync(runs, join(runs, `loop${i}`));
  const before = databasesDigest();
  let serve: StartedCli | undefined;
  let dash: StartedCli | undefined;
  let peakRss = 0;
  const sample = (): void => {
    for (const s of [serve, dash]) if (s?.child.pid) peakRss = Math.max(peakRss, treeRss(s.child.pid));
  };
  const sampler = setInterval(sample, 100);
  const t0 = Date.now();
  try {
    [serve, dash] = await Promise.all([
      startCli(['serve', '--db-root', DB_ROOT, '--dashboard', runs, '--port', '0']),
      startCli(['dashboard', runs, '--no-open', '--port', '0']),
    ]);
    const s = serve;
    const d = dash;
    const ov = JSON.parse((await raw(d.port, { path: '/api/overview' })).body) as { databases: { id: string; label: string }[] };
    const db = ov.databases.find((x) => x.label === 'music_store')!.id;
    const servers: [string, StartedCli, RawRequest[]][] = [
      ['serve', s, serveRoutes('music_store', db)],
      ['dashboard', d, dashboardRoutes(db)],
    ];

    // host / origin / site: every route, every hostile header.
    for (const [name, srv, routes] of servers) {
      const hostile = hostileHeaders(srv.port);
      for (const r of routes) {
        for (const [group, h] of hostile) {
          const res = await raw(srv.port, { ...r, headers: { ...r.headers, ...h } });
          check(group, `${name} ${show(r)} ${JSON.stringify(h)}`, res.status === 403 && /^\{"error"/.test(res.body), `${res.status} ${res.body.slice(0, 80)}`);
        }
      }
      // type: every POST route with a body a page can send without a preflight.
      for (const r of routes.filter((x) => x.method === 'POST')) {
        for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', '']) {
          const res = await raw(srv.port, { ...r, headers: type ? { 'content-type': type } : {} });
          check('type', `${name} ${show(r)} ${type || 'no type'}`, res.status === 415, `${res.status}`);
        }
        const deep = '['.repeat(100_000) + ']'.repeat(100_000);
        for (const [label, body] of [['broken', '{"db'], ['array', '[1,2]'], ['deep', deep], ['types', '{"db_id":1,"sql":2,"db":3,"messages":4,"text":5,"items":6}'], ['empty', '']]) {
          const res = await raw(srv.port, { ...r, body, headers: { 'content-type': 'application/json' } });
          check('malformed', `${name} ${show(r)} ${label}`, res.status >= 400 && res.status < 500, `${res.status} ${res.body.slice(0, 80)}`);
        }
        const big = await raw(srv.port, { ...r, headers: { 'content-type': 'application/json', 'content-length': String(250 * 2 ** 20) }, body: 'x'.repeat(1024), hangAfterHeaders: true, timeoutMs: 5000 }).catch((e: Error): RawReply => ({ status: 0, headers: {}, body: e.message, ms: 0 }));
        check('huge', `${name} ${show(r)} claims 250 MB`, big.status === 413 && big.ms < 2000, `${big.status} in ${big.ms.toFixed(0)} ms`);
        const chunked = await streamBody(srv.port, r.path, 10 * 2 ** 20);
        // 413, or the connection closed by the server once the limit was passed (the client's write fails first).
        check('huge', `${name} ${show(r)} 10 MB chunked`, chunked.status === 413 || (chunked.status === -1 && chunked.sent < 10 * 2 ** 20), `${chunked.status} after ${(chunked.sent / 2 ** 20).toFixed(1)} MB sent`);
      }
      const alive = await raw(srv.port, { path: name === 'serve' ? '/health' : '/api/overview' });
      check('malformed', `${name} still answers`, alive.status === 200, `${alive.status}`);
    }

    // paths: both servers' dashboards.
    for (const [srv, prefix] of [[d, ''], [s, '/dashboard']] as const) {
      const res = await raw(srv.port, { path: `${prefix}/api/overview` });
      const ids = res.status === 200 ? (JSON.parse(res.body) as { runs: { id: string }[] }).runs.map((r) => r.id).sort() : [];
      console.log(`  ${prefix || 'dashboard'} /api/overview with 6 symlink loops: ${res.ms.toFixed(0)} ms, ${ids.length} runs`);
      check('paths', `${prefix || 'dashboard'} overview with 6 symlink loops`, res.ms < 1000 && JSON.stringify(ids) === '["a/sft","b/grpo"]', `${res.ms.toFixed(0)} ms, runs ${JSON.stringify(ids).slice(0, 80)}`);
      for (const id of ['escape/secret/sft', '../outside/secret/sft', join(tmp, 'outside', 'secret', 'sft'), 'loop0/a/sft', 'loop3/loop2/b/grpo', '%2e%2e/outside/secret/sft', '/etc', '..']) {
        const r = await raw(srv.port, { path: `${prefix}/api/run?id=${encodeURIComponent(id)}` });
        check('paths', `${prefix} run id ${id.slice(0, 60)}`, r.status === 404, `${r.status}`);
      }
      const linked = await raw(srv.port, { path: `${prefix}/api/run?id=a/sft` });
      check('paths', `${prefix} a run's eval.json linked out of the folder reads as missing`, linked.status === 200 && !/outside eval/.test(linked.body), `${linked.status} ${linked.body.slice(-80)}`);
      for (const path of ['/assets/..%2f..%2fpackage.json', '/assets/%2e%2e%2f%2e%2e%2fpackage.json', '/assets/..', '/assets/%2e%2e', '/..%2f..%2fpackage.json', '/assets/%00', '/assets/..%5c..%5cpackage.json', '/%2e%2e/%2e%2e/package.json', '/api/../../../../etc/passwd', '/assets/%2fetc%2fpasswd']) {
        const r = await raw(srv.port, { path: prefix + path });
        check('paths', `${prefix} static ${path}`, (r.status === 404 || /<div id="app">/.test(r.body)) && !/"name": "agro"|root:/.test(r.body), `${r.status} ${r.body.slice(0, 60)}`);
      }
      for (const path of ['/api/nope', '/api/run/x', '/api/sql', `/api/${'x'.repeat(4000)}`]) {
        const r = await raw(srv.port, { path: prefix + path });
        check('unknown', `${prefix} ${path}`, r.status === 404 && /^\{"error"/.test(r.body), `${r.status} ${r.body.slice(0, 60)}`);
      }
    }

    console.log(`  after the header, body and path cases: peak server RSS ${(peakRss / 2 ** 20).toFixed(0)} MiB`);
    // slow: clients that dribble headers and clients that never finish a body.
    const sockets: Socket[] = [];
    for (let i = 0; i < slowClients; i++) {
      const sock = connect(s.port, '127.0.0.1');
      sock.on('error', () => {});
      sock.write(i % 2 ? `POST /v1/sql HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\nContent-Type: application/json\r\nContent-Length: 4000000\r\n\r\n{"db_id":` : 'GET /health HTTP/1.1\r\nHo');
      sockets.push(sock);
    }
    await new Promise((r) => setTimeout(r, 500));
    const during = await raw(s.port, { path: '/health' });
    check('slow', `/health with ${slowClients} slow clients open`, during.status === 200 && during.ms < 1000, `${during.status} in ${during.ms.toFixed(0)} ms`);
    for (const sock of sockets) sock.destroy();

    // sessions: 3.9 MB questions until the byte cap refuses one.
    const question = 'How many genres? '.repeat(Math.floor(3.9e6 / 17));
    let opened = 0;
    let refusedAt = -1;
    for (let i = 0; i < maxSessions; i++) {
      const r = await raw(s.port, { method: 'POST', path: '/v1/env/sessions', ...json({ db_id: 'music_store', question }) });
      if (r.status === 201) opened++;
      else {
        refusedAt = i;
        check('sessions', `session ${i} refused with 503`, r.status === 503, `${r.status} ${r.body.slice(0, 80)}`);
        break;
      }
    }
    sample();
    console.log(`  sessions: ${opened} opened; peak server RSS so far ${(peakRss / 2 ** 20).toFixed(0)} MiB`);
    check('sessions', `${maxSessions} sessions of 3.9 MB questions: the byte cap refuses before the count does`, refusedAt >= 0, `${opened} opened`);
    const health = await raw(s.port, { path: '/health' });
    check('sessions', 'server answers with the session store full', health.status === 200, `${health.status}`);
    // Every cap at once: the store full, and many in-flight requests at the body limit.
    const inflight = await Promise.all(
      Array.from({ length: 16 }, () =>
        raw(s.port, { method: 'POST', path: '/v1/sql', timeoutMs: 180_000, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ db_id: 'music_store', sql: `SELECT '${'x'.repeat(4 * 2 ** 20 - 100)}'` }) }).catch(
          // The server refused the body (503) and closed the connection before the client finished writing it.
          (): RawReply => ({ status: -1, headers: {}, body: '', ms: 0 }),
        ),
      ),
    );
    sample();
    console.log(`  16 queries of 4 MiB in flight: peak server RSS ${(peakRss / 2 ** 20).toFixed(0)} MiB`);
    const alive = await raw(s.port, { path: '/health' });
    check('sessions', '16 queries at the 4 MiB body limit with the store full: answered or refused (503, or closed unread past the bytes in flight), the server alive after', inflight.every((r) => r.status === 200 || r.status === 503 || r.status === -1) && alive.status === 200, `${inflight.map((r) => r.status).join(',')}; /health ${alive.status}`);
    // And small queries whose answers fill the 8 MiB result cap, in every slot at once.
    const results = await Promise.all(
      Array.from({ length: answers }, () => raw(s.port, { method: 'POST', path: '/v1/sql', timeoutMs: 180_000, ...json({ db_id: 'music_store', sql: "SELECT printf('%.*c', 4000000, 'x') AS a, printf('%.*c', 4000000, 'y') AS b" }) })),
    );
    sample();
    console.log(`  ${answers} queries with 8 MB answers: peak server RSS ${(peakRss / 2 ** 20).toFixed(0)} MiB`);
    check('sessions', `${answers} queries with answers at the result cap: answered or refused`, results.every((r) => r.status === 200 || r.status === 503), results.map((r) => r.status).join(','));
  } finally {
    clearInterval(sampler);
    sample();
    await Promise.all([serve?.stop(), dash?.stop()]);
    rmSync(tmp, { recursive: true, force: true });
  }
  const after = databasesDigest();
  check('databases', 'bundled databases byte-identical after the run', before === after, `${before.slice(0, 12)} -> ${after.slice(0, 12)}`);
  check('memory', 'peak server memory (serve + dashboard process trees) under 1 GiB with every cap filled', peakRss < GiB, `${(peakRss / 2 ** 20).toFixed(0)} MiB`);
  const failed = cases.filter((c) => !c.ok);
  const groups = [...new Set(cases.map((c) => c.group))].map((g) => `${g} ${cases.filter((c) => c.group === g && c.ok).length}/${cases.filter((c) => c.group === g).length}`);
  console.log(`adversarial-server: ${cases.length} cases, ${failed.length} failed (${groups.join(', ')}); peak server RSS ${(peakRss / 2 ** 20).toFixed(0)} MiB; ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  if (failed.length) process.exitCode = 1;
}
