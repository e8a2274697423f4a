import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { SqlPool } from '../../../src/sql/pool.ts';
import { SqlEnvironment, type SqlTask } from '../../../src/agent/sql-env.ts';
import { synthesizeTrajectories } from '../../../src/agent/cold-start/trajectories.ts';
import { tablesRead } from '../../../src/sql/lexer.ts';
import { parseAction, SQL_AGENT_ACTIONS } from '../../../src/agent/protocol.ts';

const DB = fileURLToPath(new URL('../../../data/databases/music_store/music_store.sqlite', import.meta.url));
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

test('a value asked in other words than stored gets a lookup episode: LIKE on the shared words, the stored value read back, then the answer', async () => {
  const env = new SqlEnvironment(pool);
  const asked: SqlTask[] = [
    // Lower case in the question, capitalized in the table; the join's other table holds no such column.
    { id: 'l1', dbId: 'music_store', dbPath: DB, question: 'How many customers live in prague?', goldSql: "SELECT COUNT(*) FROM customers WHERE city = 'Prague'" },
    // Two words where the table stores one phrase with more.
    { id: 'l2', dbId: 'music_store', dbPath: DB, question: 'How many tracks are flac audio?', goldSql: "SELECT COUNT(*) FROM tracks AS T1 JOIN media_types AS T2 ON T1.media_type_id = T2.media_type_id WHERE T2.name = 'FLAC audio file'" },
    // Stored verbatim in the question: no lookup needed.
    { id: 'l3', dbId: 'music_store', dbPath: DB, question: "How many customers live in 'Prague'?", goldSql: "SELECT COUNT(*) FROM customers WHERE city = 'Prague'" },
  ];
  const trajs = await synthesizeTrajectories(asked, env, { verifyShare: 0, seed: 1 });
  assert.deepEqual(trajs.map((t) => t.kind), ['lookup', 'lookup', 'direct']);
  const [l1, l2] = trajs;
  const content = (text: string): string => {
    const a = parseAction(text, SQL_AGENT_ACTIONS);
    assert.notEqual(a.kind, 'invalid');
    return a.kind === 'invalid' ? '' : a.content;
  };
  assert.equal(parseAction(l1.messages[2].content, SQL_AGENT_ACTIONS).kind, 'sql');
  assert.match(content(l1.messages[2].content), /^SELECT DISTINCT city FROM customers WHERE city LIKE '%prague%'/);
  assert.match(l1.messages[3].content, /Prague/, 'the real observation shows the stored form');
  assert.match(l1.messages[4].content, /stores it as 'Prague'/);
  assert.equal(content(l1.messages[4].content), asked[0].goldSql);
  assert.match(content(l2.messages[2].content), /FROM media_types WHERE name LIKE '%flac audio%'/);
  assert.match(l2.messages[3].content, /FLAC audio file/);
});
