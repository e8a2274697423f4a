// The human mix (issue #32 part 7): the factory's selection follows the shapes people ask (shapes.ts,
// measured on Spider's train gold), and a run's shape distribution is nearer that target than an even mix's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { runFactory } from '../../src/factory/pipeline.ts';
import { queryShape } from '../../src/factory/realism.ts';
import { HUMAN_SHAPES, humanShapeMix } from '../../src/factory/shapes.ts';
import { existsSync, readFileSync } from 'node:fs';
import { tmpDir } from './fixtures.ts';

/** Total variation distance between a run's shape shares and the human target (both normalized). */
function distance(sqls: string[]): number {
  const total = Object.values(HUMAN_SHAPES).reduce((a, b) => a + b, 0);
  const got = new Map<string, number>();
  for (const s of sqls) got.set(queryShape(s), (got.get(queryShape(s)) ?? 0) + 1 / sqls.length);
  const keys = new Set([...Object.keys(HUMAN_SHAPES), ...got.keys()]);
  let d = 0;
  for (const k of keys) d += Math.abs((got.get(k) ?? 0) - (HUMAN_SHAPES[k] ?? 0) / total);
  return d / 2;
}

test('the human mix: a run is nearer the shapes people ask than a run with an even mix', async () => {
  const dir = tmpDir();
  const db = join('data', 'databases', 'music_store', 'music_store.sqlite');
  const human = await runFactory({ db, out: join(dir, 'human'), n: 150, seed: 3, variants: 1 });
  const even = await runFactory({ db, out: join(dir, 'even'), n: 150, seed: 3, variants: 1, shapes: {} });
  const dh = distance(human.rows.map((r) => r.SQL));
  const de = distance(even.rows.map((r) => r.SQL));
  assert.ok(dh < de - 0.05, `human mix ${dh.toFixed(3)} vs even ${de.toFixed(3)}`);
  // The most asked shape leads: plain single-table questions are the largest share people ask.
  const plain = human.rows.filter((r) => queryShape(r.SQL) === 'plain').length / human.rows.length;
  const plainEven = even.rows.filter((r) => queryShape(r.SQL) === 'plain').length / even.rows.length;
  assert.ok(plain > plainEven, `plain: human ${plain.toFixed(2)} vs even ${plainEven.toFixed(2)}`);
  console.log(`# shape distance to the human mix: human ${dh.toFixed(3)}, even ${de.toFixed(3)}; plain ${plain.toFixed(2)} vs ${plainEven.toFixed(2)}`);
});

test('HUMAN_SHAPES is the shape mix of Spider\'s train gold, as scripts/human-shapes.ts measures it', (t) => {
  const file = join('..', 'shared', 'data', 'spider-train', 'gold.jsonl');
  if (!existsSync(file)) return t.skip(`no ${file} (shared data of this machine)`);
  const sqls = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => (JSON.parse(l) as { query: string }).query);
  assert.deepEqual(humanShapeMix(sqls.map(queryShape)), HUMAN_SHAPES);
});
