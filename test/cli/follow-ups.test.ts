// Follow-ups in the terminal: `agro chat` reads questions line by line and `agro ask --session FILE` keeps a
// conversation in a file; either way the next question's prompt carries the previous question and its SQL.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatAction } from '../../src/agent/protocol.ts';
import { agroChild } from '../support/agro-child.ts';
import { startFakeOpenAI, type RecordedRequest } from '../support/fake-openai.ts';

const DB = 'data/databases/music_store/music_store.sqlite';
const GENRE_SQL = 'SELECT g.name, COUNT(*) FROM tracks t JOIN genres g ON g.genre_id = t.genre_id GROUP BY g.name';
const tmp = mkdtempSync(join(tmpdir(), 'agro-follow-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const agro = agroChild;

/** Answers the genre question, and a follow-up by editing the SQL its prompt shows. */
const responder = (req: RecordedRequest) => {
  const user = req.body.messages?.find((m) => m.role === 'user')?.content ?? '';
  const earlier = /^Earlier in this conversation:\n(?:Q: .*\nSQL: .*\n)*Q: .*\nSQL: (.*)\n/.exec(user);
  return { kind: 'reply' as const, content: formatAction({ kind: 'answer', think: 'ok', content: earlier ? `${earlier[1]} ORDER BY 2 DESC LIMIT 3` : GENRE_SQL }) };
};
const userMessages = (reqs: RecordedRequest[]) => reqs.filter((r) => r.path.endsWith('/chat/completions')).map((r) => r.body.messages!.find((m) => m.role === 'user')!.content);

test('agro chat: the second line is answered with the first question and its SQL in the prompt; :new forgets them', { timeout: 120_000 }, async () => {
  const fake = await startFakeOpenAI(responder);
  try {
    const r = await agro(['chat', '--llm-url', fake.baseUrl, '--llm-model', 'fake', '--db', DB], 'How many tracks does each genre have?\nonly the top three\n:new\nHow many tracks does each genre have?\n');
    assert.equal(r.status, 0, r.stderr);
    // Each question's episodes (greedy and the answer path's samples) read the same prompt: the follow-up's carries
    // the first question and its SQL; after :new the question stands alone again.
    const users = userMessages(fake.requests);
    const perQuestion = users.length / 3;
    assert.ok(Number.isInteger(perQuestion) && perQuestion >= 1, String(users.length));
    assert.ok(users.slice(0, perQuestion).every((u) => u === 'How many tracks does each genre have?'));
    assert.ok(users.slice(perQuestion, 2 * perQuestion).every((u) => u.includes(`Q: How many tracks does each genre have?\nSQL: ${GENRE_SQL}`)), users[perQuestion]);
    assert.ok(users.slice(2 * perQuestion).every((u) => u === 'How many tracks does each genre have?'));
    assert.ok(r.stdout.includes(`sql: ${GENRE_SQL} ORDER BY 2 DESC LIMIT 3`), r.stdout);
    assert.match(r.stdout, /\(new conversation\)/);
  } finally {
    await fake.close();
  }
});

test('agro ask --session FILE: each ask appends its turn and the next one follows it up; a bad file is exit 4', { timeout: 120_000 }, async () => {
  const fake = await startFakeOpenAI(responder);
  try {
    const file = join(tmp, 'conv.json');
    const ask = (q: string) => agro(['ask', '--llm-url', fake.baseUrl, '--llm-model', 'fake', '--mode', 'direct', '--db', DB, '--session', file, q]);
    assert.equal((await ask('How many tracks does each genre have?')).status, 0);
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), { turns: [{ question: 'How many tracks does each genre have?', sql: GENRE_SQL }] });
    const second = await ask('only the top three');
    assert.equal(second.status, 0, second.stderr);
    assert.match(second.stdout, /answer: .*ORDER BY 2 DESC LIMIT 3/);
    // The follow-up's prompt (each of its episodes: greedy and the answer path's samples) carries the first turn.
    const followUps = userMessages(fake.requests).filter((u) => u.includes('only the top three'));
    assert.ok(followUps.length >= 1 && followUps.every((u) => u.includes(`SQL: ${GENRE_SQL}`)), followUps.join('\n'));
    assert.equal((JSON.parse(readFileSync(file, 'utf8')) as { turns: unknown[] }).turns.length, 2);
    writeFileSync(join(tmp, 'bad.json'), '{"turns": [{"q": 1}]}');
    const bad = await agro(['ask', '--llm-url', fake.baseUrl, '--llm-model', 'fake', '--db', DB, '--session', join(tmp, 'bad.json'), 'x']);
    assert.equal(bad.status, 4, bad.stderr);
    assert.match(bad.stderr, /^agro: --session .*bad\.json: expected \{"turns"/);
    assert.equal(bad.stderr.trim().split('\n').length, 1);
  } finally {
    await fake.close();
  }
});
