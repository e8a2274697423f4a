// Questions as people ask them (issue #15): short column names, intent sentences that parse back to
// the same query, ranked SQL written as people write it, and literals people would use.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { buildSchemaGraph } from '../../src/factory/schema-graph.ts';
import { buildLexicon, columnPhrase, spokenColumn, withData } from '../../src/factory/language/names.ts';
import { makeParseEnv, parseQuestion } from '../../src/factory/language/general-parse.ts';
import { realizeIntent } from '../../src/factory/language/intents.ts';
import { parseIntent } from '../../src/factory/language/intent-parse.ts';
import { col, emptySelect, lit, type QueryAst, type SelectAst } from '../../src/factory/ast.ts';
import { printQuery } from '../../src/factory/print.ts';
import { runFactory } from '../../src/factory/pipeline.ts';
import { TEMPLATE_NAMES } from '../../src/factory/synthesize.ts';
import { QUESTION_STYLES } from '../../src/data/dataset-row.ts';
import { makeShopDb, tmpDir } from './fixtures.ts';

/** A one-table database like the Kaggle ones: no declared types, numbers and dates stored as text. */
function makePlantsDb(dir: string): string {
  const path = join(dir, 'plants.sqlite');
  const db = new Database(path);
  db.exec('CREATE TABLE plants (Id, Name, Country, Status, Capacity, Latitude, OperationalFrom, LastUpdatedAt)');
  const ins = db.prepare('INSERT INTO plants VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
  // Skewed, as real data is: a most common country and status exist (even counts would all tie).
  const countries = ['France', 'Japan', 'United States', 'Belgium'];
  const statuses = ['Operational', 'Shutdown', 'Planned'];
  for (let i = 1; i <= 120; i++) {
    const year = 1960 + (i % 40);
    ins.run(String(i), `Plant-${i}`, countries[[0, 0, 0, 0, 0, 1, 1, 1, 2, 3][i % 10]], statuses[[0, 0, 0, 1, 1, 2][i % 6]], String(400 + ((i * 37) % 900)), (40 + i / 7).toFixed(6), i % 9 === 0 ? '' : `${year}-0${1 + (i % 9)}-1${i % 10}`, `2015-05-24T04:5${i % 10}:1${i % 10}+03:00`);
  }
  db.close();
  return path;
}

test('short column names: a column\'s own words where they name one column in the schema, the table-qualified phrase otherwise', () => {
  const dir = tmpDir();
  const plants = introspectSchema(makePlantsDb(dir));
  const lex = buildLexicon(plants);
  assert.equal(spokenColumn(lex, 'plants', 'Status'), 'status');
  assert.equal(spokenColumn(lex, 'plants', 'OperationalFrom'), 'operational from');
  assert.equal(spokenColumn(lex, 'plants', 'LastUpdatedAt'), 'last updated');
  const shop = buildLexicon(introspectSchema(makeShopDb(dir)));
  // customer_id is in customers and orders: no short name, so "customer id" never means two columns.
  assert.equal(shop.short.has('customers\u0000customer_id'), false);
  assert.equal(spokenColumn(shop, 'products', 'category'), 'category');
  assert.equal(spokenColumn(shop, 'orders', 'status'), 'status');
});

test('every intent sentence parses back to the query it was realized from, in every style', () => {
  const dir = tmpDir();
  const schema = introspectSchema(makePlantsDb(dir));
  const env = makeParseEnv(schema, buildSchemaGraph(schema));
  const c = (name: string) => col('T1', 'plants', name);
  const q = (f: (s: SelectAst) => void): SelectAst => {
    const s = emptySelect('plants');
    f(s);
    return s;
  };
  const countStar = { kind: 'agg' as const, fn: 'COUNT' as const, arg: { kind: 'star' as const }, distinct: false };
  const cases: SelectAst[] = [
    q((s) => (s.columns = [countStar])),
    q((s) => ((s.columns = [countStar]), (s.where = [{ kind: 'cmp', left: c('Status'), op: '=', right: lit('Operational') }, { kind: 'cmp', left: c('Country'), op: '<>', right: lit('France') }]))),
    q((s) => ((s.columns = [countStar]), (s.where = [{ kind: 'cmp', left: { kind: 'datepart', part: 'year', arg: c('OperationalFrom') }, op: '=', right: lit('1975') }]))),
    q((s) => ((s.columns = [countStar]), (s.where = [{ kind: 'like', expr: c('Name'), pattern: '%Plant%' }]))),
    q((s) => ((s.columns = [{ kind: 'agg', fn: 'COUNT', arg: c('Country'), distinct: true }]), (s.where = [{ kind: 'cmp', left: c('Status'), op: '=', right: lit('Shutdown') }]))),
    q((s) => (s.columns = [{ kind: 'agg', fn: 'COUNT', arg: c('Country'), distinct: true }])),
    q((s) => ((s.columns = [{ kind: 'agg', fn: 'MAX', arg: c('Id'), distinct: false }]), (s.where = [{ kind: 'cmp', left: c('Status'), op: '=', right: lit('Planned') }]))),
    q((s) => ((s.columns = [c('Country')]), (s.groupBy = [c('Country')]), (s.orderBy = [{ expr: countStar, dir: 'DESC' }, { expr: c('Country'), dir: 'ASC' }]), (s.limit = 1))),
    q((s) => ((s.columns = [c('Country')]), (s.groupBy = [c('Country')]), (s.where = [{ kind: 'cmp', left: c('Status'), op: '=', right: lit('Operational') }]), (s.orderBy = [{ expr: countStar, dir: 'ASC' }, { expr: c('Country'), dir: 'ASC' }]), (s.limit = 3))),
    q((s) => ((s.columns = [c('Status')]), (s.groupBy = [c('Status')]), (s.orderBy = [{ expr: { kind: 'agg', fn: 'AVG', arg: c('Id'), distinct: false }, dir: 'DESC' }, { expr: c('Status'), dir: 'ASC' }]), (s.limit = 1))),
    q((s) => ((s.columns = [c('Name')]), (s.where = [{ kind: 'null', expr: c('Id'), negated: true }]), (s.orderBy = [{ expr: c('Id'), dir: 'DESC' }]), (s.limit = 1))),
    q((s) => ((s.columns = [c('Country'), countStar]), (s.groupBy = [c('Country')]))),
    q((s) => ((s.columns = [c('Name'), c('Country')]), (s.where = [{ kind: 'cmp', left: c('Status'), op: '=', right: lit('Planned') }]))),
    q((s) => ((s.columns = [c('Country')]), (s.distinct = true))),
    q((s) => ((s.columns = [c('Country')]), (s.groupBy = [c('Country')]), (s.having = [{ kind: 'cmp', left: countStar, op: '>=', right: lit(3) }]))),
    q((s) => ((s.columns = [c('Status')]), (s.groupBy = [c('Status')]), (s.where = [{ kind: 'cmp', left: c('Country'), op: '=', right: lit('Japan') }]), (s.having = [{ kind: 'cmp', left: countStar, op: '>=', right: lit(2) }]))),
  ];
  for (const ast of cases) {
    for (const style of QUESTION_STYLES) {
      for (const variant of [0, 1]) {
        const question = realizeIntent(ast, env.lex, style, variant);
        assert.ok(question, `no intent for ${printQuery(ast)}`);
        assert.doesNotMatch(question, /where the |plants? (status|country|name)/, question);
        const back = parseQuestion(question, env);
        // The ranked query's implicit rules (tie-breaker, NOT NULL guard) come back as in the general grammar.
        const want = { ...ast, orderBy: ast.orderBy.slice(0, 1), where: ast.where.filter((w) => w.kind !== 'null' || !w.negated) };
        const got = back.kind === 'select' ? { ...back, orderBy: back.orderBy.slice(0, 1), where: back.where.filter((w) => w.kind !== 'null' || !w.negated) } : back;
        assert.equal(printQuery(got), printQuery(want), question);
      }
    }
  }
  // A sentence no intent says is left to the general grammar; one that breaks off midway is an error.
  assert.equal(parseIntent('Tell me a joke.', env.lex), null);
  assert.throws(() => parseIntent('How many plants have colour \'red\'?', env.lex), /unknown column/);
});

test('the factory on a typeless one-table database: natural questions, no exact coordinates or timestamps, dates by year, "which X has the most Y" naming X alone', async () => {
  const dir = tmpDir();
  const r = await runFactory({ db: makePlantsDb(dir), out: join(dir, 'out'), n: 80, seed: 2, variants: 1 });
  const sqls = r.rows.map((x) => x.SQL);
  const qs = r.rows.map((x) => x.question);
  for (const s of sqls) {
    assert.doesNotMatch(s, /Latitude = |Capacity = |LastUpdatedAt = /, s);
    assert.doesNotMatch(s, /ORDER BY [^,]+, /, `a tie-breaker left in: ${s}`);
  }
  assert.ok(sqls.some((s) => /strftime\('%Y', (OperationalFrom|LastUpdatedAt)\)/.test(s)), sqls.join('\n'));
  assert.ok(r.rows.some((x) => /^SELECT \w+ FROM plants( WHERE .*)? GROUP BY \w+ ORDER BY (COUNT\(\*\)|SUM|AVG).* LIMIT \d+$/.test(x.SQL) && /^(Which|Find the|What are the \d+) /.test(x.question)), qs.join('\n'));
  assert.ok(qs.some((q) => /^(How many|Could you tell me how many|Count the|Number of) plants/.test(q)), qs.join('\n'));
  // The table declares no primary key: ranked candidates break ties by the rowid for the ambiguity
  // check (here the variants' copied dates tie, so they are rejected), and a rowid never reaches the SQL.
  assert.ok(sqls.every((s) => !/rowid/.test(s)), sqls.join('\n'));
  // Most questions are intent sentences; none names a column with its table's name in front.
  const natural = qs.filter((q) => !/ where the /.test(q)).length;
  assert.ok(natural / qs.length >= 0.6, `${natural} of ${qs.length} natural:\n${qs.join('\n')}`);
  assert.ok(qs.every((q) => !/plant (status|country|name)\b/.test(q)), qs.join('\n'));
});

test('a one-letter prefix that is the table\'s initial is not spoken; other one-letter words are; enr is enrollment', () => {
  assert.equal(columnPhrase('Player', 'pName'), 'player name');
  assert.equal(columnPhrase('College', 'cName'), 'college name');
  assert.equal(columnPhrase('Player', 'yCard'), 'player y card');
  assert.equal(columnPhrase('College', 'enr'), 'college enrollment');
});

test('links, averages, shares, per-group filters and set operations are asked as people ask them, and parse back to the same answers', () => {
  const path = join('data', 'databases', 'music_store', 'music_store.sqlite');
  const schema = introspectSchema(path);
  const env = makeParseEnv(schema, buildSchemaGraph(schema));
  const db = new Database(path, { readonly: true });
  const rows = (sql: string) => JSON.stringify((db.prepare(sql).raw().all() as unknown[][]).map((r) => JSON.stringify(r)).sort());
  const countStar = { kind: 'agg' as const, fn: 'COUNT' as const, arg: { kind: 'star' as const }, distinct: false };
  const sub = (table: string, column: string, where: SelectAst['where'] = []): SelectAst => ({ ...emptySelect(table, 'S1'), columns: [col('S1', table, column)], where });
  const agg = (fn: 'AVG' | 'MAX' | 'MIN', table: string, column: string) => ({ kind: 'scalar' as const, query: { ...emptySelect(table, 'S1'), columns: [{ kind: 'agg' as const, fn, arg: col('S1', table, column), distinct: false }] } });
  const sel = (table: string, f: (s: SelectAst) => void): SelectAst => {
    const s = emptySelect(table);
    f(s);
    return s;
  };
  const cases: Array<[QueryAst, RegExp]> = [
    // anti- and semi-joins: a key that says only its parent, and one that names a role
    [sel('tracks', (s) => ((s.columns = [col('T1', 'tracks', 'name')]), (s.where = [{ kind: 'in', expr: col('T1', 'tracks', 'track_id'), query: sub('invoice_lines', 'track_id'), negated: true }]))), / of tracks that have no invoice lines\W/],
    [sel('tracks', (s) => ((s.columns = [countStar]), (s.where = [{ kind: 'in', expr: col('T1', 'tracks', 'track_id'), query: sub('invoice_lines', 'track_id'), negated: false }]))), /tracks (that )?have at least one invoice line\W/],
    [sel('employees', (s) => ((s.columns = [col('T1', 'employees', 'email')]), (s.where = [{ kind: 'in', expr: col('T1', 'employees', 'employee_id'), query: sub('customers', 'support_rep_id'), negated: true }]))), /employees that are not the support rep of any customer\W/],
    [sel('employees', (s) => ((s.columns = [countStar]), (s.where = [{ kind: 'cmp', left: col('T1', 'employees', 'country'), op: '=', right: lit('Canada') }, { kind: 'in', expr: col('T1', 'employees', 'employee_id'), query: sub('customers', 'support_rep_id'), negated: false }]))), /employees (that )?have employee country 'Canada' and are the support rep of at least one customer\W/],
    // a key among the keys of filtered parents: the filter across the join
    [sel('tracks', (s) => ((s.distinct = true), (s.columns = [col('T1', 'tracks', 'composer')]), (s.where = [{ kind: 'in', expr: col('T1', 'tracks', 'media_type_id'), query: sub('media_types', 'media_type_id', [{ kind: 'cmp', left: col('S1', 'media_types', 'name'), op: '=', right: lit('AAC audio file') }]), negated: false }]))), /different composers of tracks that have media type name 'AAC audio file'\W/],
    // correlated EXISTS with a filter on the child
    [sel('customers', (s) => ((s.columns = [col('T1', 'customers', 'state')]), (s.where = [{ kind: 'exists', negated: false, query: { ...emptySelect('invoices', 'S1'), columns: [{ kind: 'star' }], where: [{ kind: 'cmp', left: col('S1', 'invoices', 'customer_id'), op: '=', right: col('T1', 'customers', 'customer_id') }, { kind: 'cmp', left: col('S1', 'invoices', 'total'), op: '<=', right: lit(6.54) }] } }]))), /customers that have at least one invoice with invoice total at most 6\.54\W/],
    [sel('albums', (s) => ((s.columns = [col('T1', 'albums', 'title')]), (s.where = [{ kind: 'exists', negated: true, query: { ...emptySelect('tracks', 'S1'), columns: [{ kind: 'star' }], where: [{ kind: 'cmp', left: col('S1', 'tracks', 'album_id'), op: '=', right: col('T1', 'albums', 'album_id') }, { kind: 'like', expr: col('S1', 'tracks', 'name'), pattern: '%Love%' }] } }]))), /albums that have no tracks with track name containing 'Love'\W/],
    // a column against its own average or extreme
    [sel('tracks', (s) => ((s.columns = [col('T1', 'tracks', 'name')]), (s.where = [{ kind: 'cmp', left: col('T1', 'tracks', 'bytes'), op: '<', right: agg('AVG', 'tracks', 'bytes') }, { kind: 'null', expr: col('T1', 'tracks', 'composer'), negated: false }]))), /tracks that have bytes below average and no composer\W/],
    [sel('invoices', (s) => ((s.columns = [col('T1', 'invoices', 'billing_city')]), (s.where = [{ kind: 'cmp', left: col('T1', 'invoices', 'total'), op: '=', right: agg('MIN', 'invoices', 'total') }]))), /invoices that have the lowest invoice total\W/],
    // shares and per-group counts with a filter
    [sel('employees', (s) => (s.columns = [{ kind: 'pct', cond: { kind: 'cmp', left: { kind: 'datepart', part: 'year', arg: col('T1', 'employees', 'hire_date') }, op: '=', right: lit('2015') } }])), /percentage of employees (that )?have hire date in 2015\W/],
    [sel('invoices', (s) => ((s.columns = [col('T1', 'invoices', 'billing_country'), countStar]), (s.groupBy = [col('T1', 'invoices', 'billing_country')]), (s.where = [{ kind: 'cmp', left: col('T1', 'invoices', 'total'), op: '>=', right: lit(10) }]))), /^For each billing country, how many invoices have invoice total at least 10\?$/],
    [sel('tracks', (s) => ((s.columns = [col('T1', 'tracks', 'genre_id'), { kind: 'agg', fn: 'AVG', arg: col('T1', 'tracks', 'bytes'), distinct: false }]), (s.groupBy = [col('T1', 'tracks', 'genre_id')]), (s.where = [{ kind: 'cmp', left: col('T1', 'tracks', 'bytes'), op: '>', right: lit(1000) }]))), /^For each track genre id, what is the average bytes of tracks that have bytes above 1000\?$/],
    // the top group and its count
    [sel('tracks', (s) => ((s.columns = [col('T1', 'tracks', 'genre_id'), countStar]), (s.groupBy = [col('T1', 'tracks', 'genre_id')]), (s.orderBy = [{ expr: countStar, dir: 'DESC' }, { expr: col('T1', 'tracks', 'genre_id'), dir: 'ASC' }]), (s.limit = 1))), /^Which track genre id has the most tracks, and how many tracks does it have\?$/],
    // the top group with its measure, up or down, and different values per group
    [sel('invoices', (s) => ((s.columns = [col('T1', 'invoices', 'billing_country'), { kind: 'agg', fn: 'SUM', arg: col('T1', 'invoices', 'total'), distinct: false }]), (s.groupBy = [col('T1', 'invoices', 'billing_country')]), (s.orderBy = [{ expr: { kind: 'agg', fn: 'SUM', arg: col('T1', 'invoices', 'total'), distinct: false }, dir: 'DESC' }, { expr: col('T1', 'invoices', 'billing_country'), dir: 'ASC' }]), (s.limit = 1))), /^Which billing country has the highest total invoice total, and what is it\?$/],
    [sel('tracks', (s) => ((s.columns = [col('T1', 'tracks', 'genre_id'), { kind: 'agg', fn: 'MAX', arg: col('T1', 'tracks', 'bytes'), distinct: false }]), (s.groupBy = [col('T1', 'tracks', 'genre_id')]), (s.orderBy = [{ expr: { kind: 'agg', fn: 'MAX', arg: col('T1', 'tracks', 'bytes'), distinct: false }, dir: 'DESC' }, { expr: col('T1', 'tracks', 'genre_id'), dir: 'ASC' }]), (s.limit = 2))), /^What are the (top )?2 track genre ids with the highest bytes, and what are those figures\?$/],
    [sel('tracks', (s) => ((s.columns = [col('T1', 'tracks', 'media_type_id'), countStar]), (s.groupBy = [col('T1', 'tracks', 'media_type_id')]), (s.orderBy = [{ expr: countStar, dir: 'ASC' }, { expr: col('T1', 'tracks', 'media_type_id'), dir: 'ASC' }]), (s.limit = 1))), /^Which track media type id has the fewest tracks, and how many tracks does it have\?$/],
    [sel('tracks', (s) => ((s.columns = [col('T1', 'tracks', 'genre_id'), { kind: 'agg', fn: 'COUNT', arg: col('T1', 'tracks', 'composer'), distinct: true }]), (s.groupBy = [col('T1', 'tracks', 'genre_id')]))), /^How many different composers are there for each track genre id\?$/],
    [sel('tracks', (s) => ((s.columns = [col('T1', 'tracks', 'composer'), countStar]), (s.groupBy = [col('T1', 'tracks', 'composer')]), (s.having = [{ kind: 'cmp', left: countStar, op: '>=', right: lit(3) }]))), /^Which composers have at least 3 tracks, and how many tracks does each have\?$/],
    // set operations over two filters of the same rows
    [{ kind: 'setop', op: 'UNION', left: sel('artists', (s) => ((s.columns = [col('T1', 'artists', 'name')]), (s.where = [{ kind: 'cmp', left: col('T1', 'artists', 'country'), op: '=', right: lit('Portugal') }]))), right: sel('artists', (s) => ((s.columns = [col('T1', 'artists', 'name')]), (s.where = [{ kind: 'cmp', left: col('T1', 'artists', 'country'), op: '=', right: lit('Canada') }]))) }, /different artist names of artists that have artist country 'Portugal' or artist country 'Canada'\W/],
    [{ kind: 'setop', op: 'UNION', left: sel('tracks', (s) => ((s.columns = [col('T1', 'tracks', 'bytes')]), (s.where = [{ kind: 'like', expr: col('T1', 'tracks', 'name'), pattern: '%Love%' }]))), right: sel('tracks', (s) => ((s.columns = [col('T1', 'tracks', 'bytes')]), (s.where = [{ kind: 'like', expr: col('T1', 'tracks', 'name'), pattern: '%Night%' }]))) }, /different bytes of tracks that have track name containing 'Love' or track name containing 'Night'\W/],
    [{ kind: 'setop', op: 'INTERSECT', left: sel('albums', (s) => ((s.columns = [col('T1', 'albums', 'release_year')]), (s.where = [{ kind: 'like', expr: col('T1', 'albums', 'title'), pattern: '%Love%' }]))), right: sel('albums', (s) => ((s.columns = [col('T1', 'albums', 'release_year')]), (s.where = [{ kind: 'like', expr: col('T1', 'albums', 'title'), pattern: '%Night%' }]))) }, /^Which release years are shared by albums that have album title containing 'Love' and albums that have album title containing 'Night'\?$/],
    [{ kind: 'setop', op: 'EXCEPT', left: sel('albums', (s) => ((s.columns = [col('T1', 'albums', 'title')]), (s.where = [{ kind: 'cmp', left: col('T1', 'albums', 'release_year'), op: '>=', right: lit(2000) }]))), right: sel('albums', (s) => ((s.columns = [col('T1', 'albums', 'title')]), (s.where = [{ kind: 'cmp', left: col('T1', 'albums', 'release_year'), op: '>=', right: lit(2010) }]))) }, /^What are the album titles of albums that have release year at least 2000, excluding those of albums that have release year at least 2010\?$/],
  ];
  try {
    for (const [ast, shape] of cases) {
      const want = rows(printQuery(ast));
      for (const style of QUESTION_STYLES) {
        for (const variant of [0, 1]) {
          const question = realizeIntent(ast, env.lex, style, variant);
          assert.ok(question, `no intent for ${printQuery(ast)}`);
          assert.match(question, shape);
          assert.doesNotMatch(question, / where the | is (not )?one of the | values\b/, question);
          // The parser rebuilds the query from the words alone (the filtered IN as the join it means).
          assert.equal(rows(printQuery(parseQuestion(question, env))), want, `${question}\n${printQuery(ast)}\n${printQuery(parseQuestion(question, env))}`);
        }
      }
    }
    // The words decide: "no invoice lines" is not "at least one", "below" is not "above".
    const anti = realizeIntent(cases[0][0], env.lex, 'formal', 0)!;
    assert.notEqual(rows(printQuery(parseQuestion(anti.replace('have no invoice lines', 'have at least one invoice line'), env))), rows(printQuery(cases[0][0])));
    // A role the schema does not have is no link.
    assert.throws(() => parseIntent('How many employees are not the manager of any customer?', env.lex, env.graph.edges), /0 links/);
  } finally {
    db.close();
  }
});

test('the factory records how each question was worded: on music_store nearly all are intent sentences, and the manifest counts them', async () => {
  const dir = tmpDir();
  const path = join('data', 'databases', 'music_store', 'music_store.sqlite');
  const run = await runFactory({ db: path, out: join(dir, 'out'), n: 120, seed: 3, variants: 1 });
  // The first questions; a follow-up leans on the turn before it (follow-up.test.ts checks those).
  const r = { ...run, rows: run.rows.filter((x) => !x.previous) };
  // The lexicon as the pipeline builds it: names, the category values read from the data, the parts of long ones.
  const schema = introspectSchema(path);
  const graph = buildSchemaGraph(schema);
  const env = makeParseEnv(schema, graph, run.lex);
  let intent = 0;
  for (const row of r.rows) {
    const g = row.provenance.grammar;
    assert.ok(g === 'intent' || g === 'general', `${g}: ${row.question}`);
    // An intent question is one the intent parser reads; a template sentence is left to the general grammar.
    let parsed: unknown = null;
    try {
      parsed = parseIntent(row.question, env.lex, env.graph.edges);
    } catch {
      parsed = null;
    }
    assert.equal(parsed !== null, g === 'intent', `${g}: ${row.question}`);
    if (g === 'intent') intent++;
    else assert.match(row.question, / where (the|there is) |, showing only |, keeping only |, sorted by | together with |, excluding the /, row.question);
  }
  assert.deepEqual(r.manifest.grammar, { intent, ...(r.rows.length > intent ? { general: r.rows.length - intent } : {}) });
  assert.ok(intent / r.rows.length >= 0.85, `${intent} of ${r.rows.length} intent sentences`);
});

test('a category is named by its value as people name it ("Operational plants in France"), quoted or not, and parsed back by the value alone', () => {
  const dir = tmpDir();
  const path = makePlantsDb(dir);
  const schema = introspectSchema(path);
  const names = buildLexicon(schema);
  const lex = withData(
    names,
    new Map([
      ['plants\u0000Status', ['Operational', 'Shutdown', 'Planned', 'Yes']],
      ['plants\u0000Country', ['France', 'Japan', 'United States', 'Belgium', 'Planned']],
    ]),
  );
  // One column's values only; a value two columns share, or one that says nothing, names neither.
  assert.deepEqual(lex.values!.get('operational'), { table: 'plants', column: 'Status', value: 'Operational', location: false });
  assert.deepEqual(lex.values!.get('united states'), { table: 'plants', column: 'Country', value: 'United States', location: true });
  assert.equal(lex.values!.has('planned'), false);
  assert.equal(lex.values!.has('yes'), false);
  const env = makeParseEnv(schema, buildSchemaGraph(schema), { ...lex, dates: new Set(['plants\u0000OperationalFrom']) });
  const c = (name: string) => col('T1', 'plants', name);
  // A date's extremes are the earliest and the latest.
  const first = emptySelect('plants');
  first.columns = [c('Name')];
  first.orderBy = [{ expr: c('OperationalFrom'), dir: 'ASC' }];
  first.limit = 1;
  const firstQ = realizeIntent(first, env.lex, 'formal', 0)!;
  assert.equal(firstQ, 'What is the name of the plant with the earliest operational from?');
  assert.equal(printQuery({ ...(parseQuestion(firstQ, env) as SelectAst), where: [], orderBy: [] }), printQuery({ ...first, orderBy: [] }));
  assert.equal((parseQuestion(firstQ, env) as SelectAst).orderBy[0].dir, 'ASC');
  // A size's are also the largest and the smallest.
  const big = { ...first, orderBy: [{ expr: c('Capacity'), dir: 'DESC' as const }] };
  const bigQ = realizeIntent(big, env.lex, 'formal', 1)!;
  assert.equal(bigQ, 'What is the name of the plant with the largest capacity?');
  assert.equal((parseQuestion(bigQ, env) as SelectAst).orderBy[0].dir, 'DESC');
  assert.equal(realizeIntent(big, env.lex, 'formal', 0), 'What is the name of the plant with the highest capacity?');
  const count = emptySelect('plants');
  count.columns = [{ kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false }];
  count.where = [
    { kind: 'cmp', left: c('Status'), op: '=', right: lit('Operational') },
    { kind: 'cmp', left: c('Country'), op: '=', right: lit('United States') },
    { kind: 'cmp', left: c('Capacity'), op: '>=', right: lit(1000) },
  ];
  const top = emptySelect('plants');
  top.columns = [c('Country')];
  top.groupBy = [c('Country')];
  top.where = [{ kind: 'cmp', left: c('Status'), op: '=', right: lit('Shutdown') }];
  top.orderBy = [{ expr: { kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false }, dir: 'DESC' }];
  top.limit = 1;
  const list = emptySelect('plants');
  list.columns = [c('Name')];
  list.where = [{ kind: 'cmp', left: c('Country'), op: '=', right: lit('Japan') }];
  const said = (ast: SelectAst, variant: number) => realizeIntent(ast, lex, 'formal', variant)!;
  assert.equal(said(count, 0), "How many 'Operational' plants in 'United States' have capacity at least 1000?");
  assert.equal(said(count, 4), 'How many Operational plants in United States have capacity at least 1000?');
  assert.equal(said(count, 2), "How many plants have status 'Operational' and country 'United States' and capacity at least 1000?");
  assert.equal(said(top, 4), 'Which country has the most Shutdown plants?');
  assert.equal(said(top, 3), 'What is the most common country of Shutdown plants?');
  assert.equal(said(list, 1), "What are the names of plants in 'Japan'?");
  for (const ast of [count, top, list]) {
    for (const variant of [0, 1, 2, 3, 4, 5]) {
      const question = said(ast, variant);
      const back = parseQuestion(question, env) as SelectAst;
      const where = (q: SelectAst) => q.where.filter((w) => w.kind !== 'null').map((w) => printQuery({ ...emptySelect('plants'), columns: [c('Id')], where: [w] })).sort();
      assert.deepEqual(where(back), where(ast), question);
      assert.equal(printQuery({ ...back, where: [], orderBy: back.orderBy.slice(0, 1) }), printQuery({ ...ast, where: [] }), question);
    }
  }
  // People's casing is read too; a place is not a category before the noun, nor a category after "in".
  const lower = parseQuestion('How many operational plants in japan are there?', env) as SelectAst;
  assert.deepEqual(lower.where.map((w) => (w.kind === 'cmp' && w.right.kind === 'lit' ? w.right.value : null)), ['Operational', 'Japan']);
  assert.throws(() => parseIntent('How many France plants are there?', lex), /unknown table/);
  assert.throws(() => parseIntent('How many plants in Operational are there?', lex), /trailing text|expected/);
});

test('no group is measured by its own column ("the highest unit price for each unit price")', async () => {
  const dir = tmpDir();
  const only = Object.fromEntries(TEMPLATE_NAMES.map((t) => [t, t === 'groupAgg' ? 1 : 0]));
  const r = await runFactory({ db: join('data', 'databases', 'music_store', 'music_store.sqlite'), out: join(dir, 'out'), n: 150, seed: 1, variants: 0, templateWeights: only });
  assert.ok(r.rows.length >= 50, `${r.rows.length} pairs`);
  assert.ok(r.rows.some((x) => /^SELECT \S+, (SUM|AVG|MAX|MIN)\(/.test(x.SQL)), r.rows.map((x) => x.SQL).join('\n'));
  for (const row of r.rows) assert.doesNotMatch(row.SQL, /^SELECT (\S+), (SUM|AVG|MAX|MIN)\(\1\) .*GROUP BY \1\b/, row.SQL);
});

test('a long table name is shortened to its head noun where that names it alone ("crimes", "plants"), and read back', () => {
  const dir = tmpDir();
  const one = join(dir, 'crime.sqlite');
  const db = new Database(one);
  db.exec("CREATE TABLE GreaterManchesterCrime (CrimeID TEXT, Type TEXT, Outcome TEXT); INSERT INTO GreaterManchesterCrime VALUES ('a', 'Burglary', 'Under investigation'), ('b', 'Burglary', 'Closed'), ('c', 'Robbery', 'Closed')");
  db.close();
  const schema = introspectSchema(one);
  const lex = buildLexicon(schema);
  assert.deepEqual(lex.shortTables!.get('GreaterManchesterCrime'), ['crime', 'crimes']);
  const env = makeParseEnv(schema, buildSchemaGraph(schema), lex);
  const q = emptySelect('GreaterManchesterCrime');
  q.columns = [col('T1', 'GreaterManchesterCrime', 'Type')];
  q.groupBy = [col('T1', 'GreaterManchesterCrime', 'Type')];
  q.orderBy = [{ expr: { kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false }, dir: 'DESC' }];
  q.limit = 1;
  assert.equal(realizeIntent(q, lex, 'formal', 0), 'Which type has the most greater manchester crimes?');
  const short = realizeIntent(q, lex, 'formal', 1)!;
  assert.equal(short, 'What is the most common type of crimes?');
  assert.equal(printQuery({ ...(parseQuestion(short, env) as SelectAst), orderBy: [] }), printQuery({ ...q, orderBy: [] }));
  // Two tables with the same head noun keep their full names; two-word names stay whole in a bigger schema.
  const shop = buildLexicon(introspectSchema(makeShopDb(dir)));
  assert.equal(shop.shortTables!.size, 0);
});
