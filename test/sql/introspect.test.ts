import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { AgroError } from '../../src/errors.ts';
import { affinityOf, introspectSchema } from '../../src/sql/introspect.ts';
import { quoteIdent } from '../../src/sql/lexer.ts';
import { renderSchema } from '../../src/prompt/render.ts';
import type { DbSchema, Table } from '../../src/sql/types.ts';
import { makeDb, tempDir } from './helpers.ts';

const tmp = tempDir();
const DB = join(tmp.dir, 'shop.db');
const LONG = 'a long note '.repeat(10); // 120 characters
let schema: DbSchema;

before(() => {
  makeDb(
    DB,
    `CREATE TABLE "customer list" (
       id INTEGER PRIMARY KEY,
       "full name" TEXT NOT NULL,
       "select" VARCHAR(20),
       "naïve ünïcode" REAL,
       "quote""d" NUMERIC,
       photo BLOB,
       untyped,
       manager_id INTEGER REFERENCES "customer list"(id)
     );
     CREATE TABLE orders (
       customer_id INTEGER NOT NULL,
       order_no INTEGER NOT NULL,
       total DOUBLE,
       PRIMARY KEY (customer_id, order_no),
       FOREIGN KEY (customer_id) REFERENCES "customer list"(id)
     );
     CREATE TABLE order_lines (
       customer_id INTEGER, order_no INTEGER, line INTEGER, note TEXT,
       PRIMARY KEY (customer_id, order_no, line),
       FOREIGN KEY (customer_id, order_no) REFERENCES orders
     ) WITHOUT ROWID;
     CREATE VIEW big_orders AS SELECT customer_id, total FROM orders WHERE total > 10;
     CREATE TABLE nums (n INTEGER);
     INSERT INTO "customer list" VALUES
       (1, 'Ann', 'x', 1.5, 1, x'0102', NULL, NULL),
       (2, 'Bob', 'x', NULL, NULL, NULL, 'z', 1),
       (3, 'Cy', 'y', 2.5, NULL, x'03', NULL, 1);
     INSERT INTO orders VALUES (1, 1, 5.0), (1, 2, 20.0), (2, 1, 30.0);
     INSERT INTO order_lines VALUES (1, 1, 1, '${LONG}'), (1, 1, 2, NULL);
     WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 10) INSERT INTO nums SELECT x FROM r;`,
  );
  schema = introspectSchema(DB);
});

after(() => tmp.cleanup());

function table(name: string): Table {
  const t = schema.tables.find((x) => x.name === name);
  assert.ok(t, `table ${name}`);
  return t;
}

test('tables and views in name order, dbId from the file name', () => {
  assert.equal(schema.dbId, 'shop');
  assert.deepEqual(
    schema.tables.map((t) => [t.name, t.kind, t.rowCount]),
    [
      ['big_orders', 'view', 2],
      ['customer list', 'table', 3],
      ['nums', 'table', 10],
      ['order_lines', 'table', 2],
      ['orders', 'table', 3],
    ],
  );
});

test('columns: odd names, declared types, SQLite affinity, NOT NULL, primary key positions', () => {
  const c = table('customer list');
  assert.deepEqual(
    c.columns.map((x) => [x.name, x.type, x.affinity, x.notNull, x.pk]),
    [
      ['id', 'INTEGER', 'INTEGER', false, 1],
      ['full name', 'TEXT', 'TEXT', true, 0],
      ['select', 'VARCHAR(20)', 'TEXT', false, 0],
      ['naïve ünïcode', 'REAL', 'REAL', false, 0],
      ['quote"d', 'NUMERIC', 'NUMERIC', false, 0],
      ['photo', 'BLOB', 'BLOB', false, 0],
      ['untyped', '', 'BLOB', false, 0],
      ['manager_id', 'INTEGER', 'INTEGER', false, 0],
    ],
  );
  assert.deepEqual(c.primaryKey, ['id']);
  assert.deepEqual(table('orders').primaryKey, ['customer_id', 'order_no']);
  assert.deepEqual(table('order_lines').primaryKey, ['customer_id', 'order_no', 'line']);
  assert.deepEqual(table('big_orders').primaryKey, []);
  assert.deepEqual(['FLOATING POINT', 'DOUBLE', 'DECIMAL(10,2)', 'CHARINT', 'BOOLEAN'].map(affinityOf), ['INTEGER', 'REAL', 'NUMERIC', 'INTEGER', 'NUMERIC']);
});

test('foreign keys: self reference, composite key, implicit parent primary key', () => {
  assert.deepEqual(table('customer list').foreignKeys, [
    { fromTable: 'customer list', fromColumns: ['manager_id'], toTable: 'customer list', toColumns: ['id'], inferred: false },
  ]);
  assert.deepEqual(table('orders').foreignKeys, [
    { fromTable: 'orders', fromColumns: ['customer_id'], toTable: 'customer list', toColumns: ['id'], inferred: false },
  ]);
  assert.deepEqual(table('order_lines').foreignKeys, [
    { fromTable: 'order_lines', fromColumns: ['customer_id', 'order_no'], toTable: 'orders', toColumns: ['customer_id', 'order_no'], inferred: false },
  ]);
});

test('column statistics: nulls, distinct, min, max, most frequent samples; long strings cut; blobs summarized', () => {
  const c = table('customer list');
  const stats = (name: string) => c.columns.find((x) => x.name === name)!.stats;
  assert.deepEqual(stats('select'), { nullCount: 0, distinctCount: 2, min: 'x', max: 'y', samples: ['x', 'y'] });
  assert.deepEqual(stats('naïve ünïcode'), { nullCount: 1, distinctCount: 2, min: 1.5, max: 2.5, samples: [1.5, 2.5] });
  // Blobs compare with memcmp: x'0102' < x'03'.
  assert.deepEqual(stats('photo'), { nullCount: 1, distinctCount: 2, min: '<blob 2 bytes>', max: '<blob 1 bytes>', samples: ['<blob 2 bytes>', '<blob 1 bytes>'] });
  assert.deepEqual(stats('untyped'), { nullCount: 2, distinctCount: 1, min: 'z', max: 'z', samples: ['z'] });
  const note = table('order_lines').columns.find((x) => x.name === 'note')!.stats;
  assert.equal(note.samples[0], `${LONG.slice(0, 60)}…`);
  assert.equal(note.nullCount, 1);
});

test('above statsRowLimit, counts stay exact but statistics come from the first rows', () => {
  const s = introspectSchema(DB, { statsRowLimit: 4, samples: 2 });
  const nums = s.tables.find((t) => t.name === 'nums')!;
  assert.equal(nums.rowCount, 10);
  assert.deepEqual(nums.columns[0].stats, { nullCount: 0, distinctCount: 4, min: 1, max: 4, samples: [1, 2] });
});

test('quoteIdent makes any name usable in SQL', () => {
  assert.equal(quoteIdent('quote"d'), '"quote""d"');
  const db = new Database(DB, { readonly: true });
  for (const col of table('customer list').columns) {
    assert.doesNotThrow(() => db.prepare(`SELECT ${quoteIdent(col.name)} FROM ${quoteIdent('customer list')}`).all(), col.name);
  }
  db.close();
});

test('a missing file is not_found; a garbage file is invalid_input', () => {
  assert.throws(() => introspectSchema(join(tmp.dir, 'nope.sqlite')), (e: unknown) => e instanceof AgroError && e.kind === 'not_found');
  const garbage = join(tmp.dir, 'garbage.sqlite');
  writeFileSync(garbage, 'not a database at all '.repeat(100));
  assert.throws(() => introspectSchema(garbage), (e: unknown) => e instanceof AgroError && e.kind === 'invalid_input');
});

test('render: DDL with keys and samples, stable under table order', () => {
  const text = renderSchema(schema);
  const lines = text.split('\n');
  for (const expected of [
    'CREATE TABLE "customer list" (',
    "  \"full name\" TEXT NOT NULL, -- e.g. 'Ann', 'Bob', 'Cy'",
    '  "select" VARCHAR(20), -- e.g. \'x\', \'y\'',
    '  photo BLOB, -- e.g. <blob 2 bytes>, <blob 1 bytes>',
    '  PRIMARY KEY (id),',
    '  FOREIGN KEY (manager_id) REFERENCES "customer list" (id)',
    '  PRIMARY KEY (customer_id, order_no),',
    '  FOREIGN KEY (customer_id, order_no) REFERENCES orders (customer_id, order_no)',
    'CREATE VIEW big_orders (',
    '-- 3 rows',
  ]) {
    assert.ok(lines.includes(expected), `missing line: ${expected}\n${text}`);
  }
  const shuffled = { ...schema, tables: [...schema.tables].reverse() };
  assert.equal(renderSchema(shuffled), text);
});

test('render within a budget: samples go first, then columns of the least-connected tables; whole lines only', () => {
  const full = renderSchema(schema);
  const noSamples = renderSchema(schema, { samples: 0 });
  assert.ok(noSamples.length < full.length);
  assert.equal(renderSchema(schema, { maxChars: noSamples.length }), noSamples, 'dropping samples was enough');
  const tighter = renderSchema(schema, { maxChars: noSamples.length - 1 });
  assert.ok(tighter.length <= noSamples.length - 1);
  // big_orders (a view, no keys) is the least connected, so its columns go first; order_lines keeps its note.
  assert.match(tighter, /CREATE VIEW big_orders \(\n {2}-- … 2 more columns\n\);/);
  assert.match(tighter, /^ {2}note TEXT,$/m);
  const allowed = new Set([0, 1, 2, 3].flatMap((k) => renderSchema(schema, { samples: k }).split('\n')));
  for (const budget of [2000, 1200, 800, 500, 300, 120, 40, 10]) {
    const out = renderSchema(schema, { maxChars: budget });
    assert.ok(out.length <= budget, `${out.length} > ${budget}`);
    assert.equal(renderSchema(schema, { maxChars: budget }), out, 'deterministic');
    for (const line of out.split('\n')) {
      if (line === '') continue;
      assert.ok(allowed.has(line) || /^ {2}-- … \d+ more columns?$/.test(line) || /^-- … \d+ more tables? not shown$/.test(line), `unexpected line at ${budget}: ${line}`);
    }
  }
  const words = (s: string) => s.split(/\s+/).filter(Boolean).length;
  const byTokens = renderSchema(schema, { maxTokens: 60, countTokens: words });
  assert.ok(words(byTokens) <= 60 && words(byTokens) > 0);
});
