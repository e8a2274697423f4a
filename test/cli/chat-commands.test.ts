// `agro chat` does what the Playground does, on a terminal: an answer is drawn as a chart (:chart), corrected
// (:correct SQL, stored in the database's memory after it runs in the sandbox) and the correction is what the
// next asking of the question gets; a bad command is one line and the conversation goes on.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatAction } from '../../src/agent/protocol.ts';
import { buildMemory } from '../../src/memory/build.ts';
import { readMemory } from '../../src/memory/legacy.ts';
import { writeMemory } from '../../src/memory/store.ts';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { agroChild } from '../support/agro-child.ts';
import { startFakeOpenAI } from '../support/fake-openai.ts';

const DB = 'data/databases/music_store/music_store.sqlite';
const GENRE_SQL = 'SELECT g.name, COUNT(*) FROM tracks t JOIN genres g ON g.genre_id = t.genre_id GROUP BY g.name';
const RIGHT_SQL = 'SELECT name FROM genres ORDER BY name LIMIT 1';
const QUESTION = 'How many tracks does each genre have?';
const tmp = mkdtempSync(join(tmpdir(), 'agro-chat-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

test('agro chat: :chart draws the last answer, :correct stores the right SQL and the question asked again gets it; bad commands are one line', { timeout: 180_000 }, async () => {
  const memory = join(tmp, 'memory.db');
  // A memory of the database with one unrelated pair: where the correction goes.
  writeMemory(memory, await buildMemory('music_store', introspectSchema(DB), [{ sql: 'SELECT COUNT(*) FROM tracks', question: 'How many tracks are there?' }]));
  // The policy always answers with the genres and their track counts; the person says otherwise.
  const fake = await startFakeOpenAI(() => ({ kind: 'reply', content: formatAction({ kind: 'answer', think: 'ok', content: GENRE_SQL }) }));
  try {
    const svg = join(tmp, 'genres.svg');
    const lines = [QUESTION, `:chart ${svg}`, ':correct DROP TABLE genres', `:correct ${RIGHT_SQL}`, ':bogus', ':new', QUESTION, ''].join('\n');
    const r = await agroChild(['chat', '--llm-url', fake.baseUrl, '--llm-model', 'fake', '--db', DB, '--memory', memory], lines);
    assert.equal(r.status, 0, r.stderr);
    const answers = [...r.stdout.matchAll(/^sql: (.*)$/gm)].map((m) => m[1]);
    assert.equal(answers.length, 2, r.stdout);
    assert.equal(answers[0], GENRE_SQL);
    // The chart: a category and a number, drawn as bars into the file.
    assert.ok(existsSync(svg), r.stderr);
    assert.match(readFileSync(svg, 'utf8'), /^<svg/);
    // Its line names the command the person typed, not ask's flag.
    assert.match(r.stderr, /^:chart: bar chart written to .*genres\.svg$/m, r.stderr);
    assert.doesNotMatch(r.stderr, /--chart/, r.stderr);
    // The refused correction is one line and nothing is stored; the right one runs and is stored as a person's pair.
    assert.match(r.stdout, /refused/);
    const stored = readMemory(memory);
    const person = stored.entries.filter((e) => e.source === 'person');
    assert.deepEqual(person.map((e) => [e.sql, e.questions[0]]), [[RIGHT_SQL, QUESTION]]);
    assert.match(r.stdout, /:bogus: not a command/);
    // Asked again (a new conversation, so the question stands alone): the person's SQL is the answer.
    assert.equal(answers[1], RIGHT_SQL, r.stdout);
    assert.ok(!r.stderr.includes('    at '), r.stderr);
  } finally {
    await fake.close();
  }
});
