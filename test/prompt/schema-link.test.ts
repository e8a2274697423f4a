import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { DbDocs } from '../../src/prompt/docs-types.ts';
import { groundedSchema } from '../../src/prompt/grounded.ts';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { linkSchema } from '../../src/prompt/schema-link.ts';
import { buildValueIndex } from '../../src/prompt/value-index.ts';
import { makeDb, tempDir } from '../sql/helpers.ts';

/** A small shop with cryptic names that only its documentation explains. */
const SHOP = `
  CREATE TABLE branch (br_id INTEGER PRIMARY KEY, city TEXT, mgr_nm TEXT, tot_rev REAL, stat_cd TEXT);
  CREATE TABLE EmpRecord (EmpId INTEGER PRIMARY KEY, FullName TEXT, HireDt TEXT, br_id INTEGER REFERENCES branch (br_id));
  CREATE TABLE supplier (sup_id INTEGER PRIMARY KEY, sup_name TEXT, region TEXT);
  CREATE TABLE delivery (del_id INTEGER PRIMARY KEY, br_id INTEGER REFERENCES branch (br_id), sup_id INTEGER REFERENCES supplier (sup_id), qty INTEGER);
  INSERT INTO branch VALUES (1, 'Greenford', 'Ada Moss', 120.5, 'OPN'), (2, 'Port Elizabeth', 'Ben Ode', 99, 'CLS'), (3, 'Lakeside', 'Cy Rao', 10, 'OPN');
  INSERT INTO EmpRecord VALUES (1, 'Dee Park', '2020-01-02', 1), (2, 'Eli Marsh', '2021-05-06', 2);
  INSERT INTO supplier VALUES (1, 'Northwind Mills', 'Highlands'), (2, 'Riverbend Farms', 'Lowlands');
  INSERT INTO delivery VALUES (1, 1, 1, 5), (2, 2, 2, 7);`;

const DOCS: DbDocs = {
  overview: 'Branches of a chain of shops, their staff and deliveries.',
  tables: [
    {
      table: 'branch',
      columns: [
        { column: 'tot_rev', name: 'total revenue', description: 'revenue of the branch over the year, in thousands' },
        { column: 'stat_cd', name: 'status code', values: { OPN: 'open for business', CLS: 'permanently closed', RNV: 'being reorganized' } },
        { column: 'mgr_nm', name: 'manager name' },
      ],
    },
  ],
};

function shop(): { path: string; cleanup: () => void } {
  const { dir, cleanup } = tempDir();
  return { path: makeDb(join(dir, 'shop.sqlite'), SHOP), cleanup };
}

test('linking: names split and abbreviations spelled out, documented names, code meanings and stored values rank tables and columns', () => {
  const { path, cleanup } = shop();
  try {
    const schema = introspectSchema(path);
    const index = buildValueIndex(path);
    // camelCase + abbreviation: "hire date" is HireDt, "employee" is EmpRecord.
    const l1 = linkSchema(schema, 'When was each employee hired? Give the hire date.', {});
    assert.equal(l1.tables[0].table, 'EmpRecord');
    assert.deepEqual(l1.tables[0].columns.find((c) => c.column === 'HireDt')?.why, ['name']);
    // A documented name: "total revenue" is tot_rev only through the documentation.
    const withDocs = linkSchema(schema, 'Which city has the highest total revenue?', { docs: DOCS });
    const without = linkSchema(schema, 'Which city has the highest total revenue?', {});
    const totRev = (l: typeof withDocs): number => l.tables.find((t) => t.table === 'branch')!.columns.find((c) => c.column === 'tot_rev')!.score;
    assert.ok(totRev(withDocs) > 0 && totRev(without) === 0);
    assert.equal(withDocs.tables[0].table, 'branch');
    // A code's documented meaning becomes a value hint with the code.
    const closed = linkSchema(schema, 'List the branches that are permanently closed', { docs: DOCS, index });
    assert.deepEqual(closed.values[0], { table: 'branch', column: 'stat_cd', value: 'CLS', score: 0.9, kind: 'meaning', meaning: 'permanently closed' });
    // British spelling of a documented meaning, and a typo in a documented name.
    const reorg = linkSchema(schema, 'Which branches are being reorganised?', { docs: DOCS, index });
    assert.deepEqual([reorg.values[0]?.value, reorg.values[0]?.kind], ['RNV', 'meaning']);
    const typo = linkSchema(schema, 'where is the revnue highest', { docs: DOCS });
    assert.deepEqual(typo.tables[0].columns.find((c) => c.column === 'tot_rev'), { column: 'tot_rev', score: 0.72, why: ['doc'] });
    // A stored value typed differently links its column and its table.
    const v = linkSchema(schema, 'deliveries from northwind mill', { index });
    assert.deepEqual(v.values[0] && [v.values[0].table, v.values[0].column, v.values[0].value, v.values[0].kind], ['supplier', 'sup_name', 'Northwind Mills', 'stem']);
    assert.deepEqual(v.tables.slice(0, 2).map((t) => t.table).sort(), ['delivery', 'supplier']);
    // Nothing matched: every table still listed, hubs first.
    const none = linkSchema(schema, 'hello there', { docs: DOCS, index });
    assert.equal(none.tables.length, 4);
    assert.equal(none.tables[0].table, 'branch');
    assert.deepEqual(none.values, []);
  } finally {
    cleanup();
  }
});

test('grounded schema of a small database: every table, documentation on its columns, the values line', () => {
  const { path, cleanup } = shop();
  try {
    const schema = introspectSchema(path);
    const index = buildValueIndex(path);
    const q = 'What is the total revenue of the greenford branch?';
    const text = groundedSchema(schema, q, { docs: DOCS, index, maxChars: 1800 });
    for (const t of ['branch', 'EmpRecord', 'supplier', 'delivery']) assert.match(text, new RegExp(`CREATE TABLE ${t} \\(`));
    assert.ok(text.startsWith('-- Branches of a chain of shops'), 'the overview first');
    assert.match(text, /^ {2}tot_rev REAL, -- total revenue; revenue of the branch over the year, in thousands; e\.g\. 10, 99$/m);
    assert.match(text, /^ {2}stat_cd TEXT, -- status code; e\.g\. 'OPN', 'CLS'$/m);
    assert.match(text, /^-- Values: branch\.city = 'Greenford'$/m);
    assert.ok(text.indexOf('CREATE TABLE branch') < text.indexOf('CREATE TABLE supplier'), 'best-linked first');
    assert.ok(text.length <= 1800);
    assert.equal(groundedSchema(schema, q, { docs: DOCS, index, maxChars: 1800 }), text, 'deterministic');
    // Documentation stays on its comment's line.
    const multiLine = groundedSchema(schema, q, { docs: { tables: [{ table: 'supplier', columns: [{ column: 'region', description: 'where the supplier\nis based' }] }] } });
    assert.match(multiLine, /^ {2}region TEXT, -- where the supplier is based; e\.g\. 'Highlands', 'Lowlands'$/m);
    // Without documentation or index: the same tables, no values line, no documentation.
    const plain = groundedSchema(schema, q, { maxChars: 1800 });
    assert.doesNotMatch(plain, /Values:|total revenue;/);
    assert.match(plain, /CREATE TABLE delivery/);
    // The quickstart's budget: still every table, on one line each, keys kept for the joins.
    const tight = groundedSchema(schema, q, { docs: DOCS, index, maxChars: 200 });
    assert.ok(tight.length <= 200, tight);
    for (const t of ['branch', 'EmpRecord', 'supplier', 'delivery']) assert.match(tight, new RegExp(`^${t}\\(`, 'm'), tight);
    assert.match(tight, /br_id -> branch\b/);
  } finally {
    cleanup();
  }
});

test('grounded schema of a large database: the linked tables first with their keys, the rest named, never empty', () => {
  const { dir, cleanup } = tempDir();
  try {
    const ddl: string[] = [];
    const topics = ['harbor', 'vessel', 'cargo', 'crew', 'berth', 'tide', 'pilot', 'tug', 'crane', 'warehouse', 'customs', 'invoice', 'fuel', 'inspection', 'route', 'weather', 'permit', 'agent', 'container', 'manifest', 'dock', 'gate', 'truck', 'rail', 'schedule', 'tariff', 'claim', 'insurer', 'repair', 'supplier'];
    topics.forEach((t, i) => {
      const fk = i > 0 ? `, ${topics[i - 1]}_id INTEGER REFERENCES ${topics[i - 1]} (${topics[i - 1]}_id)` : '';
      ddl.push(`CREATE TABLE ${t} (${t}_id INTEGER PRIMARY KEY, label TEXT, created_on TEXT, weight_kg REAL, notes TEXT, status TEXT${fk});`);
    });
    ddl.push(`INSERT INTO crane (crane_id, label, status) VALUES (1, 'Gantry Seven', 'Idle'), (2, 'Mobile Harbour Crane', 'Busy');`);
    const path = makeDb(join(dir, 'port.sqlite'), ddl.join('\n'));
    const schema = introspectSchema(path);
    const index = buildValueIndex(path);
    const q = 'Which cranes are idle, and what is the weight of each crane?';
    const text = groundedSchema(schema, q, { index, maxChars: 1800 });
    assert.ok(text.length <= 1800);
    const firstTable = /^(?:CREATE TABLE )?(\w+)/m.exec(text.replace(/^--.*\n/gm, ''))?.[1];
    assert.equal(firstTable, 'crane', text);
    assert.match(text, /crane\.status = 'Idle'/);
    // The crane's linked columns and its keys are shown; every table at least by name.
    assert.match(text, /^crane\(crane_id, label, created_on, weight_kg, notes, status, tug_id -> tug\)$/m);
    // Tighter: the best table keeps its linked columns and keys, the others their keys (joins) and linked columns.
    const mid = groundedSchema(schema, q, { index, maxChars: 900 });
    assert.ok(mid.length <= 900);
    assert.match(mid, /^crane\(crane_id, label, weight_kg, status, tug_id -> tug, …\)$/m, mid);
    assert.match(mid, /^warehouse\(warehouse_id, weight_kg, crane_id -> crane, …\)$/m, mid);
    assert.match(mid, /crane\.status = 'Idle'/);
    for (const t of topics) assert.match(text, new RegExp(`\\b${t}\\b`), `${t} named`);
    // Smaller and smaller budgets: never empty, the best table always there.
    for (const n of [600, 200, 80, 30, 1]) {
      const s = groundedSchema(schema, q, { index, maxChars: n });
      assert.match(s, /\bcrane\b/, `budget ${n}: ${s}`);
      if (n >= 30) assert.ok(s.length <= n, `budget ${n}: ${s.length}`);
    }
  } finally {
    cleanup();
  }
});
