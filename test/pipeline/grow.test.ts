// agro memory grow: rounds of the factory appended to the store, each query once and each one running; a grow
// stopped mid-round resumes to the pairs an uninterrupted one makes; the time budget bounds the rounds; a store of
// another schema is refused with one line (exit 4) and left as it was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { FactoryStopped } from '../../src/factory/pipeline.ts';
import { MemoryStore } from '../../src/memory/store.ts';
import { growMemory, growWorkDir } from '../../src/pipeline/grow.ts';
import { agroChild as agro } from '../support/agro-child.ts';

const DB = 'data/databases/music_store/music_store.sqlite';
const OTHER = 'data/databases/retail/retail.sqlite';
const tmp = mkdtempSync(join(tmpdir(), 'agro-grow-'));
const BATCH = 80;

/** The store's live pairs as (sql, questions), in id order, and its committed rounds. */
function contents(path: string): { pairs: Array<[string, string[]]>; rounds: string | undefined } {
  const s = MemoryStore.open(path);
  try {
    return { pairs: s.list().map((e) => [e.sql, e.questions]), rounds: s.metaValue('grow_rounds') };
  } finally {
    s.close();
  }
}

/** One uninterrupted grow of two rounds, the reference of the interrupted ones. */
const WHOLE = join(tmp, 'whole.db');
const whole = growMemory({ db: DB, memory: WHOLE, create: 'music_store', rounds: 2, batch: BATCH });

test('two rounds from no memory: a store of distinct queries that all run on the database, the rounds counted', { timeout: 120_000 }, async () => {
  const path = WHOLE;
  const r = await whole;
  assert.equal(r.before, 0);
  assert.equal(r.rounds.length, 2);
  assert.equal(r.stopped, 'rounds');
  assert.deepEqual(r.rounds.map((x) => x.seed), [1, 2], 'each round a seed of its own');
  assert.ok(r.rounds[1].added > 0, 'the second round adds queries the first did not make');
  const { pairs, rounds } = contents(path);
  assert.equal(rounds, '2');
  assert.equal(pairs.length, r.size);
  assert.equal(new Set(pairs.map(([sql]) => sql)).size, pairs.length, 'each query once');
  const db = new Database(DB, { readonly: true });
  try {
    for (const [sql] of pairs) assert.doesNotThrow(() => db.prepare(sql).all(), sql);
  } finally {
    db.close();
  }
  assert.ok(!existsSync(growWorkDir(path)), 'no work left behind');
});

test('a grow stopped mid-round resumes from its checkpoints to the pairs of an uninterrupted grow', { timeout: 180_000 }, async () => {
  await whole;
  const cut = join(tmp, 'cut.db');
  await growMemory({ db: DB, memory: cut, create: 'music_store', rounds: 1, batch: BATCH });
  await assert.rejects(growMemory({ db: DB, memory: cut, rounds: 1, batch: BATCH }, { stopAfter: 'realize' }), FactoryStopped);
  assert.equal(contents(cut).rounds, '1', 'nothing of the stopped round committed');
  assert.ok(existsSync(growWorkDir(cut)), 'its checkpoints kept');
  const again = await growMemory({ db: DB, memory: cut, rounds: 1, batch: 1 });
  assert.equal(again.rounds[0].resumed, true);
  assert.equal(again.rounds[0].asked, BATCH, "the round keeps the size it started with, not this run's --batch");
  assert.deepEqual(contents(cut), contents(WHOLE));
});

test('killed at a random moment (SIGKILL) and run again: the same pairs as an uninterrupted grow', { timeout: 240_000 }, async () => {
  await whole;
  const cut = join(tmp, 'kill.db');
  const args = ['bin/agro.js', 'memory', 'grow', '--db', DB, '--memory', cut, '--rounds', '2', '--batch', String(BATCH)];
  const child = spawn(process.execPath, args, { stdio: 'ignore' });
  // Somewhere in the second round: after the first is committed.
  // (A store being created is not yet readable as one: polled until it is.)
  const committed = (): string | undefined => {
    try {
      return contents(cut).rounds;
    } catch {
      return undefined;
    }
  };
  for (let i = 0; i < 600 && committed() !== '1'; i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(committed(), '1', 'the first round committed before the kill');
  await new Promise((r) => setTimeout(r, 200 + Math.floor(Math.random() * 1000)));
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  const done = Number(contents(cut).rounds ?? 0);
  if (done < 2) {
    const r = await agro(['memory', 'grow', '--db', DB, '--memory', cut, '--rounds', String(2 - done), '--batch', String(BATCH)]);
    assert.equal(r.status, 0, r.stderr);
  }
  assert.deepEqual(contents(cut), contents(WHOLE));
});

test('a time budget: the probe round runs, no round the rest of the budget cannot pay for is started', { timeout: 60_000 }, async () => {
  const path = join(tmp, 'budget.db');
  const r = await growMemory({ db: DB, memory: path, create: 'music_store', minutes: 0.01 });
  assert.equal(r.stopped, 'minutes');
  assert.equal(r.rounds.length, 1);
  assert.ok(r.rounds[0].asked <= 300, `probe of ${r.rounds[0].asked}`);
});

test('a memory of another database is refused with one line (exit 4) and left as it was', { timeout: 60_000 }, async () => {
  const path = join(tmp, 'other.db');
  await growMemory({ db: OTHER, memory: path, create: 'retail', rounds: 1, batch: 40 });
  copyFileSync(path, join(tmp, 'other-before.db'));
  const before = contents(path);
  const r = await agro(['memory', 'grow', '--db', DB, '--memory', path, '--rounds', '1']);
  assert.equal(r.status, 4, r.stderr);
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  assert.doesNotMatch(r.stderr, /\n\s+at /);
  assert.deepEqual(contents(path), before);
});
