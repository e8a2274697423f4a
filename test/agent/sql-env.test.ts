import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqlPool } from '../../src/sql/pool.ts';
import { SqlEnvironment, type SqlTask } from '../../src/agent/sql-env.ts';
import { formatResultTable } from '../../src/prompt/observation.ts';
import type { Transcript } from '../../src/agent/types.ts';
import { prepareRewards, scoreEpisode } from '../../src/rl/rewards.ts';

const dir = mkdtempSync(join(tmpdir(), 'agro-env-'));
function makeDb(name: string, rows: Array<[number, string, number]>): string {
  const p = join(dir, `${name}.sqlite`);
  const db = new Database(p);
  db.exec('CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT NOT NULL, age INTEGER)');
  const ins = db.prepare('INSERT INTO singer VALUES (?, ?, ?)');
  for (const r of rows) ins.run(...r);
  db.close();
  return p;
}
const original = makeDb('orig', [
  [1, 'Ann', 30],
  [2, 'Bob', 41],
  [3, 'Cid', 52],
]);
// On the variant, "age > 40" and "singer_id > 1" no longer agree: the variant exposes the accidental match.
const variant = makeDb('var', [
  [1, 'Ann', 45],
  [2, 'Bob', 20],
  [3, 'Cid', 52],
]);

const pool = new SqlPool({ size: 1 });
after(() => pool.close());

const task: SqlTask = {
  id: 't1',
  dbId: 'orig',
  dbPath: original,
  question: 'Which singers are older than 40?',
  evidence: 'older than 40 refers to age > 40',
  goldSql: 'SELECT name FROM singer WHERE age > 40',
  variantPaths: [variant],
};

async function play(env: SqlEnvironment, t: SqlTask, turns: string[]): Promise<Transcript & { observations: string[] }> {
  const ep = await env.start(t);
  const messages = [...ep.opening];
  const observations: string[] = [];
  let toolCalls = 0;
  for (const text of turns) {
    messages.push({ role: 'assistant', content: text });
    const r = await ep.step(text);
    if (!r.done) {
      toolCalls++;
      observations.push(r.observation);
      messages.push({ role: 'tool', content: r.observation });
      continue;
    }
    return { messages, toolCalls, endReason: r.reason, answer: r.answer, policyTokens: 10, truncated: false, observations };
  }
  throw new Error('episode did not end');
}

test('the opening carries the schema, the question and the evidence', async () => {
  const env = new SqlEnvironment(pool);
  const ep = await env.start(task);
  assert.equal(ep.opening.length, 2);
  assert.match(ep.opening[0].content, /CREATE TABLE singer/);
  assert.match(ep.opening[0].content, /<sql>/);
  assert.equal(ep.opening[1].content, 'Which singers are older than 40?\nEvidence: older than 40 refers to age > 40');
});

test('a tool call returns the result table; an answer ends the episode and is scored on every database', async () => {
  const env = new SqlEnvironment(pool);
  const t = await play(env, task, [
    '<think>look at ages</think><sql>SELECT name, age FROM singer ORDER BY age</sql>',
    '<think>two are over 40</think><answer>SELECT name FROM singer WHERE age > 40</answer>',
  ]);
  assert.equal(t.observations.length, 1);
  assert.equal(t.observations[0], '<observation>name | age\nAnn | 30\nBob | 41\nCid | 52\n(3 rows)</observation>');
  assert.equal(t.endReason, 'answer');
  const ctx = await env.rewardContext(task, t);
  assert.equal(ctx.correct, true);
  assert.equal(ctx.exec?.pred.length, 2);
  const scored = scoreEpisode(ctx, prepareRewards([{ name: 'execution', weight: 1 }, { name: 'format', weight: 0.1 }]), env.rewardDeps(task));
  assert.equal(scored.parts.execution.value, 1);
  assert.equal(scored.parts.format.value, 1);
  assert.ok(Math.abs(scored.total - 1.1) < 1e-12);
});

test('an answer right only by accident on the original fails on the variant', async () => {
  const env = new SqlEnvironment(pool);
  const t = await play(env, task, ['<think>guess</think><answer>SELECT name FROM singer WHERE singer_id > 1</answer>']);
  const ctx = await env.rewardContext(task, t);
  assert.equal(ctx.correct, false);
  const scored = scoreEpisode(ctx, prepareRewards([{ name: 'execution', weight: 1 }]), env.rewardDeps(task));
  assert.equal(scored.parts.execution.value, 0);
  assert.match(scored.parts.execution.reason, /mismatch on db 1/);
  // Without the variant the same answer would have been rewarded.
  const single = { ...task, variantPaths: [] };
  const ctx1 = await env.rewardContext(single, t);
  assert.equal(ctx1.correct, true);
});

test('invalid actions, SQL errors and the turn limit end or inform the episode', async () => {
  const env = new SqlEnvironment(pool, { maxTurns: 2 });
  const bad = await play(env, task, ['SELECT name FROM singer']);
  assert.equal(bad.endReason, 'invalid_action');
  assert.equal((await env.rewardContext(task, bad)).correct, false);

  const err = await play(env, task, [
    '<think>try</think><sql>SELECT nope FROM singer</sql>',
    '<think>again</think><sql>SELECT 1</sql>',
  ]);
  assert.match(err.observations[0], /^<observation>error \(syntax\): .*no such column: nope/);
  assert.equal(err.endReason, 'turn_limit');

  const write = await play(env, task, ['<think>x</think><sql>DELETE FROM singer</sql>', '<think>y</think><answer>SELECT 1</answer>']);
  assert.match(write.observations[0], /error \(refused\)/);
});

test('formatResultTable stays within its budget and reports truncation', () => {
  const rows = Array.from({ length: 50 }, (_, i) => [i, 'x'.repeat(60)]);
  const text = formatResultTable({ ok: true, columns: ['id', 'text'], rows, truncated: true, elapsedMs: 1 }, 3, 200);
  assert.ok(text.length <= 200, `length ${text.length}`);
  assert.match(text, /\(over 50 rows, first 3 shown\)$/);
  assert.match(text, /xxx\.\.\./);
});

test('a broken gold query or a database that disappears mid-episode is reported, never thrown', async () => {
  const env = new SqlEnvironment(pool);
  const broken: SqlTask = { ...task, id: 'broken', goldSql: 'SELECT missing_column FROM singer', variantPaths: [] };
  const t = await play(env, broken, ['<think>x</think><answer>SELECT name FROM singer</answer>']);
  const ctx = await env.rewardContext(broken, t);
  assert.equal(ctx.correct, false);
  const scored = scoreEpisode(ctx, prepareRewards([{ name: 'execution', weight: 1 }]), env.rewardDeps(broken));
  assert.equal(scored.parts.execution.value, 0);
  assert.match(scored.parts.execution.reason, /gold query failed/);

  const doomed = join(dir, 'doomed.sqlite');
  copyFileSync(original, doomed);
  const vanishing: SqlTask = { ...task, id: 'gone', dbPath: doomed, variantPaths: [] };
  const ep = await env.start(vanishing);
  rmSync(doomed);
  const r = await ep.step('<think>look</think><sql>SELECT 1 FROM singer</sql>');
  assert.equal(r.done, false);
  assert.match(r.done ? '' : r.observation, /error \((no_database|bad_database)\)/);
  const gone = await env.rewardContext(vanishing, { messages: [], toolCalls: 1, endReason: 'answer', answer: 'SELECT 1', policyTokens: 3, truncated: false });
  assert.equal(gone.correct, false);
});

test('a turn the caller parsed already is not parsed again: step takes the parsed action', async () => {
  const env = new SqlEnvironment(pool);
  const ep = await env.start(task);
  // Text that parses as nothing, with the action the episode runner read from it: the action decides.
  const r = await ep.step('text the runner has read', { kind: 'answer', content: 'SELECT name FROM singer', think: '' });
  assert.deepEqual(r, { done: true, reason: 'answer', answer: 'SELECT name FROM singer' });
  const alone = await ep.step('text the runner has read');
  assert.equal(alone.done && alone.reason, 'invalid_action');
});

test('the grounded prompt shows the documentation found beside the database and the stored values the question names; ddl shows neither', () => {
  const home = mkdtempSync(join(tmpdir(), 'agro-env-docs-'));
  const p = join(home, 'plants.sqlite');
  const db = new Database(p);
  db.exec('CREATE TABLE plant (id INTEGER PRIMARY KEY, nm TEXT, rtype TEXT, st TEXT); CREATE TABLE owner (id INTEGER PRIMARY KEY, nm TEXT)');
  const ins = db.prepare('INSERT INTO plant VALUES (?, ?, ?, ?)');
  for (let i = 0; i < 40; i++) ins.run(i, `Plant ${i}`, i % 2 ? 'HWR' : 'LWR', i % 3 ? 'Running' : 'Shutdown');
  db.close();
  writeFileSync(join(home, 'plants.docs.json'), JSON.stringify({ overview: 'Power plants.', tables: [{ table: 'plant', columns: [{ column: 'rtype', name: 'reactor type', values: { HWR: 'heavy water reactor' } }, { column: 'st', name: 'status' }] }] }));
  const task: SqlTask = { id: 'd', dbId: 'plants', dbPath: p, question: 'How many heavy water reactors are shutdown?', goldSql: 'SELECT 1' };
  const grounded = new SqlEnvironment(pool).openingFor(task)[0].content;
  assert.match(grounded, /reactor type/);
  assert.match(grounded, /'HWR' \(heavy water reactor\)/);
  assert.match(grounded, /st = 'Shutdown'|'Shutdown'/);
  const noDocs = new SqlEnvironment(pool, { docs: false }).openingFor(task)[0].content;
  assert.doesNotMatch(noDocs, /reactor type|heavy water reactor/);
  const ddl = new SqlEnvironment(pool, { schemaFormat: 'ddl' }).openingFor(task)[0].content;
  assert.match(ddl, /CREATE TABLE/);
  assert.doesNotMatch(ddl, /reactor type|-- Values/);
  // Given documentation wins over the file beside the database.
  const given = new SqlEnvironment(pool, {}, { docsFor: () => ({ tables: [{ table: 'plant', columns: [{ column: 'rtype', name: 'kind of reactor' }] }] }) }).openingFor(task)[0].content;
  assert.match(given, /kind of reactor/);
  // The smallest budget still names every table.
  const tiny = new SqlEnvironment(pool, { schemaChars: 200 }).openingFor(task)[0].content;
  assert.match(tiny, /plant/);
  assert.match(tiny, /owner/);
  rmSync(home, { recursive: true, force: true });
});
