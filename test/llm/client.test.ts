import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { LlmClient, LlmError, parseRetryAfter } from '../../src/llm/client.ts';
import { parseJsonReply } from '../../src/llm/json.ts';
import { startFakeOpenAI, closedPortUrl } from '../support/fake-openai.ts';
import { withFakeOpenAI } from '../support/with.ts';

const Answer = z.object({ answer: z.number() });
const user = [{ role: 'user' as const, content: 'give me 42 as JSON' }];
const fast = { backoffBaseMs: 5, backoffMaxMs: 20, maxRetryAfterMs: 5000 };

test('fixed reply: request carries model, messages, sampling params, json mode and bearer key', async () => {
  await withFakeOpenAI(() => ({ kind: 'reply', content: '{"answer": 42}' }), async (fake) => {
    const c = new LlmClient({ baseUrl: fake.baseUrl, model: 'm1', apiKey: 'sk-test', temperature: 0.3, maxTokens: 77 });
    const v = await c.chatJson(user, Answer);
    assert.deepEqual(v, { answer: 42 });
    assert.equal(fake.requests.length, 1);
    const r = fake.requests[0];
    assert.equal(r.path, '/v1/chat/completions');
    assert.equal(r.headers.authorization, 'Bearer sk-test');
    assert.equal(r.body.model, 'm1');
    assert.equal(r.body.temperature, 0.3);
    assert.equal(r.body.max_tokens, 77);
    assert.deepEqual(r.body.response_format, { type: 'json_object' });
    assert.deepEqual(r.body.messages, user);
    const text = await c.chat(user);
    assert.equal(text, '{"answer": 42}');
    assert.equal(fake.requests[1].body.response_format, undefined);
  });
});

test('api key comes from AGRO_LLM_API_KEY when not given', async () => {
  const fake = await startFakeOpenAI(() => ({ kind: 'reply', content: 'hi' }));
  const old = process.env.AGRO_LLM_API_KEY;
  process.env.AGRO_LLM_API_KEY = 'env-key';
  try {
    const c = new LlmClient({ baseUrl: fake.baseUrl, model: 'm' });
    assert.equal(await c.chat(user), 'hi');
    assert.equal(fake.requests[0].headers.authorization, 'Bearer env-key');
  } finally {
    if (old === undefined) delete process.env.AGRO_LLM_API_KEY;
    else process.env.AGRO_LLM_API_KEY = old;
    await fake.close();
  }
});

test('fenced ```json reply is accepted', async () => {
  await withFakeOpenAI(() => ({ kind: 'reply', content: 'Sure!\n```json\n{"answer": 7}\n```\nDone.' }), async (fake) => {
    const c = new LlmClient({ baseUrl: fake.baseUrl, model: 'm' });
    assert.deepEqual(await c.chatJson(user, Answer), { answer: 7 });
    assert.equal(fake.requests.length, 1);
  });
});

test('garbage content: one repair turn carrying the validation error, then success', async () => {
  await withFakeOpenAI(undefined, async (fake) => {
    fake.enqueue({ kind: 'reply', content: '{"answer": "forty-two"}' }, { kind: 'reply', content: '{"answer": 42}' });
    const c = new LlmClient({ baseUrl: fake.baseUrl, model: 'm' });
    assert.deepEqual(await c.chatJson(user, Answer), { answer: 42 });
    assert.equal(fake.requests.length, 2);
    const msgs = fake.requests[1].body.messages!;
    assert.equal(msgs.length, 3);
    assert.equal(msgs[1].role, 'assistant');
    assert.equal(msgs[1].content, '{"answer": "forty-two"}');
    assert.match(msgs[2].content, /answer/);
    assert.equal(c.stats.repairs, 1);
  });
});

test('garbage twice: clear invalid_json error after exactly one repair', async () => {
  await withFakeOpenAI(() => ({ kind: 'reply', content: 'I cannot do that.' }), async (fake) => {
    const c = new LlmClient({ baseUrl: fake.baseUrl, model: 'm' });
    await assert.rejects(c.chatJson(user, Answer), (e: unknown) => {
      assert.ok(e instanceof LlmError);
      assert.equal(e.failure, 'invalid_json');
      assert.equal(e.kind, 'invalid_input');
      assert.match(e.message, /after one repair/);
      return true;
    });
    assert.equal(fake.requests.length, 2);
  });
});

test('garbage body (not a completion) is a bad_reply, not retried', async () => {
  await withFakeOpenAI(() => ({ kind: 'garbage' }), async (fake) => {
    const c = new LlmClient({ baseUrl: fake.baseUrl, model: 'm', ...fast });
    await assert.rejects(c.chat(user), (e: unknown) => e instanceof LlmError && e.failure === 'bad_reply');
    assert.equal(fake.requests.length, 1);
  });
});

test('500 then success: retried with backoff', async () => {
  await withFakeOpenAI(() => ({ kind: 'reply', content: 'ok' }), async (fake) => {
    fake.enqueue({ kind: 'status', status: 500 }, { kind: 'status', status: 503 });
    const c = new LlmClient({ baseUrl: fake.baseUrl, model: 'm', ...fast });
    assert.equal(await c.chat(user), 'ok');
    assert.equal(fake.requests.length, 3);
    assert.equal(c.stats.retries, 2);
  });
});

test('persistent 500: gives up after maxRetries with an http error', async () => {
  await withFakeOpenAI(() => ({ kind: 'status', status: 500 }), async (fake) => {
    const c = new LlmClient({ baseUrl: fake.baseUrl, model: 'm', maxRetries: 2, ...fast });
    await assert.rejects(c.chat(user), (e: unknown) => e instanceof LlmError && e.failure === 'http' && e.status === 500);
    assert.equal(fake.requests.length, 3);
  });
});

test('400 is not retried', async () => {
  await withFakeOpenAI(() => ({ kind: 'status', status: 400 }), async (fake) => {
    const c = new LlmClient({ baseUrl: fake.baseUrl, model: 'm', ...fast });
    await assert.rejects(c.chat(user), /HTTP 400/);
    assert.equal(fake.requests.length, 1);
  });
});

test('429 with Retry-After: waits at least that long before retrying', async () => {
  await withFakeOpenAI(() => ({ kind: 'reply', content: 'ok' }), async (fake) => {
    fake.enqueue({ kind: 'status', status: 429, retryAfter: '0.3' });
    // Backoff alone would wait at most 20 ms; the header asks for 300 ms.
    const c = new LlmClient({ baseUrl: fake.baseUrl, model: 'm', ...fast });
    assert.equal(await c.chat(user), 'ok');
    assert.equal(fake.requests.length, 2);
    const gap = fake.requests[1].at - fake.requests[0].at;
    assert.ok(gap >= 280, `gap ${gap} ms`);
  });
});

test('slow server: the per-request timeout fires and is reported as timeout', async () => {
  await withFakeOpenAI(() => ({ kind: 'slow', delayMs: 2000, content: 'late' }), async (fake) => {
    const c = new LlmClient({ baseUrl: fake.baseUrl, model: 'm', timeoutMs: 100, maxRetries: 1, ...fast });
    const t0 = Date.now();
    await assert.rejects(c.chat(user), (e: unknown) => e instanceof LlmError && e.failure === 'timeout' && e.kind === 'timeout');
    assert.ok(Date.now() - t0 < 1500);
    assert.equal(fake.requests.length, 2);
  });
});

test('slow then fast: timeout is retried and succeeds', async () => {
  await withFakeOpenAI(() => ({ kind: 'reply', content: 'fast' }), async (fake) => {
    fake.enqueue({ kind: 'slow', delayMs: 1500, content: 'late' });
    const c = new LlmClient({ baseUrl: fake.baseUrl, model: 'm', timeoutMs: 100, ...fast });
    assert.equal(await c.chat(user), 'fast');
  });
});

test('down endpoint (closed port): network error after retries', async () => {
  const url = await closedPortUrl();
  const c = new LlmClient({ baseUrl: url, model: 'm', maxRetries: 2, ...fast });
  await assert.rejects(c.chat(user), (e: unknown) => {
    assert.ok(e instanceof LlmError);
    assert.equal(e.failure, 'network');
    assert.match(e.message, /unreachable/);
    assert.doesNotMatch(e.message, /\n/);
    return true;
  });
  assert.equal(c.stats.requests, 3);
});

test('hang-up mid-request is retried as a network error', async () => {
  await withFakeOpenAI(() => ({ kind: 'reply', content: 'ok' }), async (fake) => {
    fake.enqueue({ kind: 'hangup' });
    const c = new LlmClient({ baseUrl: fake.baseUrl, model: 'm', ...fast });
    assert.equal(await c.chat(user), 'ok');
    assert.equal(fake.requests.length, 2);
  });
});

test('concurrency limit: never more than N requests in flight', async () => {
  await withFakeOpenAI(() => ({ kind: 'slow', delayMs: 60, content: 'x' }), async (fake) => {
    const c = new LlmClient({ baseUrl: fake.baseUrl, model: 'm', concurrency: 2 });
    const out = await Promise.all(Array.from({ length: 6 }, () => c.chat(user)));
    assert.deepEqual(out, ['x', 'x', 'x', 'x', 'x', 'x']);
    assert.equal(fake.maxInFlight, 2);
  });
});

test('bad config is a one-line invalid_input error', () => {
  assert.throws(() => new LlmClient({ baseUrl: 'not a url', model: 'm' }), (e: unknown) => {
    assert.ok(e instanceof Error && 'kind' in e && e.kind === 'invalid_input');
    assert.match(e.message, /baseUrl/);
    return true;
  });
});

test('backoff is full jitter capped at backoffMaxMs', () => {
  const c = new LlmClient({ baseUrl: 'http://127.0.0.1:1/v1', model: 'm', backoffBaseMs: 100, backoffMaxMs: 1000 }, { random: () => 0.5 });
  assert.equal(c.backoff(0), 50); // 0.5 * 100
  assert.equal(c.backoff(2), 200); // 0.5 * 400
  assert.equal(c.backoff(10), 500); // 0.5 * min(1000, 102400)
});

test('parseRetryAfter: seconds, HTTP date, clipped, junk', () => {
  assert.equal(parseRetryAfter('2', 60000), 2000);
  assert.equal(parseRetryAfter('120', 60000), 60000);
  const now = Date.parse('2025-01-01T00:00:00Z');
  assert.equal(parseRetryAfter('Wed, 01 Jan 2025 00:00:03 GMT', 60000, now), 3000);
  assert.equal(parseRetryAfter('soon', 60000), undefined);
  assert.equal(parseRetryAfter(null, 60000), undefined);
});

test('parseJsonReply: prose around an object, and no object at all', () => {
  assert.deepEqual(parseJsonReply('Here: {"answer": 3} thanks', Answer), { ok: true, value: { answer: 3 } });
  const r = parseJsonReply('nothing here', Answer);
  assert.equal(r.ok, false);
});
