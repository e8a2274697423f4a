// Asking over HTTP as docs/serving.md shows it: the curl lines of the doc, run as they are written (their
// address swapped for a real server's), against the routes `agro serve --policy` mounts, with a policy that
// is a real endpoint client talking to a local OpenAI-protocol server (the remote LLM is the only fake).
// Then `agro serve` itself: /health and /v1/ask with no --db-root.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { createApp } from '../../src/server/app.ts';
import { policyRouteGroups } from '../../src/server/policy-routes.ts';
import { openPolicy } from '../../src/agent/policies/open.ts';
import type { Policy } from '../../src/agent/policies/types.ts';
import { catalogFromDbRoot } from '../../src/data/catalog.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { formatAction } from '../../src/agent/protocol.ts';
import { LOW_CONFIDENCE } from '../../src/answer/rank.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { buildMemory } from '../../src/memory/build.ts';
import { readMemory } from '../../src/memory/legacy.ts';
import { writeMemory } from '../../src/memory/store.ts';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { needsProgram } from '../support/system-program.ts';
import { saveTinyCheckpoint } from '../support/tiny-checkpoint.ts';

const curl = needsProgram('curl', 'curl', 'the curl examples of docs/serving.md');
const BIN = fileURLToPath(new URL('../../bin/agro.js', import.meta.url));
const DOC_BASE = 'http://127.0.0.1:8000';
const TOKEN = 'test-write-token-0123456789';
const WRITE = { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` };
const GENRE_SQL = 'SELECT g.name, COUNT(*) FROM tracks t JOIN genres g ON g.genre_id = t.genre_id GROUP BY g.name';
const tmp = mkdtempSync(join(tmpdir(), 'agro-ask-http-'));
const pool = new SqlPool({ size: 2 });
let llm: FakeOpenAI;
let policy: Policy;
let server: ServerType;
let base = '';
const MUSIC = resolve('data/databases/music_store/music_store.sqlite');
const memoryPath = join(tmp, 'memory.db');
// The database's memory: two pairs about the tables of the genre question (suggestions), none about its answer.
const REMEMBERED = [
  { sql: 'SELECT name FROM genres ORDER BY name', question: 'List the names of all genres.' },
  { sql: 'SELECT name FROM tracks ORDER BY milliseconds DESC LIMIT 1', question: 'What is the name of the longest track?' },
  { sql: 'SELECT COUNT(*) FROM customers', question: 'How many customers are there?' },
];

/** The curl lines under the doc's curl-examples marker. */
function docCurlLines(): string[] {
  const doc = readFileSync('docs/serving.md', 'utf8');
  const at = doc.indexOf('<!-- curl-examples');
  assert.ok(at >= 0, 'docs/serving.md has its curl examples');
  const block = /```sh\n([\s\S]*?)```/.exec(doc.slice(at))![1];
  return block.split('\n').filter((l) => l.startsWith('curl '));
}

// Asynchronous: the server answers from this same process.
// $TOKEN in a line is the write token the server was started with, as the doc says to set it.
const run = async (line: string): Promise<unknown> => JSON.parse((await promisify(execFile)('sh', ['-c', line.replaceAll(DOC_BASE, base.replace(/\/$/, ''))], { encoding: 'utf8', env: { ...process.env, TOKEN } })).stdout);

before(async () => {
  // The model: with agro's schema prompt it answers SQL (a follow-up edits the SQL its prompt shows); without one, digits.
  llm = await startFakeOpenAI((req) => {
    const msgs = req.body.messages ?? [];
    const system = msgs.find((m) => m.role === 'system')?.content ?? '';
    const user = msgs.find((m) => m.role === 'user')?.content ?? '';
    if (!/CREATE TABLE genres|genres\(/.test(system)) return { kind: 'reply', content: '3333333333' };
    const earlier = /^Earlier in this conversation:\nQ: .*\nSQL: (.*)\n/.exec(user);
    const sql = earlier ? `${earlier[1]} ORDER BY 2 DESC LIMIT 3` : /each genre/.test(user) ? GENRE_SQL : 'SELECT COUNT(*) FROM albums';
    return { kind: 'reply', content: formatAction({ kind: 'answer', think: 'from the schema', content: sql }) };
  });
  policy = await openPolicy({ llmUrl: llm.baseUrl, llmModel: 'fake', concurrency: 2 });
  writeMemory(memoryPath, await buildMemory('music_store', introspectSchema(MUSIC), REMEMBERED, pool, MUSIC));
  // As `agro serve` starts on loopback: a token guards the writes (its corrections), reads stay open.
  const app = createApp({
    groups: policyRouteGroups({ openai: { policy }, ask: { catalog: catalogFromDbRoot(resolve('data/databases')), executor: pool, memory: [memoryPath] } }),
    guard: { listenHost: '127.0.0.1', token: TOKEN, tokenScope: 'writes' },
  });
  server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

after(async () => {
  server?.close();
  await policy?.close();
  await llm?.close();
  await pool.close();
  rmSync(tmp, { recursive: true, force: true });
});

type Answer = { sql: string | null; columns: string[]; rows: unknown[][]; truncated: boolean; reading: string | null; confidence: number | null; low_confidence: boolean; sources: string[]; suggestions: string[]; end_reason: string; chart: { kind: string; vega_lite: { mark: unknown } } | null };

test("docs/serving.md's curl lines, as written: health, a question, a follow-up with its chart, a completion naming a database", { skip: curl.skip }, async () => {
  const lines = docCurlLines();
  assert.equal(lines.length, 5);
  assert.deepEqual(await run(lines[0]), { ok: true });

  let seen = llm.requests.length;
  const first = (await run(lines[1])) as Answer;
  assert.equal(first.sql, GENRE_SQL);
  assert.equal(first.end_reason, 'answer');
  assert.equal(first.rows.length, 12);
  assert.equal(first.columns.length, 2);
  // The answer path's: the policy's answer (its five episodes agree) chosen, how sure, and where it came from.
  assert.ok(first.confidence !== null && first.confidence > 0 && first.confidence <= 1, String(first.confidence));
  assert.ok(first.sources.includes('greedy'), first.sources.join());
  assert.equal(first.low_confidence, first.confidence < LOW_CONFIDENCE);
  // The memory's questions about genres and tracks, not the one about customers.
  assert.deepEqual(first.suggestions, ['List the names of all genres.', 'What is the name of the longest track?']);
  assert.equal(first.chart, null);
  // The model got agro's prompt: the schema in the system message, the question alone as the user's.
  const asked = llm.requests.slice(seen).find((r) => r.path.endsWith('/chat/completions'))!;
  assert.match(asked.body.messages![0].content, /genres/);
  assert.equal(asked.body.messages![1].content, 'How many tracks does each genre have?');

  seen = llm.requests.length;
  const follow = (await run(lines[2])) as Answer;
  assert.equal(follow.sql, `${GENRE_SQL} ORDER BY 2 DESC LIMIT 3`);
  assert.equal(follow.rows.length, 3);
  assert.ok((follow.rows[0][1] as number) >= (follow.rows[1][1] as number));
  assert.equal(follow.chart?.kind, 'bar');
  assert.ok(follow.chart?.vega_lite.mark);
  const user = llm.requests.slice(seen).find((r) => r.path.endsWith('/chat/completions'))!.body.messages![1].content;
  assert.ok(user.includes(`Q: How many tracks does each genre have?\nSQL: ${GENRE_SQL}`), user);

  const chat = (await run(lines[3])) as { object: string; choices: { message: { content: string } }[]; agro: Answer };
  assert.equal(chat.object, 'chat.completion');
  assert.equal(chat.choices[0].message.content, GENRE_SQL);
  assert.equal(chat.agro.rows.length, 12);
  assert.equal(typeof chat.agro.confidence, 'number');
});

test("docs/serving.md's correction line: the pair is run, stored in the memory as a person's, and the next question like it is answered with it; refused or failing SQL writes nothing", { skip: curl.skip }, async () => {
  const line = docCurlLines()[4];
  assert.match(line, /\/v1\/corrections/);
  const body = JSON.parse(/-d '(.*)'$/.exec(line)![1]) as { question: string; sql: string };
  // Before: the policy's answer (the fake counts albums for any other question).
  const ask = async (question: string) => (await (await fetch(`${base}v1/ask`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ db_id: 'music_store', question }) })).json()) as Answer;
  const other = 'Which genre has the largest number of tracks?';
  assert.notEqual((await ask(other)).sql, body.sql);
  const stored = (await run(line)) as { id: number; stored: boolean; rows: number; sql: string };
  assert.equal(stored.stored, true);
  assert.equal(stored.rows, 1);
  const mem = readMemory(memoryPath);
  // Its id is the store's, so a client can find or undo exactly the pair it taught.
  assert.equal(stored.id, mem.entries[0].id);
  assert.equal(mem.entries[0].source, 'person');
  assert.deepEqual(mem.entries[0].questions, [body.question]);
  assert.ok(mem.entries[0].at && !Number.isNaN(Date.parse(mem.entries[0].at)), 'when a person stored it');
  // Asked again in other words: the person's pair is retrieved and chosen, no restart.
  const again = await ask(other);
  assert.equal(again.sql, body.sql);
  assert.ok(again.sources.includes('person'), again.sources.join());
  // Refused (a write) and failing SQL: one 400 line each, the memory file byte for byte as it was.
  const before = readFileSync(memoryPath, 'utf8');
  const post = (sql: string) => fetch(`${base}v1/corrections`, { method: 'POST', headers: WRITE, body: JSON.stringify({ db_id: 'music_store', question: 'Drop them', sql }) });
  for (const [sql, why] of [['DELETE FROM tracks', /refused/], ['SELECT nope FROM tracks', /no such column/]] as const) {
    const r = await post(sql);
    assert.equal(r.status, 400);
    const msg = ((await r.json()) as { error: { message: string } }).error.message;
    assert.match(msg, why);
    assert.match(msg, /nothing written/);
    assert.ok(!msg.includes('\n'), msg);
  }
  assert.equal(readFileSync(memoryPath, 'utf8'), before);
  // A bad body names the field; an unknown database is 404.
  const bad = await fetch(`${base}v1/corrections`, { method: 'POST', headers: WRITE, body: JSON.stringify({ db_id: 'music_store', question: 'q' }) });
  assert.equal(bad.status, 400);
  assert.match(((await bad.json()) as { error: { message: string } }).error.message, /^sql: /);
  const unknown = await fetch(`${base}v1/corrections`, { method: 'POST', headers: WRITE, body: JSON.stringify({ db_id: 'nope', question: 'q', sql: 'SELECT 1' }) });
  assert.equal(unknown.status, 404);
});

test('a chat completion: with `database` the schema reaches the model and earlier messages are the conversation; without it, the bare continuation', async () => {
  const post = (body: unknown) => fetch(`${base}v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const bare = (await (await post({ messages: [{ role: 'user', content: 'How many tracks does each genre have?' }] })).json()) as { choices: { message: { content: string } }[] };
  assert.equal(bare.choices[0].message.content, '3333333333');
  const messages = [
    { role: 'user', content: 'How many tracks does each genre have?' },
    { role: 'assistant', content: '```sql\n' + GENRE_SQL + '\n```' },
    { role: 'user', content: 'only the top three' },
  ];
  const r = (await (await post({ database: 'music_store', messages })).json()) as { choices: { message: { content: string } }[]; agro: Answer };
  assert.equal(r.choices[0].message.content, `${GENRE_SQL} ORDER BY 2 DESC LIMIT 3`);
  assert.equal(r.agro.rows.length, 3);
  const streamed = await post({ database: 'music_store', messages, stream: true });
  assert.equal(streamed.status, 400);
  const unknown = await post({ database: 'no_such_db', messages });
  assert.equal(unknown.status, 404);
  assert.equal(((await unknown.json()) as { error: { code: string } }).error.code, 'database_not_found');
});

test('POST /v1/ask: a bad body is one 400 line naming the field; max_rows bounds the rows', async () => {
  const ask = (body: unknown) => fetch(`${base}v1/ask`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const bad = await ask({ db_id: 'music_store' });
  assert.equal(bad.status, 400);
  assert.match(((await bad.json()) as { error: { message: string } }).error.message, /^question: /);
  const few = (await (await ask({ db_id: 'music_store', question: 'How many tracks does each genre have?', max_rows: 5 })).json()) as Answer;
  assert.equal(few.rows.length, 5);
  assert.equal(few.truncated, true);
});

test('agro serve --policy with nothing else: /health answers (it was 404 without --db-root) and /v1/ask answers on a bundled database', { timeout: 180_000 }, async () => {
  const ck = join(tmp, 'ck');
  await saveTinyCheckpoint(ck, ['SELECT name FROM artists'], { vocabSize: 300 });
  const child = spawn(process.execPath, [BIN, 'serve', '--policy', ck, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const url = await new Promise<string>((res, rej) => {
      const t = setInterval(() => {
        const m = /listening on (http:\/\/[^\s;]+)/.exec(stdout);
        if (!m) return;
        clearInterval(t);
        res(m[1]);
      }, 100);
      child.once('exit', (code) => {
        clearInterval(t);
        rej(new Error(`agro serve exited ${code}`));
      });
    });
    assert.deepEqual(await (await fetch(`${url}/health`)).json(), { ok: true });
    const r = await fetch(`${url}/v1/ask`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ db_id: 'music_store', question: 'How many albums are there?' }) });
    assert.equal(r.status, 200);
    const a = (await r.json()) as Answer;
    // An untrained model: whatever it answers, the answer has every documented field, and a confidence when it has SQL.
    for (const k of ['sql', 'columns', 'rows', 'truncated', 'error', 'end_reason', 'reading', 'confidence', 'low_confidence', 'sources', 'suggestions', 'chart', 'turns', 'ms']) assert.ok(k in a, k);
    assert.ok(a.sql === null ? a.confidence === null : typeof a.confidence === 'number');
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
});
