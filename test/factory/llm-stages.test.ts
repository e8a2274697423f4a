import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emptySelect } from '../../src/factory/ast.ts';
import type { StageContext, SynthPair } from '../../src/factory/types.ts';
import type { SqlExecutor } from '../../src/sql/types.ts';
import { LlmClient } from '../../src/llm/client.ts';
import { llmQuestionsStage, questionPrompt } from '../../src/factory/llm-questions.ts';
import { llmAuditStage, llmAudit, AUDIT_DIMENSIONS } from '../../src/factory/llm-audit.ts';
import { stageContext } from './fixtures.ts';
import { startFakeOpenAI, closedPortUrl, lastUser } from '../support/fake-openai.ts';

let dir = '';
let ctx: StageContext;
const rejected: Record<string, number> = {};
const noExec: SqlExecutor = {
  execute: () => Promise.reject(new Error('not used')),
  close: () => Promise.resolve(),
};

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'agro-llm-'));
  const dbPath = join(dir, 'music.sqlite');
  const db = new Database(dbPath);
  db.exec("CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT, age INTEGER); INSERT INTO singer VALUES (1,'Ann',30),(2,'Bo',41);");
  db.close();
  ctx = stageContext('music', dbPath, noExec, { timeoutMs: 2000, rejected });
});
after(() => rmSync(dir, { recursive: true, force: true }));

function pair(id: string, sql: string, question: string, style: SynthPair['style'] = 'formal'): SynthPair {
  return { id, dbId: 'music', sql, ast: emptySelect('singer'), question, evidence: '', style, difficulty: 'simple', provenance: { stages: ['realize'], checks: ['exec'] } };
}

const fast = { backoffBaseMs: 1, backoffMaxMs: 5, maxRetries: 1 };
const dims = (ok: boolean, bad?: string) => Object.fromEntries(AUDIT_DIMENSIONS.map((d) => [d, { ok: bad === d ? false : ok, note: '' }]));

test('llm questions: per-style prompt, reply replaces question and evidence', async () => {
  const fake = await startFakeOpenAI((req) => {
    const u = lastUser(req);
    const style = /Style: (\w+)/.exec(u)?.[1];
    return { kind: 'reply', content: JSON.stringify({ question: `(${style}) Which singers are older than 35?`, evidence: 'older refers to age > 35', reasoning: 'filter by age' }) };
  });
  try {
    const stage = llmQuestionsStage({ client: new LlmClient({ baseUrl: fake.baseUrl, model: 'm', ...fast }) });
    const out = await stage.run([pair('a', 'SELECT name FROM singer WHERE age > 35', 'draft', 'terse'), pair('b', 'SELECT count(*) FROM singer', 'draft2', 'colloquial')], ctx);
    assert.equal(out[0].question, '(terse) Which singers are older than 35?');
    assert.equal(out[0].evidence, 'older refers to age > 35');
    assert.equal(out[1].question, '(colloquial) Which singers are older than 35?');
    assert.ok(out[0].provenance.checks.includes('llm-question'));
    assert.deepEqual(stage.stats, { called: 2, ok: 2, fallback: {} });
    // The prompt carries the schema, the SQL and the style guide.
    const u = lastUser(fake.requests[0]);
    assert.match(u, /singer/);
    assert.match(u, /SELECT/);
    assert.equal(fake.requests[0].body.response_format?.type, 'json_object');
  } finally {
    await fake.close();
  }
});

test('llm questions: garbage keeps the built-in question and counts invalid_json', async () => {
  const fake = await startFakeOpenAI(() => ({ kind: 'reply', content: 'Sure! Here is a nice question for you.' }));
  try {
    const stage = llmQuestionsStage({ client: new LlmClient({ baseUrl: fake.baseUrl, model: 'm', ...fast }) });
    const out = await stage.run([pair('a', 'SELECT name FROM singer', 'What are the names of all singers?')], ctx);
    assert.equal(out.length, 1);
    assert.equal(out[0].question, 'What are the names of all singers?');
    assert.ok(out[0].provenance.checks.includes('llm_question_unavailable'));
    assert.deepEqual(stage.stats.fallback, { invalid_json: 1 });
  } finally {
    await fake.close();
  }
});

test('llm questions: endpoint down → built-in questions kept, breaker stops calling after 3 failures', async () => {
  const url = await closedPortUrl();
  const client = new LlmClient({ baseUrl: url, model: 'm', ...fast, concurrency: 1 });
  const stage = llmQuestionsStage({ client, breakerThreshold: 3 });
  const items = Array.from({ length: 6 }, (_, i) => pair(`p${i}`, 'SELECT name FROM singer', `built-in ${i}`));
  const out = await stage.run(items, ctx);
  assert.deepEqual(out.map((p) => p.question), items.map((p) => p.question));
  assert.deepEqual(stage.stats.fallback, { network: 3, endpoint_down: 3 });
  assert.equal(client.stats.requests, 6); // 3 calls × (1 try + 1 retry), then no more
});

test('llm questions: slow endpoint hits the timeout and falls back', async () => {
  const fake = await startFakeOpenAI(() => ({ kind: 'slow', delayMs: 1500, content: '{}' }));
  try {
    const stage = llmQuestionsStage({ client: new LlmClient({ baseUrl: fake.baseUrl, model: 'm', timeoutMs: 80, ...fast, maxRetries: 0 }) });
    const out = await stage.run([pair('a', 'SELECT name FROM singer', 'kept')], ctx);
    assert.equal(out[0].question, 'kept');
    assert.deepEqual(stage.stats.fallback, { timeout: 1 });
  } finally {
    await fake.close();
  }
});

test('questionPrompt differs by style', () => {
  const p = pair('a', 'SELECT name FROM singer', 'q');
  const a = questionPrompt({ ...p, style: 'formal' }, 'S')[1].content;
  const b = questionPrompt({ ...p, style: 'imperative' }, 'S')[1].content;
  assert.notEqual(a, b);
  assert.match(b, /instruction/);
});

test('llm audit: aligned kept, misaligned with fix repaired after re-audit, misaligned without fix rejected', async () => {
  const fake = await startFakeOpenAI((req) => {
    const u = lastUser(req);
    if (/Question: Which singers are older than 35\?/.test(u)) return { kind: 'reply', content: JSON.stringify({ aligned: true, dimensions: dims(true) }) };
    if (/Question: How many singers\?/.test(u)) return { kind: 'reply', content: JSON.stringify({ aligned: false, dimensions: dims(true, 'aggregation'), fix: 'List the names of all singers.' }) };
    if (/Question: List the names of all singers\./.test(u)) return { kind: 'reply', content: '```json\n' + JSON.stringify({ aligned: true, dimensions: dims(true) }) + '\n```' };
    return { kind: 'reply', content: JSON.stringify({ aligned: false, dimensions: dims(true, 'conditions'), fix: null }) };
  });
  for (const k of Object.keys(rejected)) delete rejected[k];
  try {
    const stage = llmAuditStage({ client: new LlmClient({ baseUrl: fake.baseUrl, model: 'm', ...fast }) });
    const out = await stage.run(
      [
        pair('ok', 'SELECT name FROM singer WHERE age > 35', 'Which singers are older than 35?'),
        pair('fix', 'SELECT name FROM singer', 'How many singers?'),
        pair('bad', 'SELECT name FROM singer WHERE age > 35', 'Name every singer.'),
      ],
      ctx,
    );
    assert.deepEqual(out.map((p) => p.id), ['ok', 'fix']);
    assert.ok(out[0].provenance.checks.includes('llm-audit'));
    assert.equal(out[1].question, 'List the names of all singers.');
    assert.ok(out[1].provenance.checks.includes('llm-audit-fixed'));
    assert.equal(out[1].provenance.repairedFrom, 'fix');
    assert.deepEqual(rejected, { audit_conditions: 1 });
  } finally {
    await fake.close();
  }
});

test('llm audit: a verdict claiming aligned with a failed dimension is not aligned', async () => {
  const fake = await startFakeOpenAI(() => ({ kind: 'reply', content: JSON.stringify({ aligned: true, dimensions: dims(true, 'ordering') }) }));
  try {
    const v = await llmAudit(new LlmClient({ baseUrl: fake.baseUrl, model: 'm' }), { question: 'q', evidence: '', sql: 'SELECT 1' }, 'S');
    assert.equal(v.aligned, false);
    assert.equal(v.dimensions.ordering.ok, false);
  } finally {
    await fake.close();
  }
});

test('llm audit: 500s, garbage and a down endpoint mark pairs audit_unavailable and never throw', async () => {
  const fake = await startFakeOpenAI(() => ({ kind: 'status', status: 500 }));
  fake.enqueue({ kind: 'garbage' });
  try {
    const stage = llmAuditStage({ client: new LlmClient({ baseUrl: fake.baseUrl, model: 'm', ...fast, concurrency: 1 }), breakerThreshold: 10 });
    const out = await stage.run([pair('g', 'SELECT 1', 'q1'), pair('h', 'SELECT 1', 'q2')], ctx);
    assert.equal(out.length, 2);
    assert.ok(out.every((p) => p.provenance.checks.includes('audit_unavailable')));
    assert.deepEqual(stage.stats.fallback, { bad_reply: 1, http: 1 });
  } finally {
    await fake.close();
  }
  const down = llmAuditStage({ url: await closedPortUrl(), model: 'm' });
  const out = await down.run([pair('x', 'SELECT 1', 'q')], { ...ctx });
  assert.equal(out.length, 1);
  assert.ok(out[0].provenance.checks.includes('audit_unavailable'));
});
