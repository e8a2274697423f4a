import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import Database from 'better-sqlite3';
import { AgroError } from '../../src/errors.ts';
import { buildValueIndex, type ValueMatch } from '../../src/prompt/value-index.ts';
import { makeDb, tempDir } from '../sql/helpers.ts';

v8.setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const top = (ms: ValueMatch[]): string => (ms[0] ? `${ms[0].table}.${ms[0].column}=${ms[0].value} ${ms[0].kind}` : 'none');

test('small database: exact, other case, accents, stemmed, typo, joined words, part of a value; ranked; fast', (t) => {
  const { dir, cleanup } = tempDir();
  try {
    const path = makeDb(
      join(dir, 'shop.sqlite'),
      `CREATE TABLE store (id INTEGER PRIMARY KEY, city TEXT, kind TEXT, phone TEXT, blurb TEXT);
       INSERT INTO store VALUES
         (1, 'Saint-Étienne', 'Bakery', '555-0101', '${'x'.repeat(80)}'),
         (2, 'Port Elizabeth', 'Bookshop', '555-0102', '${'y'.repeat(80)}'),
         (3, 'Port Elizabeth', 'Flower Market', '555-0103', '${'z'.repeat(80)}'),
         (4, 'Greenford', 'Hardware', '555-0104', NULL),
         (5, 'Lakeside', 'Closed Down', '555-0105', NULL);
       CREATE TABLE product (id INTEGER PRIMARY KEY, store_id INTEGER, title TEXT, price REAL);
       INSERT INTO product VALUES (1, 1, 'Rye Loaf', 3.5), (2, 2, 'Atlas of Birds', 20), (3, 3, 'Tulips', 7), (4, 4, 'hammer', 12);
       CREATE TABLE machine (name TEXT);
       INSERT INTO machine VALUES ('Sorter-4'), ('Sorter-12'), ('Packer-3');`,
    );
    const idx = buildValueIndex(path);
    const st = idx.stats();
    assert.deepEqual(
      st.skipped.map((s) => `${s.table}.${s.column}:${s.reason}`),
      ['product.id:not text', 'product.store_id:not text', 'product.price:not text', 'store.id:not text', 'store.phone:codes', 'store.blurb:free text'],
      'names with a number are values (machine.name), phone numbers are codes',
    );
    assert.equal(top(idx.lookup('stores in Greenford')), 'store.city=Greenford exact');
    assert.equal(idx.lookup('stores in Greenford')[0].score, 1);
    assert.equal(top(idx.lookup('who sells a HAMMER')), 'product.title=hammer folded');
    assert.equal(top(idx.lookup('shops in saint etienne')), 'store.city=Saint-Étienne folded');
    assert.equal(top(idx.lookup('where can I buy tulip')), 'product.title=Tulips stem');
    assert.equal(top(idx.lookup('bakeries')), 'store.kind=Bakery stem');
    assert.equal(top(idx.lookup('stores in Greenfrod')), 'store.city=Greenford fuzzy');
    assert.equal(top(idx.lookup('the atlas of birdz')), 'product.title=Atlas of Birds fuzzy');
    assert.equal(top(idx.lookup('stores that were closeddown')), 'none', 'a typo joining two words is not looked for');
    assert.equal(top(idx.lookup('stores in elizabeth')), 'store.city=Port Elizabeth partial');
    assert.equal(top(idx.lookup('what does sorter-4 do')), 'machine.name=Sorter-4 folded');
    assert.equal(top(idx.lookup('how many stores are there')), 'none', 'no cell is mentioned');
    // Ranking: typed as stored beats another case beats a stem beats part of a value.
    const r = idx.lookup('Flower market or the flowers of Port Elizabeth');
    assert.deepEqual(r.map((m) => `${m.value}/${m.kind}`).slice(0, 2), ['Port Elizabeth/exact', 'Flower Market/folded']);
    for (let i = 1; i < r.length; i++) assert.ok(r[i - 1].score >= r[i].score);
    // Speed: the quickstart asks once per question.
    const qs = ['stores in Greenfrod', 'who sells a HAMMER', 'the atlas of birdz', 'bakeries in lakeside', 'how many products cost more than 10'];
    const t0 = performance.now();
    for (let i = 0; i < 2000; i++) idx.lookup(qs[i % qs.length]);
    const perQuery = (performance.now() - t0) / 2000;
    t.diagnostic(`lookup on a small database: ${perQuery.toFixed(3)} ms per question`);
    assert.ok(perQuery < 1, `${perQuery} ms per question`);
  } finally {
    cleanup();
  }
});

test('a table of 1,000,000 rows: bounded memory, capped values per column, and values typed differently are found', (t) => {
  const { dir, cleanup } = tempDir();
  try {
    const path = join(dir, 'plants.sqlite');
    const db = new Database(path);
    db.exec(`
      CREATE TABLE w1 (k INTEGER PRIMARY KEY, w TEXT); CREATE TABLE w2 (k INTEGER PRIMARY KEY, w TEXT);
      INSERT INTO w1 (w) VALUES ('North'), ('South'), ('Upper'), ('Lower'), ('Old'), ('Green'), ('Silver'), ('Stony'), ('Quiet'), ('Windy');
      INSERT INTO w2 (w) VALUES ('Meadow Ridge'), ('Harbor'), ('Creek'), ('Hollow'), ('Pines'), ('Lake Shore'), ('Falls'), ('Crossing'), ('Heights'), ('Valley'), ('Marsh'), ('Bluff');
      CREATE TABLE plant (id INTEGER PRIMARY KEY, region TEXT, status TEXT, code TEXT, owner TEXT, note TEXT, capacity REAL);
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000)
      INSERT INTO plant SELECT i,
        (SELECT w FROM w1 WHERE w1.k = 1 + i % 10) || ' ' || (SELECT w FROM w2 WHERE w2.k = 1 + (i / 10) % 12),
        CASE i % 7 WHEN 0 THEN 'Shutdown' WHEN 1 THEN 'Under Construction' WHEN 2 THEN 'Planned' ELSE 'Operational' END,
        'C' || i,
        'Owner ' || char(65 + i % 26) || char(97 + (i / 26) % 26) || char(97 + (i / 676) % 26) || char(97 + (i / 17576) % 26),
        'A long free text note about this plant that nobody would type into a question, number ' || i,
        i * 0.5
      FROM n;
      DROP TABLE w1; DROP TABLE w2;`);
    db.close();
    gc();
    const before = process.memoryUsage();
    const t0 = performance.now();
    const idx = buildValueIndex(path, { maxValuesPerColumn: 5000 });
    const buildMs = performance.now() - t0;
    gc();
    const after = process.memoryUsage();
    const heapMb = (after.heapUsed - before.heapUsed) / 2 ** 20;
    const rssMb = (after.rss - before.rss) / 2 ** 20;
    const st = idx.stats();
    t.diagnostic(`1M rows: built in ${buildMs.toFixed(0)} ms, heap +${heapMb.toFixed(1)} MiB, RSS +${rssMb.toFixed(1)} MiB, ${st.values} values, ${st.tokens} tokens`);
    // 120 regions + 4 statuses + 5000 of the ~457,000 distinct owners; codes and notes skipped.
    assert.equal(st.values, 120 + 4 + 5000);
    assert.deepEqual(st.skipped.filter((s) => s.reason !== 'not text').map((s) => `${s.column}:${s.reason}`), ['code:codes', 'note:free text']);
    assert.ok(heapMb < 16, `heap grew ${heapMb} MiB`);
    assert.ok(rssMb < 128, `RSS grew ${rssMb} MiB`);
    assert.equal(top(idx.lookup('which plants are OPERATIONAL')), 'plant.status=Operational folded');
    assert.equal(top(idx.lookup('plants that are planning')), 'plant.status=Planned stem');
    assert.equal(top(idx.lookup('plants in upper medow ridge')), 'plant.region=Upper Meadow Ridge fuzzy');
    assert.equal(top(idx.lookup('plants that were shut down')), 'plant.status=Shutdown folded');
    const lake = idx.lookup('plants near the lake shore', { limit: 20 });
    assert.deepEqual(lake.slice(0, 10).map((m) => `${m.column}:${m.value.split(' ').slice(1).join(' ')}:${m.kind}`), Array(10).fill('region:Lake Shore:partial'), 'every region with the phrase first');
    // A smaller total cap is shared between the columns.
    const small = buildValueIndex(path, { maxValues: 300 });
    assert.equal(small.stats().values, 100 + 4 + 100);
  } finally {
    cleanup();
  }
});

test('a missing or unreadable database is a one-line AgroError', () => {
  const { dir, cleanup } = tempDir();
  try {
    assert.throws(() => buildValueIndex(join(dir, 'none.sqlite')), (e: unknown) => e instanceof AgroError && e.exitCode === 3);
  } finally {
    cleanup();
  }
});
