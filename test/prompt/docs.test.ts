import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AgroError } from '../../src/errors.ts';
import { docsLookup, findDocs, parseValueDescription, readDocs, readDocsWithFormat } from '../../src/prompt/docs.ts';
import { makeDb, tempDir } from '../sql/helpers.ts';

const HEADER = 'original_column_name,column_name,column_description,data_format,value_description\n';

/** A BIRD-style description folder with the quirks of the real one: BOM, Windows-1252, trailing spaces, multi-line fields, a 4-field header, macOS junk. */
function birdFolder(dir: string): string {
  const d = join(dir, 'database_description');
  mkdirSync(d, { recursive: true });
  writeFileSync(
    join(d, 'vessel.csv'),
    '\uFEFF' +
      HEADER +
      'vessel_id ,,vessel_id,integer,\n' +
      'hull_cls,hull class,the class of the hull,text,"commonsense evidence:\n• MT: motor tanker\n• BC: bulk carrier"\n' +
      'dwt,dead weight tonnage,,real,the higher the heavier\n' +
      'draft,,depth below the waterline commonsense evidence: deeper needs a deeper berth,real,\n' +
      'built,,,integer,not useful\n',
  );
  // Windows-1252: é is one byte (0xE9), not valid UTF-8.
  writeFileSync(join(d, 'Port.csv'), Buffer.from('original_column_name,column_name,column_description,value_description\r\nportName,port name,name of the port (café district),\r\n', 'latin1'));
  writeFileSync(join(d, '._vessel.csv'), Buffer.from([0, 5, 22, 7, 0, 2, 0, 0, 0x4d, 0x61]));
  return d;
}

const TABLES = [
  {
    db_id: 'harbour',
    table_names_original: ['Vessel', 'berth_log'],
    table_names: ['vessel', 'log of berthings'],
    column_names_original: [[-1, '*'], [0, 'VesselId'], [0, 'HullCls'], [0, 'FlagSt'], [1, 'VesselId'], [1, 'ArrTS']],
    column_names: [[-1, '*'], [0, 'vessel id'], [0, 'hull cls'], [0, 'flag st'], [1, 'vessel id'], [1, 'arr ts']],
    column_names_manually_normalized_alternative: [[-1, '*'], [0, 'vessel id'], [0, 'hull class'], [0, 'flag state'], [1, 'vessel id'], [1, 'arrival time stamp']],
    column_descriptions: ['*', 'vessel id', 'the class of hull', 'state whose flag the vessel flies', '', 'when the vessel arrived'],
    value_enums: { HullCls: { MT: 'Motor Tanker', BC: 'Bulk Carrier' } },
    db_overview: 'Ships calling at a harbour.',
    column_types: ['text', 'number', 'text', 'text', 'number', 'time'],
    foreign_keys: [[4, 1]],
    primary_keys: [1],
  },
  {
    db_id: 'orchard',
    table_names_original: ['tree'],
    table_names: ['tree'],
    column_names_original: [[-1, '*'], [0, 'id']],
    column_names: [[-1, '*'], [0, 'id']],
    column_types: ['text', 'number'],
    foreign_keys: [],
    primary_keys: [],
  },
];

function errorOf(fn: () => unknown): AgroError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof AgroError, `expected an AgroError, got ${String(err)}`);
    assert.ok(!err.message.includes('\n'));
    return err;
  }
  assert.fail('expected an error');
}

test('BIRD: BOM, Windows-1252, trailing spaces, 4-field headers, multi-line value lists, macOS junk files', () => {
  const { dir, cleanup } = tempDir();
  try {
    const { docs, format } = readDocsWithFormat(birdFolder(dir));
    assert.equal(format, 'bird');
    assert.deepEqual(docs.tables.map((t) => t.table), ['Port', 'vessel']);
    const look = docsLookup(docs);
    // The BOM is not part of the first header; the trailing space is not part of the column; a description that repeats the name is dropped.
    assert.equal(look.column('vessel', 'vessel_id'), undefined);
    assert.deepEqual(look.column('VESSEL', 'hull_cls'), { column: 'hull_cls', name: 'hull class', description: 'the class of the hull', values: { MT: 'motor tanker', BC: 'bulk carrier' } });
    assert.deepEqual(look.column('vessel', 'dwt'), { column: 'dwt', name: 'dead weight tonnage', description: 'Values: the higher the heavier' });
    assert.equal(look.column('vessel', 'built'), undefined, '"not useful" says nothing');
    assert.equal(look.column('vessel', 'draft')?.description, 'depth below the waterline. deeper needs a deeper berth');
    assert.equal(look.column('port', 'portname')?.description, 'name of the port (café district)');
    // The folder holding database_description/ reads the same.
    assert.deepEqual(readDocs(dir), docs);
  } finally {
    cleanup();
  }
});

test('value descriptions: code lists in their several spellings, prose kept as a note', () => {
  assert.deepEqual(parseValueDescription('0: No\n1: Yes'), { values: { 0: 'No', 1: 'Yes' } });
  assert.deepEqual(parseValueDescription('"A" = active; "R" = retired'), { values: { A: 'active', R: 'retired' } });
  assert.deepEqual(parseValueDescription('S: small, L: large'), { values: { S: 'small', L: 'large' } });
  assert.deepEqual(parseValueDescription('Note: counted in metres'), { note: 'Note: counted in metres' });
  assert.deepEqual(parseValueDescription('useless'), {});
  // "commonsense evidence:" after a list, or before bullets, only separates.
  assert.deepEqual(parseValueDescription('0: closed\n1: open\ncommonsense evidence: 1 means it takes visitors'), { values: { 0: 'closed', 1: 'open' }, note: '1 means it takes visitors' });
  assert.deepEqual(parseValueDescription('Commonsense evidence:\n- Usual range: 3 < N < 9'), { note: 'Usual range: 3 < N < 9' });
});

test('tables.json: normalized names, descriptions, value_enums by column, overview; the entry picked by db_id', () => {
  const { dir, cleanup } = tempDir();
  try {
    const path = join(dir, 'tables.json');
    writeFileSync(path, JSON.stringify(TABLES));
    const docs = readDocs(path, 'harbour');
    assert.equal(docs.overview, 'Ships calling at a harbour.');
    const look = docsLookup(docs);
    assert.equal(look.table('berth_log')?.name, 'log of berthings');
    assert.equal(look.table('Vessel')?.name, undefined, 'same words as the table');
    assert.deepEqual(look.column('Vessel', 'HullCls'), { column: 'HullCls', name: 'hull class', description: 'the class of hull', values: { MT: 'Motor Tanker', BC: 'Bulk Carrier' } });
    assert.deepEqual(look.column('Vessel', 'FlagSt'), { column: 'FlagSt', name: 'flag state', description: 'state whose flag the vessel flies' });
    assert.deepEqual(look.column('berth_log', 'ArrTS'), { column: 'ArrTS', name: 'arrival time stamp', description: 'when the vessel arrived' });
    assert.equal(look.column('Vessel', 'VesselId'), undefined, 'nothing beyond its name');
    assert.equal(errorOf(() => readDocs(path)).exitCode, 2, 'several entries and no db_id');
    assert.equal(errorOf(() => readDocs(path, 'nowhere')).exitCode, 3);
    assert.deepEqual(readDocs(path, 'orchard'), { tables: [{ table: 'tree', columns: [] }] });
  } finally {
    cleanup();
  }
});

test("agro's own JSON is validated by dbDocsSchema", () => {
  const { dir, cleanup } = tempDir();
  try {
    const good = join(dir, 'a.json');
    writeFileSync(good, JSON.stringify({ overview: 'Trees.', tables: [{ table: 'tree', columns: [{ column: 'ht', name: 'height', values: { T: 'tall' } }] }] }));
    const r = readDocsWithFormat(good);
    assert.equal(r.format, 'agro');
    assert.equal(r.docs.tables[0].columns[0].name, 'height');
    const bad = join(dir, 'b.json');
    writeFileSync(bad, JSON.stringify({ tables: [{ table: 'tree', columns: [{ name: 'no column' }] }] }));
    const e = errorOf(() => readDocs(bad));
    assert.equal(e.exitCode, 4);
    assert.match(e.message, /b\.json: tables\.0\.columns\.0\.column/);
    writeFileSync(bad, '{ not json');
    assert.equal(errorOf(() => readDocs(bad)).exitCode, 4);
    assert.equal(errorOf(() => readDocs(join(dir, 'missing.json'))).exitCode, 3);
    const csv = join(dir, 'tree.csv');
    writeFileSync(csv, 'col,meaning\nht,height\n');
    assert.equal(errorOf(() => readDocs(csv)).exitCode, 4, 'a CSV without the BIRD header');
  } finally {
    cleanup();
  }
});

test('findDocs: <db>.docs.json, database_description/, tables.json up to two folders up with the db_id; none is undefined', () => {
  const { dir, cleanup } = tempDir();
  try {
    const ddl = 'CREATE TABLE t (a TEXT);';
    // Spider/KaggleDBQA layout: <root>/tables.json and <root>/database/harbour/harbour.sqlite
    mkdirSync(join(dir, 'database', 'harbour'), { recursive: true });
    writeFileSync(join(dir, 'tables.json'), JSON.stringify(TABLES));
    const harbour = makeDb(join(dir, 'database', 'harbour', 'harbour.sqlite'), ddl);
    const found = findDocs(harbour);
    assert.equal(found?.format, 'spider');
    assert.equal(found?.path, join(dir, 'tables.json'));
    assert.equal(found?.docs.overview, 'Ships calling at a harbour.');
    // A database tables.json does not document: nothing.
    mkdirSync(join(dir, 'database', 'other'));
    assert.equal(findDocs(makeDb(join(dir, 'database', 'other', 'other.sqlite'), ddl)), undefined);
    // BIRD layout.
    mkdirSync(join(dir, 'bird', 'ships'), { recursive: true });
    birdFolder(join(dir, 'bird', 'ships'));
    const b = findDocs(makeDb(join(dir, 'bird', 'ships', 'ships.sqlite'), ddl));
    assert.equal(b?.format, 'bird');
    // agro's own beside the file wins over the rest.
    writeFileSync(join(dir, 'bird', 'ships', 'ships.docs.json'), JSON.stringify({ overview: 'Own.' }));
    const o = findDocs(join(dir, 'bird', 'ships', 'ships.sqlite'));
    assert.equal(o?.format, 'agro');
    assert.deepEqual(o?.docs, { overview: 'Own.', tables: [] });
  } finally {
    cleanup();
  }
});
