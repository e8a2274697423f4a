import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SearchCorpus } from '../../src/search/corpus.ts';
import { buildMusicDb } from './fixture.ts';

const BIN = fileURLToPath(new URL('../../bin/agro.js', import.meta.url));
const agro = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });

test('agro synth-search writes corpus, questions and manifest, and shows questions', () => {
  const db = buildMusicDb();
  const out = join(mkdtempSync(join(tmpdir(), 'agro-synth-')), 'out');
  const r = agro('synth-search', '--db', db, '--out', out, '--n', '20', '--seed', '3', '--show', '2');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^tiny_music: 15 documents, 20\/20 questions/);
  assert.equal((r.stdout.match(/^ {2}answer: /gm) ?? []).length, 2);
  assert.equal((r.stdout.match(/^ {2}chain: {2}.+ → /gm) ?? []).length >= 1, true);

  const corpus = SearchCorpus.load(join(out, 'corpus.jsonl'));
  assert.equal(corpus.size, 15);
  const questions = readFileSync(join(out, 'questions.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { split: string; hops: number; chainDocIds: string[] });
  const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8')) as {
    questions: number;
    documents: number;
    byHops: Record<string, number>;
    bySplit: Record<string, number>;
    skipped: Record<string, number>;
  };
  assert.equal(manifest.questions, 20);
  assert.equal(questions.length, 20);
  assert.equal(manifest.documents, 15);
  for (const q of questions) {
    assert.ok(q.split === 'train' || q.split === 'heldout');
    for (const id of q.chainDocIds) assert.ok(corpus.has(id), id);
  }
  for (const h of ['1', '2', '3']) assert.equal(manifest.byHops[h], questions.filter((q) => String(q.hops) === h).length);
  assert.equal(manifest.bySplit.train + manifest.bySplit.heldout, 20);
  assert.ok(manifest.skipped.ambiguous_anchor > 0);

});

test('agro synth-search: one-line errors for a missing or corrupt database and bad flags', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agro-synth-'));
  const missing = agro('synth-search', '--db', join(dir, 'none.sqlite'), '--out', join(dir, 'o'));
  assert.equal(missing.status, 3);
  assert.match(missing.stderr, /^agro: database not found: .*none\.sqlite\n$/);
  assert.equal(existsSync(join(dir, 'o')), false);

  writeFileSync(join(dir, 'bad.sqlite'), 'not a database, just text that is long enough to look like a header');
  const bad = agro('synth-search', '--db', join(dir, 'bad.sqlite'), '--out', join(dir, 'o'));
  assert.equal(bad.status, 4);
  assert.match(bad.stderr, /^agro: not a readable SQLite database: .*\n$/);

  const flag = agro('synth-search', '--db', join(dir, 'bad.sqlite'), '--out', join(dir, 'o'), '--max-hops', '7');
  assert.equal(flag.status, 2);
  assert.match(flag.stderr, /^agro: synth-search: --max-hops must be an integer from 1 to 3, got "7"\n$/);
});
