// Follow-ups: the earlier turns (question and SQL) reach the agent's prompt, in one rendering, and a
// question with none reads exactly as every policy was trained on.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { MAX_PREVIOUS_TURNS, linkingText, renderUserMessage } from '../../src/prompt/conversation.ts';
import { SqlEnvironment } from '../../src/agent/sql-env.ts';
import { SqlPool } from '../../src/sql/pool.ts';

const pool = new SqlPool({ size: 1 });
after(() => pool.close());
const DB = resolve('data/databases/music_store/music_store.sqlite');

test('renderUserMessage: no earlier turns is the question (and evidence) alone', () => {
  assert.equal(renderUserMessage('  How many albums?  '), 'How many albums?');
  assert.equal(renderUserMessage('How many albums?', 'albums are records', []), 'How many albums?\nEvidence: albums are records');
});

test('renderUserMessage: the earlier questions and their SQL, oldest first, then the follow-up; only the last few', () => {
  const turns = Array.from({ length: MAX_PREVIOUS_TURNS + 2 }, (_, i) => ({ question: `question ${i}`, sql: `SELECT ${i}` }));
  const text = renderUserMessage('and only the top three?', undefined, turns);
  assert.match(text, /^Earlier in this conversation:\n/);
  assert.ok(text.endsWith('and only the top three?'));
  for (let i = 0; i < turns.length; i++) {
    const shown = i >= turns.length - MAX_PREVIOUS_TURNS;
    assert.equal(text.includes(`Q: question ${i}\nSQL: SELECT ${i}\n`), shown, `turn ${i} ${shown ? 'shown' : 'left out'}`);
  }
  assert.ok(text.indexOf('question 2') < text.indexOf('question 3'));
  assert.match(renderUserMessage('why?', undefined, [{ question: 'q', sql: '' }]), /SQL: \(no answer\)/);
});

test('linkingText carries the earlier questions (a follow-up names no table itself)', () => {
  assert.equal(linkingText('and in 2009?', [{ question: 'Invoices per country', sql: 'SELECT 1' }]), 'Invoices per country\nand in 2009?');
});

test("SqlEnvironment.openingFor: a follow-up's user message holds the previous question and its SQL", async () => {
  const env = new SqlEnvironment(pool, {});
  await env.prepare(DB);
  const previous = [{ question: 'How many tracks does each genre have?', sql: 'SELECT g.name, COUNT(*) FROM tracks t JOIN genres g USING (genre_id) GROUP BY g.name' }];
  const [sys, user] = env.openingFor({ id: 'f', dbId: 'music_store', dbPath: DB, question: 'only the top three', goldSql: '', previous });
  assert.match(sys.content, /genres/);
  assert.equal(user.content, renderUserMessage('only the top three', undefined, previous));
  assert.ok(user.content.includes(previous[0].sql));
  const [, alone] = env.openingFor({ id: 'q', dbId: 'music_store', dbPath: DB, question: 'only the top three', goldSql: '' });
  assert.equal(alone.content, 'only the top three');
});
