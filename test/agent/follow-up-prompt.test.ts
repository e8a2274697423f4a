// A follow-up row of the factory reaches the agent in the words a follow-up gets at answer time: SFT's
// conversations (`agro sft`), the cold-start trajectories and RL's tasks (dataset rows read as tasks) and `agro ask
// --session` all write the same user message, the one conversation.ts renders.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { SqlEnvironment, type SqlTask } from '../../src/agent/sql-env.ts';
import { rowsToConversations } from '../../src/agent/cold-start/row-conversations.ts';
import { synthesizeTrajectories } from '../../src/agent/cold-start/trajectories.ts';
import { sqlTaskOf, tasksFromCatalog } from '../../src/agent/tasks.ts';
import { renderUserMessage } from '../../src/prompt/conversation.ts';
import { readDataset } from '../../src/data/read-dataset.ts';
import { catalogFromDbRoot } from '../../src/data/catalog.ts';
import { askWithAnswerPath } from '../../src/answer/ask.ts';
import { openSession } from '../../src/cli/session-option.ts';
import type { Policy } from '../../src/agent/policies/types.ts';
import type { ChatMessage } from '../../src/model/chat.ts';
import { SqlPool } from '../../src/sql/pool.ts';

const pool = new SqlPool({ size: 1 });
after(() => pool.close());
const ROOT = resolve('data/databases');
const DB = join(ROOT, 'music_store', 'music_store.sqlite');

const previous = [{ question: 'List the names of tracks with unit price above 1.', sql: 'SELECT name FROM tracks WHERE unit_price > 1' }];
const row = { question_id: 0, db_id: 'music_store', question: 'Now sort them by the name, in alphabetical order.', evidence: '', SQL: 'SELECT name FROM tracks WHERE unit_price > 1 ORDER BY name ASC', difficulty: 'simple', previous };

/** A policy that records what it is asked and answers at once. */
function recorder(seen: ChatMessage[][]): Policy {
  return {
    kind: 'endpoint',
    name: 'recorder',
    description: 'records its prompts',
    promptContract: null,
    complete: async (req) => {
      seen.push(req.messages);
      return { text: '<think>ok</think><answer>SELECT 1</answer>', finish: 'stop' };
    },
    close: async () => {},
  };
}

test('the prompt renderer gives a follow-up the same text at training (SFT rows, cold start, RL tasks) and at answer time (ask --session)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agro-followup-'));
  const data = join(dir, 'dataset.jsonl');
  writeFileSync(data, JSON.stringify(row) + '\n');
  const env = new SqlEnvironment(pool, {});
  await env.prepare(DB);
  const expected = renderUserMessage(row.question, undefined, previous);
  assert.ok(expected.includes(previous[0].sql) && expected.includes(previous[0].question), 'the previous turn is not in the prompt');

  // SFT on dataset rows (agro sft --data).
  const [sft] = rowsToConversations([{ line: 1, value: row }], ROOT, data, env);
  // The cold start and RL: the rows read as tasks (the quickstart's sqlTaskOf, agro train's tasksFromCatalog).
  const [task] = readDataset(data).items.map((it) => sqlTaskOf(it, DB, []));
  const [traj] = await synthesizeTrajectories([task], env, { verifyShare: 0, seed: 0 });
  const [rlTask] = tasksFromCatalog(data, catalogFromDbRoot(ROOT));
  const rlEpisode = await env.start(rlTask);
  // Answer time: agro ask --session, its file holding the previous turn.
  const session = join(dir, 'session.json');
  writeFileSync(session, JSON.stringify({ turns: previous }));
  const asked: SqlTask = { id: 'ask', dbId: 'music_store', dbPath: DB, question: row.question, goldSql: '', previous: openSession({ session }).previous };
  const seen: ChatMessage[][] = [];
  await askWithAnswerPath(env, asked, recorder(seen), undefined, { mode: 'agent', maxTurnTokens: 16, temperature: 0, samples: 0 });

  const user = (ms: ChatMessage[]) => ms.find((m) => m.role === 'user')!.content;
  const system = (ms: ChatMessage[]) => ms.find((m) => m.role === 'system')!.content;
  assert.equal(user(sft), expected, 'SFT row');
  assert.equal(user(traj.messages), expected, 'cold-start trajectory');
  assert.equal(user(rlEpisode.opening), expected, 'RL task');
  assert.equal(user(seen[0]), expected, 'ask --session');
  // The schema the prompt shows is linked against the same text too.
  assert.equal(system(sft), system(seen[0]));
  assert.equal(system(traj.messages), system(seen[0]));
});
