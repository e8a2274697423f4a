// What the answer path shows a person names tables and columns as the schema spells them (sql/spelling.ts), however
// the policy wrote them: SQLite ran `ARTISTs`, the person reads `artists`.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Answerer } from '../../src/answer/resources.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { tokenize } from '../../src/sql/lexer.ts';
import { introspectDatabase } from '../../src/sql/executor.ts';

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
