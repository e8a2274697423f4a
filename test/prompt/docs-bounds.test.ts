import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DOC_FIELD_MAX_CHARS, parseBirdCsv, readDocs } from '../../src/prompt/docs.ts';

const HEADER = 'original_column_name,column_name,column_description,data_format,value_description\n';

test('documentation: a field longer than DOC_FIELD_MAX_CHARS is cut, the rows after it still read', () => {
  const long = 'x'.repeat(DOC_FIELD_MAX_CHARS * 3);
  const doc = parseBirdCsv('t', `${HEADER}a,,"${long}",text,\nb,Bee name,the bee,text,`, 't.csv');
  assert.equal(doc.columns.length, 2);
  const d = doc.columns[0].description ?? '';
  assert.ok(d.length <= DOC_FIELD_MAX_CHARS + 2 && d.startsWith('xxxx') && d.endsWith('…'), `${d.length} characters`);
  assert.deepEqual(doc.columns[1], { column: 'b', name: 'Bee name', description: 'the bee' });
});

test('documentation: a file is read in pieces, UTF-8 split across them and Windows-1252 alike', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agro-docs-'));
  try {
    // A two-byte character straddles the 1 MiB read boundary; a field spans lines.
    const pad = 'p'.repeat((1 << 20) - HEADER.length - 'z,,,\na,,"'.length - 1);
    writeFileSync(join(dir, 'u.csv'), `${HEADER}z,,,${pad}\na,,"é and more\nlines",text,\nb,,café,text,`);
    assert.equal(Buffer.from(`${HEADER}z,,,${pad}\na,,"`).length, (1 << 20) - 1);
    const u = readDocs(join(dir, 'u.csv')).tables[0];
    assert.ok(u.columns[0].description?.includes('é and more lines'));
    assert.equal(u.columns[1].description, 'café');
    writeFileSync(join(dir, 'w.csv'), Buffer.concat([Buffer.from(`\uFEFF${HEADER}b,,caf`), Buffer.from([0xe9]), Buffer.from(',text,\n')]));
    assert.throws(() => readDocs(join(dir, 'w.csv')), /its header has no original_column_name/, 'a BOM then Windows-1252: not UTF-8, as before');
    writeFileSync(join(dir, 'w.csv'), Buffer.concat([Buffer.from(`${HEADER}b,,caf`), Buffer.from([0xe9]), Buffer.from(',text,\n')]));
    assert.equal(readDocs(join(dir, 'w.csv')).tables[0].columns[0].description, 'café');
    writeFileSync(join(dir, 'bad.csv'), `${HEADER}a,,"never closed`);
    assert.throws(() => readDocs(join(dir, 'bad.csv')), /bad\.csv: not a readable CSV file \(Quote Not Closed/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Runs in a child so its peak resident memory is its own: the peak rise while reading, in bytes, and what was read. */
const CHILD = `
import { readDocs } from ${JSON.stringify(resolve('src/prompt/docs.ts'))};
const before = process.resourceUsage().maxRSS;
const docs = readDocs(process.argv[1]);
const rise = (process.resourceUsage().maxRSS - before) * 1024;
console.log(JSON.stringify({ rise, columns: docs.tables[0].columns.map((c) => [c.column, (c.description ?? '').length]) }));
`;

test('documentation: one 50 MB field reads in a small multiple of the file (peak memory measured in a child)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agro-docs-'));
  try {
    const path = join(dir, 'big.csv');
    const fd = openSync(path, 'w');
    writeSync(fd, `${HEADER}a,,"`);
    const piece = 'the same words again, '.repeat(50_000);
    for (let n = 0; n < 50; n++) writeSync(fd, piece);
    writeSync(fd, '",text,\nb,,small,text,\n');
    closeSync(fd);
    const size = statSync(path).size;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD, path], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(child.status, 0, child.stderr);
    const { rise, columns } = JSON.parse(child.stdout) as { rise: number; columns: [string, number][] };
    assert.deepEqual(columns.map(([c]) => c), ['a', 'b']);
    assert.ok(columns[0][1] <= DOC_FIELD_MAX_CHARS + 2, `the long field kept ${columns[0][1]} characters`);
    // ~3.5 times the file now (the parser's growing field buffer, then the field as a string); before the streaming
    // read and the cap, 47 times (2,471 MiB for this 52 MiB file: read whole, decoded, parsed, copied by each cleaning step).
    assert.ok(rise < 6 * size, `peak rose ${(rise / 2 ** 20).toFixed(0)} MiB reading a ${(size / 2 ** 20).toFixed(0)} MiB file`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
