// The memory store: corrections from several processes at once are all kept, what is not a store agro wrote is
// refused with one line (exit 4), a memory.json of before is converted once, and provenance is listed and undone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, mkdtempSync, openSync, readFileSync, statSync, symlinkSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { AgroError } from '../../src/errors.ts';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { buildMemory } from '../../src/memory/build.ts';
import { schemaFingerprint } from '../../src/memory/entry.ts';
import { openMemory, readMemory } from '../../src/memory/legacy.ts';
import { MemoryStore, writeMemory } from '../../src/memory/store.ts';
import { agroChild as agro } from '../support/agro-child.ts';
import { agroBatchAsync } from '../support/cli-batch.ts';

const DB = 'data/databases/music_store/music_store.sqlite';
const OTHER = 'data/databases/retail/retail.sqlite';
const tmp = mkdtempSync(join(tmpdir(), 'agro-store-'));
const PAIRS = [
  { sql: 'SELECT COUNT(*) FROM customers', question: 'How many customers are there?' },
  { sql: 'SELECT name FROM genres', question: 'List the names of all genres.' },
];

const isLine = (code: number, why: RegExp) => (e: unknown) => e instanceof AgroError && e.exitCode === code && why.test(e.message) && !e.message.includes('\n');

test('8 processes adding corrections to one store at once: every acknowledged correction is there once, and the store is sound', { timeout: 240_000 }, async () => {
  const path = join(tmp, 'race.db');
  writeMemory(path, await buildMemory('music_store', introspectSchema(DB), PAIRS));
  const PROCS = 8;
  const EACH = 3;
  // Each process adds its corrections one after another (agro memory add's main() in one process per writer,
  // test/support/cli-batch.ts: each add opens the store, writes, closes), all processes at once: the writes interleave.
  const runs = await Promise.all(
    Array.from({ length: PROCS }, async (_, p) => {
      const qs = Array.from({ length: EACH }, (_, i) => `race question ${p}-${i}`);
      const rs = await agroBatchAsync(qs.map((q, i) => ['memory', 'add', '--memory', path, '--db', DB, '--question', q, '--sql', `SELECT ${p * 100 + i} AS n FROM customers LIMIT 1`]), { timeoutMs: 180_000 });
      for (const r of rs) assert.equal(r.status, 0, r.stderr);
      return qs;
    }),
  );
  const store = MemoryStore.open(path);
  try {
    const people = store.list({ source: 'person' });
    const asked = people.flatMap((e) => e.questions);
    for (const q of runs.flat()) assert.equal(asked.filter((x) => x === q).length, 1, `${q} stored once`);
    assert.equal(people.length, PROCS * EACH);
    assert.equal(store.snapshot().entries.length, PAIRS.length + PROCS * EACH);
    assert.equal(store.integrity(), 'ok');
  } finally {
    store.close();
  }
});

test('what is not a store agro wrote is refused with one line and exit 4; a missing one is exit 3', async () => {
  const good = join(tmp, 'good.db');
  writeMemory(good, await buildMemory('music_store', introspectSchema(DB), PAIRS));
  // Truncated: a copy cut short.
  const cut = join(tmp, 'cut.db');
  copyFileSync(good, cut);
  truncateSync(cut, Math.floor(statSync(good).size / 2));
  assert.throws(() => readMemory(cut), isLine(4, /truncated/));
  // A FIFO, a symlink to a device, a directory: never opened as a store (and a FIFO does not hang the read).
  const fifo = join(tmp, 'fifo.db');
  execFileSync('mkfifo', [fifo]);
  assert.throws(() => readMemory(fifo), isLine(4, /not a regular file/));
  const zero = join(tmp, 'zero.db');
  symlinkSync('/dev/zero', zero);
  assert.throws(() => readMemory(zero), isLine(4, /not a regular file/));
  assert.throws(() => readMemory(tmp), isLine(4, /directory/));
  // An SQLite file of something else, a text file, an empty file.
  const foreign = join(tmp, 'foreign.db');
  new Database(foreign).exec('CREATE TABLE t (x)').close();
  assert.throws(() => readMemory(foreign), isLine(4, /not a memory store agro wrote/));
  const text = join(tmp, 'text.db');
  writeFileSync(text, 'entries: oops');
  assert.throws(() => readMemory(text), isLine(4, /neither a memory store/));
  const empty = join(tmp, 'empty.db');
  writeFileSync(empty, '');
  assert.throws(() => readMemory(empty), isLine(4, /empty/));
  assert.throws(() => readMemory(join(tmp, 'none.db')), isLine(3, /not found/));
  // A store of another schema: refused before anything runs, nothing written.
  const before = readFileSync(good);
  const other = await agro(['memory', 'add', '--memory', good, '--db', OTHER, '--question', 'How many orders?', '--sql', 'SELECT COUNT(*) FROM orders']);
  assert.equal(other.status, 4, other.stderr);
  assert.match(other.stderr, /another schema/);
  assert.equal(other.stderr.trim().split('\n').length, 1);
  assert.ok(readFileSync(good).equals(before));
  // The CLI says the same in one line, no stack trace.
  const shown = await agro(['memory', 'show', '--memory', cut]);
  assert.equal(shown.status, 4);
  assert.match(shown.stderr, /^agro: memory store .* is truncated/);
  assert.equal(shown.stderr.trim().split('\n').length, 1);
});

test('a store another writer is checkpointing (its file shorter than its header says for a moment) opens; one cut short does not', async () => {
  const path = join(tmp, 'growing.db');
  writeMemory(path, await buildMemory('music_store', introspectSchema(DB), PAIRS));
  // The other writer: its corrections grow the database in the WAL (no checkpoint yet: it stays open).
  const writer = MemoryStore.open(path);
  try {
    for (let i = 0; i < 60; i++) writer.addPerson({ sql: `SELECT ${i} AS n, '${'x'.repeat(3000)}' AS pad`, question: `growing ${i}`, at: '2026-12-07T00:00:00Z' });
    // A checkpoint copies the WAL's pages to the file in page order: page 1, which holds the new page count,
    // first, the pages that grow the file after. Stop it there: the newest page 1 of the WAL written to the file.
    const wal = readFileSync(`${path}-wal`);
    const pageSize = wal.readUInt32BE(8);
    let page1: Buffer | undefined;
    for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) if (wal.readUInt32BE(at) === 1) page1 = wal.subarray(at + 24, at + 24 + pageSize);
    assert.ok(page1, 'the WAL holds page 1');
    const fd = openSync(path, 'r+');
    writeSync(fd, page1, 0, pageSize, 0);
    closeSync(fd);
    assert.ok(statSync(path).size < page1.readUInt32BE(28) * pageSize, 'the file is shorter than its header says');
    // Before: refused as "truncated (N of M bytes)", though SQLite reads it whole through the WAL.
    const reader = MemoryStore.open(path);
    try {
      assert.equal(reader.snapshot().entries.length, PAIRS.length + 60);
      assert.equal(reader.integrity(), 'ok');
    } finally {
      reader.close();
    }
  } finally {
    writer.close();
  }
  assert.equal(readMemory(path).entries.length, PAIRS.length + 60);
  // The same shortfall with nothing in a WAL to make it up: truncated, one line.
  const cut = join(tmp, 'growing-cut.db');
  copyFileSync(path, cut);
  const size = statSync(cut).size;
  const short = size - 8 * readFileSync(cut).readUInt16BE(16);
  truncateSync(cut, short);
  assert.throws(() => readMemory(cut), isLine(4, new RegExp(`is truncated \\(${short} of ${size} bytes\\)`)));
});

test('a memory.json of an earlier agro is converted to a store beside it, once, with one line; migrate does it by hand', async () => {
  const m = await buildMemory('music_store', introspectSchema(DB), PAIRS);
  const json = join(tmp, 'old', 'memory.json');
  execFileSync('mkdir', ['-p', join(tmp, 'old')]);
  writeFileSync(json, JSON.stringify({ kind: 'agro-memory', version: 1, dbId: m.dbId, schema: m.schema, entries: [{ ...m.entries[0], source: 'person', at: '2026-12-01T00:00:00Z' }, m.entries[1]] }));
  const notes: string[] = [];
  const store = openMemory(json, { note: (l) => notes.push(l) });
  try {
    assert.equal(store.path, join(tmp, 'old', 'memory.db'));
    assert.equal(notes.length, 1);
    assert.match(notes[0], /converted .*memory\.json to the memory store .*memory\.db \(2 pairs\)/);
    const snap = store.snapshot();
    assert.equal(snap.schema, schemaFingerprint(introspectSchema(DB)));
    assert.deepEqual(snap.entries.map((e) => [e.source, e.sql]), [['person', PAIRS[0].sql], ['factory', PAIRS[1].sql]]);
  } finally {
    store.close();
  }
  openMemory(json, { note: (l) => notes.push(l) }).close();
  assert.equal(notes.length, 1, 'converted once: the store is used from then on');
  const out = join(tmp, 'old', 'by-hand.db');
  const r = await agro(['memory', 'migrate', json, '--out', out]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /wrote .*by-hand\.db: 2 pairs/);
  assert.equal(readMemory(out).entries.length, 2);
  // Onto a store that exists (it may hold people's corrections): refused, the store as it was.
  const s = MemoryStore.open(out);
  s.addPerson({ sql: 'SELECT name FROM artists', question: 'the artists', at: new Date().toISOString() });
  s.close();
  const over = await agro(['memory', 'migrate', json, '--out', out]);
  assert.equal(over.status, 2, over.stderr);
  assert.match(over.stderr, /exists; give another --out/);
  assert.equal(over.stderr.trim().split('\n').length, 1);
  assert.equal(readMemory(out).entries.length, 3, 'the correction kept');
  writeFileSync(join(tmp, 'old', 'bad.json'), '{"kind":"something"}');
  assert.throws(() => readMemory(join(tmp, 'old', 'bad.json')), isLine(4, /not a memory agro wrote/));
});

test('agro memory list / remove / export: who taught what and when, undone by id', async () => {
  const path = join(tmp, 'prov.db');
  writeMemory(path, await buildMemory('music_store', introspectSchema(DB), PAIRS));
  // Two processes (test/support/cli-batch.ts), the runs in order in each: what the second does needs the id the first printed.
  const m = ['--memory', path];
  const [add, people, future, yesterday, robot, all, exported, csv] = await agroBatchAsync([
    ['memory', 'add', ...m, '--db', DB, '--question', 'Which music styles are sold?', '--sql', 'SELECT name FROM genres'],
    ['memory', 'list', ...m, '--source', 'person'],
    ['memory', 'list', ...m, '--since', '2999-01-01'],
    ['memory', 'list', ...m, '--since', 'yesterday'],
    ['memory', 'list', ...m, '--source', 'robot'],
    ['memory', 'list', ...m, '--removed'],
    ['memory', 'export', ...m, '--format', 'jsonl'],
    ['memory', 'export', ...m, '--format', 'csv'],
  ]);
  assert.equal(add.status, 0, add.stderr);
  const id = Number(/as pair (\d+)/.exec(add.stdout)![1]);
  assert.equal(people.status, 0, people.stderr);
  const lines = people.stdout.trim().split('\n');
  assert.equal(lines.length, 1);
  assert.match(lines[0], new RegExp(`^ *${id} {2}person {3}20\\d\\d-\\S*Z {2}"Which music styles are sold\\?" {2}SELECT name FROM genres$`));
  assert.equal(future.stdout, '');
  assert.equal(yesterday.status, 2);
  assert.equal(robot.status, 2);
  // The person's pair replaced the factory's of the same SQL: listed with --removed as replaced.
  assert.match(all.stdout, new RegExp(`factory {2}- +"List the names of all genres\\." {2}SELECT name FROM genres {2}\\(replaced by ${id}\\)`));
  const rows = exported.stdout.trim().split('\n').map((l) => JSON.parse(l) as { id: number; db_id: string; source: string; questions: string[] });
  assert.equal(rows.length, 2);
  assert.ok(rows.every((r) => r.db_id === 'music_store'));
  assert.deepEqual(rows.find((r) => r.id === id)!.questions, ['Which music styles are sold?', 'List the names of all genres.']);
  assert.equal(csv.status, 2);
  const [removed, listed, again, abc] = await agroBatchAsync([
    ['memory', 'remove', ...m, String(id)],
    ['memory', 'list', ...m, '--source', 'person'],
    ['memory', 'remove', ...m, String(id)],
    ['memory', 'remove', ...m, 'abc'],
  ]);
  assert.equal(removed.status, 0, removed.stderr);
  assert.equal(listed.stdout, '');
  assert.equal(again.status, 3);
  assert.match(again.stderr, /no live pair/);
  assert.equal(abc.status, 2);
  assert.ok(existsSync(path));
});

test("addFactory: new queries appended, a factory query gains questions, a person's query is left as stored, in one change readers see", async () => {
  const path = join(tmp, 'grow.db');
  writeMemory(path, await buildMemory('music_store', introspectSchema(DB), PAIRS));
  const store = MemoryStore.open(path);
  try {
    const person = store.addPerson({ sql: 'SELECT title FROM albums', question: 'the album titles', at: new Date().toISOString() });
    const since = store.seq();
    const r = store.addFactory(
      [
        { sql: 'SELECT COUNT(*) FROM albums', questions: ['How many albums are there?'], source: 'factory' },
        { sql: PAIRS[0].sql, questions: [PAIRS[0].question, 'Count the customers.'], source: 'factory' },
        { sql: PAIRS[1].sql, questions: [PAIRS[1].question], source: 'factory' },
        { sql: 'SELECT title FROM albums', questions: ['List the album titles.'], source: 'factory' },
      ],
      { grow_rounds: '1' },
    );
    assert.deepEqual(r, { added: 1, merged: 1 });
    assert.equal(store.metaValue('grow_rounds'), '1');
    const live = store.snapshot().entries;
    assert.equal(live.length, 4);
    assert.equal(new Set(live.map((e) => e.sql)).size, 4, 'each query once');
    assert.deepEqual(live.find((e) => e.sql === PAIRS[0].sql)!.questions, [PAIRS[0].question, 'Count the customers.']);
    assert.deepEqual(live.find((e) => e.sql === 'SELECT title FROM albums'), { ...person, at: person.at });
    const ch = store.changes(since);
    assert.equal(ch.added.length, 2);
    assert.equal(ch.removed.length, 1, 'the merged pair replaces its old row');
    assert.throws(() => store.addFactory([], { schema: 'x' }), /store's own/);
  } finally {
    store.close();
  }
});
