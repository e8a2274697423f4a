// What the answer path shows a person names tables and columns as the schema spells them (sql/spelling.ts), however
// the policy wrote them: SQLite ran `ARTISTs`, the person reads `artists`.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Answerer } from '../../src/answer/resources.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { tokenize } from '../../src/sql/lexer.ts';
import { introspectDatabase } from '../../src/sql/executor.ts';
import { SqlEnvironment } from '../../src/agent/sql-env.ts';
import { askWithAnswerPath } from '../../src/answer/ask.ts';
import type { Policy } from '../../src/agent/policies/types.ts';

const DB = join('data/databases', 'music_store', 'music_store.sqlite');
const pool = new SqlPool({ size: 1 });
after(() => pool.close());

test("the chosen query and every candidate use the schema's spelling of the names the policy miscased", { timeout: 120_000 }, async () => {
  const answerer = new Answerer(pool, { config: { synth: 0 } });
  const a = await answerer.answer(DB, 'music_store', 'How many artists are there?', [{ sql: 'SELECT COUNT(*) FROM ARTISTs', source: 'greedy' }]);
  assert.equal(a.sql, 'SELECT COUNT(*) FROM artists');
  const schema = await introspectDatabase(DB);
  const names = new Set(schema.tables.flatMap((t) => [t.name, ...t.columns.map((c) => c.name)]));
  const lower = new Map([...names].map((n) => [n.toLowerCase(), n]));
  assert.ok(a.candidates.length > 0);
  for (const c of a.candidates) {
    for (const t of tokenize(c.sql)) {
      const spelled = lower.get(t.text.toLowerCase());
      if ((t.kind === 'word' || t.kind === 'qid') && spelled !== undefined) assert.equal(t.text, spelled, `${c.sql}: ${t.text}`);
    }
  }
});

/** A policy that answers one query at once, however it spells it. */
const answering = (sql: string): Policy => ({
  kind: 'endpoint',
  name: 'answering',
  description: 'answers one query',
  promptContract: null,
  complete: async () => ({ text: `<think>ok</think><answer>${sql}</answer>`, finish: 'stop' }),
  close: async () => {},
});

test("without the answer path (--no-search) the policy's own answer is shown in the schema's spelling too", { timeout: 60_000 }, async () => {
  const env = new SqlEnvironment(pool, {});
  await env.prepare(DB);
  const task = { id: 'ask', dbId: 'music_store', dbPath: DB, question: 'How many artists are there?', goldSql: '' };
  const asked = await askWithAnswerPath(env, task, answering('SELECT COUNT(*) AS N FROM ARTISTs WHERE NAME LIKE "A%"'), undefined, { mode: 'agent', maxTurnTokens: 64, temperature: 0, samples: 0 });
  assert.equal(asked.episode.answer, 'SELECT COUNT(*) AS N FROM ARTISTs WHERE NAME LIKE "A%"', 'the trace keeps what the policy wrote');
  // The alias N and the string stay as written; the table and the column are the schema's.
  assert.equal(asked.sql, 'SELECT COUNT(*) AS N FROM artists WHERE name LIKE "A%"');
  assert.equal(asked.policySql, asked.sql);
});
