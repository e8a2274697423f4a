import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { createApp } from '../../src/server/app.ts';
import { openaiRoutes } from '../../src/server/openai.ts';
import { CheckpointPolicy } from '../../src/agent/policies/checkpoint.ts';
import { EndpointPolicy } from '../../src/agent/policies/endpoint.ts';
import { runPredict } from '../../src/pipeline/predict.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { initBackend } from '../../src/model/backend.ts';
import type { Policy, TurnRequest } from '../../src/agent/policies/types.ts';
import { saveTinyCheckpoint } from '../support/tiny-checkpoint.ts';

const tmp = mkdtempSync(join(tmpdir(), 'agro-serve-'));
const CKPT = join(tmp, 'ck');
const QS = (JSON.parse(readFileSync('data/dev.json', 'utf8')) as { db_id: string }[]).filter((q) => q.db_id === 'music_store').slice(0, 3);
const DATA = join(tmp, 'dev.json');
writeFileSync(DATA, JSON.stringify(QS));

async function makeCheckpoint(): Promise<void> {
  await initBackend();
  const texts = ['SELECT name FROM artists WHERE id = 1', 'How many albums are there?', '<think>count</think><sql>SELECT COUNT(*) FROM albums</sql>'];
  await saveTinyCheckpoint(CKPT, texts, { vocabSize: 320, seed: 3 });
}

function listen(app: Hono): Promise<{ server: ServerType; url: string }> {
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => resolve({ server, url: `http://127.0.0.1:${info.port}` }));
  });
}

const post = (url: string, body: unknown): Promise<Response> => fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });

test('agro predict --llm-url against the server gives the same predictions as the checkpoint directly (greedy)', async () => {
  await makeCheckpoint();
  const local = await CheckpointPolicy.open(CKPT);
  const served = await CheckpointPolicy.open(CKPT);
  const { server, url } = await listen(createApp({ groups: [{ app: openaiRoutes({ policy: served }) }] }));
  const pool = new SqlPool({ size: 2 });
  try {
    const remote = await EndpointPolicy.open({ url: `${url}/v1` });
    assert.equal(remote.name, 'ck', 'the model name comes from /v1/models');
    const cfg = { data: DATA, dbRoot: 'data/databases', schemaChars: 200, maxTurnTokens: 24, concurrency: 2 };
    const a = await runPredict({ ...cfg, out: join(tmp, 'direct') }, local, pool);
    const b = await runPredict({ ...cfg, out: join(tmp, 'served') }, remote, pool);
    assert.equal(readFileSync(b.files.spider!, 'utf8'), readFileSync(a.files.spider!, 'utf8'));
    const turns = (f: string) => readFileSync(f, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).sort((x, y) => x.index - y.index).map((r) => r.samples[0].turns.map((t: { text: string }) => t.text));
    const ta = turns(a.files.trajectories);
    assert.deepEqual(turns(b.files.trajectories), ta);
    assert.ok(ta.flat().some((t) => t.length > 0), 'the random model wrote something');

    // Streaming gives the same text as the JSON reply.
    const msgs = [{ role: 'user', content: 'How many albums are there?' }];
    const plain = (await (await post(url, { messages: msgs, max_tokens: 12 })).json()) as { choices: { message: { content: string }; finish_reason: string }[]; usage: { completion_tokens: number } };
    assert.equal(plain.choices[0].finish_reason, 'length');
    assert.equal(plain.usage.completion_tokens, 12);
    const sse = await (await post(url, { messages: msgs, max_tokens: 12, stream: true })).text();
    const events = sse.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6));
    assert.equal(events[events.length - 1], '[DONE]');
    const streamed = events.slice(0, -1).map((e) => JSON.parse(e)).map((e) => e.choices[0].delta.content ?? '').join('');
    assert.equal(streamed, plain.choices[0].message.content);
  } finally {
    await new Promise((r) => server.close(r));
    await pool.close();
    await local.close();
    await served.close();
  }
});

/** A policy that waits until released: a stand-in for a long generation, to fill the server's slots. */
class HeldPolicy implements Policy {
  readonly kind = 'endpoint';
  readonly name = 'held';
  readonly description = 'held';
  readonly promptContract = null;
  private releases: (() => void)[] = [];
  complete(req: TurnRequest) {
    return new Promise<{ text: string; finish: 'stop' }>((resolve) => this.releases.push(() => resolve({ text: `echo ${req.messages.at(-1)!.content}`, finish: 'stop' })));
  }
  releaseAll(): void {
    for (const r of this.releases.splice(0)) r();
  }
  close() {
    return Promise.resolve();
  }
}

test('server limits and errors: JSON bodies with the right status', async () => {
  const policy = new HeldPolicy();
  const extra = new Hono().get('/extra/ping', (c) => c.json({ pong: true }));
  const { server, url } = await listen(createApp({ groups: [{ app: openaiRoutes({ policy, concurrency: 1, maxQueue: 1, timeoutMs: 400 }) }, { app: extra }], maxBodyBytes: 2048 }));
  try {
    const err = async (r: Response, status: number, re: RegExp) => {
      assert.equal(r.status, status);
      const body = (await r.json()) as { error: { message: string } };
      assert.match(body.error.message, re);
    };
    await err(await post(url, 'not json'), 400, /not JSON/);
    await err(await post(url, { messages: [] }), 400, /messages/);
    await err(await post(url, { messages: [{ role: 'wizard', content: 'x' }] }), 400, /role/);
    await err(await post(url, { model: 'other', messages: [{ role: 'user', content: 'x' }] }), 404, /not served here/);
    await err(await post(url, { messages: [{ role: 'user', content: 'x'.repeat(5000) }] }), 413, /larger than 2048/);
    await err(await fetch(`${url}/v2/nothing`), 404, /no route/);
    assert.deepEqual(await (await fetch(`${url}/extra/ping`)).json(), { pong: true });
    // One running, one queued, the third is refused; the held ones time out with 504.
    const first = post(url, { messages: [{ role: 'user', content: 'a' }] });
    const second = post(url, { messages: [{ role: 'user', content: 'b' }] });
    await new Promise((r) => setTimeout(r, 100));
    await err(await post(url, { messages: [{ role: 'user', content: 'c' }] }), 429, /too many/);
    await err(await first, 504, /ran past 400 ms/);
    policy.releaseAll();
    const ok = (await (await second).json()) as { choices: { message: { content: string } }[] };
    // The second got the slot as the first timed out, and answers once released.
    assert.equal(ok.choices[0].message.content, 'echo b');
  } finally {
    policy.releaseAll();
    await new Promise((r) => server.close(r));
  }
});

test('a huge conversation is a 400 before it is tokenized, not a 500; one long word under the cap is tokenized fine', async () => {
  // The checkpoint of the first test (tests in a file run in order).
  const policy = await CheckpointPolicy.open(CKPT);
  const { server, url } = await listen(createApp({ groups: [{ app: openaiRoutes({ policy, maxInputChars: 100_000 }) }] }));
  try {
    // 40,000 words, and one 300,000-character word (its merges overflowed the stack before).
    for (const content of [Array.from({ length: 40_000 }, (_, i) => `word${i % 97}`).join(' '), 'ab'.repeat(150_000)]) {
      const t0 = Date.now();
      const r = await post(url, { messages: [{ role: 'user', content }] });
      assert.equal(r.status, 400, await r.clone().text());
      assert.match(((await r.json()) as { error: { message: string } }).error.message, /at most 100000 per request/);
      assert.ok(Date.now() - t0 < 5000);
    }
    // Under the cap, a long word goes through the tokenizer and the model answers (the context cuts the reply).
    const ok = await post(url, { messages: [{ role: 'user', content: 'ab'.repeat(40_000) }], max_tokens: 4 });
    assert.equal(ok.status, 200, await ok.clone().text());
  } finally {
    await new Promise((r) => server.close(r));
    await policy.close();
  }
});

test.after(() => rmSync(tmp, { recursive: true, force: true }));
