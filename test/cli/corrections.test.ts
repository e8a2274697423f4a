// A person's correction, from the command line: stored in the database's memory only when its SQL runs in the
// sandbox, and found by the next question asked in other words; a memory of another database is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agroBatchAsync } from '../support/cli-batch.ts';
import { startFakeOpenAI } from '../support/fake-openai.ts';
import { LOW_CONFIDENCE } from '../../src/answer/rank.ts';

const DB = 'data/databases/music_store/music_store.sqlite';
const OTHER = 'data/databases/retail/retail.sqlite';

test('agro ask --correct stores a pair that runs (and nothing that does not); the next question in other words gets it; agro memory build/show', { timeout: 180_000 }, async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'agro-corrections-'));
  const data = join(tmp, 'pairs.json');
  writeFileSync(data, JSON.stringify([
    { db_id: 'music_store', question: 'How many customers are there?', SQL: 'SELECT COUNT(*) FROM customers' },
    { db_id: 'music_store', question: 'List the titles of all albums.', SQL: 'SELECT title FROM albums' },
    { db_id: 'music_store', question: 'How many genres are there?', SQL: 'SELECT COUNT(*) FROM genres' },
  ]));
  const memory = join(tmp, 'memory.db');
  const right = 'SELECT name FROM genres ORDER BY name';
  // Three processes, the runs of each in order through main() (test/support/cli-batch.ts): the store's bytes are read
  // between the first and the second, the fake policy serves the third.
  const [built, ok] = await agroBatchAsync([
    ['memory', 'build', '--data', data, '--db', DB, '--out', memory],
    ['ask', '--db', DB, '--memory', memory, '--correct', right, 'Which music styles does the store sell?'],
  ]);
  assert.equal(built.status, 0, built.stderr);
  assert.match(built.stdout, /3 queries asked 3 ways/);
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, /stored your answer/);
  const before = readFileSync(memory, 'utf8');
  const [refused, broken, shown] = await agroBatchAsync([
    ['ask', '--db', DB, '--memory', memory, '--correct', 'DELETE FROM genres', 'Remove the genres'],
    ['ask', '--db', DB, '--memory', memory, '--correct', 'SELECT no_such FROM genres', 'Something'],
    ['memory', 'show', '--memory', memory, '--question', 'what styles of music are sold'],
  ]);
  assert.equal(refused.status, 5, refused.stdout + refused.stderr);
  assert.equal(broken.status, 6, broken.stdout + broken.stderr);
  assert.equal(broken.stderr.trim().split('\n').length, 1, 'one line');
  assert.equal(readFileSync(memory, 'utf8'), before, 'nothing written by a correction that does not run');
  assert.match(shown.stdout, /4 queries \(1 from people\)/);
  assert.match(shown.stdout.split('\n')[1], /Which music styles/);

  // A policy that answers wrong: the stored correction answers the same question asked in other words.
  const fake = await startFakeOpenAI(() => ({ kind: 'reply', content: '<think>x</think><answer>SELECT COUNT(*) FROM artists</answer>' }));
  try {
    const policy = ['--llm-url', fake.baseUrl, '--llm-model', 'fake'];
    const [asked, text, other] = await agroBatchAsync([
      ['ask', ...policy, '--db', DB, '--mode', 'direct', '--memory', memory, '--search-samples', '0', '--json', 'what styles of music does the store sell'],
      ['ask', ...policy, '--db', DB, '--mode', 'direct', '--memory', memory, '--search-samples', '0', 'what styles of music does the store sell'],
      ['ask', ...policy, '--db', OTHER, '--memory', memory, 'How many orders?'],
    ]);
    assert.equal(asked.status, 0, asked.stderr);
    const out = JSON.parse(asked.stdout) as { answer: { sql: string; reading: string; confidence: number; lowConfidence: boolean; suggestions: string[]; candidates: { sources: string[] }[] } };
    assert.equal(out.answer.sql, right);
    // Suggested next: the memory's other question about genres (not the albums' or the customers').
    assert.deepEqual(out.answer.suggestions, ['How many genres are there?']);
    assert.equal(out.answer.lowConfidence, out.answer.confidence < LOW_CONFIDENCE);
    assert.match(text.stdout, /I read this as: .*music styles/);
    assert.match(text.stdout, /you might also ask:\n {2}How many genres are there\?\n/);
    assert.deepEqual(out.answer.candidates[0].sources, ['memory', 'person']);
    assert.match(out.answer.reading, /music styles/);
    // Another database's memory is refused with one line and exit 4.
    assert.equal(other.status, 4, other.stdout + other.stderr);
    assert.match(other.stderr, /another schema/);
  } finally {
    await fake.close();
  }
});
