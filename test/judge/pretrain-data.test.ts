import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { collectJudgeLists } from '../../src/pipeline/judge-data.ts';

test('judge pretraining data: a database\'s candidate lists for its gold SQL, each candidate labelled by execution; a rerun resumes', async () => {
  const root = mkdtempSync(join(tmpdir(), 'agro-judge-data-'));
  mkdirSync(join(root, 'database', 'music_store'), { recursive: true });
  copyFileSync('data/databases/music_store/music_store.sqlite', join(root, 'database', 'music_store', 'music_store.sqlite'));
  const gold = ['SELECT COUNT(*) FROM customers', 'SELECT name FROM genres', "SELECT first_name, last_name FROM customers WHERE country = 'Brazil'"];
  writeFileSync(join(root, 'gold.jsonl'), gold.map((q) => JSON.stringify({ db_id: 'music_store', query: q })).join('\n') + '\n');
  const cfg = { spider: root, work: join(root, 'work'), memoryPairs: 120, goldQuestions: 3, factoryQuestions: 5, maxDbs: 0, seed: 0 };
  const lines: string[] = [];
  const lists = (await collectJudgeLists(cfg, (l) => lines.push(l))).get('music_store')!;
  assert.ok(lists.length >= 3, `${lists.length} lists`);
  assert.ok(lists.some((l) => l.candidates.some((c) => !c.right)), 'near-misses labelled wrong');
  assert.ok(lists.some((l) => l.origin === 'gold') && lists.some((l) => l.origin === 'factory'), 'both origins');
  for (const l of lists) {
    assert.ok(l.candidates.length > 0, 'every list has candidates');
    // One label per result: candidates that share a result are all right or all wrong.
    const bySig = new Map<string, boolean>();
    for (const c of l.candidates) {
      if (bySig.has(c.signature)) assert.equal(bySig.get(c.signature), c.right);
      bySig.set(c.signature, c.right);
    }
  }
  // The gold query itself, when offered, is right, and some list has a right candidate.
  assert.ok(lists.some((l) => l.candidates.some((c) => c.right)), 'some candidate right somewhere');
  for (const l of lists) for (const c of l.candidates) if (c.sql.replace(/\s+/g, ' ') === l.gold) assert.equal(c.right, true, c.sql);
  assert.equal(lines.length, 1);
  const file = join(cfg.work, 'lists', 'music_store.jsonl');
  const stamp = statSync(file).mtimeMs;
  const again = await collectJudgeLists(cfg, (l) => lines.push(l));
  assert.deepEqual(again.get('music_store'), lists, 'read back as written');
  assert.equal(statSync(file).mtimeMs, stamp, 'a finished database is not collected again');
  assert.equal(lines.length, 1);
});
