// Issue #35, the CLI's bad input: each case runs the real CLI (`node bin/agro.js ...`, or its main() with the
// cases of a table in one process: test/support/cli-batch.ts) and holds the contract of test/adversarial/support.ts
// (one `agro:` line, the documented exit code).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { agro, assertOneLine, DB_ROOT, DEV, MUSIC, tempDir } from '../adversarial/support.ts';
import Database from 'better-sqlite3';
import { saveTinyCheckpoint } from '../support/tiny-checkpoint.ts';
import { agroBatch } from '../support/cli-batch.ts';

const tmp = tempDir();
after(() => tmp.cleanup());
/** A real (tiny, untrained) checkpoint: the commands below would run it. */
const ck = join(tmp.dir, 'ck');
/** The first 20,000 bytes of a real database: its header says it is longer. */
const truncated = join(tmp.dir, 'truncated.sqlite');

before(async () => {
  await saveTinyCheckpoint(ck, ['SELECT name FROM artists', 'music store'], { maxPositions: 2048 });
  writeFileSync(truncated, readFileSync(MUSIC).subarray(0, 20_000));
});

test('a device, a FIFO or a directory as a dataset is refused at once (exit 4) by sft, train, eval --gold and export', () => {
  const fifo = join(tmp.dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const out = join(tmp.dir, 'out');
  for (const input of ['/dev/zero', fifo]) {
    // Before: /dev/zero was read until memory ran out; a FIFO without a writer hung.
    const runs = agroBatch([
      ['sft', '--data', input, '--out', out],
      ['eval', '--gold', '--data', input],
      ['export', '--format', 'trl', '--data', input, '--db-root', DB_ROOT, '--out', out],
      ['train', '--data', input, '--out', out, '--init', join(tmp.dir, 'no-checkpoint')],
      ['train', '--data', DEV, '--out', out, '--config', input],
      ['predict', '--policy', ck, '--data', input, '--out', out],
    ], { timeoutMs: 60_000 });
    for (const r of runs) assertOneLine(r, 4, /path is not a regular file \(a device, FIFO or socket\)/);
  }
  assertOneLine(agro(['eval', '--gold', '--data', tmp.dir]), 4, /data path is a directory, not a file/);
});

test('a memory file that is no store or memory.json, a device, a FIFO or a directory is one line and exit 4 (agro memory show), never read without end', () => {
  const fifo = join(tmp.dir, 'memory-fifo');
  execFileSync('mkfifo', [fifo]);
  const notJson = join(tmp.dir, 'memory.yaml');
  writeFileSync(notJson, 'kind: agro-memory\nentries:\n  - oops\n');
  const [yaml, zero, pipe, dir] = agroBatch([notJson, '/dev/zero', fifo, tmp.dir].map((m) => ['memory', 'show', '--memory', m]), { timeoutMs: 60_000 });
  assertOneLine(yaml, 4, /memory store .*memory\.yaml is neither a memory store nor a memory file agro wrote/);
  // Before: /dev/zero was read until memory ran out; a FIFO without a writer hung.
  for (const r of [zero, pipe]) assertOneLine(r, 4, /memory store .* is not a regular file \(a device, FIFO or socket\)/);
  assertOneLine(dir, 4, /memory store .* is a directory, not a file/);
});

test('an input file past MAX_INPUT_BYTES is refused (exit 4), the bound named, not read to its end', () => {
  // A sparse file: 300 MiB by its size, no disk used.
  const big = join(tmp.dir, 'big.json');
  writeFileSync(big, '');
  execFileSync('truncate', ['-s', '300M', big]);
  const r = agro(['eval', '--gold', '--data', big], { timeoutMs: 20_000 });
  assertOneLine(r, 4, /data file .*big\.json is larger than 256 MiB, the most agro reads/);
});

test('a device or a FIFO as --docs is refused at once (exit 4) by synth, quickstart and ask, not read without end', () => {
  const fifo = join(tmp.dir, 'docs-fifo');
  execFileSync('mkfifo', [fifo]);
  for (const input of ['/dev/zero', fifo]) {
    // Before: /dev/zero was read until memory ran out (1.6 GB after 20 s); a FIFO without a writer hung.
    const runs = agroBatch([
      ['synth', '--db', MUSIC, '--docs', input, '--out', join(tmp.dir, 'docs-synth')],
      ['quickstart', '--db', MUSIC, '--docs', input, '--out', join(tmp.dir, 'docs-qs')],
      ['ask', 'How many artists?', '--policy', ck, '--db', MUSIC, '--docs', input, '--max-turns', '1'],
    ], { timeoutMs: 60_000 });
    for (const r of runs) assertOneLine(r, 4, /documentation path is not a regular file \(a device, FIFO or socket\)/);
  }
});

test('control characters from user data are escaped in error lines (no terminal title, no screen clear, no NUL)', () => {
  const data = join(tmp.dir, 'esc.json');
  writeFileSync(data, JSON.stringify([{ db_id: 'a\u001b]0;pwned\u0007\u001b[2J\u0000\u009bb', question: 'q', SQL: 'SELECT 1' }]));
  const r = agro(['eval', '--gold', '--data', data]);
  assertOneLine(r, 4, /db_id "a\\x1b\]0;pwned\\x07\\x1b\[2J\\x00\\x9bb" is not a plain name/);
  // eslint-disable-next-line no-control-regex -- no control character may reach the terminal
  assert.doesNotMatch(r.stderr.slice(0, -1), /[\u0000-\u001f\u007f-\u009f]/);
});

test('control characters in printed data (a cell, a table name, a sample value) are escaped; --json stays valid JSON', () => {
  const sql = "SELECT char(27) || ']0;pwned' || char(7) || char(27) || '[2J' AS v";
  const r = agro(['sql', '--db', MUSIC, sql]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /\\x1b\]0;pwned\\x07\\x1b\[2J/);
  // eslint-disable-next-line no-control-regex -- no control character but the newlines may reach the terminal
  assert.doesNotMatch(r.stdout, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
  assert.equal((JSON.parse(agro(['sql', '--db', MUSIC, '--json', sql]).stdout) as { rows: string[][] }).rows[0][0], '\u001b]0;pwned\u0007\u001b[2J');
  const db = join(tmp.dir, 'esc.sqlite');
  const d = new Database(db);
  d.exec('CREATE TABLE "t\u001b[2J" (name TEXT)');
  d.prepare('INSERT INTO "t\u001b[2J" VALUES (?)').run('\u001b]0;title\u0007');
  d.close();
  const schema = agro(['schema', '--db', db]);
  assert.equal(schema.status, 0, schema.stderr);
  assert.match(schema.stdout, /t\\x1b\[2J/);
  // eslint-disable-next-line no-control-regex -- as above
  assert.doesNotMatch(schema.stdout, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
});

test('progress lines that name a database folder escape its control characters (agro pretrain)', () => {
  // A db_id is a folder name: anything but / and NUL.
  const root = join(tmp.dir, 'esc-root');
  for (const [id, src] of [['m\u001b[2J\u001b]0;pwned\u0007', MUSIC], ['school', join(DB_ROOT, 'school', 'school.sqlite')]]) {
    mkdirSync(join(root, id), { recursive: true });
    copyFileSync(src, join(root, id, `${id}.sqlite`));
  }
  const r = agro(['pretrain', '--dbs', root, '--out', join(tmp.dir, 'esc-pretrain'), '--pairs', '10', '--held-out-dbs', '1', '--preset', 'tiny', '--vocab-size', '300', '--steps', '1', '--backend', 'cpu'], { timeoutMs: 120_000 });
  assert.match(r.stderr, /1\/2 m\\x1b\[2J\\x1b\]0;pwned\\x07: synthesizing/);
  // eslint-disable-next-line no-control-regex -- no control character but the newlines may reach the terminal
  assert.doesNotMatch(r.stderr + r.stdout, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
});

test('eval --suite <missing folder> is exit 3, not a suite reported as checked', () => {
  assertOneLine(agro(['eval', '--gold', '--data', DEV, '--suite', join(tmp.dir, 'no-suite')]), 3, /--suite: folder not found: .*no-suite/);
});

test('serve --db-root or --variants <missing folder> is exit 3 before the server starts', () => {
  assertOneLine(agro(['serve', '--db-root', join(tmp.dir, 'no-root'), '--port', '0'], { timeoutMs: 20_000 }), 3, /--db-root: folder not found/);
  assertOneLine(agro(['serve', '--db-root', DB_ROOT, '--variants', join(tmp.dir, 'no-variants'), '--port', '0'], { timeoutMs: 20_000 }), 3, /--variants: folder not found/);
});

test('an unreadable (truncated) database is exit 4 wherever the CLI opens one: ask, eval, schema, sql', () => {
  assertOneLine(agro(['ask', 'How many artists?', '--policy', ck, '--db', truncated, '--max-turns', '1']), 4, /not a readable SQLite database: .*truncated\.sqlite/);
  // A db-root whose database is truncated: eval stops before the first query.
  const root = join(tmp.dir, 'root');
  execFileSync('mkdir', ['-p', join(root, 'music_store')]);
  writeFileSync(join(root, 'music_store', 'music_store.sqlite'), readFileSync(truncated));
  const data = join(tmp.dir, 'music.json');
  writeFileSync(data, JSON.stringify([{ db_id: 'music_store', question: 'q', SQL: 'SELECT 1' }]));
  const [ev, pred, schema, sql] = agroBatch([
    ['eval', '--gold', '--data', data, '--db-root', root],
    ['predict', '--policy', ck, '--data', data, '--db-root', root, '--out', join(tmp.dir, 'pred')],
    ['schema', '--db', truncated],
    ['sql', '--db', truncated, 'SELECT 1'],
  ]);
  assertOneLine(ev, 4, /not a readable SQLite database/);
  assertOneLine(pred, 4, /not a readable SQLite database/);
  assertOneLine(schema, 4, /not a readable SQLite database/);
  assertOneLine(sql, 4, /malformed/);
});

test('schema --db <0-byte file> is exit 4 (a database without tables is invalid input), not empty output', () => {
  const zero = join(tmp.dir, 'zero.sqlite');
  writeFileSync(zero, '');
  const r = agro(['schema', '--db', zero]);
  assertOneLine(r, 4, /zero\.sqlite has no tables or views/);
  assert.equal(r.stdout, '');
});

test('export gguf to an unusable path is exit 2 before the checkpoint is read, not an internal error', () => {
  const file = join(tmp.dir, 'a-file');
  writeFileSync(file, 'x');
  assertOneLine(agro(['export', 'gguf', ck, '/proc/agro-test.gguf']), 2, /cannot write in \/proc/);
  assertOneLine(agro(['export', 'gguf', ck, join(file, 'x.gguf')]), 2, /is a file, not a directory/);
  assert.equal(existsSync(join(file, 'x.gguf')), false);
});

/** Three rows of 2,000,000 "€" each: 6 MB of UTF-8 per row, 2 MB of UTF-16 code units. */
const EURO_ROWS = "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3) SELECT replace(hex(zeroblob(2000000)), '00', '€') AS e FROM c";

test('the 8 MiB result cap counts UTF-8 bytes, and a result it cuts says so (not "raise --max-rows")', () => {
  const json = agro(['sql', '--db', MUSIC, '--json', EURO_ROWS]);
  assert.equal(json.status, 0, json.stderr);
  const out = JSON.parse(json.stdout) as { rows: string[][]; truncated: boolean; truncatedBy?: string };
  // Before: 3 rows (18 MB of UTF-8) and truncated false.
  assert.equal(out.rows.length, 1);
  assert.equal(out.truncated, true);
  assert.equal(out.truncatedBy, 'bytes');
  const text = agro(['sql', '--db', MUSIC, EURO_ROWS]);
  assert.equal(text.status, 0, text.stderr);
  assert.match(text.stdout, /1 row \(truncated: the result passed the 8 MiB cap on result bytes, counted as UTF-8; raise --max-bytes to see more\)/);
  assert.doesNotMatch(text.stdout, /--max-rows/);
  const raised = JSON.parse(agro(['sql', '--db', MUSIC, '--json', '--max-bytes', String(20 * 2 ** 20), EURO_ROWS]).stdout) as { rows: unknown[]; truncated: boolean };
  assert.deepEqual([raised.rows.length, raised.truncated], [3, false]);
  const rows = agro(['sql', '--db', MUSIC, '--max-rows', '1', 'SELECT 1 UNION ALL SELECT 2']);
  assert.match(rows.stdout, /1 row \(truncated: the result has more; raise --max-rows to see them\)/);
});

test('a query that starts with "-" (a -- comment): the error and --help show agro sql -- "<sql>", which runs it', () => {
  const r = agro(['sql', '--db', MUSIC, '-- the artists\nSELECT count(*) AS n FROM artists']);
  assertOneLine(r, 2, /unknown option '-- the artists SELECT count\(\*\) AS n FROM artists'.*goes after --: agro sql \[options\] -- "<sql>"/);
  const help = agro(['sql', '--help']);
  assert.match(help.stdout, /Usage: agro sql \[options\] \[--\] <sql>/);
  assert.match(help.stdout, /goes after --:\n {2}agro sql --db music\.sqlite -- /);
  const ok = agro(['sql', '--db', MUSIC, '--', '-- the artists\nSELECT count(*) AS n FROM artists']);
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, /1 row in/);
  // A real unknown flag gets no such hint.
  assert.doesNotMatch(agro(['sql', '--db', MUSIC, '--bogus', 'SELECT 1']).stderr, /goes after/);
});

test('a reader that closes the pipe early gets no stack trace: agro --help | head', () => {
  const r = spawnSync('sh', ['-c', `'${process.execPath}' bin/agro.js sql --help | head -c 10 >/dev/null; '${process.execPath}' bin/agro.js --help 2>&1 | head -c 10 >/dev/null; '${process.execPath}' bin/agro.js sql --help 2>&1 >/dev/null | head -c 1; '${process.execPath}' bin/agro.js sql --help | head -c 10`], { encoding: 'utf8' });
  assert.equal(r.status, 0);
  assert.doesNotMatch(r.stderr, /EPIPE|at .*\.js:\d+/);
});
