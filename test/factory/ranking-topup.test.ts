import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { Rng } from '../../src/util/rng.ts';
import { buildVariants } from '../../src/factory/augment.ts';
import { queryShape } from '../../src/factory/realism.ts';
import { likeWord, synthesize } from '../../src/factory/synthesize.ts';
import { verifyPair } from '../../src/factory/verify.ts';
import type { SqlExecutor } from '../../src/sql/types.ts';
import { makeShopDb, stageContext, synthInputs, tmpDir } from './fixtures.ts';
import { withPool } from '../support/with.ts';

test('a LIKE searches for a word the column\'s other values share, else any word of the value', () => {
  const rng = new Rng(1);
  for (let i = 0; i < 20; i++) assert.equal(likeWord('Lodge Glenmore', ['Lodge Glenmore', 'Glenmore Park', 'Odeon'], rng), 'Glenmore');
  const seen = new Set(Array.from({ length: 40 }, () => likeWord('Lodge Glenmore', ['Lodge Glenmore', 'Odeon'], rng)));
  assert.deepEqual([...seen].sort(), ['Glenmore', 'Lodge']);
  assert.equal(likeWord('a b', ['a b'], rng), null, 'no word of 4 letters or more');
});

/** A table whose rankable columns tie at the top (plays, a small-domain rating) and one that does not (length). */
function makeTiedDb(dir: string): string {
  const path = join(dir, 'songs.sqlite');
  const db = new Database(path);
  db.exec('CREATE TABLE song (song_id INTEGER PRIMARY KEY, title TEXT NOT NULL, genre TEXT, plays INTEGER, rating INTEGER, length REAL)');
  const rng = new Rng(3);
  const ins = db.prepare('INSERT INTO song VALUES (?, ?, ?, ?, ?, ?)');
  for (let i = 1; i <= 60; i++) ins.run(i, `Song ${i}`, rng.pick(['rock', 'jazz', 'folk', 'pop']), i <= 5 ? 900 : rng.int(500), 1 + rng.int(5), 120 + i * 1.7 + rng.next());
  db.close();
  return path;
}

/** A database made in a fresh folder, what synthesis reads of it, and two variant databases. */
async function withVariants(make: (dir: string) => string) {
  const dir = tmpDir();
  const path = make(dir);
  const inputs = synthInputs(path);
  return { path, ...inputs, variants: await buildVariants(path, inputs.schema, inputs.graph, { count: 2, seed: 1, dir: join(dir, 'variants') }) };
}

test('ranked queries are synthesized with no tie at or above their LIMIT on the original and on every variant', async () => {
  const { path, schema, graph, profiles, variants } = await withVariants(makeTiedDb);
  await withPool({ size: 2 }, async (pool) => {
    const ctx = stageContext('songs', path, pool, { schema, rng: new Rng(5), variants });
    const out = await synthesize(ctx, { graph, profiles }, 60, { topK: 10, groupTop: 10 });
    const ranked = out.filter((p) => p.ast.kind === 'select' && p.ast.limit !== null && p.ast.orderBy.length);
    assert.ok(ranked.length >= 5, `ranked candidates: ${ranked.length}`);
    for (const p of ranked) {
      if (p.ast.kind !== 'select') continue;
      const k = p.ast.limit!;
      // The first sort key's values at ranks 1..k+1, from the query itself with the key as its only column.
      for (const db of [path, ...variants]) {
        const probe = p.sql.replace(/^SELECT (DISTINCT )?.*? FROM /, `SELECT ${/ORDER BY (.*?) (ASC|DESC)/.exec(p.sql)![1]} FROM `).replace(/LIMIT \d+$/, `LIMIT ${k + 1}`);
        const r = await pool.execute(db, probe);
        assert.ok(r.ok, probe);
        const v = r.rows.map((row) => row[0]);
        assert.equal(v.length, k + 1, `a row past the cut: ${p.sql} on ${db}`);
        assert.equal(new Set(v).size, k + 1, `no tie at or above the cut: ${p.sql} on ${db}: ${JSON.stringify(v)}`);
      }
    }
  });
});

test('the shape top-up counts candidates that pass verification, and records why the others failed', async () => {
  const dir = tmpDir();
  const path = makeShopDb(dir);
  const { schema, graph, profiles } = synthInputs(path);
  await withPool({ size: 2 }, async (pool) => {
    const rejected: string[] = [];
    const ctx = stageContext('shop', path, pool, { schema, rng: new Rng(2), reject: (_p, why) => rejected.push(why) });
    // A mix that asks for plain joins only: many join candidates fail verification (a filter that removes nothing, too many rows).
    const out = await synthesize(ctx, { graph, profiles }, 40, {}, { join: 100 });
    const joins = out.filter((p) => queryShape(p.sql) === 'join');
    const failed: string[] = [];
    for (const p of joins) {
      const why = await verifyPair(ctx, p);
      if (why) failed.push(why);
    }
    // The weighted draw is not verified here (the verify stage does that); the top-up's additions are,
    // so its failures are counted under the verification's own reasons.
    const verifyReasons = rejected.filter((r) => !['no_structure', 'duplicate_sql', 'too_costly'].includes(r));
    assert.ok(verifyReasons.length > 0, `synthesis rejections: ${[...new Set(rejected)].join(', ')}`);
    assert.ok(joins.length - failed.length >= 10, `verified joins: ${joins.length - failed.length} of ${joins.length}`);
  });
});

test('synthesis drafts concurrently but its output does not depend on which query answers first', async () => {
  const { path, schema, graph, profiles, variants } = await withVariants(makeShopDb);
  await withPool({ size: 2 }, async (pool) => {
    // Each run delays every answer by its own random 0-3 ms, so drafts and verifications finish in a different order.
    const run = async (jitterSeed: number) => {
      const jitter = new Rng(jitterSeed);
      const executor: SqlExecutor = {
        execute: async (db, sql, opts) => {
          const r = await pool.execute(db, sql, opts);
          await new Promise((res) => setTimeout(res, jitter.int(4)));
          return r;
        },
        close: async () => {},
      };
      const rejected: string[] = [];
      const ctx = stageContext('shop', path, executor, { schema, rng: new Rng(7), variants, reject: (_p, why) => rejected.push(why) });
      const out = await synthesize(ctx, { graph, profiles }, 50, {}, { join: 40, top: 30, 'group+agg': 30 });
      return { pairs: out.map((p) => [p.id, p.sql, p.provenance.template, p.result ?? null]), rejected };
    };
    const a = await run(1);
    const b = await run(2);
    assert.ok(a.pairs.length >= 50, `candidates: ${a.pairs.length}`);
    assert.deepEqual(b.pairs, a.pairs);
    assert.deepEqual(b.rejected, a.rejected);
  });
});
