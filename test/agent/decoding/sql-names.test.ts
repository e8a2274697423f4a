/**
 * Constrained decoding (src/agent/decoding/sql-names.ts, generate.ts's drawAllowed): inside <sql>/<answer> a bare
 * word must be SQL's own, one of the database's names, an alias or a number; everything else is free.
 * Checked token by token on the base model's tokenizer, then on real sampling and a real agent run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tokenizer } from '../../../src/model/tokenizer.ts';
import { drawAllowed, sampleGroups, type TokenFilter } from '../../../src/model/generate.ts';
import { LlamaModel } from '../../../src/model/llama.ts';
import { resolveModelConfig } from '../../../src/model/config.ts';
import { initBackend } from '../../../src/model/backend.ts';
import { Rng } from '../../../src/util/rng.ts';
import { introspectSchema } from '../../../src/sql/introspect.ts';
import { isKeyword, tokenize } from '../../../src/sql/lexer.ts';
import { schemaNames, sqlNameFilter, SQL_WORDS } from '../../../src/agent/decoding/sql-names.ts';
import { storedText } from '../../../src/agent/decoding/stored-text.ts';
import { SqlEnvironment } from '../../../src/agent/sql-env.ts';
import { SqlPool } from '../../../src/sql/pool.ts';
import { CheckpointPolicy } from '../../../src/agent/policies/checkpoint.ts';
import { runEpisode } from '../../../src/agent/episode.ts';
import { builtinModelDir } from '../../../src/model/builtin.ts';
import { loadCheckpoint } from '../../../src/model/checkpoint.ts';
import { rollout } from '../../../src/rl/rollout.ts';
import { runFactory } from '../../../src/factory/pipeline.ts';

const DB = fileURLToPath(new URL('../../../data/databases/music_store/music_store.sqlite', import.meta.url));
const tk = Tokenizer.load(fileURLToPath(new URL('../../../models/base/tokenizer.json', import.meta.url)));
const names = schemaNames(introspectSchema(DB));
const known = new Set(names.tables.flatMap((t) => [t.name, ...t.columns]).map((n) => n.toLowerCase()));
const make = sqlNameFilter(tk, names)!;

/** Feed `text` token by token; the index of the first refused token, or -1. */
function firstRefused(text: string): number {
  const f = make();
  const ids = tk.encode(text);
  for (let i = 0; i < ids.length; i++) {
    if (!f.allows(ids[i])) return i;
    f.push(ids[i]);
  }
  return -1;
}

/** The names a query declares with AS, lower case. */
function aliases(sql: string): Set<string> {
  const t = tokenize(sql);
  return new Set(t.flatMap((x, j) => (j > 0 && /^as$/i.test(t[j - 1].text) ? [x.text.toLowerCase()] : [])));
}

/** Bare names: words that are no keyword and call no function, lower case. */
function words(sql: string): string[] {
  const t = tokenize(sql);
  return t.filter((x, j) => x.kind === 'word' && !isKeyword(x.text) && t[j + 1]?.text !== '(').map((x) => x.text.toLowerCase());
}

test('the filter lets through queries in the schema, and everything outside a SQL block or inside quotes', () => {
  assert.ok(make, 'the base tokenizer has the protocol tags');
  for (const ok of [
    '<think>tbl_publication and whatever_else</think>\n<sql>SELECT name FROM artists</sql>',
    "<answer>SELECT COUNT(*) FROM tracks WHERE name = 'tbl_x zzqy' AND unit_price > 0.99 LIMIT 10</answer>",
    '<answer>SELECT T1.title FROM albums AS T1 JOIN artists AS T2 ON T1.artist_id = T2.artist_id</answer>',
    '<answer>SELECT COUNT(*) FROM albums AS al WHERE al.album_id > 3</answer>',
    '<answer>SELECT "Weird Name" FROM `invoices` WHERE CAST(strftime(\'%Y\', invoice_date) AS INTEGER) = 2010</answer>',
    '<answer>select Name from ARTISTS</answer>',
    '<answer>SELECT T1.title, albums.album_id, T2.name FROM albums AS T1 JOIN artists AS T2 ON T1.artist_id = T2.artist_id</answer>',
    '<answer>SELECT "Name" FROM "artists" AS T1 WHERE T1."name" != "not a name" AND T1.name = `x y`</answer>',
    '<answer>SELECT T1.*, 1.5 FROM artists AS T1 WHERE T1.artist_id > .5</answer>',
    // PostgreSQL's functions with a FROM of their own (the factory writes EXTRACT on a server).
    '<answer>SELECT EXTRACT(YEAR FROM invoice_date), COUNT(*) FROM invoices WHERE EXTRACT(MONTH FROM T1.invoice_date) = 2 GROUP BY 1</answer>',
    "<answer>SELECT SUBSTRING(name FROM 1 FOR 3), TRIM(BOTH ' ' FROM name), OVERLAY(name PLACING 'x' FROM 2) FROM artists</answer>",
  ])
    assert.equal(firstRefused(ok), -1, ok);
});

test('the filter refuses a name the database does not have, at the token that makes it one', () => {
  for (const [bad, word] of [
    ['<answer>SELECT name FROM tbl_artists</answer>', 'tbl_artists'],
    ['<sql>SELECT publication_title FROM albums</sql>', 'publication_title'],
    ['<answer>SELECT title FROM albums_table</answer>', 'albums_table'],
    // Short words are no loophole: only T1, T2, … may qualify a column before FROM declares them.
    ['<answer>SELECT name FROM tb20</answer>', 'tb20'],
    ['<answer>SELECT x.name FROM artists AS x</answer>', 'x'],
    // Where a word stands: a table after FROM or JOIN, a column after a dot.
    ['<answer>SELECT COUNT(*) FROM text</answer>', 'text'],
    ['<answer>SELECT name FROM artists JOIN name</answer>', 'JOIN name'],
    ['<answer>SELECT T1.sum FROM artists AS T1</answer>', 'T1.sum'],
    ['<answer>SELECT T1.name FROM artists AS T1 WHERE T1.albums = 2</answer>', 'T1.albums'],
    // After a table or its alias, a column of that table; no number where a table must stand.
    ['<answer>SELECT T2.title FROM albums AS T1 JOIN artists AS T2 ON T2.title = T1.title</answer>', 'T2.title ='],
    ['<answer>SELECT artists.title FROM artists</answer>', 'artists.title'],
    ['<answer>SELECT name FROM 100</answer>', '10'],
    // A keyword no query uses is no loophole either.
    ['<answer>SELECT foreign FROM customers</answer>', 'foreign'],
    // Quoting is no loophole where a name must stand, nor is half a UTF-8 character.
    ['<answer>SELECT COUNT(*) FROM "match"</answer>', '"ma'],
    ['<answer>SELECT T1."sum" FROM artists AS T1</answer>', '"su'],
    ['<answer>SELECT name FROM artists JOIN CArt\u00e1 AS T2</answer>', 'CArt'],
    // After a qualifying dot, a column: not a second dot (`T1..name` does not parse), nor a space or a number.
    ['<answer>SELECT T1..name FROM artists AS T1</answer>', 'T1..'],
    ['<answer>SELECT T1. name FROM artists AS T1</answer>', 'T1. '],
    ['<answer>SELECT T1.2 FROM artists AS T1</answer>', 'T1.2'],
    // Inside EXTRACT a column follows FROM; after its parenthesis closes, FROM wants a table again.
    ['<answer>SELECT EXTRACT(YEAR FROM tbl_invoice_date) FROM invoices</answer>', 'tbl_invoice_date'],
    ['<answer>SELECT EXTRACT(YEAR FROM invoice_date) FROM invoice_date</answer>', 'FROM invoice_date</'],
  ]) {
    const ids = tk.encode(bad);
    const at = firstRefused(bad);
    assert.ok(at >= 0, bad);
    const before = tk.decode(ids.slice(0, at + 1));
    assert.ok(before.includes(word.slice(0, 2)), `refused at "${before}"`);
    assert.ok(!tk.decode(ids.slice(0, at)).includes(word), `not later than the word: ${tk.decode(ids.slice(0, at))}`);
  }
  // Another protocol tag may not open inside a block, and a block closes with its own tag.
  assert.ok(firstRefused('<answer>SELECT name FROM artists<sql>') >= 0);
  assert.ok(firstRefused('<answer>SELECT name FROM artists</sql>') >= 0);
  // Nor inside quotes, nor with punctuation where a table must stand.
  assert.ok(firstRefused('<answer>SELECT name FROM "artists</answer>') >= 0);
  assert.ok(firstRefused("<answer>SELECT name FROM artists WHERE name = 'x</answer>") >= 0);
  assert.ok(firstRefused('<answer>SELECT name FROM ! ORDER BY name</answer>') >= 0);
  assert.equal(firstRefused('<answer>SELECT COUNT(*) FROM (SELECT name FROM artists)</answer>'), -1);
  // A block may not close on the prefix of a name.
  assert.ok(firstRefused('<answer>SELECT title FROM albu</answer>') >= 0);
  // The same text outside a block is free.
  assert.equal(firstRefused('<think>SELECT name FROM tbl_artists</think>'), -1);
});

test('drawAllowed: a refused draw is redrawn from the rest; nothing allowed near the top leaves the first draw', () => {
  const logits = Float32Array.from([0, 5, 4, 3, 2]);
  const pushed: number[] = [];
  const only = (ok: (t: number) => boolean): TokenFilter => ({ allows: ok, push: (t) => pushed.push(t) });
  const greedy = { temperature: 0, topP: 1, topK: 0 };
  assert.equal(drawAllowed(logits, greedy, new Rng(1), only((t) => t === 3 || t === 4)), 3);
  assert.equal(drawAllowed(logits, greedy, new Rng(1), only(() => false)), 1);
  assert.equal(drawAllowed(logits, greedy, new Rng(1), undefined), 1);
  assert.deepEqual(pushed, [3, 1]);
  for (let s = 0; s < 50; s++) assert.equal(drawAllowed(logits, { temperature: 1, topP: 1, topK: 0 }, new Rng(s), only((t) => t % 2 === 0)) % 2, 0);
});

test('sampleGroups: every token a filtered row draws is allowed, greedy and sampled; other prompts stay free', async () => {
  await initBackend();
  const model = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: 64 }), { seed: 3 });
  try {
    const even = (): TokenFilter => ({ allows: (t) => t % 2 === 0, push: () => {} });
    for (const temperature of [0, 1]) {
      const out = await sampleGroups(model, [[1, 2, 3], [4, 5]], 3, { maxNewTokens: 12, temperature, seed: 7, filter: (p) => (p === 0 ? even() : undefined) });
      for (const s of out[0]) assert.deepEqual(s.tokens.filter((t) => t % 2 !== 0), [], `temperature ${temperature}`);
      assert.ok(out[1].some((s) => s.tokens.some((t) => t % 2 !== 0)), 'the unfiltered prompt draws odd tokens too');
    }
  } finally {
    model.dispose();
  }
});

test('the base model answering on music_store: constrained (TF.js and llama.cpp), every bare word of its SQL is SQL or the schema', { timeout: 180_000 }, async () => {
  await initBackend();
  const pool = new SqlPool({ size: 1 });
  const env = new SqlEnvironment(pool, { maxTurns: 1 });
  const policy = await CheckpointPolicy.open(builtinModelDir('base'));
  // llama.cpp draws in JS from its logits when a filter is on (its own sampler cannot ask the filter).
  const onLlama = await CheckpointPolicy.open(builtinModelDir('base'), { engine: 'llama.cpp' });
  const free = await CheckpointPolicy.open(builtinModelDir('base'), { constrain: false });
  const questions = ['How many artists are there?', 'List the titles of the albums of each artist.', 'Which customers live in Berlin?', 'What is the most expensive track?', 'Show the invoices of 2010 and their totals.', 'How many employees report to each manager?'];
  let strays = 0;
  try {
    for (const [i, question] of questions.entries()) {
      const task = { id: String(i), dbPath: DB, question, goldSql: 'SELECT 1' };
      const r = await runEpisode(env, task, policy, { mode: 'direct', maxTurnTokens: 160, temperature: 0 });
      const l = await runEpisode(env, task, onLlama, { mode: 'direct', maxTurnTokens: 160, temperature: 0.7, seed: i });
      const f = await runEpisode(env, task, free, { mode: 'direct', maxTurnTokens: 160, temperature: 0 });
      if (l.answer) {
        const al = aliases(l.answer);
        assert.deepEqual(words(l.answer).filter((w) => !known.has(w) && !al.has(w) && !/^t\d+$/.test(w)), [], `llama.cpp: ${l.answer}`);
      }
      if (r.answer) {
        const al = aliases(r.answer);
        const off = words(r.answer).filter((w) => !known.has(w) && !al.has(w) && !/^t\d+$/.test(w));
        assert.deepEqual(off, [], r.answer);
      }
      if (f.answer) strays += words(f.answer).filter((w) => !known.has(w) && !aliases(f.answer!).has(w)).length;
    }
  } finally {
    await policy.close();
    await onLlama.close();
    await free.close();
    await pool.close();
  }
  // The check above can fail: the same model decoding freely writes names music_store does not have.
  assert.ok(strays > 0, 'free decoding wrote only schema names: the test shows nothing');
});

test('RL rollouts with constrain decode as predict does: every bare word of every sampled answer is SQL or the schema, on every turn', { timeout: 180_000 }, async () => {
  await initBackend();
  const pool = new SqlPool({ size: 1 });
  const env = new SqlEnvironment(pool, { maxTurns: 2 });
  const ck = loadCheckpoint(builtinModelDir('base'));
  const tasks = ['How many albums does each artist have?', 'Which customers bought the most expensive track?', 'List the invoices of customers in Berlin.'].map((question, i) => ({ id: String(i), dbPath: DB, question, goldSql: 'SELECT 1' }));
  // The grammar's own words (functions, types, date parts) may stand bare: it is generous there on purpose.
  const sqlWords = new Set(SQL_WORDS);
  const sqlOf = (text: string): string[] => [...text.matchAll(/<(sql|answer)>([\s\S]*?)(<\/\1>|$)/g)].map((m) => m[2]);
  const off = (sql: string): string[] => {
    const al = aliases(sql);
    return words(sql).filter((w) => !known.has(w) && !al.has(w) && !sqlWords.has(w) && !/^t\d+$/.test(w));
  };
  const run = (constrain: boolean) => rollout(env, tasks, ck.model, ck.tokenizer, { groupSize: 4, maxTurnTokens: 96, maxResponseTokens: 240, temperature: 1, topP: 1, seed: 11, constrain });
  try {
    const held = await run(true);
    let blocks = 0;
    for (const t of held)
      for (const m of t.messages.filter((m) => m.role === 'assistant'))
        for (const sql of sqlOf(m.content)) {
          blocks++;
          assert.deepEqual(off(sql), [], sql);
        }
    assert.ok(blocks >= 6, `only ${blocks} SQL blocks sampled: the test shows little`);
    // The same rollouts decoding freely write names music_store does not have: the check above can fail.
    const free = await run(false);
    const strays = free.flatMap((t) => t.messages.filter((m) => m.role === 'assistant').flatMap((m) => sqlOf(m.content).flatMap(off)));
    assert.ok(strays.length > 0, 'free rollouts wrote only schema names');
  } finally {
    ck.model.dispose();
    await pool.close();
  }
});

test('a string literal is copied from the conversation or the database, or refused where it stops being one', () => {
  const stored = storedText(DB);
  assert.ok(stored && stored.includes('Velvet Foxes') && stored.includes('France'), 'music_store text is read whole');
  const withText = sqlNameFilter(tk, schemaNames(introspectSchema(DB), () => stored))!;
  const question = "Which tracks did velvet foxes or 'Hollow Rivers' put out in 2021?";
  const refusedAt = (text: string, context: string | null = question): number => {
    const f = withText(context === null ? undefined : [{ role: 'user', content: context }]);
    const ids = tk.encode(text);
    for (let i = 0; i < ids.length; i++) {
      if (!f.allows(ids[i])) return i;
      f.push(ids[i]);
    }
    return -1;
  };
  for (const ok of [
    "<answer>SELECT name FROM artists WHERE name = 'Velvet Foxes'</answer>", // stored
    "<answer>SELECT name FROM artists WHERE name IN ('The Lanterns', 'Hollow Rivers')</answer>", // quoted by the question
    "<answer>SELECT name FROM artists WHERE name LIKE '%Velvet%' OR name LIKE '%foxes%Fr%'</answer>", // LIKE's pieces
    "<answer>SELECT COUNT(*) FROM invoices WHERE strftime('%Y', invoice_date) = '2021' AND billing_country != ''</answer>",
    "<answer>SELECT COUNT(*) FROM invoices WHERE date('now') > invoice_date</answer>", // a function's format word
    '<answer>SELECT COUNT(*) FROM invoices WHERE billing_country = "France" AND "billing_city" IS NOT NULL</answer>', // SQLite's "string", a quoted name
  ])
    assert.equal(refusedAt(ok), -1, ok);
  for (const [bad, at] of [
    ["<answer>SELECT name FROM artists WHERE name = 'Velvet Fxoes'</answer>", "'Velvet F"],
    ["<answer>SELECT name FROM artists WHERE name = 'Hurning Roads'</answer>", "'H"],
    ["<answer>SELECT name FROM artists WHERE name LIKE '%Velvet%Zq%'</answer>", '%Velvet%'],
    ['<answer>SELECT name FROM artists WHERE name = "Velvet Fxoes"</answer>', '"Velvet F'],
    // A compared literal closes on a whole value: not on part of one, nor on the question's lower-cased words.
    ["<answer>SELECT name FROM artists WHERE name = 'Hollow' OR name = 'Velvet'</answer>", "'Hollow'"],
    ["<answer>SELECT name FROM artists WHERE name = 'velvet foxes'</answer>", "'velvet foxes'"],
  ]) {
    const ids = tk.encode(bad);
    const i = refusedAt(bad);
    assert.ok(i >= 0, bad);
    assert.ok(tk.decode(ids.slice(0, i + 1)).includes(at), `refused at "${tk.decode(ids.slice(0, i + 1))}"`);
  }
  // A value the conversation quotes counts though nothing stores it (BIRD's evidence names values so).
  assert.equal(refusedAt("<answer>SELECT name FROM artists WHERE name = 'Hurning Roads'</answer>", `${question}\nEvidence: name = 'Hurning Roads'`), -1);
  // Without a conversation, or without the database's text, literals are free (the filter cannot tell).
  assert.equal(refusedAt("<answer>SELECT name FROM artists WHERE name = 'Hurning Roads'</answer>", null), -1);
  const f = make([{ role: 'user', content: question }]);
  for (const id of tk.encode("<answer>SELECT name FROM artists WHERE name = 'Hurning Roads'</answer>")) {
    assert.ok(f.allows(id));
    f.push(id);
  }
});

test('stored text is read whole or not at all', () => {
  const all = storedText(DB)!;
  assert.ok(all.length > 100);
  assert.equal(new Set(all).size, all.length, 'each text once');
  assert.equal(storedText(DB, { maxChars: 1000 }), null);
  assert.equal(storedText(DB, { maxRows: 5 }), null);
  assert.equal(schemaNames(introspectSchema(DB), () => null).storedText?.(), null);
  // Read once, and only when a filter needs it: an unconstrained run never scans the database's text.
  let reads = 0;
  const lazy = schemaNames(introspectSchema(DB), () => (reads++, storedText(DB)));
  assert.equal(reads, 0);
  sqlNameFilter(tk, lazy)!([{ role: 'user', content: 'x' }]);
  sqlNameFilter(tk, lazy)!();
  assert.equal(lazy.storedText?.()?.length, all.length);
  assert.equal(reads, 1);
});

test("the factory's own pairs pass with their question as the conversation: the literal rule refuses no gold answer", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agro-lit-'));
  const pool = new SqlPool({ size: 2 });
  try {
    await runFactory({ db: DB, out: dir, n: 200, variants: 0, seed: 5, timeoutMs: 3000 }, { executor: pool });
    const rows = readFileSync(join(dir, 'dataset.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { question: string; evidence?: string; SQL: string });
    const withText = sqlNameFilter(tk, schemaNames(introspectSchema(DB), () => storedText(DB)))!;
    let literals = 0;
    for (const r of rows) {
      literals += (r.SQL.match(/'/g) ?? []).length / 2;
      const f = withText([{ role: 'user', content: `${r.question}\n${r.evidence ?? ''}` }]);
      for (const id of tk.encode(`<answer>${r.SQL}</answer>`)) {
        assert.ok(f.allows(id), `${r.question} → ${r.SQL}`);
        f.push(id);
      }
    }
    assert.ok(rows.length >= 100 && literals >= 30, `${rows.length} rows, ${literals} literals: too few to show anything`);
  } finally {
    await pool.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

const SPIDER = fileURLToPath(new URL('../../../../shared/data/spider-train', import.meta.url));
test('Spider train: every human gold query passes the name rules on its own database, but the one naming a missing table', { skip: !existsSync(SPIDER) && 'needs ../shared/data/spider-train' }, () => {
  const rows = readFileSync(join(SPIDER, 'gold.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { db_id: string; query: string });
  const filters = new Map<string, NonNullable<ReturnType<typeof sqlNameFilter>>>();
  const refused: string[] = [];
  for (const r of rows) {
    const db = join(SPIDER, 'database', r.db_id, `${r.db_id}.sqlite`);
    let make = filters.get(db);
    if (!make) filters.set(db, (make = sqlNameFilter(tk, schemaNames(introspectSchema(db), () => storedText(db)))!));
    const f = make();
    for (const id of tk.encode(`<answer>${r.query}</answer>`)) {
      if (!f.allows(id)) {
        refused.push(`${r.db_id}: ${r.query}`);
        break;
      }
      f.push(id);
    }
  }
  assert.equal(rows.length, 8475);
  assert.deepEqual(refused.map((q) => q.split(':')[0]), ['assets_maintenance'], refused.join('\n'));
  assert.match(refused[0], /Ref_Company_Types/, 'the refused query names a table the database lacks');
});
