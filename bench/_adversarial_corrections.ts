// `bench adversarial`'s corrections section (issue #58, the surfaces that write on a person's behalf), through the
// real CLI, each case with its pass rule:
//   forged     three servers as users start them (`agro serve --policy --memory --dashboard` and `agro dashboard`
//              with the token they make at start, `agro serve --token` with a given one): every write route, and
//              under a given token every route, sent the twelve forgeries of test/support/forged-writes.ts: refused
//              (401/403/415), no cookie set, the token nowhere in the reply; then the memory store unchanged
//   hostile    the reads these servers added (/v1/ask, GET /v1/corrections, the Playground's list) under a foreign
//              Host, Origin or Sec-Fetch-Site: 403
//   held       the token's holder sends what a person must not store: a question of 1 MB or past the question
//              cap, control characters, bytes that are not UTF-8, SQL of 1 MB, a body past the limit: a 4xx with
//              one JSON error line, and the store unchanged
//   stores     `agro serve --memory` on a store truncated, huge (sparse), a FIFO, /dev/zero behind a symlink, a
//              folder, another database's store: exit 4 with one agro: line, before it listens
//   race       corrections over HTTP to two servers on one store and `agro memory add` processes at once, some
//              of them killed mid-write: every acknowledged correction present once, PRAGMA integrity_check ok
//   logs       each server's output holds its made token once (the start line) and never a given one
//   big        `agro ask` on a 10,000,000-row table (question-time synthesis and candidates on it): answers within
//              its time cap, peak memory of its process tree under 1 GiB
// `npm run bench -- adversarial --only corrections` runs it alone.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, symlinkSync, writeFileSync, copyFileSync, ftruncateSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { raw, startCli, type RawRequest, type StartedCli } from '../test/support/raw-http.ts';
import { forgeries, refusedForgery } from '../test/support/forged-writes.ts';
import { hostileHeaders, jsonBody } from '../test/support/server-routes.ts';
import { saveTinyCheckpoint } from '../test/support/tiny-checkpoint.ts';
import type { CliBench } from './_adversarial_cli.ts';
import { buildMemory } from '../src/memory/build.ts';
import { writeMemory } from '../src/memory/store.ts';
import { introspectSchema } from '../src/sql/introspect.ts';
import { createExecutor } from '../src/sql/executor.ts';

const MiB = 2 ** 20;

/** The store's rows as a digest (ids, removals, questions): unchanged means nothing was written. */
function storeState(path: string): string {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return JSON.stringify(db.prepare('SELECT * FROM pairs ORDER BY id').all());
  } finally {
    db.close();
  }
}

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

/** Output that is one JSON error line (OpenAI's shape or the dashboard's). */
function oneJsonLine(body: string): boolean {
  try {
    const j = JSON.parse(body) as { error?: string | { message?: string } };
    const msg = typeof j.error === 'string' ? j.error : j.error?.message;
    return typeof msg === 'string' && msg.length > 0 && !msg.includes('\n') && !/\s+at \S+:\d+/.test(msg);
  } catch {
    return false;
  }
}

export async function correctionsSection(b: CliBench, dir: string): Promise<void> {
  const ck = join(dir, 'runs', 'tiny');
  mkdirSync(join(dir, 'runs'), { recursive: true });
  await saveTinyCheckpoint(ck, ['SELECT COUNT(*) FROM genres']);
  const store = join(dir, 'memory.db');
  const other = join(dir, 'other.db');
  const otherDb = join(b.dbRoot, 'retail', 'retail.sqlite');
  // Stores of the bundled database and of another one, as agro memory build makes them.
  const exec = createExecutor({ size: 1 });
  try {
    writeMemory(store, await buildMemory('music_store', introspectSchema(b.music), [{ sql: 'SELECT COUNT(*) FROM customers', question: 'How many customers are there?' }], exec, b.music));
    writeMemory(other, await buildMemory('music_store', introspectSchema(otherDb), [{ sql: 'SELECT COUNT(*) FROM customers', question: 'How many customers are there?' }], exec, otherDb));
  } finally {
    await exec.close();
  }
  const made = await b.run(['memory', 'add', '--db', b.music, '--memory', store, '--question', 'How many genres are there?', '--sql', 'SELECT COUNT(*) FROM genres'], 60_000);
  b.record({ name: 'agro memory add stores a correction', ok: made.status === 0, detail: `exit ${made.status}: ${made.stderr.trim().slice(0, 120)}` });
  if (made.status !== 0) return;
  const env = { ...process.env, AGRO_TOKEN: '' };
  const given = randomBytes(24).toString('base64url');
  const servers: Array<{ name: string; cli: StartedCli; token: string; scope: 'writes' | 'all' }> = [];
  try {
    const s1 = await startCli(['serve', '--policy', ck, '--memory', store, '--dashboard', join(dir, 'runs'), '--port', '0'], env);
    servers.push({ name: 'serve', cli: s1, token: /need: Authorization: Bearer (\S+)/.exec(s1.out())?.[1] ?? '', scope: 'writes' });
    const s2 = await startCli(['dashboard', join(dir, 'runs'), '--policy', ck, '--port', '0', '--no-open'], env);
    servers.push({ name: 'dashboard', cli: s2, token: /\?token=([A-Za-z0-9_-]+)/.exec(s2.out())?.[1] ?? '', scope: 'writes' });
    const s3 = await startCli(['serve', '--policy', ck, '--memory', store, '--port', '0', '--token', given], env);
    servers.push({ name: 'serve --token', cli: s3, token: given, scope: 'all' });
    for (const s of servers) b.record({ name: `${s.name}: a token at start`, ok: s.token.length >= 32, detail: s.token ? `${s.token.length} characters` : 'none printed' });

    // The Playground's policy and database ids, as its overview names them.
    const ov = JSON.parse((await raw(s2.port, { path: '/api/overview' })).body) as { databases: { id: string; label: string }[]; policies: { id: string }[] };
    const db = ov.databases.find((d) => d.label === 'music_store')!.id;
    const policy = ov.policies[0]?.id ?? 'none';
    const play = (extra: Record<string, string> = {}) => new URLSearchParams({ policy, db, ...extra }).toString();
    const playWrites = (prefix: string): RawRequest[] => [
      { path: `${prefix}/api/playground/ask?${play({ question: 'How many genres?' })}` },
      { method: 'POST', path: `${prefix}/api/playground/correct`, ...jsonBody({ policy, db, question: 'Name every genre.', sql: 'SELECT name FROM genres' }) },
      { method: 'DELETE', path: `${prefix}/api/playground/corrections/1?${play()}` },
    ];
    const apiWrites: RawRequest[] = [
      { method: 'POST', path: '/v1/corrections', ...jsonBody({ db_id: 'music_store', question: 'Name every genre.', sql: 'SELECT name FROM genres' }) },
      { method: 'DELETE', path: '/v1/corrections/1?db_id=music_store' },
    ];
    const apiReads: RawRequest[] = [
      { method: 'POST', path: '/v1/ask', ...jsonBody({ db_id: 'music_store', question: 'How many genres are there?' }) },
      { path: '/v1/corrections?db_id=music_store' },
    ];
    const targets: Array<[(typeof servers)[number], RawRequest[], RawRequest[]]> = [
      [servers[0], [...apiWrites, ...playWrites('/dashboard')], [...apiReads, { path: `/dashboard/api/playground/corrections?${play()}` }]],
      [servers[1], playWrites(''), [{ path: `/api/playground/corrections?${play()}` }]],
      // A given token guards every route: the reads are forged against too.
      [servers[2], [...apiWrites, ...apiReads], apiReads],
    ];

    // forged
    for (const [s, writes] of targets) {
      const before = storeState(store);
      for (const r of writes)
        for (const [how, f] of forgeries(r, s.token, s.cli.port)) {
          const res = await raw(s.cli.port, f);
          b.record({ name: `forged: ${s.name} ${r.method ?? 'GET'} ${r.path.split('?')[0]} with ${how}`, ok: refusedForgery(res, s.token), detail: `${res.status} ${res.body.slice(0, 80)}` });
        }
      b.record({ name: `forged: ${s.name}: the store unchanged after every forgery`, ok: storeState(store) === before, detail: 'rows compared' });
    }
    // hostile
    for (const [s, , reads] of targets)
      for (const r of reads)
        for (const [group, h] of hostileHeaders(s.cli.port)) {
          const res = await raw(s.cli.port, { ...r, headers: { ...r.headers, ...bearer(s.token), ...h } });
          b.record({ name: `hostile ${group}: ${s.name} ${r.method ?? 'GET'} ${r.path.split('?')[0]} ${JSON.stringify(h)}`, ok: res.status === 403 && oneJsonLine(res.body), detail: `${res.status} ${res.body.slice(0, 80)}` });
        }
    // The holder's own writes work (the controls: a refusal above is the token's doing, not a broken route).
    const okApi = await raw(s1.port, { ...apiWrites[0], headers: { ...apiWrites[0].headers, ...bearer(servers[0].token) } });
    b.record({ name: 'control: serve stores a correction with its token', ok: okApi.status === 200, detail: `${okApi.status} ${okApi.body.slice(0, 80)}` });
    const link = await raw(s2.port, { path: `/?token=${servers[1].token}` });
    const cookie = String(link.headers['set-cookie'] ?? '').split(';')[0];
    const pw = playWrites('')[1];
    const okPlay = await raw(s2.port, { ...pw, headers: { ...pw.headers, cookie } });
    b.record({ name: "control: the dashboard stores a correction with the link's cookie", ok: link.status === 302 && okPlay.status === 200, detail: `${link.status}, ${okPlay.status} ${okPlay.body.slice(0, 80)}` });

    // held: bad input from the token's holder.
    const huge = 'x'.repeat(MiB);
    const bad: Array<[string, Record<string, unknown>]> = [
      ['a question of 1 MB', { question: huge }],
      ['a question of 20,000 characters', { question: 'how many '.repeat(2222) }],
      ['an escape sequence in the question', { question: 'How many genres\u001b[2J are there?' }],
      ['a NUL in the question', { question: 'How many\u0000 genres?' }],
      ['a bell in the question', { question: 'How many genres\u0007?' }],
      ['U+FFFD (bytes that were not UTF-8) in the question', { question: 'How many g\ufffdnres?' }],
      ['an empty question', { question: '   ' }],
      ['a number as the question', { question: 42 }],
    ];
    const badSql: Array<[string, string]> = [
      ['SQL of 1 MB', `SELECT '${huge}'`],
      ['an escape sequence in the SQL', 'SELECT name FROM genres -- \u001b]0;owned\u0007'],
      ['a write as the SQL', 'DELETE FROM genres'],
    ];
    const holder = servers[0];
    // The holder's own Playground (agro serve --dashboard) names its policies its own way: ask it.
    const ov1 = JSON.parse((await raw(holder.cli.port, { path: '/dashboard/api/overview' })).body) as { databases: { id: string; label: string }[]; policies: { id: string }[] };
    const pol1 = ov1.policies[0]?.id ?? 'none';
    const db1 = ov1.databases.find((d) => d.label === 'music_store')!.id;
    const play1 = (extra: Record<string, string> = {}) => new URLSearchParams({ policy: pol1, db: db1, ...extra }).toString();
    const w = { 'content-type': 'application/json', ...bearer(holder.token) };
    const sends: Array<[string, RawRequest]> = [];
    for (const [how, q] of bad) {
      sends.push([`/v1/ask with ${how}`, { method: 'POST', path: '/v1/ask', headers: w, body: JSON.stringify({ db_id: 'music_store', ...q }) }]);
      sends.push([`/v1/corrections with ${how}`, { method: 'POST', path: '/v1/corrections', headers: w, body: JSON.stringify({ db_id: 'music_store', sql: 'SELECT 1', ...q }) }]);
      sends.push([`the Playground's correct with ${how}`, { method: 'POST', path: '/dashboard/api/playground/correct', headers: w, body: JSON.stringify({ policy: pol1, db: db1, sql: 'SELECT 1', ...q }) }]);
      if (typeof q.question === 'string' && q.question.length < 30_000) sends.push([`the Playground's ask with ${how}`, { path: `/dashboard/api/playground/ask?${play1({ question: q.question })}`, headers: bearer(holder.token) }]);
    }
    for (const [how, sql] of badSql) {
      sends.push([`/v1/corrections with ${how}`, { method: 'POST', path: '/v1/corrections', headers: w, body: JSON.stringify({ db_id: 'music_store', question: 'Which genres?', sql }) }]);
      sends.push([`the Playground's correct with ${how}`, { method: 'POST', path: '/dashboard/api/playground/correct', headers: w, body: JSON.stringify({ policy: pol1, db: db1, question: 'Which genres?', sql }) }]);
    }
    // Bytes that are not UTF-8 in the body itself, and a body past the limit.
    const invalid = Buffer.concat([Buffer.from('{"db_id": "music_store", "sql": "SELECT 1", "question": "How many g'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('nres?"}')]);
    sends.push(['/v1/corrections with a body that is not UTF-8', { method: 'POST', path: '/v1/corrections', headers: { ...w, 'content-length': String(invalid.length) }, body: invalid }]);
    sends.push(['/v1/ask with a body that is not UTF-8', { method: 'POST', path: '/v1/ask', headers: { ...w, 'content-length': String(invalid.length) }, body: invalid }]);
    // It claims 5 MB and sends 1 KB: the limit answers from the length, before the body (a client writing on into a
    // closed connection is the client's EPIPE, not the server's answer).
    sends.push(['/v1/corrections with a 5 MB body', { method: 'POST', path: '/v1/corrections', headers: { ...w, 'content-length': String(5 * MiB) }, body: 'x'.repeat(1024), hangAfterHeaders: true }]);
    const before = storeState(store);
    for (const [name, r] of sends) {
      const res = await raw(holder.cli.port, { ...r, timeoutMs: 30_000 });
      // An event stream answers 200 and says the error in its first event: a refusal there is an `error` event.
      const streamed = res.status === 200 && /text\/event-stream/.test(String(res.headers['content-type']));
      // A question past Node's 16 KiB of request headers never reaches a route: Node's own 431.
      const headerCap = r.method === undefined && res.status === 431;
      const ok = streamed ? /^event: error\n/m.test(res.body) && !/event: start/.test(res.body) : headerCap || (res.status >= 400 && res.status < 500 && oneJsonLine(res.body));
      b.record({ name: `held: ${name}`, ok, detail: `${res.status} ${res.body.replace(/\s+/g, ' ').slice(0, 100)}` });
    }
    b.record({ name: 'held: the store unchanged after every refused input', ok: storeState(store) === before, detail: 'rows compared' });

    // race: two servers and CLI writers on one store, some writers killed.
    const acked: string[] = [];
    const post = async (s: (typeof servers)[number], i: number): Promise<void> => {
      const question = `race ${s.name} ${i}`;
      const res = await raw(s.cli.port, { method: 'POST', path: '/v1/corrections', headers: { 'content-type': 'application/json', ...bearer(s.token) }, body: JSON.stringify({ db_id: 'music_store', question, sql: `SELECT ${i} AS n FROM genres LIMIT 1` }), timeoutMs: 60_000 });
      if (res.status === 200) acked.push(question);
    };
    const adders = Array.from({ length: 6 }, (_, k) => {
      const question = `race cli ${k}`;
      const child = spawn(process.execPath, [join(b.root, 'bin', 'agro.js'), 'memory', 'add', '--db', b.music, '--memory', store, '--question', question, '--sql', `SELECT ${1000 + k} AS n FROM genres LIMIT 1`], { stdio: 'ignore' });
      // Two of them killed at a random moment of their run.
      if (k < 2) setTimeout(() => child.kill('SIGKILL'), 300 + Math.random() * 1500);
      return new Promise<void>((ok) => child.on('exit', (code) => (code === 0 && acked.push(question), ok())));
    });
    const posts: Promise<void>[] = [];
    for (let i = 0; i < 40; i++) posts.push(post(servers[i % 2 === 0 ? 0 : 2], i));
    await Promise.all([...adders, ...posts]);
    const db2 = new Database(store, { readonly: true });
    const rows = db2.prepare("SELECT questions FROM pairs WHERE source = 'person' AND removed_seq IS NULL").all() as Array<{ questions: string }>;
    const integrity = (db2.pragma('integrity_check') as Array<{ integrity_check: string }>).map((r) => r.integrity_check).join('; ');
    db2.close();
    const count = new Map<string, number>();
    for (const r of rows) for (const q of JSON.parse(r.questions) as string[]) count.set(q, (count.get(q) ?? 0) + 1);
    const lost = acked.filter((q) => count.get(q) !== 1);
    b.record({ name: `race: ${acked.length} acknowledged corrections (40 over HTTP to two servers, 6 CLI writers, 2 killed) each present once`, ok: acked.length >= 40 && lost.length === 0, detail: lost.length ? `missing or twice: ${lost.slice(0, 3).join(', ')}` : `${acked.length} present once` });
    b.record({ name: 'race: PRAGMA integrity_check', ok: integrity === 'ok', detail: integrity.slice(0, 100) });
  } finally {
    for (const s of servers) await s.cli.stop();
  }
  // logs: a made token only in the lines printed at start (up to "listening on" / the Ctrl-C line), a given one never.
  for (const s of servers) {
    const out = s.cli.out();
    const startEnd = out.indexOf('Ctrl-C');
    const later = out.slice(startEnd) + s.cli.err();
    const atStart = out.slice(0, startEnd).split(s.token).length - 1;
    const n = later.split(s.token).length - 1;
    const ok = s.scope === 'writes' ? atStart >= 1 && n === 0 : atStart + n === 0;
    b.record({ name: `logs: ${s.name}'s output holds its token ${s.scope === 'writes' ? 'in its start lines only' : 'nowhere (it was given)'}`, ok, detail: `${atStart} at start, ${n} after` });
  }

  // stores: a bad --memory stops agro serve before it listens.
  const truncated = join(dir, 'truncated.db');
  copyFileSync(store, truncated);
  const fd = openSync(truncated, 'r+');
  ftruncateSync(fd, Math.floor(statSync(truncated).size / 3));
  closeSync(fd);
  const sparse = join(dir, 'huge.db');
  writeFileSync(sparse, readFileSync(store).subarray(0, 100));
  const fd2 = openSync(sparse, 'r+');
  ftruncateSync(fd2, 8 * 2 ** 30);
  closeSync(fd2);
  const fifo = join(dir, 'fifo.db');
  spawn('mkfifo', [fifo]).on('error', () => {});
  await new Promise((r) => setTimeout(r, 200));
  const zero = join(dir, 'zero.db');
  symlinkSync('/dev/zero', zero);
  const folder = join(dir, 'folder.db');
  mkdirSync(folder);
  const badStores: Array<[string, string]> = [
    ['truncated to a third', truncated],
    ['of 8 GB (sparse)', sparse],
    ['a FIFO', fifo],
    ['/dev/zero behind a symlink', zero],
    ['a folder', folder],
    ['of another schema (retail\'s) named music_store', other],
  ];
  for (const [how, path] of badStores) {
    const r = await b.run(['serve', '--policy', ck, '--memory', path, '--port', '0'], 60_000);
    const line = /^agro: [^\n]+\n$/.test(r.stderr) && !/\n\s+at /.test(r.stderr);
    b.record({ name: `stores: agro serve --memory <a store ${how}>: exit 4, one line`, ok: r.status === 4 && line && !/listening on/.test(r.stdout ?? ''), detail: `exit ${r.status ?? r.signal}: ${r.stderr.trim().split('\n')[0].slice(0, 120)}` });
  }

  // big: question-time work on a 10,000,000-row table stays within its bounds.
  const bigDb = join(dir, 'big.sqlite');
  const g = new Database(bigDb);
  g.exec('CREATE TABLE events (event_id INTEGER PRIMARY KEY, kind TEXT NOT NULL, amount REAL, city TEXT)');
  g.exec("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000000) INSERT INTO events SELECT i, CASE i % 3 WHEN 0 THEN 'sale' WHEN 1 THEN 'refund' ELSE 'visit' END, (i % 997) * 1.5, 'city ' || (i % 50) FROM n");
  g.close();
  const t0 = Date.now();
  const r = await b.run(['ask', 'How many events are refunds?', '--db', bigDb, '--policy', ck, '--json'], 240_000);
  const secs = (Date.now() - t0) / 1000;
  b.record({ name: 'big: agro ask on a 10,000,000-row table answers within 240 s', ok: r.status === 0, detail: `exit ${r.status ?? r.signal} in ${secs.toFixed(0)} s${r.status ? `: ${r.stderr.trim().split('\n')[0].slice(0, 100)}` : ''}`, peakBytes: r.peakBytes });
  b.record({ name: "big: its process tree's peak memory under 1 GiB", ok: r.peakBytes < 2 ** 30, detail: `${(r.peakBytes / MiB).toFixed(0)} MiB`, peakBytes: r.peakBytes });
}
