import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agroChild } from '../support/agro-child.ts';
import { startFakeOpenAI } from '../support/fake-openai.ts';

const DB = 'data/databases/music_store/music_store.sqlite';

const agro = agroChild;

test('agro ask exits as agro sql would when its answer does not run: refused 5, SQL error 6, a result 0', { timeout: 120_000 }, async () => {
  const answers: Record<string, string> = {
    refused: 'DELETE FROM artists',
    error: 'SELECT no_such_column FROM artists',
    fine: 'SELECT count(*) FROM artists',
  };
  let current = 'refused';
  const fake = await startFakeOpenAI(() => ({ kind: 'reply', content: `<think>count them</think><answer>${answers[current]}</answer>` }));
  try {
    for (const [name, code] of [['refused', 5], ['error', 6], ['fine', 0]] as const) {
      current = name;
      // --no-search: the policy's own answer is the one printed and run.
      const r = await agro(['ask', '--llm-url', fake.baseUrl, '--llm-model', 'fake', '--db', DB, '--mode', 'direct', '--no-search', 'How many artists are there?']);
      assert.equal(r.status, code, `${name}: ${r.stdout}${r.stderr}`);
      assert.match(r.stdout, new RegExp(`answer: ${answers[name].replace(/[()*]/g, '\\$&')}`), r.stdout);
    }
    // With the answer path a refused policy answer is no candidate: another one answers, and the run exits 0.
    current = 'refused';
    const r = await agro(['ask', '--llm-url', fake.baseUrl, '--llm-model', 'fake', '--db', DB, '--mode', 'direct', '--search-samples', '0', 'How many artists are there?']);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /the policy answered DELETE FROM artists; a better-checked candidate was chosen/);
    assert.doesNotMatch(r.stdout, /answer: DELETE/);
  } finally {
    await fake.close();
  }
});
