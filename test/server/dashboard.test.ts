import { onLoopback } from '../support/loopback-app.ts';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { flattenRecord, readNewLines, toColumns } from '../../src/server/dashboard/metrics.ts';
import { diffRows } from '../../src/server/dashboard/results.ts';
import { schemaCoverage, toPairRow } from '../../src/server/dashboard/data.ts';
import { scanFolder } from '../../src/server/dashboard/scan.ts';
import { dashboardRoutes } from '../../src/server/dashboard.ts';
import { toCsv } from '../../web/src/csv.ts';
import { startFakeOpenAI } from '../support/fake-openai.ts';
import { formatAction } from '../../src/agent/protocol.ts';
import { EndpointPolicy } from '../../src/agent/policies/endpoint.ts';
import type { PlaygroundEvent } from '../../src/server/dashboard/api-types.ts';
import { SEARCH_SAMPLES } from '../../src/answer/answer.ts';
import { LOW_CONFIDENCE } from '../../src/answer/rank.ts';
import { sseEvents } from '../support/sse-events.ts';
import { appendColumns, chartPlan, seriesOf } from '../../web/src/metrics.ts';
import { decimateRows, pickRows, type Columns } from '../../web/src/decimate.ts';
import { scratchAndPool } from '../support/with.ts';

const BIN = fileURLToPath(new URL('../../bin/agro.js', import.meta.url));
const { dir: tmp, pool } = scratchAndPool('agro-dash-unit-');

test('metrics lines become columns: nested keys flattened, missing values null, bad lines skipped', () => {
  assert.deepEqual(flattenRecord({ step: 1, rewards: { execution: 0.5, format: 1 }, skipped: true, note: 'x' }), { step: 1, 'rewards.execution': 0.5, 'rewards.format': 1, skipped: 1 });
  const m = toColumns(['{"step":1,"loss":2.5}', 'not json', '{"step":2,"loss":2,"eval_accuracy":0.25}', '']);
  assert.deepEqual(m.keys, ['step', 'loss', 'eval_accuracy']);
  assert.deepEqual(m.columns, { step: [1, 2], loss: [2.5, 2], eval_accuracy: [null, 0.25] });
  assert.deepEqual(seriesOf(m, 'eval_accuracy'), { x: [2], y: [0.25] });
  // A metric on every row is the columns themselves (its charts share one x array).
  assert.equal(seriesOf(m, 'loss').x, m.columns.step);
  assert.equal(seriesOf(m, 'loss').y, m.columns.loss);
});

test('the tail of a metrics file: only complete new lines, and the whole file again after a rewrite', () => {
  const f = join(tmp, 'metrics.jsonl');
  writeFileSync(f, '{"step":1}\n{"step":2}\n{"step":3');
  const a = readNewLines(f, null)!;
  assert.equal(a.reset, true);
  assert.deepEqual(toColumns(a.lines).columns.step, [1, 2]);
  appendFileSync(f, '}\n{"step":4}\n');
  const b = readNewLines(f, a.state)!;
  assert.equal(b.reset, false);
  assert.deepEqual(toColumns(b.lines).columns.step, [3, 4]);
  assert.deepEqual(readNewLines(f, b.state)!.lines, []);
  // A resume rewrites the file by rename (a new inode) with fewer lines.
  writeFileSync(`${f}.tmp`, '{"step":1}\n');
  renameSync(`${f}.tmp`, f);
  const c = readNewLines(f, b.state)!;
  assert.equal(c.reset, true);
  assert.deepEqual(toColumns(c.lines).columns.step, [1]);
});

test('appended rows extend the columns; a key new to the run is null before it appears', () => {
  const a = toColumns(['{"step":1,"loss":3}']);
  const b = toColumns(['{"step":2,"loss":2,"eval_accuracy":0.5}']);
  assert.deepEqual(appendColumns(a, b).columns, { step: [1, 2], loss: [3, 2], eval_accuracy: [null, 0.5] });
});

test('charts group the trainer metrics and give every other metric its own chart, marked internal (folded away)', () => {
  const plan = chartPlan(['step', 'reward', 'rewards.format', 'accuracy', 'eval_accuracy', 'loss', 'time_rollout_s', 'time_update_s', 'custom']);
  assert.deepEqual(plan, [
    { title: 'Reward (total and per component)', keys: ['reward', 'rewards.format'] },
    { title: 'Accuracy (training batch) and held-out EX', keys: ['accuracy', 'eval_accuracy'] },
    { title: 'Loss', keys: ['loss'] },
    { title: 'Time split (s per step)', keys: ['time_rollout_s', 'time_update_s'] },
    { title: 'custom', keys: ['custom'], internal: true },
  ]);
});

test('a long chart is drawn decimated: per x bucket its first and last row and each series\' min and max, every row when zoomed in', () => {
  const x = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
  const y1 = [5, 1, 7, 3, 9, 2, 8, 4, 6, 0];
  const y2 = [null, null, 3, null, null, null, null, 1, null, null];
  // Two buckets: x 0–4 and 5–9 (x/9·2 floored).
  assert.deepEqual(decimateRows([x, y1], 2), [0, 1, 4, 5, 6, 9]);
  // A sparse series keeps its own points.
  assert.deepEqual(decimateRows([x, y1, y2], 2), [0, 1, 2, 4, 5, 6, 7, 9]);
  assert.deepEqual(pickRows([x, y1, y2], [0, 2, 9]), [[0, 2, 9], [5, 7, 0], [null, 3, null]]);
  // Zoomed to x 5–9 in one bucket: the row before the range (4), the extremes (9 min and 4 max of y1, 7 of
  // y2), the range's last row (9), and the run's first row, so that resetting the zoom finds the whole run.
  assert.deepEqual(decimateRows([x, y1, y2] as Columns, 1, 5, 9), [0, 4, 7, 9]);
  // Few rows in the range: all of them.
  assert.deepEqual(decimateRows([x, y1], 5), x);
  assert.deepEqual(decimateRows([x, y1], 2, 6, 7), [0, 5, 6, 7, 8, 9]);
});

test('differing rows: a multiset difference, duplicates counted', () => {
  const d = diffRows(
    [[1, 'a'], [1, 'a'], [2, 'b'], [3, null]],
    [[1, 'a'], [2, 'b'], [2, 'b'], [4, 'd']],
  );
  assert.deepEqual(d.predExtra, [false, true, false, true]);
  assert.deepEqual(d.goldMissing, [false, false, true, true]);
});

test('schema coverage counts pairs per table and per column they name', () => {
  const schema = { tables: [
    { name: 'genres', columns: [{ name: 'genre_id' }, { name: 'name' }] },
    { name: 'tracks', columns: [{ name: 'track_id' }, { name: 'Name' }, { name: 'bytes' }] },
    { name: 'media', columns: [{ name: 'id' }] },
  ] } as Parameters<typeof schemaCoverage>[0];
  const pairs = [
    toPairRow({ SQL: 'SELECT name FROM genres WHERE genre_id = 1' }, 0),
    toPairRow({ SQL: 'SELECT T1."name" FROM tracks AS T1 JOIN genres AS T2 ON T1.track_id = T2.genre_id' }, 1),
  ];
  assert.deepEqual(pairs[1].tables, ['tracks', 'genres']);
  assert.deepEqual(schemaCoverage(schema, pairs), [
    { table: 'genres', pairs: 2, columns: [{ name: 'genre_id', pairs: 2 }, { name: 'name', pairs: 2 }] },
    { table: 'tracks', pairs: 1, columns: [{ name: 'track_id', pairs: 1 }, { name: 'Name', pairs: 1 }, { name: 'bytes', pairs: 0 }] },
    { table: 'media', pairs: 0, columns: [{ name: 'id', pairs: 0 }] },
  ]);
});

test('CSV export quotes commas, quotes and line breaks (RFC 4180)', () => {
  assert.equal(toCsv(['a', 'b'], [[1, 'x,y'], [null, 'say "hi"\nbye']]), 'a,b\r\n1,"x,y"\r\n,"say ""hi""\nbye"\r\n');
});

test('the folder scan finds runs, factory outputs, eval reports and checkpoints, and skips the rest', () => {
  const root = join(tmp, 'scan');
  mkdirSync(join(root, 'a', 'sft', 'checkpoints', 'step-5'), { recursive: true });
  mkdirSync(join(root, 'a', 'sft', 'checkpoints', 'step-10'), { recursive: true });
  writeFileSync(join(root, 'a', 'sft', 'metrics.jsonl'), '{"step":1}\n');
  writeFileSync(join(root, 'a', 'sft', 'sft_config.json'), '{}');
  writeFileSync(join(root, 'a', 'sft', 'checkpoints', 'step-5', 'config.json'), '{}');
  writeFileSync(join(root, 'a', 'sft', 'checkpoints', 'step-10', 'config.json'), '{}');
  mkdirSync(join(root, 'data'), { recursive: true });
  writeFileSync(join(root, 'data', 'manifest.json'), '{}');
  writeFileSync(join(root, 'data', 'dataset.jsonl'), '');
  writeFileSync(join(root, 'report.json'), JSON.stringify({ version: 1, data: 'x' }, null, 2));
  writeFileSync(join(root, 'other.json'), JSON.stringify({ version: 2, data: 'x' }, null, 2));
  const s = scanFolder(root);
  assert.deepEqual(s.runs.map((r) => [r.id, r.kind]), [['a/sft', 'sft']]);
  assert.deepEqual(s.datasets.map((d) => d.id), ['data']);
  assert.deepEqual(s.evals.map((e) => e.id), ['report.json']);
  assert.deepEqual(s.checkpoints.map((c) => [c.id, c.step]), [['a/sft/checkpoints/step-10', 10]]);
});

test('the folder scan never leaves the folder: links out (files and folders) are not there, loops are walked once, and the walk is bounded', () => {
  const root = join(tmp, 'scan-links');
  const out = join(tmp, 'scan-outside');
  mkdirSync(join(root, 'r', 'sft'), { recursive: true });
  writeFileSync(join(root, 'r', 'sft', 'metrics.jsonl'), '{"step":1}\n');
  mkdirSync(join(out, 'run'), { recursive: true });
  writeFileSync(join(out, 'run', 'metrics.jsonl'), '{"step":1}\n');
  writeFileSync(join(out, 'report.json'), JSON.stringify({ version: 1, data: 'secret' }, null, 2));
  writeFileSync(join(out, 'm.gguf'), 'GGUF');
  symlinkSync(out, join(root, 'out'));
  symlinkSync(join(out, 'report.json'), join(root, 'report.json'));
  symlinkSync(join(out, 'm.gguf'), join(root, 'm.gguf'));
  symlinkSync(join(out, 'run', 'metrics.jsonl'), join(root, 'r', 'metrics.jsonl'));
  // Inside links are fine, each real folder once: a loop and a second name for r/ add nothing.
  symlinkSync(root, join(root, 'loop'));
  symlinkSync(join(root, 'r'), join(root, 'r2'));
  const s = scanFolder(root);
  assert.deepEqual(s.runs.map((r) => r.id), ['r/sft']);
  assert.deepEqual(s.evals, []);
  assert.deepEqual(s.ggufs, []);
  assert.equal(s.truncated, undefined);
  for (let i = 0; i < 30; i++) mkdirSync(join(root, `d${i}`));
  assert.equal(scanFolder(root, { maxEntries: 10 }).truncated, true);
});

test('the API answers bad requests with a JSON error and the right status, and runs SQL only through the sandbox', async () => {
  const root = join(tmp, 'api');
  mkdirSync(root, { recursive: true });
  const app = dashboardRoutes({ dir: root, executor: pool, webDir: join(tmp, 'no-bundle') });
  const r1 = await app.request('/api/run?id=nope');
  assert.equal(r1.status, 404);
  assert.match(((await r1.json()) as { error: string }).error, /no run 'nope'/);
  const ov = (await (await app.request('/api/overview')).json()) as { databases: { id: string; label: string }[] };
  const music = ov.databases.find((d) => d.label === 'music_store')!;
  const post = (body: unknown) => app.request('/api/sql', { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const ok = (await (await post({ db: music.id, sql: 'SELECT COUNT(*) FROM genres' })).json()) as { ok: boolean; rows: unknown[][] };
  assert.deepEqual(ok, { ...ok, ok: true, rows: [[12]] });
  const refused = (await (await post({ db: music.id, sql: 'DELETE FROM genres' })).json()) as { ok: boolean; error: string };
  assert.equal(refused.ok, false);
  assert.equal(refused.error, 'refused');
  assert.equal((await post({ db: '/etc/passwd', sql: 'SELECT 1' })).status, 404);
  assert.equal((await post({ sql: 1 })).status, 400);
  const page = await app.request('/');
  assert.equal(page.status, 503);
  assert.match(await page.text(), /npm run build:web/);
  assert.equal((await app.request('/assets/..%2f..%2fpackage.json')).status, 404);
});

test('agro dashboard: a missing folder is one line and exit 3; a bad port is a usage error', () => {
  const r = spawnSync(process.execPath, [BIN, 'dashboard', join(tmp, 'missing'), '--no-open', '--port', '0'], { encoding: 'utf8' });
  assert.equal(r.status, 3, r.stderr);
  assert.match(r.stderr, /^agro: dashboard folder not found: .*missing\n$/);
  const p = spawnSync(process.execPath, [BIN, 'dashboard', tmp, '--no-open', '--port', 'x'], { encoding: 'utf8' });
  assert.equal(p.status, 2);
  assert.match(p.stderr, /^agro: --port must be an integer/);
});

test('agro dashboard serves the app and the API on loopback until interrupted', async () => {
  const empty = join(tmp, 'empty');
  mkdirSync(empty);
  const child = spawn(process.execPath, [BIN, 'dashboard', empty, '--no-open', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((r) => child.once('exit', r));
  after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let out = '';
  const url = await new Promise<string>((res, rej) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
      if (m) res(m[1]);
    });
    child.once('exit', (code) => rej(new Error(`exited ${code}: ${out}`)));
  });
  const html = await (await fetch(url)).text();
  assert.match(html, /<div id="app">/);
  const asset = /src="\.\/(assets\/[^"]+\.js)"/.exec(html)![1];
  const js = await fetch(url + asset);
  assert.equal(js.status, 200);
  assert.match(js.headers.get('content-type')!, /javascript/);
  const ov = (await (await fetch(`${url}api/overview`)).json()) as { runs: unknown[] };
  assert.deepEqual(ov.runs, []);
  child.kill('SIGINT');
  assert.equal(await exited, 0);
});


test('Playground over HTTP: an --llm-url endpoint runs the agent episode, each step streamed in order; a dead endpoint is one error event', async () => {
  const root = join(tmp, 'play');
  mkdirSync(root, { recursive: true });
  const llm = await startFakeOpenAI((req) => ({
    kind: 'reply',
    content: req.body.messages?.some((m) => m.role === 'tool')
      ? formatAction({ kind: 'answer', think: 'done', content: 'SELECT COUNT(*) FROM genres' })
      : formatAction({ kind: 'sql', think: 'look first', content: 'SELECT genre_id FROM genres ORDER BY genre_id LIMIT 3' }),
  }));
  const dead = 'http://127.0.0.1:9/v1';
  // A policy the caller holds open (agro serve --policy): used as it is, left open.
  const served = await EndpointPolicy.open({ url: llm.baseUrl, model: 'm0' });
  const app = dashboardRoutes({
    dir: root,
    executor: pool,
    webDir: join(tmp, 'no-bundle'),
    policies: { open: [{ policy: served }], extra: [{ spec: { llmUrl: llm.baseUrl, llmModel: 'm1' } }, { spec: { llmUrl: dead, llmModel: 'm2' } }] },
  });
  const http = onLoopback(app);
  try {
    const ov = (await (await http.request('/api/overview')).json()) as { policies: { id: string; kind: string }[]; databases: { id: string; label: string }[] };
    assert.deepEqual(ov.policies.map((p) => [p.id, p.kind]), [['open:m0', 'endpoint'], [`${llm.baseUrl}#m1`, 'endpoint'], [`${dead}#m2`, 'endpoint']]);
    const db = ov.databases.find((d) => d.label === 'music_store')!.id;
    const ask = async (policy: string) => {
      const res = await http.request(`/api/playground/ask?${new URLSearchParams({ policy, db, question: 'How many genres?' })}`);
      assert.match(res.headers.get('content-type')!, /text\/event-stream/);
      return sseEvents(await res.text());
    };
    const ev = await ask(`${llm.baseUrl}#m1`);
    // The greedy episode's steps, then the answer path checking it (progress), then the checked answer.
    assert.deepEqual(ev.map((e) => e.type), ['start', 'text', 'assistant', 'observation', 'text', 'assistant', 'checking', 'end']);
    const obs = ev[3] as Extract<PlaygroundEvent, { type: 'observation' }>;
    assert.deepEqual(obs.table?.rows, [[1], [2], [3]]);
    assert.equal((ev[6] as Extract<PlaygroundEvent, { type: 'checking' }>).samples, SEARCH_SAMPLES);
    const end = ev[7] as Extract<PlaygroundEvent, { type: 'end' }>;
    assert.equal(end.reason, 'answer');
    assert.equal(end.answer, 'SELECT COUNT(*) FROM genres');
    assert.deepEqual(end.result?.rows, [[12]]);
    assert.ok(end.checked && end.checked.confidence > 0 && end.checked.confidence <= 1, JSON.stringify(end.checked));
    assert.equal(end.checked.low, end.checked.confidence < LOW_CONFIDENCE);
    assert.ok(end.checked.sources.includes('greedy'), end.checked.sources.join());
    assert.deepEqual(end.checked.suggestions, [], 'no memory, no suggestions');
    // search=0: the policy's greedy answer alone, no check.
    const plain = sseEvents(await (await http.request(`/api/playground/ask?${new URLSearchParams({ policy: `${llm.baseUrl}#m1`, db, question: 'How many genres?', search: '0' })}`)).text());
    assert.deepEqual(plain.map((e) => e.type), ['start', 'text', 'assistant', 'observation', 'text', 'assistant', 'end']);
    assert.equal((plain[6] as Extract<PlaygroundEvent, { type: 'end' }>).checked, undefined);
    // A correction's body is checked (one line naming the field); an unknown database is 404, a refused SQL 400.
    const correct = (body: unknown) => http.request('/api/playground/correct', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const noSql = await correct({ policy: `${llm.baseUrl}#m1`, db, question: 'q' });
    assert.equal(noSql.status, 400);
    assert.match(((await noSql.json()) as { error: string }).error, /sql: /);
    assert.equal((await correct({ policy: `${llm.baseUrl}#m1`, db: 'nope', question: 'q', sql: 'SELECT 1' })).status, 404);
    const refused = await correct({ policy: `${llm.baseUrl}#m1`, db, question: 'Drop the genres', sql: 'DROP TABLE genres' });
    assert.equal(refused.status, 400);
    assert.match(((await refused.json()) as { error: string }).error, /nothing written/);
    assert.equal(existsSync(join(root, 'memory')), false, 'no memory started for a correction that does not run');
    // The schema prompt needs no model: the environment's opening on that database.
    const prompt = (await (await http.request(`/api/playground/prompt?${new URLSearchParams({ policy: `${llm.baseUrl}#m1`, db, question: 'How many genres?' })}`)).json()) as { prompt: string };
    assert.equal(prompt.prompt, llm.requests.find((r) => r.path.endsWith('/chat/completions'))!.body.messages![0].content);
    const bad = await ask(`${dead}#m2`);
    assert.deepEqual(bad.map((e) => e.type), ['start', 'error']);
    assert.match((bad[1] as { message: string }).message, /unreachable/);
    const viaServed = await ask('open:m0');
    assert.equal((viaServed.at(-1) as { reason: string }).reason, 'answer');
    assert.equal(llm.requests.filter((r) => r.path.endsWith('/chat/completions')).at(-1)!.body.model, 'm0');
    const unknown = await ask('nope');
    assert.deepEqual(unknown, [{ type: 'error', message: "no policy 'nope' in the dashboard folder or on the command line" }]);
  } finally {
    await app.close();
    await llm.close();
  }
});
