// Issue #15, regression tests for the causes that realism.test.ts and shapes-throughput.test.ts
// leave uncovered or cover only loosely: column names with "for" (and of/is through the parser),
// a stray-space value filtering a joined table, grouping by a foreign key or by a parent's name,
// queries with no filter, NOT IN anti-joins without a filter, the cap on single-value answers,
// trivial percentages, and the manifest's list of unused tables and columns.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { Rng } from '../../src/util/rng.ts';
import { col, emptySelect, lit, type Cond, type QueryAst, type SelectAst } from '../../src/factory/ast.ts';
import { printQuery } from '../../src/factory/print.ts';
import { buildLexicon } from '../../src/factory/language/names.ts';
import { profileSchema } from '../../src/factory/profile.ts';
import { buildSchemaGraph } from '../../src/factory/schema-graph.ts';
import { realizeQuestion } from '../../src/factory/language/realize.ts';
import { makeParseEnv, parseQuestion } from '../../src/factory/language/general-parse.ts';
import { synthesize, TEMPLATE_NAMES } from '../../src/factory/synthesize.ts';
import { isTrivialValue, SINGLE_VALUE_SHARE, verifyPair, verifyStage } from '../../src/factory/verify.ts';
import { runFactory, schemaUse, unusedSchema, type Manifest } from '../../src/factory/pipeline.ts';
import { QUESTION_STYLES } from '../../src/data/dataset-row.ts';
import { silentProgress } from '../../src/util/progress.ts';
import type { StageContext, SynthPair } from '../../src/factory/types.ts';
import { makeOddDb, synthInputs, tmpDir } from './fixtures.ts';

/** One country is stored with a stray space, as CSV imports leave them ('US '). */
const COUNTRIES = ['France', 'Japan', 'Peru', 'Kenya '];

/**
 * singer <- concert. Singer names are unique and more than 50 (a 'text' column, not a category);
 * concert years take 6 values (a small-domain number); singers 41-60 have no concert (an anti-join
 * has rows to return).
 */
function makeMusicDb(dir: string): string {
  const path = join(dir, 'music.sqlite');
  const db = new Database(path);
  db.exec(`
    CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT);
    CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, singer_id INTEGER NOT NULL REFERENCES singer(singer_id), year INTEGER, venue TEXT, attendance INTEGER);
  `);
  const rng = new Rng(4);
  const ins = db.prepare('INSERT INTO singer VALUES (?, ?, ?)');
  for (let i = 1; i <= 60; i++) ins.run(i, `Singer ${i}`, rng.pick(COUNTRIES));
  const insC = db.prepare('INSERT INTO concert VALUES (?, ?, ?, ?, ?)');
  for (let i = 1; i <= 150; i++) insC.run(i, 1 + rng.int(40), 2015 + rng.int(6), rng.pick(['Arena', 'Hall', 'Park', 'Club', 'Dome']), 100 * (1 + rng.int(90)));
  db.close();
  return path;
}

const dir = tmpDir('agro-issue15-');
const music = makeMusicDb(dir);

function ctxFor(path: string, executor: SqlPool, rejected: string[] = [], seed = 1): StageContext {
  return { dbId: 'music', dbPath: path, schema: introspectSchema(path), executor, rng: new Rng(seed), progress: silentProgress, variants: [], reject: (_p, why) => rejected.push(why), timeoutMs: 3000 };
}

/** Template weights with every template off but `on`. */
const only = (...on: string[]) => Object.fromEntries(TEMPLATE_NAMES.map((t) => [t, on.includes(t) ? 10 : 0]));

function pair(ast: QueryAst, id = 'p'): SynthPair {
  return { id, dbId: 'music', sql: printQuery(ast), ast, question: '', evidence: '', style: 'formal', difficulty: 'simple', provenance: { stages: [], checks: [] } };
}

/** Candidates of the given templates, with the SQL of those that pass verification. */
async function verifiedSql(pool: SqlPool, weights: Record<string, number>, n: number): Promise<string[]> {
  const { graph, profiles } = synthInputs(music);
  const ctx = ctxFor(music, pool);
  const out = await synthesize(ctx, { graph, profiles }, n, weights);
  const kept: string[] = [];
  for (const p of out) if ((await verifyPair(ctx, p)) === null) kept.push(p.sql);
  return kept;
}

// Bug 3: realism.test.ts checks "of" and "is" (HeadOfState, IsOfficial, cost_of_treatment) in the
// profile only; the parser's side and "for" were not checked.
test('column names with of / is / for are profiled and their questions parse back, with and without intents', () => {
  const path = join(dir, 'visits.sqlite');
  const db = new Database(path);
  db.exec('CREATE TABLE visit (visit_id INTEGER PRIMARY KEY, reason_for_visit TEXT, cost_of_treatment INTEGER, IsOfficial TEXT, HeadOfState TEXT)');
  const rng = new Rng(1);
  const ins = db.prepare('INSERT INTO visit VALUES (?, ?, ?, ?, ?)');
  for (let i = 1; i <= 40; i++) ins.run(i, rng.pick(['checkup', 'injury', 'fever']), 50 * (1 + rng.int(20)), rng.pick(['T', 'F']), rng.pick(['Ann Lee', 'Bo Chan', 'Cy Diaz']));
  db.close();
  const schema = introspectSchema(path);
  const graph = buildSchemaGraph(schema);
  const lex = buildLexicon(schema);
  const { profiles, skipped } = profileSchema(schema, graph, lex);
  assert.deepEqual(skipped, []);
  assert.deepEqual(
    profiles.get('visit')!.columns.filter((c) => !c.isKey).map((c) => c.column),
    ['reason_for_visit', 'cost_of_treatment', 'IsOfficial', 'HeadOfState'],
  );
  const env = makeParseEnv(schema, graph, lex);
  const C = (c: string) => col('T1', 'visit', c);
  const q = (f: (s: SelectAst) => void): SelectAst => {
    const s = emptySelect('visit');
    f(s);
    return s;
  };
  const cases: SelectAst[] = [
    q((s) => ((s.columns = [C('reason_for_visit')]), (s.where = [{ kind: 'cmp', left: C('IsOfficial'), op: '=', right: lit('T') }]))),
    q((s) => ((s.columns = [{ kind: 'agg', fn: 'MAX', arg: C('cost_of_treatment'), distinct: false }]), (s.where = [{ kind: 'cmp', left: C('reason_for_visit'), op: '=', right: lit('fever') }]))),
    q((s) => ((s.columns = [C('HeadOfState'), C('cost_of_treatment')]), (s.where = [{ kind: 'cmp', left: C('cost_of_treatment'), op: '>', right: lit(300) }]))),
    q((s) => ((s.columns = [C('IsOfficial'), { kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false }]), (s.groupBy = [C('IsOfficial')]))),
  ];
  for (const ast of cases) {
    for (const style of QUESTION_STYLES) {
      for (const intents of [true, false]) {
        const text = realizeQuestion(ast, style, 1, lex, intents);
        assert.equal(printQuery(parseQuestion(text, env)), printQuery(ast), text);
      }
    }
  }
});

// Bug 5: realism.test.ts finds 'Asia ' somewhere in a run's SQL; here the value filters the joined
// table (without it the join is dropped and the question asks about the base table alone).
test('a value with a stray space is a literal that filters a joined table, and its question parses back', async () => {
  const pool = new SqlPool({ size: 2 });
  try {
    const { graph, profiles } = synthInputs(music);
    const ctx = ctxFor(music, pool);
    const out = await synthesize(ctx, { graph, profiles }, 60, only('projection', 'count', 'aggregate'));
    const spaced: SynthPair[] = [];
    for (const p of out) if (/ INNER JOIN singer AS T2 .*WHERE .*T2\.country = 'Kenya '/.test(p.sql) && (await verifyPair(ctx, p)) === null) spaced.push(p);
    assert.ok(spaced.length > 0, out.map((p) => p.sql).join('\n'));
    const schema = introspectSchema(music);
    const lex = buildLexicon(schema);
    const env = makeParseEnv(schema, graph, lex);
    for (const p of spaced) {
      for (const style of QUESTION_STYLES) {
        const text = realizeQuestion(p.ast, style, 0, lex);
        assert.match(text, /'Kenya '/);
        assert.equal(printQuery(parseQuestion(text, env)), p.sql, text);
      }
    }
  } finally {
    await pool.close();
  }
});

// Bug 6: the small-domain number is covered by shapes-throughput.test.ts (GROUP BY cylinders); the
// foreign key and the parent's name (a text column, not a category) were not.
test('grouping by a foreign key, by a joined parent\'s name and by a small-domain number is synthesized and verifies', async () => {
  const pool = new SqlPool({ size: 2 });
  try {
    const sqls = await verifiedSql(pool, only('groupAgg', 'groupTop'), 40);
    const has = (re: RegExp, what: string) => assert.ok(sqls.some((s) => re.test(s)), `${what}:\n${sqls.join('\n')}`);
    has(/^SELECT singer_id\b.* FROM concert GROUP BY singer_id\b/, 'GROUP BY the foreign key');
    has(/ INNER JOIN singer AS T2 .*GROUP BY T2\.name\b/, 'GROUP BY the parent\'s name across the join');
    has(/ GROUP BY year\b/, 'GROUP BY a small-domain number');
  } finally {
    await pool.close();
  }
});

// Bug 7: realism.test.ts's "a question without any filter" and "NOT IN (SELECT" are also met by
// grouped queries and by NOT IN over a filtered subquery, which the code before the fix made too.
test('lists, counts and aggregates without any filter, and NOT IN anti-joins without a filter, are synthesized and verify', async () => {
  const pool = new SqlPool({ size: 2 });
  try {
    const sqls = await verifiedSql(pool, only('projection', 'count', 'aggregate', 'inSubquery'), 40);
    const has = (re: RegExp, what: string) => assert.ok(sqls.some((s) => re.test(s)), `${what}:\n${sqls.join('\n')}`);
    has(/^SELECT COUNT\(\*\) FROM \w+$/, '"how many X are there"');
    has(/^SELECT (DISTINCT )?\w+(, \w+)? FROM \w+$/, 'a list with no filter');
    has(/^SELECT (SUM|AVG|MIN|MAX|COUNT)\((DISTINCT )?\w+\) FROM \w+$/, 'an aggregate with no filter');
    has(/^SELECT (\w+|COUNT\(\*\)) FROM singer WHERE singer_id NOT IN \(SELECT singer_id FROM concert\)$/, 'singers with no concert');
  } finally {
    await pool.close();
  }
});

// Bug 12: realism.test.ts covers a count of 1; 0 and 100 from a percentage, and the cap on the share
// of single-value answers, were not covered.
test('trivial single values (a percentage of 0 or 100) are rejected; a row\'s own value of 1 is not', async () => {
  assert.equal(isTrivialValue([[0]]), true);
  assert.equal(isTrivialValue([[1]]), true);
  assert.equal(isTrivialValue([[100]]), true);
  assert.equal(isTrivialValue([[2]]), false);
  assert.equal(isTrivialValue([[1, 2]]), false);
  assert.equal(isTrivialValue([[1], [1]]), false);
  const pool = new SqlPool({ size: 1 });
  try {
    const ctx = ctxFor(music, pool);
    const attendance = col('T1', 'concert', 'attendance');
    const pct = (cond: Cond) => ({ ...emptySelect('concert'), columns: [{ kind: 'pct' as const, cond }] });
    assert.equal(await verifyPair(ctx, pair(pct({ kind: 'cmp', left: attendance, op: '>=', right: lit(100) }))), 'trivial_result', 'every concert: 100');
    assert.equal(await verifyPair(ctx, pair(pct({ kind: 'cmp', left: attendance, op: '>', right: lit(1_000_000) }))), 'trivial_result', 'no concert: 0');
    assert.equal(await verifyPair(ctx, pair(pct({ kind: 'cmp', left: col('T1', 'concert', 'venue'), op: '=', right: lit('Hall') }))), null);
    // "the id of Singer 1" is 1: a value of the row, not a computed count
    const id = emptySelect('singer');
    id.columns = [col('T1', 'singer', 'singer_id')];
    id.where = [{ kind: 'cmp', left: col('T1', 'singer', 'name'), op: '=', right: lit('Singer 1') }];
    assert.equal(await verifyPair(ctx, pair(id)), null);
  } finally {
    await pool.close();
  }
});

test('the verify stage caps single-value answers at a share of its candidates; other answers are not capped', async () => {
  const pool = new SqlPool({ size: 2 });
  try {
    const attendance = col('T1', 'concert', 'attendance');
    const singles: SynthPair[] = [];
    // Counts of concerts over 20 thresholds: each a good single-value question on its own.
    for (let k = 0; k < 20; k++) {
      const q = emptySelect('concert');
      q.columns = [{ kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false }];
      q.where = [{ kind: 'cmp', left: attendance, op: '>=', right: lit(500 + 400 * k) }];
      singles.push(pair(q, `s${k}`));
    }
    const lists: SynthPair[] = COUNTRIES.map((c, i) => {
      const q = emptySelect('singer');
      q.columns = [col('T1', 'singer', 'name')];
      q.where = [{ kind: 'cmp', left: col('T1', 'singer', 'country'), op: '=', right: lit(c) }];
      return pair(q, `l${i}`);
    });
    const check = ctxFor(music, pool);
    for (const p of [...singles, ...lists]) assert.equal(await verifyPair(check, p), null, p.sql);
    const items = [...singles, ...lists];
    const rejected: string[] = [];
    const kept = await verifyStage.run(items, ctxFor(music, pool, rejected));
    const cap = Math.floor(Math.max(3, SINGLE_VALUE_SHARE * items.length));
    assert.ok(cap < singles.length, 'the cap bites on this input');
    assert.equal(kept.filter((p) => p.id.startsWith('s')).length, cap);
    assert.equal(kept.filter((p) => p.id.startsWith('l')).length, lists.length);
    assert.deepEqual(rejected, Array(singles.length - cap).fill('single_value_cap'));
  } finally {
    await pool.close();
  }
});

// Bug 14: realism.test.ts only checks what the manifest's list leaves out; an empty list passed it.
test('unusedSchema lists each table and column no pair uses, with the profile\'s reason or why it is usable but unused', () => {
  const odd = makeOddDb(tmpDir('agro-issue15-odd-'));
  const schema = introspectSchema(odd);
  const graph = buildSchemaGraph(schema);
  const { skipped } = profileSchema(schema, graph, buildLexicon(schema));
  const q = emptySelect('book');
  q.columns = [col('T1', 'book', 'title')];
  q.where = [{ kind: 'cmp', left: col('T1', 'book', 'pages'), op: '>', right: lit(300) }];
  const unused = new Map(unusedSchema(schema, [pair(q)], skipped).map((u) => [u.what, u.why]));
  assert.match(unused.get('view long_books') ?? '', /^views are not synthesized/);
  assert.match(unused.get('table empty_table') ?? '', /^empty table/);
  assert.match(unused.get('table author') ?? '', /^usable, but no kept pair drew it/);
  assert.match(unused.get('column book.id') ?? '', /^usable, but no kept pair drew it/);
  assert.match(unused.get('column book.author_id') ?? '', /^usable, but no kept pair drew it/);
  assert.ok(!unused.has('table book') && !unused.has('column book.title') && !unused.has('column book.pages'), JSON.stringify([...unused]));
  // A used table's unused blob column gives the profile's reason; a single-column primary key is said to be one.
  const a = emptySelect('author');
  a.columns = [col('T1', 'author', 'full name')];
  const byAuthor = new Map(unusedSchema(schema, [pair(a)], skipped).map((u) => [u.what, u.why]));
  assert.match(byAuthor.get('column author.photo') ?? '', /blob/);
  const shop = introspectSchema(makeMusicDb(tmpDir('agro-issue15-m-')));
  const s = emptySelect('singer');
  s.columns = [col('T1', 'singer', 'name')];
  const inShop = new Map(unusedSchema(shop, [pair(s)], []).map((u) => [u.what, u.why]));
  assert.match(inShop.get('column singer.singer_id') ?? '', /surrogate key/);
  assert.match(inShop.get('column singer.country') ?? '', /^usable, but no kept pair drew it/);
  assert.match(inShop.get('table concert') ?? '', /^usable/);
});

test('the manifest written by the factory lists exactly the schema its pairs leave unused, each with a reason', async () => {
  const out = join(tmpDir('agro-issue15-run-'), 'out');
  const odd = makeOddDb(tmpDir('agro-issue15-odd-'));
  const r = await runFactory({ db: odd, out, n: 8, seed: 1, variants: 0, timeoutMs: 3000 });
  const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8')) as Manifest;
  assert.deepEqual(manifest.unused, r.manifest.unused);
  const listed = new Map(manifest.unused.map((u) => [u.what, u.why]));
  for (const why of listed.values()) assert.ok(why.length > 0);
  assert.match(listed.get('view long_books') ?? '', /^views are not synthesized/);
  assert.match(listed.get('table empty_table') ?? '', /^empty table/);
  const used = new Set(r.pairs.flatMap(schemaUse));
  for (const t of introspectSchema(odd).tables) {
    if (!used.has(t.name)) {
      assert.ok(listed.has(`${t.kind === 'view' ? 'view' : 'table'} ${t.name}`), `${t.name} is unused but not listed`);
      continue;
    }
    assert.ok(!listed.has(`table ${t.name}`), `${t.name} is used but listed`);
    for (const c of t.columns) assert.equal(listed.has(`column ${t.name}.${c.name}`), !used.has(`${t.name}\u0000${c.name}`), `${t.name}.${c.name}`);
  }
  // author.photo (a blob) and author.bio (long text) are never usable: listed with the profile's reason.
  if (used.has('author')) for (const c of ['photo', 'bio']) assert.match(listed.get(`column author.${c}`) ?? '', /blob or long text/);
});
