// What counts as evidence for a candidate: a repeated sample is one vote, not several; "name" tells a question
// apart; a rare word does not outweigh the column a question names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SqlPool } from '../../src/sql/pool.ts';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { astFromSql } from '../../src/factory/from-sql.ts';
import { realizeQuestion } from '../../src/factory/language/realize.ts';
import { QUESTION_STYLES } from '../../src/data/dataset-row.ts';
import { databaseLanguageOf, makeReader } from '../../src/answer/reading.ts';
import { answerQuestion } from '../../src/answer/answer.ts';
import { asksNegation, cosine, Idf, IDF_CAP, stems } from '../../src/answer/text.ts';
import { negates, RANK_WEIGHTS } from '../../src/answer/rank.ts';
import { buildMemory } from '../../src/memory/build.ts';
import { MemoryIndex } from '../../src/answer/memory.ts';

const DB = 'data/databases/music_store/music_store.sqlite';
test('agreement: the same query sampled again is no new vote; another query with the same result is', async () => {
  const pool = new SqlPool({ size: 1 });
  try {
    const res = { executor: pool, dbPath: DB };
    const count = 'SELECT COUNT(*) FROM customers';
    const repeated = await answerQuestion('how many customers', [
      { sql: count, source: 'greedy' },
      ...Array.from({ length: 4 }, () => ({ sql: count, source: 'sample' as const })),
    ], res);
    assert.equal(repeated.candidates.find((c) => c.sql === count)?.features.agreement, 0, 'five identical samples are one vote');
    const two = await answerQuestion('how many customers', [
      { sql: count, source: 'greedy' },
      { sql: count, source: 'sample' },
      { sql: 'SELECT COUNT(customer_id) FROM customers', source: 'sample' },
    ], res);
    for (const c of two.candidates.filter((x) => x.sql.startsWith('SELECT COUNT('))) assert.equal(c.features.agreement, 1, `${c.sql}: one other query reaches its result`);
  } finally {
    await pool.close();
  }
});

test('"name" is a word the comparison keeps: a question asking for names differs from one asking for a count', () => {
  assert.ok(stems('List the names of all genres.').includes(stems('name')[0]));
  assert.notDeepEqual(stems('the names of genres'), stems('the genres'));
});

test('IDF is capped: a word the factory seldom says does not outweigh the column the question names', () => {
  const idf = new Idf();
  const columns = ['city', 'country', 'state', 'company', 'email'];
  for (let i = 0; i < 40; i++) {
    idf.add(`Which ${columns[i % 5]} has the most customers?`);
    idf.add(`List the ${columns[i % 5]} of customers with id ${i}.`);
  }
  idf.add('What is the most common country of customers?');
  assert.equal(idf.weight(stems('common')[0]), IDF_CAP, 'a word one phrasing in 81 uses weighs the cap');
  assert.equal(idf.weight('neverseen'), IDF_CAP);
  assert.ok(idf.weight(stems('city')[0]) < IDF_CAP, 'a column word most phrasings use still weighs less');
  const q = idf.vector('What is the most common city of customers?');
  const byColumn = cosine(q, idf.vector('Which city has the most customers?'));
  const byRareWord = cosine(q, idf.vector('What is the most common country of customers?'));
  assert.ok(byColumn > byRareWord, `the same column (${byColumn.toFixed(3)}) beats the same rare word (${byRareWord.toFixed(3)})`);
});

test('a compound the memory writes as one word is read as one when a person writes it as two', () => {
  const idf = new Idf();
  for (const q of ['What are the names of all highschoolers?', 'How many highschoolers are in grade 9?', 'List the grades of highschoolers.']) idf.add(q);
  const q = idf.vector('Show the names of the high schoolers.');
  assert.ok(q.has(stems('highschoolers')[0]), [...q.keys()].join(' '));
  assert.ok(!q.has('high') && !q.has(stems('schooler')[0]));
  assert.ok(cosine(q, idf.vector('What are the names of all highschoolers?')) > 0.9);
  // Without a memory that writes it so, the two words stay two; a stop word never joins ("any one" is not "anyone").
  assert.deepEqual(stems('high schooler'), [stems('high')[0], stems('schooler')[0]]);
  const anyone = stems('anyone')[0];
  assert.ok(!stems('is there any one', (s) => s === anyone).includes(anyone));
});

test('a query the factory reads is compared through every style it writes questions in, as people ask and not', async () => {
  const pool = new SqlPool({ size: 1 });
  try {
    const schema = introspectSchema(DB);
    const language = await databaseLanguageOf(schema, pool);
    const reader = await makeReader(schema, pool, undefined, undefined, language);
    const sql = "SELECT name FROM tracks WHERE milliseconds > 300000";
    const ast = astFromSql(sql, schema, language.graph);
    assert.ok(ast.ok);
    const readings = reader(sql);
    for (const style of QUESTION_STYLES) for (const variant of [0, 1]) for (const people of [false, true]) {
      const q = realizeQuestion(ast.ast, style, variant, language.lex, true, people);
      assert.ok(readings.includes(q), `${style}/${variant}/${people ? 'people' : 'formal'}: ${q} not among ${readings.length}`);
    }
  } finally {
    await pool.close();
  }
});

test('a query that negates where the question does not loses; a question that negates in any of its ways keeps it', async () => {
  assert.ok(asksNegation("Which customers didn't buy anything?"), 'a contraction is a "not"');
  assert.ok(asksNegation('customers with no invoice') && asksNegation('artists other than Queen'));
  assert.ok(!asksNegation('How many customers are from Germany?'));
  assert.ok(negates("SELECT 1 FROM t WHERE a <> 'x'") && negates('SELECT 1 FROM t WHERE a NOT IN (SELECT b FROM u)') && negates('SELECT a FROM t EXCEPT SELECT a FROM u'));
  assert.ok(!negates("SELECT COUNT(*) FROM t WHERE a = 'not'"), 'a word inside a literal is no negation');
  const pool = new SqlPool({ size: 1 });
  try {
    const res = { executor: pool, dbPath: DB };
    const other = "SELECT COUNT(*) FROM customers WHERE country <> 'Germany'";
    const same = "SELECT COUNT(*) FROM customers WHERE country = 'Germany'";
    // No reading tells them apart here (no reader): the greedy answer would win on its own weight.
    const policy = [{ sql: other, source: 'greedy' as const }, { sql: same, source: 'sample' as const }];
    const asked = await answerQuestion('How many customers are from Germany?', policy, res);
    assert.equal(asked.sql, same);
    assert.deepEqual(asked.candidates.map((c) => [c.sql, c.features.negation]).sort(), [[other, 1], [same, 0]].sort());
    const without = await answerQuestion('How many customers are from Germany?', policy, { ...res, weights: { ...RANK_WEIGHTS, negation: 0 } });
    assert.equal(without.sql, other, 'without the feature the greedy negation wins: the test measures the feature');
    const negated = await answerQuestion('How many customers are not from Germany?', policy, res);
    assert.ok(negated.candidates.every((c) => c.features.negation === 0));
    assert.equal(negated.sql, other);
  } finally {
    await pool.close();
  }
});

test("a remembered pair is read as the factory reads any query too, not only in its stored questions' words", async () => {
  const pool = new SqlPool({ size: 1 });
  try {
    const schema = introspectSchema(DB);
    const reader = await makeReader(schema, pool);
    const sql = 'SELECT COUNT(*) FROM customers';
    // A stored wording that shares one word with the question; the factory's own reading says it the person's way.
    const memory = new MemoryIndex(await buildMemory('music_store', schema, [{ sql, question: 'Tally the customers on file.' }]));
    const a = await answerQuestion('How many customers are there?', [], { executor: pool, dbPath: DB, memory, reader });
    const c = a.candidates.find((x) => x.sql === sql)!;
    assert.deepEqual(c.sources, ['memory']);
    assert.notEqual(c.reading, 'Tally the customers on file.');
    assert.ok(reader(sql).includes(c.reading!), `${c.reading} is one of the factory's readings`);
    assert.ok(c.features.reading > 0.9, String(c.features.reading));
  } finally {
    await pool.close();
  }
});
