// Issue #15: the schema coverage, question text, verification and honesty fixes, one test per cause.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { SqlPool } from '../../src/sql/pool.ts';
import { Rng } from '../../src/util/rng.ts';
import { col, emptySelect, lit, type QueryAst, type SelectAst } from '../../src/factory/ast.ts';
import { buildLexicon, columnPhrase, tablePlural, tableSingular, words } from '../../src/factory/language/names.ts';
import { profileSchema } from '../../src/factory/profile.ts';
import { printQuery } from '../../src/factory/print.ts';
import { buildSchemaGraph } from '../../src/factory/schema-graph.ts';
import { verifyPair } from '../../src/factory/verify.ts';
import { realizeEvidence, realizeQuestion } from '../../src/factory/language/realize.ts';
import { makeParseEnv, parseQuestion } from '../../src/factory/language/general-parse.ts';
import { runFactory, shortfallLine, type StageReport } from '../../src/factory/pipeline.ts';
import { identifierLeaks, queryShape, schemaItems } from '../../src/factory/realism.ts';
import { silentProgress } from '../../src/util/progress.ts';
import type { StageContext, SynthPair } from '../../src/factory/types.ts';
import { makeShopDb, tmpDir } from './fixtures.ts';

const BIN = fileURLToPath(new URL('../../bin/agro.js', import.meta.url));

/** world-like: a composite key with a data column, names with of/is, a DATETIME text column, a key-only table, values with stray spaces. */
function makeWorldDb(dir: string): string {
  const path = join(dir, 'world.sqlite');
  const db = new Database(path);
  db.exec(`
    CREATE TABLE country (Code TEXT PRIMARY KEY, Name TEXT, Continent TEXT, HeadOfState TEXT, Population INTEGER, Founded DATETIME);
    CREATE TABLE countrylanguage (CountryCode TEXT REFERENCES country(Code), Language TEXT, IsOfficial TEXT, Percentage REAL, PRIMARY KEY (CountryCode, Language));
    CREATE TABLE routes (src TEXT REFERENCES country(Code), dst TEXT REFERENCES country(Code), PRIMARY KEY (src, dst));
    CREATE TABLE treatments (treatment_id INTEGER PRIMARY KEY, country_code TEXT REFERENCES country(Code), cost_of_treatment INTEGER);
  `);
  const rng = new Rng(3);
  const conts = ['Asia ', 'Europe', 'Africa', 'South America'];
  const langs = ['English', 'French', 'Spanish', 'Arabic', 'Hindi', 'Swahili'];
  const heads = ['Ann Lee', 'Bo Chan', 'Cy Diaz', 'Di Eze', 'Ed Fox'];
  for (let i = 0; i < 30; i++) {
    const code = `C${String(i).padStart(2, '0')}`;
    db.prepare('INSERT INTO country VALUES (?, ?, ?, ?, ?, ?)').run(code, `Land ${i}`, rng.pick(conts), rng.pick(heads), 1000 * (1 + rng.int(500)), `19${50 + rng.int(49)}-0${1 + rng.int(9)}-1${rng.int(9)}`);
    for (const l of rng.shuffle([...langs]).slice(0, 1 + rng.int(3))) db.prepare('INSERT INTO countrylanguage VALUES (?, ?, ?, ?)').run(code, l, rng.pick(['T', 'F']), Math.round(rng.next() * 1000) / 10);
    if (i > 0) db.prepare('INSERT OR IGNORE INTO routes VALUES (?, ?)').run(code, `C${String(rng.int(i)).padStart(2, '0')}`);
    db.prepare('INSERT INTO treatments VALUES (?, ?, ?)').run(i + 1, code, 100 * (1 + rng.int(40)));
  }
  db.close();
  return path;
}

test('lexicon: words humanized, abbreviations expanded, plurals from a library, no doubled words', () => {
  assert.equal(words('emp_dob'), 'employee date of birth');
  assert.equal(words('HeadOfState'), 'head of state');
  assert.equal(tableSingular('Sizes'), 'size'); // not "siz"
  assert.equal(tablePlural('cars_data'), 'cars data'); // not "cars datas"
  assert.equal(tablePlural('countries'), 'countries');
  assert.equal(columnPhrase('car_makers', 'Maker'), 'car maker'); // not "car maker maker"
  assert.equal(columnPhrase('customer_orders', 'order_status'), 'customer order status');
  assert.equal(columnPhrase('apartment_buildings', 'building_full_name'), 'apartment building full name');
  assert.equal(columnPhrase('order_items', 'quantity'), 'order item quantity');
});

test('schema coverage: composite-key data columns, DATETIME text dates, names with of/is are usable', () => {
  const dir = tmpDir();
  const schema = introspectSchema(makeWorldDb(dir));
  const graph = buildSchemaGraph(schema);
  const lex = buildLexicon(schema);
  const { profiles } = profileSchema(schema, graph, lex);
  const colOf = (t: string, c: string) => profiles.get(t)?.columns.find((x) => x.column === c);
  assert.equal(colOf('countrylanguage', 'Language')?.isKey, false); // part of a composite key, not a foreign key
  assert.equal(colOf('countrylanguage', 'CountryCode')?.isKey, true);
  assert.equal(colOf('country', 'Founded')?.role, 'date'); // DATETIME has NUMERIC affinity
  assert.ok(colOf('country', 'HeadOfState'));
  assert.ok(colOf('countrylanguage', 'IsOfficial'));
  assert.ok(colOf('treatments', 'cost_of_treatment'));
  // the question grammar parses phrases with "of" and "is" in them
  const q = emptySelect('treatments');
  q.columns = [{ kind: 'agg', fn: 'MAX', arg: col('T1', 'treatments', 'cost_of_treatment'), distinct: false }];
  q.where = [{ kind: 'cmp', left: col('T1', 'countrylanguage', 'IsOfficial'), op: '=', right: lit('T') }];
  const env = makeParseEnv(schema, graph);
  const one = emptySelect('country');
  one.columns = [col('T1', 'country', 'HeadOfState')];
  one.where = [{ kind: 'cmp', left: col('T1', 'country', 'Continent'), op: '=', right: lit('Asia ') }];
  assert.equal(printQuery(parseQuestion(realizeQuestion(one, 'formal'), env)), printQuery(one));
});

test('columns declared without a type (CSV imports) are usable, not taken for blobs', () => {
  const dir = tmpDir();
  const path = join(dir, 'plants.sqlite');
  const db = new Database(path);
  db.exec('CREATE TABLE plants (Id, Name, Country, Capacity, Photo BLOB)');
  for (let i = 0; i < 20; i++) db.prepare('INSERT INTO plants VALUES (?, ?, ?, ?, ?)').run(i, `Plant ${i}`, ['France', 'Japan', 'USA'][i % 3], 100 * i, Buffer.from([i]));
  db.close();
  const schema = introspectSchema(path);
  const { profiles, skipped } = profileSchema(schema, buildSchemaGraph(schema), buildLexicon(schema));
  const roles = Object.fromEntries(profiles.get('plants')!.columns.map((c) => [c.column, c.role]));
  assert.deepEqual(roles, { Id: 'numeric', Name: 'category', Country: 'category', Capacity: 'numeric' });
  assert.deepEqual(skipped.map((x) => x.what), ['column plants.Photo']);
});

test('the factory uses composite-key columns, key-only tables and values with stray spaces, and lists what it left unused', async () => {
  const dir = tmpDir();
  const r = await runFactory({ db: makeWorldDb(dir), out: join(dir, 'out'), n: 60, seed: 2, variants: 1 });
  const sql = r.rows.map((x) => x.SQL).join('\n');
  assert.match(sql, /\bLanguage\b/);
  assert.match(sql, /\broutes\b/);
  assert.match(sql, /'Asia '/);
  const unused = new Set(r.manifest.unused.map((u) => u.what));
  assert.ok(!unused.has('table routes'), JSON.stringify(r.manifest.unused));
  for (const u of r.manifest.unused) assert.ok(u.why.length > 0);
  assert.ok(r.manifest.unused.every((u) => !/^column (country\.Name|countrylanguage\.Language)$/.test(u.what)));
});

test('query shapes people write: no-filter questions, GROUP BY across a foreign key, NOT IN anti-joins', async () => {
  const dir = tmpDir();
  const r = await runFactory({ db: makeShopDb(dir), out: join(dir, 'out'), n: 80, seed: 1, variants: 1 });
  const shapes = new Set(r.rows.map((x) => queryShape(x.SQL)));
  assert.ok(r.rows.some((x) => !/\bWHERE\b/.test(x.SQL)), 'a question without any filter');
  assert.ok(r.rows.some((x) => /\bJOIN\b.*\bGROUP BY T2\./.test(x.SQL)), 'a group by the joined parent');
  assert.ok(r.rows.some((x) => /NOT IN \(SELECT/.test(x.SQL)), 'an anti-join');
  assert.ok(shapes.size >= 8, [...shapes].join(' '));
});

function pair(ast: QueryAst): SynthPair {
  return { id: 'p', dbId: 'shop', sql: printQuery(ast), ast, question: '', evidence: '', style: 'formal', difficulty: 'simple', provenance: { stages: [], checks: [] } };
}

test('verification rejects identical set-operation sides, a LIMIT over a result that fits, trivial single values', async () => {
  const dir = tmpDir();
  const path = makeShopDb(dir);
  const schema = introspectSchema(path);
  const pool = new SqlPool({ size: 1 });
  const ctx: StageContext = { dbId: 'shop', dbPath: path, schema, executor: pool, rng: new Rng(1), progress: silentProgress, variants: [], reject: () => {}, timeoutMs: 3000 };
  const C = (t: string, c: string) => col('T1', t, c);
  try {
    const side = emptySelect('customers');
    side.columns = [C('customers', 'country')];
    side.where = [{ kind: 'cmp', left: C('customers', 'city'), op: '=', right: lit('Lyon') }];
    const sent = pool.messages;
    assert.equal(await verifyPair(ctx, pair({ kind: 'setop', op: 'UNION', left: side, right: structuredClone(side) })), 'identical_set_sides');
    assert.equal(pool.messages, sent, 'identical sides are rejected before any SQL runs');
    // UNION of a side with duplicates and a side whose values it already has: redundant as a set
    const dup = emptySelect('customers');
    dup.columns = [C('customers', 'country')];
    const sub: SelectAst = { ...dup, where: [{ kind: 'cmp', left: C('customers', 'country'), op: '=', right: lit('Japan') }] };
    assert.equal(await verifyPair(ctx, pair({ kind: 'setop', op: 'UNION', left: dup, right: sub })), 'redundant_set_operation');
    // 4 categories: "the top 5" says nothing
    const top = emptySelect('products');
    top.columns = [C('products', 'category'), { kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false }];
    top.groupBy = [C('products', 'category')];
    top.orderBy = [
      { expr: top.columns[1], dir: 'DESC' },
      { expr: C('products', 'category'), dir: 'ASC' },
    ];
    top.limit = 5;
    assert.equal(await verifyPair(ctx, pair(top)), 'limit_not_needed');
    assert.equal(await verifyPair(ctx, pair({ ...top, limit: 2 })), null);
    // a count that comes out 1
    const one = emptySelect('customers');
    one.columns = [{ kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false }];
    one.where = [{ kind: 'cmp', left: C('customers', 'customer_id'), op: '=', right: lit(7) }];
    assert.equal(await verifyPair(ctx, pair(one)), 'trivial_result');
  } finally {
    await pool.close();
  }
});

test('question text: evidence states the real operator, "the top one", anti-join without a filter round-trips', () => {
  const dir = tmpDir();
  const schema = introspectSchema(makeShopDb(dir));
  const graph = buildSchemaGraph(schema);
  const env = makeParseEnv(schema, graph);
  const q = emptySelect('customers');
  q.columns = [col('T1', 'customers', 'name')];
  q.where = [{ kind: 'cmp', left: col('T1', 'customers', 'country'), op: '<>', right: lit('USA') }];
  assert.equal(realizeEvidence(q), `'USA' refers to customers.country <> 'USA'`);
  const top: SelectAst = { ...q, where: [{ kind: 'null', expr: col('T1', 'customers', 'signup_date'), negated: true }], orderBy: [{ expr: col('T1', 'customers', 'signup_date'), dir: 'DESC' }, { expr: col('T1', 'customers', 'customer_id'), dir: 'ASC' }], limit: 1 };
  const text = realizeQuestion(top, 'imperative');
  assert.match(text, /showing only the top one\.$/);
  assert.doesNotMatch(text, /first 1/);
  assert.equal(printQuery(parseQuestion(text, env)), printQuery(top));
  const sub = emptySelect('orders', 'S1');
  sub.columns = [col('S1', 'orders', 'customer_id')];
  const anti: SelectAst = { ...emptySelect('customers'), columns: [col('T1', 'customers', 'name')], where: [{ kind: 'in', expr: col('T1', 'customers', 'customer_id'), query: sub, negated: true }] };
  assert.equal(printQuery(parseQuestion(realizeQuestion(anti, 'formal'), env)), printQuery(anti));
  assert.match(printQuery(anti), /NOT IN \(SELECT customer_id FROM orders\)$/);
});

test('realism metrics: shapes, tables and columns through aliases, leaked identifiers', () => {
  const dir = tmpDir();
  const schema = introspectSchema(makeShopDb(dir));
  assert.equal(queryShape('SELECT name FROM customers'), 'plain');
  assert.equal(queryShape('SELECT T2.name FROM orders AS T1 JOIN customers AS T2 ON T1.customer_id = T2.customer_id GROUP BY T2.customer_id ORDER BY count(*) DESC LIMIT 1'), 'join+group+top+agg');
  assert.equal(queryShape('SELECT name FROM customers WHERE customer_id NOT IN (SELECT customer_id FROM orders)'), 'nested+notin');
  const items = schemaItems('SELECT T2.name FROM orders AS T1 JOIN customers AS T2 ON T1.customer_id = T2.customer_id WHERE status = "shipped"', schema);
  assert.deepEqual([...items].sort(), ['c:customers.customer_id', 'c:customers.name', 'c:orders.customer_id', 'c:orders.status', 't:customers', 't:orders']);
  assert.deepEqual(identifierLeaks("What is the order_status where the name is 'a_b'?", schema), ['snake_case']);
  assert.deepEqual(identifierLeaks('Show the signupDate of customers.', schema), ['CamelCase']);
  assert.deepEqual(identifierLeaks('What is the car maker maker?', schema), ['doubled_word']);
  const sizesDb = new Database(join(dir, 'sizes.sqlite'));
  sizesDb.exec('CREATE TABLE Sizes (size_code TEXT)');
  sizesDb.close();
  const sizes = introspectSchema(join(dir, 'sizes.sqlite'));
  assert.deepEqual(identifierLeaks('What is the siz size code?', sizes), ['truncated_singular']);
  assert.deepEqual(identifierLeaks('What is the size code of each size, for sizes?', sizes), []);
  assert.deepEqual(identifierLeaks('How many customers live in Lyon?', schema), []);
});

test('honesty: a shortfall is one line naming the stage that starved it; synth --strict exits non-zero', () => {
  const stages: StageReport[] = [
    { stage: 'synthesize', in: 50, out: 50, rejected: {}, resumed: false, seconds: 1 },
    { stage: 'verify', in: 50, out: 10, rejected: { empty_result: 30, timeout: 10 }, resumed: false, seconds: 1 },
  ];
  assert.equal(shortfallLine(20, 10, stages, []), 'wrote 10 of 20 pairs: verify starved it, keeping 10 of 50 (empty_result 30, timeout 10)');
  assert.equal(shortfallLine(10, 10, stages, []), undefined);
  const dir = tmpDir();
  // One row in one table: far fewer distinct verified pairs than asked for. (A database without rows is
  // refused outright with exit 4, test/adversarial/inputs.test.ts.)
  const path = join(dir, 'tiny.sqlite');
  const db = new Database(path);
  db.exec("CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT); INSERT INTO t VALUES (1, 'x')");
  db.close();
  const loose = spawnSync(process.execPath, [BIN, 'synth', '--db', path, '--out', join(dir, 'o1'), '--n', '50', '--variants', '0'], { encoding: 'utf8' });
  assert.equal(loose.status, 0, loose.stderr);
  assert.match(loose.stderr, /^agro: warning: wrote \d+ of 50 pairs: /m);
  const strict = spawnSync(process.execPath, [BIN, 'synth', '--db', path, '--out', join(dir, 'o2'), '--n', '50', '--variants', '0', '--strict'], { encoding: 'utf8' });
  assert.equal(strict.status, 4);
  assert.equal(strict.stderr.trim().split('\n').length, 1);
  assert.match(strict.stderr, /^agro: synth --strict: wrote \d+ of 50 pairs/);
});
