import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { SqlPool } from '../../src/sql/pool.ts';
import { SqlEnvironment, type SqlTask } from '../../src/agent/sql-env.ts';
import { synthesizeTrajectories } from '../../src/agent/trajectories.ts';
import { tablesRead } from '../../src/sql/lexer.ts';
import { parseAction, SQL_AGENT_ACTIONS } from '../../src/agent/protocol.ts';

const DB = fileURLToPath(new URL('../../data/databases/music_store/music_store.sqlite', import.meta.url));
const pool = new SqlPool({ size: 1 });
after(() => pool.close());

const tasks: SqlTask[] = [
  { id: 'a', dbId: 'music_store', dbPath: DB, question: 'How many genres are there?', goldSql: 'SELECT COUNT(*) FROM genres', difficulty: 'simple' },
  { id: 'b', dbId: 'music_store', dbPath: DB, question: 'Name three genres.', goldSql: 'SELECT name FROM genres ORDER BY genre_id LIMIT 3', difficulty: 'simple' },
  { id: 'c', dbId: 'music_store', dbPath: DB, question: 'Broken.', goldSql: 'SELECT nope FROM genres', difficulty: 'simple' },
];

test('tablesRead finds FROM and JOIN targets, quoted or not', () => {
  assert.deepEqual(tablesRead('SELECT * FROM a JOIN "b c" ON 1 LEFT JOIN [d] ON 1 WHERE x IN (SELECT y FROM a)'), ['a', 'b c', 'd']);
});

test('verify trajectories carry the real observation and every agent turn follows the protocol', async () => {
  const env = new SqlEnvironment(pool);
  const trajs = await synthesizeTrajectories(tasks, env, { verifyShare: 1, seed: 1 });
  assert.deepEqual(trajs.map((t) => t.kind), ['verify', 'verify', 'direct'], 'a failing query cannot be verified');
  const b = trajs[1];
  assert.deepEqual(b.messages.map((m) => m.role), ['system', 'user', 'assistant', 'tool', 'assistant']);
  const firstRows = (await pool.execute(DB, tasks[1].goldSql)).ok;
  assert.ok(firstRows);
  assert.match(b.messages[3].content, /^<observation>name\n.*\n.*\n.*\n\(3 rows\)<\/observation>$/);
  assert.match(b.messages[4].content, /The query returned 3 rows/);
  for (const t of trajs) {
    for (const m of t.messages.filter((x) => x.role === 'assistant')) assert.notEqual(parseAction(m.content, SQL_AGENT_ACTIONS).kind, 'invalid');
  }
  const none = await synthesizeTrajectories(tasks, env, { verifyShare: 0, seed: 1 });
  assert.ok(none.every((t) => t.kind === 'direct' && t.messages.length === 3));
});
