// People's variety in the factory's questions (issue #32 parts 4 and 6): the forms of src/factory/language/
// (frames, WordNet adjectives, values as typed, synonyms, documented names) each parse back to their SQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { birthGradable, comparative, gradableOf, superlative } from '../../src/factory/language/adjectives.ts';
import { buildLexicon, spokenColumn, spokenForms, withData } from '../../src/factory/language/names.ts';
import { makeParseEnv, parseQuestion } from '../../src/factory/language/general-parse.ts';
import { realizeQuestion } from '../../src/factory/language/realize.ts';
import { COUNT_NOUN_FRAMES, DISTINCT_COUNT_FRAMES, GROUP_TOP_FRAMES, LIST_FRAMES, VALUE_FRAMES } from '../../src/factory/language/frames.ts';
import { buildSchemaGraph } from '../../src/factory/schema-graph.ts';
import { printQuery } from '../../src/factory/print.ts';
import { runFactory } from '../../src/factory/pipeline.ts';
import { QUESTION_STYLES } from '../../src/data/dataset-row.ts';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { testSuiteMatch } from '../../src/sql/testsuite.ts';
import type { DbDocs } from '../../src/prompt/docs-types.ts';
import { col, emptySelect, lit, type SelectAst } from '../../src/factory/ast.ts';
import { makeShopDb, tmpDir } from './fixtures.ts';
import { addNoise } from '../../src/factory/language/noise.ts';
import { Rng } from '../../src/util/rng.ts';

test('adjectives come from WordNet: an attribute noun or a unit of one, said in the comparative and superlative', () => {
  assert.deepEqual(gradableOf('tracks', 'unit_price', 'unit price'), { table: 'tracks', column: 'unit_price', more: 'expensive', less: 'cheap', unit: null });
  assert.deepEqual(gradableOf('tracks', 'milliseconds', 'milliseconds'), { table: 'tracks', column: 'milliseconds', more: 'long', less: 'short', unit: 'milliseconds' });
  assert.equal(gradableOf('people', 'height', 'height')?.more, 'high');
  assert.equal(gradableOf('people', 'stature', 'stature')?.more, 'tall');
  assert.equal(gradableOf('people', 'age', 'age')?.less, 'young');
  assert.equal(gradableOf('orders', 'quantity', 'quantity'), null, 'how much of a stuff there is is no adjective of a row');
  assert.equal(gradableOf('tracks', 'name', 'name'), null);
  const forms = ['cheap', 'expensive', 'long', 'large', 'big', 'heavy', 'far', 'narrow'].map((a) => [comparative(a), superlative(a)]);
  assert.deepEqual(forms, [
    ['cheaper', 'cheapest'],
    ['more expensive', 'most expensive'],
    ['longer', 'longest'],
    ['larger', 'largest'],
    ['bigger', 'biggest'],
    ['heavier', 'heaviest'],
    ['farther', 'farthest'],
    ['narrower', 'narrowest'],
  ]);
});

test('values as people type them: joined words split, camelCase split, nothing made of codes or stray fragments', () => {
  assert.deepEqual(spokenForms('Shutdown'), ['shut down']);
  assert.deepEqual(spokenForms('InProgress'), ['in progress']);
  assert.deepEqual(spokenForms('full_time'), ['full time']);
  assert.deepEqual(spokenForms('McDonald'), []);
  assert.deepEqual(spokenForms('steve@example.com'), []);
  assert.deepEqual(spokenForms('Operational'), []);
});

/** A query's SQL with its filters in one order (a question may say them in another). */
const canon = (q: SelectAst): string => printQuery({ ...q, where: [...q.where].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1)) });

/** Plants with a status stored as one word, a code documented by its meaning, and a height. */
function makeReactorsDb(dir: string): string {
  const path = join(dir, 'reactors.sqlite');
  const db = new Database(path);
  db.exec('CREATE TABLE reactors (id INTEGER PRIMARY KEY, name TEXT, status TEXT, rtype TEXT, height REAL, country TEXT)');
  const ins = db.prepare('INSERT INTO reactors VALUES (?, ?, ?, ?, ?, ?)');
  const statuses = ['Operational', 'Shutdown', 'UnderConstruction'];
  const types = ['PWR', 'BWR', 'PHWR'];
  for (let i = 1; i <= 60; i++) ins.run(i, `Unit ${i}`, statuses[i % 3], types[(i * 7) % 3], 30 + ((i * 13) % 50), ['France', 'Canada', 'Japan'][i % 3]);
  db.close();
  return path;
}

test('each people form parses back to its query: frames, an adjective comparison and ranking, a value as typed, a documented name and meaning', async () => {
  const dir = tmpDir();
  const path = makeReactorsDb(dir);
  const schema = introspectSchema(path);
  const docs: DbDocs = { tables: [{ table: 'reactors', columns: [{ column: 'rtype', name: 'reactor type', values: { PHWR: 'Pressurised Heavy Water Reactor' } }] }] };
  const lex = withData(buildLexicon(schema, docs), new Map([['reactors\u0000status', ['Operational', 'Shutdown', 'UnderConstruction']], ['reactors\u0000rtype', ['PWR', 'BWR', 'PHWR']], ['reactors\u0000country', ['France', 'Canada', 'Japan']]]), [], docs);
  assert.equal(spokenColumn(lex, 'reactors', 'rtype'), 'reactor type', 'the documented name');
  const env = makeParseEnv(schema, buildSchemaGraph(schema), lex);
  const c = (n: string) => col('T1', 'reactors', n);
  const count = emptySelect('reactors');
  count.columns = [{ kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false }];
  count.where = [{ kind: 'cmp', left: c('height'), op: '>', right: lit(40) }, { kind: 'cmp', left: c('status'), op: '=', right: lit('Shutdown') }];
  const list = emptySelect('reactors');
  list.columns = [c('name')];
  list.where = [{ kind: 'cmp', left: c('rtype'), op: '=', right: lit('PHWR') }];
  const top = emptySelect('reactors');
  top.columns = [c('name')];
  top.where = [{ kind: 'null', expr: c('height'), negated: true }];
  top.orderBy = [{ expr: c('height'), dir: 'DESC' }, { expr: c('id'), dir: 'ASC' }];
  top.limit = 1;
  const howHigh = emptySelect('reactors');
  howHigh.columns = [c('height')];
  howHigh.where = [{ kind: 'cmp', left: c('name'), op: '=', right: lit('Unit 3') }];
  const howHighWith = emptySelect('reactors');
  howHighWith.columns = [c('height')];
  howHighWith.where = [{ kind: 'cmp', left: c('country'), op: '=', right: lit('Japan') }];
  const said = new Set<string>();
  for (const q of [count, list, top, howHigh, howHighWith]) {
    for (const style of QUESTION_STYLES) {
      for (let v = 0; v < 6; v++) {
        const text = realizeQuestion(q, style, v, lex, true, true);
        said.add(text);
        assert.equal(canon(parseQuestion(text, env) as SelectAst), canon(q), text);
      }
    }
  }
  const all = [...said].join('\n');
  assert.match(all, /higher than 40/, all);
  assert.match(all, /the highest reactor\b/, all);
  assert.match(all, /shut down reactors/, all);
  assert.match(all, /have reactor type pressurised heavy water reactor\b/, all); // the meaning, typed without quotes
  assert.match(all, /have status 'shut down'/, all);
  assert.match(all, /^(Find|Return|Give me) the number of /m, all);
  assert.match(all, /^How high is the reactor named 'Unit 3'\?$/m, all);
  assert.match(all, /^How high is the reactor with country /m, all);
});

test('a birth date ranks by age: "the oldest" is the earliest birth, said and read back, never "older than" a number nor "how young"', () => {
  assert.equal(birthGradable('people', 'birth_date', 'birth date')?.less, 'old');
  assert.equal(birthGradable('singer', 'Birth_Year', 'birth year')?.more, 'young');
  assert.ok(birthGradable('people', 'dob', 'dob'));
  assert.equal(birthGradable('people', 'birth_place', 'birth place'), null, 'a place of birth ranks nothing');
  assert.equal(birthGradable('orders', 'order_date', 'order date'), null);
  const dir = tmpDir();
  const path = join(dir, 'staff.sqlite');
  const db = new Database(path);
  db.exec('CREATE TABLE employees (id INTEGER PRIMARY KEY, first_name TEXT, birth_date TEXT, birth_year INTEGER, city TEXT)');
  const ins = db.prepare('INSERT INTO employees VALUES (?, ?, ?, ?, ?)');
  for (let i = 1; i <= 30; i++) ins.run(i, `Name${i}`, `19${50 + i}-0${1 + (i % 9)}-1${i % 10}`, 1950 + i, ['Lyon', 'Graz'][i % 2]);
  db.close();
  const schema = introspectSchema(path);
  const lex = withData(buildLexicon(schema), new Map([['employees\u0000city', ['Lyon', 'Graz']]]), ['employees\u0000birth_date']);
  // Two birth columns in one table say the same adjective: neither is ranked by it (which one would "oldest" mean?).
  assert.equal(lex.gradable.get('employees\u0000birth_date'), undefined);
  const one = introspectSchema(path);
  one.tables[0].columns = one.tables[0].columns.filter((c) => c.name !== 'birth_year');
  const lex1 = withData(buildLexicon(one), new Map([['employees\u0000city', ['Lyon', 'Graz']]]), ['employees\u0000birth_date']);
  const env = makeParseEnv(one, buildSchemaGraph(one), lex1);
  const c = (n: string) => col('T1', 'employees', n);
  const said = new Set<string>();
  for (const dir2 of ['ASC', 'DESC'] as const) {
    const top = emptySelect('employees');
    top.columns = [c('first_name')];
    top.where = [{ kind: 'null', expr: c('birth_date'), negated: true }];
    top.orderBy = [{ expr: c('birth_date'), dir: dir2 }, { expr: c('id'), dir: 'ASC' }];
    top.limit = 1;
    const cmp = emptySelect('employees');
    cmp.columns = [{ kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false }];
    cmp.where = [{ kind: 'cmp', left: c('birth_date'), op: '>', right: lit('1970-01-01') }];
    for (const q of [top, cmp]) {
      for (const style of QUESTION_STYLES) {
        for (let v = 0; v < 6; v++) {
          const text = realizeQuestion(q, style, v, lex1, true, true);
          said.add(text);
          assert.equal(canon(parseQuestion(text, env) as SelectAst), canon(q), text);
        }
      }
    }
  }
  const all = [...said].join('\n');
  assert.match(all, /the oldest employee\b/, all);
  assert.match(all, /the youngest employee\b/, all);
  assert.doesNotMatch(all, /older than|younger than|How (old|young) is/, all);
});

/** The people forms of every kept pair of a factory run, in every style and variant, parse back to the same answers on the original and every variant database. */
async function everyFormParsesBack(db: string, seed: number): Promise<string[]> {
  const dir = tmpDir();
  const r = await runFactory({ db, out: join(dir, 'out'), n: 120, seed, variants: 2, people: 1 });
  const schema = introspectSchema(db);
  const env = makeParseEnv(schema, buildSchemaGraph(schema), r.lex);
  const pool = new SqlPool({ size: 2 });
  const said: string[] = [];
  try {
    // Follow-ups lean on the turn before them: their queries are the first turns' edits, not sentences of their own.
    for (const p of r.pairs.filter((x) => !x.previous)) {
      for (const style of QUESTION_STYLES) {
        for (let v = 0; v < 6; v++) {
          let text: string;
          try {
            text = realizeQuestion(p.ast, style, v, r.lex, true, true);
          } catch {
            continue; // no question says it in this style (the general grammar's limits, as before)
          }
          said.push(text);
          const sql = printQuery(parseQuestion(text, env));
          if (sql === p.sql) continue;
          const m = await testSuiteMatch(pool, sql, p.sql, [db, ...r.manifest.variants], { mode: 'spider', timeoutMs: 5000 });
          assert.ok(m.match, `${text}\n  gold: ${p.sql}\n  read: ${sql}`);
        }
      }
    }
  } finally {
    await pool.close();
  }
  return said;
}

test('music_store: every people form of every pair, in every style and variant, parses back to the same answers on every variant', async () => {
  const said = (await everyFormParsesBack(join('data', 'databases', 'music_store', 'music_store.sqlite'), 5)).join('\n');
  assert.match(said, / (more expensive|cheaper|longer|shorter|larger|smaller) than | of the (\d+ )?(most expensive|cheapest|longest|shortest|largest|smallest) /);
  // A frame of each intent besides the one it was asked with before (the first of DISTINCT_COUNT_FRAMES and GROUP_TOP_FRAMES).
  for (const frames of [COUNT_NOUN_FRAMES, LIST_FRAMES, VALUE_FRAMES, DISTINCT_COUNT_FRAMES.slice(1), GROUP_TOP_FRAMES.slice(1)]) {
    assert.ok(frames.some((f) => new RegExp(`^${f.text} `, 'm').test(said)), frames.map((f) => f.text).join(', '));
  }
});

test('retail: every people form of every pair, in every style and variant, parses back to the same answers on every variant', async () => {
  const said = (await everyFormParsesBack(join('data', 'databases', 'retail', 'retail.sqlite'), 5)).join('\n');
  assert.match(said, / (more expensive|cheaper) than | of the (\d+ )?(most expensive|cheapest) /);
});

test('several questions per query: the paraphrases a run keeps are other questions that parse back to the same answers', async () => {
  const dir = tmpDir();
  const db = makeShopDb(dir);
  const r = await runFactory({ db, out: join(dir, 'out'), n: 40, seed: 4, variants: 1, phrasings: 3 });
  const withParaphrases = r.rows.filter((x) => x.paraphrases?.length);
  assert.ok(withParaphrases.length >= r.rows.length / 2, `${withParaphrases.length} of ${r.rows.length} rows have paraphrases`);
  const schema = introspectSchema(db);
  const env = makeParseEnv(schema, buildSchemaGraph(schema), r.lex);
  const pool = new SqlPool({ size: 2 });
  try {
    for (const row of withParaphrases) {
      assert.ok(!row.paraphrases!.includes(row.question) && new Set(row.paraphrases).size === row.paraphrases!.length, row.question);
      for (const text of row.paraphrases!) {
        const sql = printQuery(parseQuestion(text, env));
        if (sql !== row.SQL) assert.ok((await testSuiteMatch(pool, sql, row.SQL, [db, ...r.manifest.variants], { mode: 'spider', timeoutMs: 5000 })).match, `${text}\n${row.SQL}\n${sql}`);
      }
    }
  } finally {
    await pool.close();
  }
  const single = await runFactory({ db, out: join(dir, 'one'), n: 40, seed: 4, variants: 1 });
  assert.ok(single.rows.every((x) => x.paraphrases === undefined), 'one phrasing by default: rows as before');
});

test('train-time noise: case, punctuation or one typo, never inside a quoted value or a number', () => {
  const q = "How many tracks have composer 'Ines Khan' and unit price above 0.99?";
  const rng = new Rng(3);
  const kinds = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const { text, kinds: k } = addNoise(q, rng);
    k.forEach((x) => kinds.add(x));
    assert.ok(text.includes("'Ines Khan'") && text.includes('0.99'), text);
    assert.notEqual(text, q);
    if (k.includes('typo')) assert.equal(Math.abs(text.length - q.length) <= 1 + (k.includes('punctuation') ? 1 : 0), true, text);
  }
  assert.deepEqual([...kinds].sort(), ['case', 'punctuation', 'typo']);
  assert.equal(addNoise(q, new Rng(9)).text, addNoise(q, new Rng(9)).text, 'the seed decides');
});

test('noise in a run: the share asked for is noised after the round trip, the SQL untouched', async () => {
  const dir = tmpDir();
  const db = makeShopDb(dir);
  const clean = await runFactory({ db, out: join(dir, 'clean'), n: 30, seed: 2, variants: 1 });
  const noisy = await runFactory({ db, out: join(dir, 'noisy'), n: 30, seed: 2, variants: 1, noise: 1 });
  assert.deepEqual(noisy.rows.map((r) => r.SQL), clean.rows.map((r) => r.SQL));
  const changed = noisy.rows.filter((r, i) => r.question !== clean.rows[i].question);
  assert.ok(changed.length >= noisy.rows.length * 0.9, `${changed.length} of ${noisy.rows.length}`);
  assert.ok(changed.every((r) => r.provenance.noise?.length), 'provenance says how');
  assert.ok(clean.rows.every((r) => r.provenance.noise === undefined));
});

test('the WordNet tables have no prototype: a table named after an Object member (constructors) is an ordinary word', async () => {
  const { ATTRIBUTES, UNITS, SYNONYMS, COMPOUNDS } = await import('../../src/factory/language/wordnet-lexicon.ts');
  for (const table of [ATTRIBUTES, UNITS, SYNONYMS, COMPOUNDS]) {
    for (const w of ['constructor', 'toString', 'hasOwnProperty', '__proto__', 'valueOf']) assert.equal((table as Record<string, unknown>)[w], undefined, w);
  }
});
