// The episode runner with a scripted policy on a real SQLite database: execution-guided decoding resamples an
// answer whose SQL does not run (or a turn with no action), keeps the first that runs, and never shows the policy
// the failed drafts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { makeDb } from '../sql/helpers.ts';
import { SqlEnvironment, type SqlTask } from '../../src/agent/sql-env.ts';
import { runEpisode } from '../../src/agent/episode.ts';
import type { Policy, TurnRequest, TurnReply } from '../../src/agent/policies/types.ts';
import { scratchAndPool } from '../support/with.ts';

const { dir, pool } = scratchAndPool('agro-episode-');
const dbPath = makeDb(join(dir, 'shop.sqlite'), "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO items VALUES (1, 'pen'), (2, 'ink')");
const task: SqlTask = { id: 'q', dbId: 'shop', dbPath, question: 'How many items are there?', goldSql: 'SELECT COUNT(*) FROM items' };

/** Answers each call with the next scripted turn, and remembers what it was asked. */
class Scripted implements Policy {
  readonly kind = 'endpoint' as const;
  readonly name = 'scripted';
  readonly description = 'scripted';
  readonly promptContract = null;
  readonly asked: TurnRequest[] = [];
  constructor(private readonly turns: string[]) {}
  async complete(req: TurnRequest): Promise<TurnReply> {
    this.asked.push({ ...req, messages: [...req.messages] });
    const text = this.turns.shift();
    if (text === undefined) throw new Error('script ran out');
    // A scripted turn without a closing tag stands for a draft cut at the token budget.
    return { text, finish: /<\/(answer|sql)>/.test(text) ? 'stop' : 'length' };
  }
  async close(): Promise<void> {}
}

const answer = (sql: string): string => `<think>count</think><answer>${sql}</answer>`;

test('execution-guided decoding: an answer that does not run is sampled again and the first that runs is kept', async () => {
  const env = new SqlEnvironment(pool);
  const policy = new Scripted([answer('SELECT COUNT(*) FROM item'), answer('SELECT COUNT(*) FROM itemz'), answer('SELECT COUNT(*) FROM items'), answer('never asked')]);
  const r = await runEpisode(env, task, policy, { mode: 'agent', maxTurnTokens: 64, temperature: 0, retries: 4, seed: 3 });
  assert.equal(r.endReason, 'answer');
  assert.equal(r.answer, 'SELECT COUNT(*) FROM items');
  assert.equal(r.turns.length, 1);
  assert.equal(r.turns[0].retried, 2);
  assert.equal(policy.asked.length, 3, 'stops at the first answer that runs');
  // The first draw is the episode's own (greedy); the retries sample, each with its own seed, from the same conversation.
  assert.deepEqual(policy.asked.map((a) => a.temperature), [0, 0.7, 0.7]);
  assert.equal(new Set(policy.asked.map((a) => a.seed)).size, 3);
  for (const a of policy.asked) assert.equal(a.messages.length, policy.asked[0].messages.length, 'no failed draft enters the conversation');
  assert.equal(r.messages.filter((m) => m.role === 'assistant').length, 1);
});

test('execution-guided decoding: off by default; when no retry runs, the first answer stays; a runnable answer is never resampled', async () => {
  const env = new SqlEnvironment(pool);
  const off = new Scripted([answer('SELECT COUNT(*) FROM item'), answer('SELECT COUNT(*) FROM items')]);
  const r0 = await runEpisode(env, task, off, { mode: 'agent', maxTurnTokens: 64, temperature: 0 });
  assert.equal(r0.answer, 'SELECT COUNT(*) FROM item');
  assert.equal(off.asked.length, 1);

  const none = new Scripted([answer('SELECT nope FROM items'), answer('SELECT x FROM items'), '<sql>SELECT COUNT(*) FROM items</sql>']);
  const r1 = await runEpisode(env, task, none, { mode: 'agent', maxTurnTokens: 64, temperature: 0, retries: 2, retryTemperature: 1 });
  assert.equal(r1.answer, 'SELECT nope FROM items', 'the greedy answer stays when no retry runs (a tool call does not replace an answer)');
  assert.equal(r1.turns[0].retried, 2);
  assert.deepEqual(none.asked.map((a) => a.temperature), [0, 1, 1]);

  const fine = new Scripted([answer('SELECT COUNT(*) FROM items')]);
  const r2 = await runEpisode(env, task, fine, { mode: 'agent', maxTurnTokens: 64, temperature: 0, retries: 4 });
  assert.equal(r2.answer, 'SELECT COUNT(*) FROM items');
  assert.equal(r2.turns[0].retried, undefined);
  assert.equal(fine.asked.length, 1);
});

test('execution-guided decoding: a turn with no action (a loop cut at the token budget) is drawn again; a tool call or a runnable answer is kept', async () => {
  const env = new SqlEnvironment(pool);
  const loop = '<think>the the the the the the';
  // Without retries the loop ends the episode unanswered.
  const r0 = await runEpisode(env, task, new Scripted([loop]), { mode: 'agent', maxTurnTokens: 64, temperature: 0 });
  assert.equal(r0.endReason, 'token_budget');
  assert.equal(r0.answer, undefined);

  // A retry that calls the tool is kept, and the episode goes on from its observation.
  const p1 = new Scripted([loop, loop, '<think>look</think><sql>SELECT name FROM items</sql>', answer('SELECT COUNT(*) FROM items')]);
  const r1 = await runEpisode(env, task, p1, { mode: 'agent', maxTurnTokens: 64, temperature: 0, retries: 3, seed: 1 });
  assert.equal(r1.endReason, 'answer');
  assert.equal(r1.answer, 'SELECT COUNT(*) FROM items');
  assert.equal(r1.turns[0].retried, 2);
  assert.equal(r1.turns[0].action, 'sql');
  assert.equal(r1.toolCalls, 1);
  assert.deepEqual(p1.asked.map((a) => a.temperature), [0, 0.7, 0.7, 0]);
  assert.ok(!r1.messages.some((m) => m.content.includes('the the')), 'no failed draft enters the conversation');

  // A retry whose answer does not run is not good enough either; none usable: the first draft stays.
  const p2 = new Scripted([loop, answer('SELECT nope FROM items'), 'still no action']);
  const r2 = await runEpisode(env, task, p2, { mode: 'agent', maxTurnTokens: 64, temperature: 0, retries: 2 });
  assert.equal(r2.endReason, 'token_budget');
  assert.equal(r2.turns[0].retried, 2);
  assert.equal(r2.turns[0].text, loop);
});
