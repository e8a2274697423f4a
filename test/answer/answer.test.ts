import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqlPool } from '../../src/sql/pool.ts';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { buildValueIndex } from '../../src/prompt/value-index.ts';
import { AgroError } from '../../src/errors.ts';
import { buildMemory } from '../../src/memory/build.ts';
import { resultSignature, schemaFingerprint } from '../../src/memory/entry.ts';
import { readMemory } from '../../src/memory/legacy.ts';
import { MemoryStore, writeMemory } from '../../src/memory/store.ts';
import { MemoryIndex } from '../../src/answer/memory.ts';
import { flipOrder, hasLiterals, moveFilters, questionNumbers, regroundQuery, tableAliases } from '../../src/answer/edit.ts';
import { tokenize } from '../../src/sql/lexer.ts';
import { answerQuestion } from '../../src/answer/answer.ts';
import { confidenceOf, literalFeatures } from '../../src/answer/rank.ts';
import { databaseLanguageOf, makeReader } from '../../src/answer/reading.ts';
import { intentWeights, makeQuestionSynth } from '../../src/answer/synth.ts';
import { TEMPLATE_WEIGHTS } from '../../src/factory/synthesize.ts';
import type { SqlExecutor } from '../../src/sql/types.ts';

const DB = 'data/databases/music_store/music_store.sqlite';
const tmp = mkdtempSync(join(tmpdir(), 'agro-answer-'));
const PAIRS = [
  { sql: "SELECT first_name, last_name FROM customers WHERE country = 'France'", question: 'Give the first and last names of customers living in France.', paraphrases: ['Which customers live in France? Their first and last names.'] },
  { sql: 'SELECT COUNT(*) FROM customers', question: 'How many customers are there?' },
  { sql: 'SELECT name FROM genres', question: 'List the names of all genres.' },
  { sql: 'SELECT name FROM tracks ORDER BY milliseconds DESC LIMIT 1', question: 'What is the name of the longest track?' },
];

test('memory: built from pairs (paraphrases merged, results signed), read back, and refused on another schema with exit 4', async () => {
  const pool = new SqlPool({ size: 1 });
  try {
    const schema = introspectSchema(DB);
    const m = await buildMemory('music_store', schema, [...PAIRS, { sql: PAIRS[1].sql, question: 'Count the customers.' }], pool, DB);
    assert.equal(m.entries.length, 4, 'one entry per distinct SQL');
    assert.deepEqual(m.entries[1].questions, ['How many customers are there?', 'Count the customers.']);
    const run = await pool.execute(DB, PAIRS[0].sql);
    assert.ok(run.ok && run.rows.length > 1);
    assert.equal(m.entries[0].rows, run.rows.length);
    assert.equal(m.entries[0].signature, resultSignature([...run.rows].reverse()), 'the signature ignores row order');
    const path = join(tmp, 'memory.db');
    writeMemory(path, m);
    const back = readMemory(path, schema);
    assert.deepEqual(back.entries.map(({ id, ...e }) => (assert.ok(id), e)), m.entries, 'the pairs come back as written, each with its id');
    // Another database's schema (an edited copy: one more column) is refused.
    const other = join(tmp, 'edited.sqlite');
    copyFileSync(DB, other);
    const db = new Database(other);
    db.exec('ALTER TABLE customers ADD COLUMN loyalty INTEGER');
    db.close();
    assert.notEqual(schemaFingerprint(introspectSchema(other)), m.schema);
    assert.throws(() => readMemory(path, introspectSchema(other)), (e: unknown) => e instanceof AgroError && e.exitCode === 4 && /another schema/.test(e.message));
  } finally {
    await pool.close();
  }
});

test('memory: the nearest pairs by TF-IDF over every phrasing; intent words tell a count from a list', async () => {
  const idx = new MemoryIndex(await buildMemory('music_store', introspectSchema(DB), PAIRS));
  assert.equal(idx.nearest('What is the number of customers?', 1)[0].entry.sql, PAIRS[1].sql);
  assert.equal(idx.nearest('which customers live in Norway', 1)[0].entry.sql, PAIRS[0].sql);
  assert.equal(idx.nearest('Show the names of every genre', 1)[0].entry.sql, PAIRS[2].sql);
  assert.equal(idx.nearest('zzz qqq', 3).length, 0, 'no shared word, no recall');
});

test("a person's pair replaces the factory's entry of the same SQL, is found first, and the index follows the store's changes", async () => {
  const path = join(tmp, 'person.db');
  writeMemory(path, await buildMemory('music_store', introspectSchema(DB), PAIRS));
  const store = MemoryStore.open(path);
  try {
    const before = store.snapshot();
    const idx = new MemoryIndex(before);
    assert.notEqual(idx.nearest('which music styles exist', 1)[0]?.entry.sql, PAIRS[2].sql, 'not known before the correction');
    const stored = store.addPerson({ sql: PAIRS[2].sql, question: 'What music styles are there?', at: '2026-11-28T00:00:00Z' });
    const c = store.changes(before.seq);
    assert.deepEqual(c.added.map((e) => e.id), [stored.id]);
    assert.equal(c.removed.length, 1, 'the factory entry of the same SQL is replaced');
    idx.apply(c.added, c.removed);
    assert.equal(idx.memory.entries.length, PAIRS.length);
    assert.equal(idx.memory.entries[0].source, 'person');
    assert.deepEqual(idx.memory.entries[0].questions, ['What music styles are there?', 'List the names of all genres.']);
    const hit = idx.nearest('which music styles exist', 1)[0];
    assert.equal(hit.entry.id, stored.id);
    assert.equal(idx.nearest('List the names of all genres.', 3).filter((r) => r.entry.sql === PAIRS[2].sql).length, 1, 'the replaced entry is no longer recalled');
    // The index kept current by changes recalls what an index built afresh recalls.
    const fresh = new MemoryIndex(store.snapshot());
    for (const q of ['How many customers are there?', 'music styles', 'longest track']) assert.deepEqual(idx.nearest(q, 3).map((r) => r.entry.id), fresh.nearest(q, 3).map((r) => r.entry.id), q);
    assert.ok(store.remove(stored.id));
    const d = store.changes(c.seq);
    idx.apply(d.added, d.removed);
    assert.equal(idx.nearest('which music styles exist', 1)[0]?.entry.id === stored.id, false, 'a removed pair is not recalled');
  } finally {
    store.close();
  }
});

test('edit: literals re-grounded to the value the question names in the same column; numbers; order flips', () => {
  const values = [
    { table: 'customers', column: 'country', value: 'Germany', score: 1 },
    { table: 'artists', column: 'name', value: 'Germany', score: 0.5 },
    { table: 'artists', column: 'country', value: 'Germany', score: 1 },
  ];
  const e = regroundQuery("SELECT first_name FROM customers AS T1 WHERE T1.country = 'France' AND T1.city = 'Paris'", 'customers in Germany', values)!;
  assert.equal(e.sql, "SELECT first_name FROM customers AS T1 WHERE T1.country = 'Germany' AND T1.city = 'Paris'", 'only the column the question has a value for');
  assert.deepEqual(e.changes, [{ from: 'France', to: 'Germany' }]);
  assert.equal(regroundQuery("SELECT 1 FROM customers WHERE country = 'Germany'", 'customers in Germany', values), null, 'a value the question names stays');
  assert.equal(regroundQuery("SELECT name FROM t WHERE name LIKE '%Rock%'", 'names with Jazz', [{ table: 't', column: 'name', value: 'Jazz', score: 1 }])!.sql, "SELECT name FROM t WHERE name LIKE '%Jazz%'");
  assert.equal(regroundQuery('SELECT title FROM albums WHERE year > 2001', 'albums after 2009', [])!.sql, 'SELECT title FROM albums WHERE year > 2009');
  assert.equal(regroundQuery('SELECT name FROM tracks ORDER BY x DESC LIMIT 5', 'the top three tracks', [])!.sql, 'SELECT name FROM tracks ORDER BY x DESC LIMIT 3');
  assert.equal(regroundQuery('SELECT ROUND(SUM(total), 2) FROM invoices', 'invoices of 2023', []), null, "a function's argument is no number the question names");
  assert.deepEqual(questionNumbers('the top three of 2009, at least 2.5'), [3, 2009, 2.5]);
  // A filter moved to the column of the value the question names, in a table the query reads (aliases kept).
  const moved = moveFilters("SELECT T1.title FROM albums AS T1 JOIN artists AS T2 ON T1.artist_id = T2.artist_id WHERE T2.name = 'Queen'", 'albums by artists from Germany', values);
  assert.deepEqual(moved.map((m) => m.sql), ["SELECT T1.title FROM albums AS T1 JOIN artists AS T2 ON T1.artist_id = T2.artist_id WHERE T2.country = 'Germany'"]);
  assert.deepEqual(moveFilters("SELECT name FROM genres WHERE name = 'Rock'", 'customers in Germany', values), [], 'no table of the value is read');
  assert.deepEqual([...tableAliases(tokenize('SELECT * FROM albums AS a, tracks t JOIN genres ON 1')).entries()], [['albums', 'a'], ['tracks', 't'], ['genres', 'genres']]);
  assert.equal(flipOrder('SELECT name FROM t ORDER BY x DESC LIMIT 1'), 'SELECT name FROM t ORDER BY x ASC LIMIT 1');
  assert.equal(flipOrder('SELECT name FROM t ORDER BY x LIMIT 1'), 'SELECT name FROM t ORDER BY x DESC LIMIT 1');
  assert.equal(flipOrder('SELECT name FROM t'), null);
});

test('rank: values and numbers the question names count for a candidate; strays against it', () => {
  const values = [{ table: 'customers', column: 'country', value: 'Germany', score: 1 }];
  const right = literalFeatures("SELECT * FROM customers WHERE country = 'Germany' AND year > 2009", 'customers in Germany after 2009', values);
  assert.deepEqual(right, { values: 1, strayValues: 0, numbers: 1, strayNumbers: 0 });
  const wrong = literalFeatures("SELECT * FROM customers WHERE country = 'France' AND year > 2001", 'customers in Germany after 2009', values);
  assert.deepEqual(wrong, { values: 0, strayValues: 1, numbers: 0, strayNumbers: 1 });
  assert.ok(confidenceOf([5, 1], 0) > confidenceOf([5, 4.5], 0), 'a clear margin is surer than a near tie');
  assert.ok(confidenceOf([1], 0) < 0.5, 'one weak candidate alone is not sure of itself');
});

test('answer: candidates run, grouped by result, and the one whose reading matches the question is chosen', async () => {
  const pool = new SqlPool({ size: 1 });
  try {
    const schema = introspectSchema(DB);
    const memory = new MemoryIndex(await buildMemory('music_store', schema, PAIRS));
    const index = buildValueIndex(DB);
    const res = { executor: pool, dbPath: DB, memory, values: (q: string) => index.lookup(q, { limit: 10 }), reader: await makeReader(schema, pool) };
    // The policy answers with a count; the question asks for the names: the reading decides, not the policy's vote.
    const a = await answerQuestion('List the first and last names of the customers who live in Germany.', [{ sql: 'SELECT COUNT(*) FROM customers', source: 'greedy' }], res);
    assert.equal(a.sql, "SELECT first_name, last_name FROM customers WHERE country = 'Germany'");
    assert.match(a.reading!, /Germany/);
    assert.deepEqual(a.candidates[0].sources, ['edit']);
    // Two ways to the same result are one group; a query that fails or returns nothing is no candidate.
    const b = await answerQuestion('How many customers are there?', [
      { sql: 'SELECT COUNT(*) FROM customers', source: 'greedy' },
      { sql: 'SELECT COUNT(customer_id) FROM customers', source: 'sample' },
      { sql: 'SELECT nonsense FROM nowhere', source: 'sample' },
      { sql: "SELECT * FROM customers WHERE country = 'Atlantis'", source: 'sample' },
    ], { ...res, memory: undefined });
    assert.equal(b.failed, 1);
    assert.equal(b.empty, 1);
    const g = b.candidates.filter((c) => c.sql.startsWith('SELECT COUNT('));
    assert.equal(g.length, 2);
    assert.equal(g[0].group, g[1].group);
    assert.equal(b.candidates[0].group, 0);
  } finally {
    await pool.close();
  }
});

test('answer: a candidate that runs away is cut by the timeout and the others still answer; the budget bounds the run', async () => {
  let calls = 0;
  // An executor whose one query never returns within its time limit, as the sandbox stops it.
  const slow: SqlExecutor = {
    async execute(db, sql, opts) {
      calls++;
      if (sql.includes('WITH RECURSIVE')) {
        await new Promise((r) => setTimeout(r, opts?.timeoutMs ?? 0));
        return { ok: false, error: 'timeout', message: 'stopped', elapsedMs: opts?.timeoutMs ?? 0, limit: 'wall' };
      }
      return { ok: true, columns: ['n'], rows: [[7]], truncated: false, elapsedMs: 1 };
    },
    close: async () => {},
  };
  const t0 = Date.now();
  const a = await answerQuestion('how many', [
    { sql: 'WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r', source: 'greedy' },
    { sql: 'SELECT 7', source: 'sample' },
  ], { executor: slow, dbPath: DB }, { execTimeoutMs: 200, budgetMs: 5000 });
  assert.equal(a.sql, 'SELECT 7');
  assert.equal(a.failed, 1);
  assert.ok(Date.now() - t0 < 2000);
  calls = 0;
  const many = Array.from({ length: 50 }, (_, i) => ({ sql: `WITH RECURSIVE r(x) AS (SELECT ${i}) SELECT 1`, source: 'sample' as const }));
  const t1 = Date.now();
  const b = await answerQuestion('anything', many, { executor: slow, dbPath: DB }, { execTimeoutMs: 100, budgetMs: 300 });
  assert.ok(Date.now() - t1 < 1500, 'the budget stops starting candidates');
  assert.ok(calls < 10 && b.tried === calls, `ran ${calls} of 50 within the budget`);
});

/** The bundled database's question-time synthesis and what it is made of, over a pool closed afterwards. */
async function withQuestionSynth(fn: (q: { pool: SqlPool; schema: ReturnType<typeof introspectSchema>; index: ReturnType<typeof buildValueIndex>; lang: Awaited<ReturnType<typeof databaseLanguageOf>>; synth: ReturnType<typeof makeQuestionSynth> }) => Promise<void>): Promise<void> {
  const pool = new SqlPool({ size: 1 });
  try {
    const schema = introspectSchema(DB);
    const index = buildValueIndex(DB);
    const lang = await databaseLanguageOf(schema, pool);
    await fn({ pool, schema, index, lang, synth: makeQuestionSynth(schema, pool, DB, lang.graph, lang.profiles, index) });
  } finally {
    await pool.close();
  }
}

test("question-time synthesis is steered by the question's words: a superlative draws more ranked rows, an average more aggregates", async () => {
  assert.deepEqual(intentWeights('List the names of all genres.'), {}, 'no cue: the factory\'s own mix');
  const top = intentWeights('Which is the longest track?');
  assert.ok(top.topK > TEMPLATE_WEIGHTS.topK && top.groupTop > TEMPLATE_WEIGHTS.groupTop && top.projection === undefined);
  assert.ok(intentWeights('What is the average price of a track?').aggregate > TEMPLATE_WEIGHTS.aggregate);
  await withQuestionSynth(async ({ synth }) => {
    const q = 'Which track is the longest?';
    const ranked = (xs: string[]) => xs.filter((s) => /ORDER BY/i.test(s) && /LIMIT/i.test(s)).length;
    const plain = await synth(q, 40);
    const steered = await synth(q, 40, intentWeights(q));
    assert.ok(ranked(steered) > ranked(plain), `ranked drafts: ${ranked(plain)} of ${plain.length} plain, ${ranked(steered)} of ${steered.length} steered`);
  });
});

test('question-time synthesis: queries drawn over the tables the question is about, deterministic for a question; its drafts edited to the question', async () => {
  await withQuestionSynth(async ({ pool, schema, index, lang, synth }) => {
    const q = 'Which customers live in Germany?';
    const a = await synth(q, 30);
    assert.ok(a.length >= 10, `drafted ${a.length}`);
    assert.deepEqual(await synth(q, 30), a, 'the same question draws the same queries');
    assert.ok(a.filter((s) => /customers/i.test(s)).length >= a.length / 2, 'mostly over the table the question names');
    const res = { executor: pool, dbPath: DB, values: (x: string) => index.lookup(x, { limit: 10 }), reader: await makeReader(schema, pool, undefined, undefined, lang), synth };
    const withSynth = await answerQuestion(q, [], res);
    assert.ok(withSynth.candidates.some((c) => c.sources.includes('edit') && /'Germany'/.test(c.sql)), 'a drafted filter re-grounded to the value asked');
    assert.ok(withSynth.candidates.every((c) => !c.sources.includes('synth') || !hasLiterals(c.sql)), "no draft with a random row's literal as it was");
    const without = await answerQuestion(q, [], res, { synth: 0 });
    assert.equal(without.candidates.length, 0, 'no policy, no memory, no synthesis: nothing to answer with');
  });
});
