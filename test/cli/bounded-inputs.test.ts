// Issue #58 item 4: bounded inputs on the CLI surfaces that write corrections or read memory stores (agro ask,
// ask --correct, agro memory add/list/remove/export/migrate, chat's :correct). Each case runs the real CLI on its
// own copy of the files in a folder of its own: one `agro:` line, the documented exit code, no stack trace, and the
// folder as it was (the same files, the same bytes: nothing written, no store begun).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { formatAction } from '../../src/agent/protocol.ts';
import { buildMemory } from '../../src/memory/build.ts';
import { MemoryStore, writeMemory } from '../../src/memory/store.ts';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { MAX_SQL_CHARS } from '../../src/sql/guard.ts';
import { agro as agroRun, BIN, DB_ROOT, MUSIC, ROOT, tempDir } from '../adversarial/support.ts';
import { MAX_QUESTION_CHARS, schemaFingerprint } from '../../src/memory/entry.ts';
import { startFakeOpenAI } from '../support/fake-openai.ts';
import { agroBatchAsync } from '../support/cli-batch.ts';

const OTHER = join(DB_ROOT, 'retail', 'retail.sqlite');
const introspectSchemaFingerprint = (db: string): string => schemaFingerprint(introspectSchema(db));
const tmp = tempDir();
after(() => tmp.cleanup());
const PAIRS = [
  { sql: 'SELECT COUNT(*) FROM customers', question: 'How many customers are there?' },
  { sql: 'SELECT name FROM genres', question: 'List the names of all genres.' },
];
/** The longest argument Linux passes (MAX_ARG_STRLEN, 128 KiB) less room: a 1 MB argument never reaches agro (E2BIG). */
const ARG_MAX = 120_000;
/** A port nothing listens on: a case that reached the policy would fail there, not pass. */
const NO_POLICY = ['--llm-url', 'http://127.0.0.1:9/v1', '--llm-model', 'none'];
const GOOD_SQL = 'SELECT name FROM genres LIMIT 1';
const good = join(tmp.dir, 'good.db');
const goodJson = join(tmp.dir, 'good.json');

before(async () => {
  const memory = await buildMemory('music_store', introspectSchema(MUSIC), PAIRS);
  writeMemory(good, memory);
  writeFileSync(goodJson, JSON.stringify({ kind: 'agro-memory', version: 1, dbId: memory.dbId, schema: memory.schema, entries: memory.entries }));
});

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** The CLI, its last argument given as raw bytes when `lastArg` is (argv bytes that are not UTF-8), stdin as bytes. */
function agro(args: string[], o: { lastArg?: Buffer; stdin?: Buffer | string; timeoutMs?: number } = {}): Promise<Run> {
  // Node passes arguments as strings; the shell's printf passes bytes as they are.
  const [cmd, argv] = o.lastArg ? ['sh', ['-c', `exec "$@" "$(printf '${[...o.lastArg].map((b) => `\\${b.toString(8).padStart(3, '0')}`).join('')}')"`, 'sh', process.execPath, BIN, ...args]] : [process.execPath, [BIN, ...args]];
  return new Promise((done, fail) => {
    const child = spawn(cmd, argv as string[], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'], timeout: o.timeoutMs ?? 60_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', fail);
    child.on('close', (status) => done({ status, stdout, stderr }));
    child.stdin.end(o.stdin ?? '');
  });
}

/** A folder's files and what is in them (regular files by content; others by kind; a sparse giant by size and time). */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st) out[name] = 'dangling';
    else if (!st.isFile()) out[name] = st.isFIFO() ? 'fifo' : 'other';
    else out[name] = st.size > 64 * 2 ** 20 ? `${st.size}@${st.mtimeMs}` : createHash('sha256').update(readFileSync(p)).digest('hex');
  }
  return out;
}

type Input = 'good' | 'cut' | 'huge' | 'fifo' | 'zero' | 'foreign' | 'good.json' | 'cut.json' | 'huge.json' | 'latin1.json';

/** One input, made in a folder of its own: the path to give the CLI. */
function make(dir: string, input: Input): string {
  mkdirSync(dir, { recursive: true });
  const at = join(dir, input.endsWith('.json') ? 'memory.json' : 'memory.db');
  if (input === 'good' || input === 'cut') copyFileSync(good, at);
  if (input === 'cut') truncateSync(at, Math.floor(statSync(good).size / 2));
  if (input === 'huge' || input === 'huge.json') execFileSync('truncate', ['-s', '4G', at]);
  if (input === 'fifo') execFileSync('mkfifo', [at]);
  if (input === 'zero') symlinkSync('/dev/zero', at);
  if (input === 'foreign') new Database(at).exec('CREATE TABLE pairs (sql TEXT, question TEXT)').close();
  if (input === 'good.json' || input === 'cut.json') copyFileSync(goodJson, at);
  if (input === 'cut.json') truncateSync(at, Math.floor(statSync(goodJson).size / 2));
  // A question in Latin-1 (é as the byte E9): a file that is no UTF-8.
  if (input === 'latin1.json') writeFileSync(at, Buffer.from(readFileSync(goodJson, 'utf8').replace('How many customers', 'Combien de clients ont pay\u00e9'), 'latin1'));
  return at;
}

interface Case {
  name: string;
  input: Input;
  args: (memory: string, dir: string) => string[];
  code: number;
  line: RegExp;
  lastArg?: Buffer;
}

const bytes = (s: string): Buffer => Buffer.from(s, 'latin1');
const add = (m: string, question: string, sql = GOOD_SQL, db = MUSIC): string[] => ['memory', 'add', '--memory', m, '--db', db, '--question', question, '--sql', sql];
const correct = (m: string, question: string, sql = GOOD_SQL, db = MUSIC): string[] => ['ask', question, '--db', db, '--memory', m, '--correct', sql];

const CASES: Case[] = [
  // What a person types: a question or SQL past the bounds, control characters, bytes that are not UTF-8. The checks
  // are one function (memory/entry.ts checkTypedText) on every path: agro ask is run for few of them, as it takes
  // seconds to start (its model code); chat's test below sends each through :correct.
  { name: 'memory add: a question of 120,000 characters', input: 'good', args: (m) => add(m, 'how many '.repeat(ARG_MAX / 9)), code: 2, line: new RegExp(`the question is \\d+ characters long, at most ${MAX_QUESTION_CHARS}`) },
  { name: 'memory add: SQL of 120,000 characters', input: 'good', args: (m) => add(m, 'Long?', `SELECT '${'x'.repeat(ARG_MAX)}'`), code: 5, line: new RegExp(`at most ${MAX_SQL_CHARS}.*nothing written`) },
  { name: 'memory add: a question with a terminal escape', input: 'good', args: (m) => add(m, 'How many \u001b]0;owned\u0007 customers?'), code: 2, line: /question holds a control character \(\\x1b\) at character 10/ },
  { name: 'memory add: SQL with a control character', input: 'good', args: (m) => add(m, 'Which genre?', "SELECT name FROM genres WHERE name <> '\u0008'"), code: 2, line: /SQL holds a control character \(\\x08\)/ },
  { name: 'memory add: a question in bytes that are not UTF-8', input: 'good', args: (m) => [...add(m, 'x').slice(0, -4), '--sql', GOOD_SQL, '--question'], lastArg: bytes('Quel genre pr\u00e9f\u00e9rez-vous ?'), code: 2, line: /question is not valid UTF-8/ },
  { name: 'ask --correct: SQL in bytes that are not UTF-8', input: 'good', args: (m) => correct(m, 'Which genre?').slice(0, -1), lastArg: bytes("SELECT name FROM genres WHERE name = 'Fran\u00e7ais'"), code: 2, line: /SQL is not valid UTF-8/ },
  { name: 'ask: a question with a control character', input: 'good', args: (m) => ['ask', 'How many\u007f customers?', '--db', MUSIC, '--memory', m, ...NO_POLICY], code: 2, line: /ask: the question holds a control character \(\\x7f\)/ },
  // A memory that is not a store to open: cut short, a sparse giant of zeros, a FIFO, /dev/zero, another program's SQLite.
  { name: 'memory list: a store cut short', input: 'cut', args: (m) => ['memory', 'list', '--memory', m], code: 4, line: /is truncated \(\d+ of \d+ bytes\)/ },
  { name: 'memory list: a FIFO', input: 'fifo', args: (m) => ['memory', 'list', '--memory', m], code: 4, line: /is not a regular file/ },
  { name: 'memory remove: /dev/zero', input: 'zero', args: (m) => ['memory', 'remove', '--memory', m, '1'], code: 4, line: /is not a regular file/ },
  { name: 'memory remove: 4 GB of zeros', input: 'huge', args: (m) => ['memory', 'remove', '--memory', m, '1'], code: 4, line: /neither a memory store/ },
  { name: 'memory export: another program\u2019s SQLite', input: 'foreign', args: (m) => ['memory', 'export', '--memory', m], code: 4, line: /not a memory store agro wrote/ },
  { name: 'memory add: a FIFO', input: 'fifo', args: (m) => add(m, 'Which genre?'), code: 4, line: /is not a regular file/ },
  { name: 'memory add: a store of another schema', input: 'good', args: (m) => add(m, 'How many orders?', 'SELECT COUNT(*) FROM orders', OTHER), code: 4, line: /built on another schema/ },
  { name: 'ask --memory: a store cut short', input: 'cut', args: (m) => ['ask', 'How many customers?', '--db', MUSIC, '--memory', m, ...NO_POLICY], code: 4, line: /is truncated/ },
  { name: 'ask --memory: a store of another schema', input: 'good', args: (m) => ['ask', 'How many orders?', '--db', OTHER, '--memory', m, ...NO_POLICY], code: 4, line: /built on another schema/ },
  { name: 'ask --correct: a store of another schema', input: 'good', args: (m) => correct(m, 'How many orders?', 'SELECT COUNT(*) FROM orders', OTHER), code: 4, line: /built on another schema/ },
  // memory migrate: what it reads (a memory.json) and where it writes.
  { name: 'memory migrate: a memory.json cut short', input: 'cut.json', args: (m, d) => ['memory', 'migrate', m, '--out', join(d, 'out.db')], code: 4, line: /is not valid JSON/ },
  { name: 'memory migrate: a sparse memory.json of 4 GB', input: 'huge.json', args: (m, d) => ['memory', 'migrate', m, '--out', join(d, 'out.db')], code: 4, line: /larger than 256 MiB/ },
  { name: 'memory migrate: a memory.json in Latin-1', input: 'latin1.json', args: (m, d) => ['memory', 'migrate', m, '--out', join(d, 'out.db')], code: 4, line: /is not valid UTF-8/ },
  { name: 'memory migrate: a FIFO', input: 'fifo', args: (m, d) => ['memory', 'migrate', m, '--out', join(d, 'out.db')], code: 4, line: /not a regular file/ },
  { name: 'memory migrate: onto a FIFO', input: 'good.json', args: (m, d) => (execFileSync('mkfifo', [join(d, 'out.db')]), ['memory', 'migrate', m, '--out', join(d, 'out.db')]), code: 4, line: /is not a regular file/ },
];

/** `fn` over `items`, `width` at a time (each case is a process: the machine's cores, not the cases, set the pace). */
async function pool<T, R>(items: readonly T[], width: number, fn: (x: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  }));
  return out;
}

test('each bad input on ask, ask --correct and agro memory is one agro: line, its exit code, and nothing written', { timeout: 240_000 }, async () => {
  const made = CASES.map((c, i) => {
    const dir = join(tmp.dir, `case-${i}`);
    const memory = make(dir, c.input);
    return { c, dir, args: c.args(memory, dir), before: snapshot(dir) };
  });
  // Argv bytes that are not UTF-8 need a process of their own (the shell passes them); the others run through
  // main() in one process (test/support/cli-batch.ts).
  const own = made.filter((m) => m.c.lastArg);
  const batched = made.filter((m) => !m.c.lastArg);
  const [ownRuns, batchRuns] = await Promise.all([pool(own, Math.max(2, availableParallelism()), (m) => agro(m.args, { lastArg: m.c.lastArg })), agroBatchAsync(batched.map((m) => m.args), { timeoutMs: 180_000 })]);
  const runs = [...own.map((m, i) => ({ m, r: ownRuns[i] })), ...batched.map((m, i) => ({ m, r: batchRuns[i] }))].map(({ m, r }) => {
    const changed = JSON.stringify(snapshot(m.dir)) === JSON.stringify(m.before) ? undefined : { before: m.before, after: snapshot(m.dir) };
    return { c: m.c, r, changed };
  });
  const wrong: string[] = [];
  for (const { c, r, changed } of runs) {
    const why = [
      r.status !== c.code && `exit ${r.status}, not ${c.code}`,
      !/^agro: [^\n]+\n$/.test(r.stderr) && 'not one agro: line',
      /internal error|\n\s+at /.test(r.stderr) && 'a stack trace',
      !c.line.test(r.stderr) && `not ${c.line}`,
      changed && `the folder changed: ${JSON.stringify(changed)}`,
    ].filter(Boolean);
    if (why.length) wrong.push(`${c.name}: ${why.join('; ')}; stderr ${JSON.stringify(r.stderr.slice(0, 300))}`);
  }
  assert.deepEqual(wrong, []);
});

test('a store padded to 4 GB (a sparse tail) is read as the store it is: listed at once, nothing read past its pages', async () => {
  const dir = join(tmp.dir, 'padded');
  const memory = make(dir, 'good');
  truncateSync(memory, 4 * 2 ** 30);
  const t0 = performance.now();
  const r = await agro(['memory', 'list', '--memory', memory]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim().split('\n').length, PAIRS.length);
  assert.ok(performance.now() - t0 < 30_000);
});

test("chat: a 1 MB question, a question with control characters or not UTF-8, and such a :correct are one line each; nothing reaches the model or the store", { timeout: 120_000 }, async () => {
  const dir = join(tmp.dir, 'chat');
  const memory = make(dir, 'good');
  const before = snapshot(dir);
  const fake = await startFakeOpenAI(() => ({ kind: 'reply', content: formatAction({ kind: 'answer', think: 'ok', content: 'SELECT COUNT(*) FROM genres' }) }));
  try {
    const lines = [
      Buffer.from('How many genres are there?\n'),
      Buffer.from(`${'how many '.repeat(2 ** 20 / 9)}\n`),
      Buffer.from('How many \u001b[2J genres?\n'),
      bytes('Combien de genres en fran\u00e7ais ?\n'),
      Buffer.from(`:correct SELECT '${'x'.repeat(2 ** 20)}'\n`),
      Buffer.from(":correct SELECT name FROM genres WHERE name <> '\u001b[2J'\n"),
      Buffer.concat([Buffer.from(':correct '), bytes("SELECT name FROM genres WHERE name = 'Fran\u00e7ais'\n")]),
    ];
    const r = await agro(['chat', '--llm-url', fake.baseUrl, '--llm-model', 'fake', '--db', MUSIC, '--memory', memory], { stdin: Buffer.concat(lines) });
    assert.equal(r.status, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /internal error|\n\s+at /);
    // The conversation goes on past each: every refusal is a line of its own, in the order typed.
    const refusals = r.stdout.split('\n').filter((l) => /^(chat|correction): |refused/.test(l));
    assert.equal(refusals.length, 6, r.stdout.slice(0, 2000));
    assert.match(refusals[0], new RegExp(`^chat: the question is \\d+ characters long, at most ${MAX_QUESTION_CHARS}$`));
    assert.match(refusals[1], /^chat: the question holds a control character \(\\x1b\) at character 10$/);
    assert.match(refusals[2], /^chat: the question is not valid UTF-8/);
    assert.match(refusals[3], new RegExp(`at most ${MAX_SQL_CHARS}.*nothing written$`));
    assert.match(refusals[4], /^correction: the SQL holds a control character \(\\x1b\)/);
    assert.match(refusals[5], /^correction: the SQL is not valid UTF-8/);
    for (const l of refusals) assert.ok(l.length < 400, l.slice(0, 400));
    // The model saw the first question only.
    for (const req of fake.requests) for (const m of req.body.messages ?? []) assert.ok(m.content.length < 50_000 && !m.content.includes('\u001b') && !m.content.includes('\ufffd'));
  } finally {
    await fake.close();
  }
  assert.deepEqual(snapshot(dir), before);
  const store = MemoryStore.open(memory);
  try {
    assert.equal(store.list({ removed: true }).length, PAIRS.length);
  } finally {
    store.close();
  }
});

test('agro serve --memory: a store built on another schema, or of a database it does not serve, stops it before it listens (exit 4, one line)', () => {
  const misnamed = join(tmp.dir, 'misnamed.db');
  // The retail database's pairs under music_store's name: only the schema fingerprint tells them apart.
  writeMemory(misnamed, { dbId: 'music_store', schema: introspectSchemaFingerprint(OTHER), entries: [] });
  const unserved = join(tmp.dir, 'unserved.db');
  writeMemory(unserved, { dbId: 'no_such_db', schema: introspectSchemaFingerprint(OTHER), entries: [] });
  for (const [store, line] of [[misnamed, /built on another schema than music_store/], [unserved, /memory of no_such_db, which this server does not serve/]] as const) {
    const r = agroRun(['serve', '--policy', 'base', '--memory', store, '--port', '0'], { timeoutMs: 60_000 });
    assert.equal(r.status, 4, r.stderr);
    assert.match(r.stderr, /^agro: [^\n]+\n$/);
    assert.match(r.stderr, line);
    assert.doesNotMatch(r.stdout, /listening/);
  }
});
