import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SqlPool } from '../../src/sql/pool.ts';
import { testSuiteMatch } from '../../src/sql/testsuite.ts';
import { FactoryStopped, runFactory } from '../../src/factory/pipeline.ts';
import type { DatasetRow } from '../../src/data/dataset-row.ts';
import { makeOddDb, makeShopDb, tmpDir } from './fixtures.ts';

const dir = tmpDir();
const shop = makeShopDb(dir);
// Follow-ups are off by default (FOLLOW_UP_SHARE); these runs ask for some so their stage is checked and resumed too.
const small = { n: 25, variants: 2, variantRows: 300, seed: 3, timeoutMs: 3000, followUps: 0.15 };

const readRows = (p: string) =>
  readFileSync(p, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as DatasetRow);

test('pipeline: dataset rows are BIRD-shaped and each gold query matches itself on the original and every variant', async () => {
  const pool = new SqlPool({ size: 2 });
  try {
    const out = join(dir, 'run1');
    const r = await runFactory({ db: shop, out, ...small }, { executor: pool });
    const rows = readRows(join(out, 'dataset.jsonl'));
    assert.equal(rows.length, r.manifest.rows);
    assert.ok(rows.length >= 15, `only ${rows.length} rows`);
    for (const [i, row] of rows.entries()) {
      assert.equal(row.question_id, i);
      assert.equal(row.db_id, 'shop');
      assert.equal(row.source, 'agro-synth');
      assert.ok(row.question.length > 10 && row.SQL.startsWith('SELECT'));
      assert.ok(['simple', 'moderate', 'challenging'].includes(row.difficulty));
      // A follow-up is checked by execution, not parsed back (its question leans on the turn before it).
      assert.ok(row.provenance.checks.includes(row.previous ? 'changed' : 'roundtrip'));
    }
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8'));
    assert.deepEqual(manifest.stages.map((s: { stage: string }) => s.stage), ['synthesize', 'verify', 'augment', 'realize', 'align', 'diversify', 'follow-up']);
    assert.equal(manifest.variants.length, 2);
    for (const v of manifest.variants as string[]) assert.ok(existsSync(v));
    for (const s of manifest.stages as Array<{ in: number; out: number; rejected: Record<string, number> }>) {
      // what went in either came out or was rejected for a counted reason (synthesis counts failed attempts too)
      const rej = Object.values(s.rejected).reduce((a, b) => a + b, 0);
      if (s.in !== 0 && s.out !== s.in) assert.ok(rej > 0);
    }
    for (const row of rows) {
      const m = await testSuiteMatch(pool, row.SQL, row.SQL, [shop, ...manifest.variants], { mode: 'spider' });
      assert.ok(m.match, row.SQL);
    }
  } finally {
    await pool.close();
  }
});

test('pipeline: deterministic for a seed, and resumes after an interruption with the same result', async () => {
  const pool = new SqlPool({ size: 2 });
  try {
    const a = join(dir, 'det-a');
    const b = join(dir, 'det-b');
    await runFactory({ db: shop, out: a, ...small, seed: 9 }, { executor: pool });
    await assert.rejects(runFactory({ db: shop, out: b, ...small, seed: 9 }, { executor: pool, stopAfter: 'augment' }), FactoryStopped);
    assert.ok(existsSync(join(b, '.work', 'verify.jsonl')));
    assert.ok(!existsSync(join(b, 'dataset.jsonl')));
    const resumed = await runFactory({ db: shop, out: b, ...small, seed: 9 }, { executor: pool });
    assert.deepEqual(
      resumed.manifest.stages.map((s) => [s.stage, s.resumed]),
      [
        ['synthesize', true],
        ['verify', true],
        ['augment', true],
        ['realize', false],
        ['align', false],
        ['diversify', false],
        ['follow-up', false],
      ],
    );
    assert.equal(readFileSync(join(b, 'dataset.jsonl'), 'utf8'), readFileSync(join(a, 'dataset.jsonl'), 'utf8'));
    // Checkpoints are written without fsync: one that a power loss cut short (fewer items than its
    // report says, or an empty report) is redone, not trusted.
    const verifyFile = join(b, '.work', 'verify.jsonl');
    writeFileSync(verifyFile, readFileSync(verifyFile, 'utf8').split('\n').slice(0, 2).join('\n') + '\n');
    writeFileSync(join(b, '.work', 'align.json'), '');
    const redone = await runFactory({ db: shop, out: b, ...small, seed: 9 }, { executor: pool });
    assert.deepEqual(
      redone.manifest.stages.map((s) => [s.stage, s.resumed]),
      [
        ['synthesize', true],
        ['verify', false],
        ['augment', true],
        ['realize', true],
        ['align', false],
        ['diversify', true],
        ['follow-up', true],
      ],
    );
    assert.equal(readFileSync(join(b, 'dataset.jsonl'), 'utf8'), readFileSync(join(a, 'dataset.jsonl'), 'utf8'));
    // other arguments invalidate the checkpoints instead of mixing runs
    const other = await runFactory({ db: shop, out: b, ...small, seed: 10 }, { executor: pool });
    assert.ok(other.manifest.stages.every((s) => !s.resumed));
    assert.notEqual(readFileSync(join(b, 'dataset.jsonl'), 'utf8'), readFileSync(join(a, 'dataset.jsonl'), 'utf8'));
  } finally {
    await pool.close();
  }
});

test('pipeline: odd schemas (no keys, views, empty tables, odd names, blobs, huge text) continue and say what was skipped', async () => {
  const pool = new SqlPool({ size: 2 });
  try {
    const odd = makeOddDb(dir);
    const r = await runFactory({ db: odd, out: join(dir, 'odd'), ...small, n: 15 }, { executor: pool });
    const why = r.manifest.skipped.map((s) => `${s.what}: ${s.why}`);
    assert.ok(why.some((w) => w.startsWith('view long_books')));
    assert.ok(why.some((w) => w.startsWith('table empty_table')));
    assert.ok(why.some((w) => w.startsWith('column author.photo')));
    assert.ok(why.some((w) => w.startsWith('column author.bio')));
    assert.equal(r.manifest.schema.inferredForeignKeys, 1);
    assert.ok(r.rows.length > 0);
    for (const row of r.rows) {
      const m = await testSuiteMatch(pool, row.SQL, row.SQL, [odd, ...r.manifest.variants], { mode: 'spider' });
      assert.ok(m.match, row.SQL);
    }
  } finally {
    await pool.close();
  }
});

test('agro synth: a missing database is a one-line error with a non-zero exit', () => {
  const r = spawnSync(process.execPath, ['bin/agro.js', 'synth', '--db', join(dir, 'nope.sqlite'), '--out', join(dir, 'x')], { encoding: 'utf8' });
  assert.equal(r.status, 3);
  assert.equal(r.stderr.trim().split('\n').length, 1);
  assert.match(r.stderr, /^agro: database not found: /);
});

test('agro synth: --json summary on a real run', () => {
  const out = join(dir, 'cli');
  const r = spawnSync(process.execPath, ['bin/agro.js', 'synth', '--db', shop, '--out', out, '--n', '10', '--variants', '1', '--json'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const summary = JSON.parse(r.stdout);
  assert.equal(summary.rows, readRows(join(out, 'dataset.jsonl')).length);
  assert.ok(summary.rows > 0);
});
