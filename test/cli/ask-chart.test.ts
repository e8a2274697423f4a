// `agro ask --chart FILE.svg`: the answer's result drawn as a chart file (bars for a category and a count),
// nothing written for a result a table says better, and a bad file name refused before anything runs.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { agroChild } from '../support/agro-child.ts';
import { startFakeOpenAI } from '../support/fake-openai.ts';

const DB = 'data/databases/music_store/music_store.sqlite';
const tmp = mkdtempSync(join(tmpdir(), 'agro-ask-chart-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const agro = agroChild;

test('agro ask --chart writes the bar chart of a category/count answer, and nothing for a table', { timeout: 120_000 }, async () => {
  let answer = '';
  const fake = await startFakeOpenAI(() => ({ kind: 'reply', content: `<think>count them</think><answer>${answer}</answer>` }));
  try {
    answer = 'SELECT g.name, COUNT(*) FROM tracks t JOIN genres g ON g.genre_id = t.genre_id GROUP BY g.name';
    const svg = join(tmp, 'genres.svg');
    const r = await agro(['ask', '--llm-url', fake.baseUrl, '--llm-model', 'fake', '--mode', 'direct', '--db', DB, '--chart', svg, '--rows', '2', 'How many tracks per genre?']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /--chart: bar chart written to /);
    const text = readFileSync(svg, 'utf8');
    assert.match(text, /^<svg /);
    // Every genre is drawn, not only the two rows the terminal shows.
    const db = new Database(DB, { readonly: true });
    const genres = db.prepare('SELECT DISTINCT g.name FROM tracks t JOIN genres g ON g.genre_id = t.genre_id').pluck().all() as string[];
    db.close();
    assert.ok(genres.length > 2);
    for (const g of genres) assert.ok(text.includes(`>${g}<`), `the chart shows ${g}`);

    answer = 'SELECT name, composer, milliseconds FROM tracks LIMIT 5';
    const none = join(tmp, 'table.svg');
    const t = await agro(['ask', '--llm-url', fake.baseUrl, '--llm-model', 'fake', '--mode', 'direct', '--db', DB, '--chart', none, 'List five tracks']);
    assert.equal(t.status, 0, t.stderr);
    assert.match(t.stderr, /--chart: no chart for this result \(a table says it better\); nothing written/);
    assert.equal(existsSync(none), false);
  } finally {
    await fake.close();
  }
});

test('agro ask --chart out.png is one usage line (exit 2) before the policy is asked', async () => {
  const r = await agro(['ask', '--llm-url', 'http://127.0.0.1:9/v1', '--db', DB, '--chart', join(tmp, 'x.png'), 'How many?']);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /^agro: --chart .*x\.png: only \.svg is written/);
  assert.equal(r.stderr.trim().split('\n').length, 1);
});
