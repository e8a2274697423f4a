// People's words for tables and columns (issue #57 part 3): morphology (an agent noun for "<verb>ed by", a closed
// compound said open, a compound's synonyms with its head), documentation names (a short description, a
// PostgreSQL COMMENT), each realized into the factory's questions and read back to its column or table.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { buildLexicon, colKey, spokenColumn, withData, type Lexicon } from '../../src/factory/language/names.ts';
import { agentName, otherNames, participleVerb } from '../../src/factory/language/morphology.ts';
import { makeParseEnv, parseQuestion } from '../../src/factory/language/general-parse.ts';
import { realizeQuestion } from '../../src/factory/language/realize.ts';
import { buildSchemaGraph } from '../../src/factory/schema-graph.ts';
import { printQuery } from '../../src/factory/print.ts';
import { col, emptySelect, type QueryAst, type SelectAst } from '../../src/factory/ast.ts';
import { QUESTION_STYLES } from '../../src/data/dataset-row.ts';
import { introspectSchema } from '../../src/sql/introspect.ts';
import { databaseDocs } from '../../src/prompt/sources.ts';
import type { DbDocs } from '../../src/prompt/docs-types.ts';
import type { DbSchema } from '../../src/sql/types.ts';
import { createExecutor, introspectDatabase } from '../../src/sql/executor.ts';
import { buildValueIndex } from '../../src/prompt/value-index.ts';
import { moveFilters } from '../../src/answer/edit.ts';
import { runFactory } from '../../src/factory/pipeline.ts';
import { valueParts, withValueParts } from '../../src/factory/language/value-parts.ts';
import { PG, postgresForTests } from '../support/postgres.ts';
import { tmpDir } from './fixtures.ts';

/** A library: books with a written_by and a shelved_by, its schoolteachers, and the addresses of its branches. */
function makeLibraryDb(dir: string): string {
  const path = join(dir, 'library.sqlite');
  const db = new Database(path);
  db.exec(`
    CREATE TABLE books (book_id INTEGER PRIMARY KEY, title TEXT, written_by TEXT, shelved_by TEXT, pages INTEGER);
    CREATE TABLE Schoolteacher (teacher_id INTEGER PRIMARY KEY, full_name TEXT, subject TEXT);
    CREATE TABLE branches (branch_id INTEGER PRIMARY KEY, branch_name TEXT, zip_postcode TEXT, zone_ref TEXT);
  `);
  const book = db.prepare('INSERT INTO books VALUES (?, ?, ?, ?, ?)');
  for (let i = 1; i <= 30; i++) book.run(i, `Volume ${i}`, ['Ines Varga', 'Tomas Reil', 'Oda Flem'][i % 3], ['Kit', 'Rune'][i % 2], 100 + i * 7);
  const t = db.prepare('INSERT INTO Schoolteacher VALUES (?, ?, ?)');
  for (let i = 1; i <= 12; i++) t.run(i, `Teacher ${i}`, ['Algebra', 'Botany', 'Drawing'][i % 3]);
  const b = db.prepare('INSERT INTO branches VALUES (?, ?, ?, ?)');
  for (let i = 1; i <= 8; i++) b.run(i, `Branch ${i}`, `7${i}00${i}`, ['North', 'South'][i % 2]);
  db.close();
  return path;
}

const c = (table: string, column: string) => col('T1', table, column);
function list(table: string, column: string): SelectAst {
  const q = emptySelect(table);
  q.columns = [c(table, column)];
  return q;
}
function countAll(table: string): SelectAst {
  const q = emptySelect(table);
  q.columns = [{ kind: 'agg', fn: 'COUNT', arg: { kind: 'star' }, distinct: false }];
  return q;
}

/** Every people form of q, each asserted to parse back to q; returns what was said. */
function roundTrip(q: QueryAst, schema: DbSchema, lex: Lexicon): string[] {
  const env = makeParseEnv(schema, buildSchemaGraph(schema), lex);
  const said: string[] = [];
  for (const style of QUESTION_STYLES) {
    for (let v = 0; v < 6; v++) {
      const text = realizeQuestion(q, style, v, lex, true, true);
      said.push(text);
      assert.equal(printQuery(parseQuestion(text, env)), printQuery(q), text);
    }
  }
  return said;
}

test('morphology: an agent noun for "<participle> by", a closed compound opened, a compound said by its synonyms with its head', () => {
  assert.equal(participleVerb('written'), 'write');
  assert.equal(participleVerb('directed'), 'direct');
  assert.equal(participleVerb('owned'), 'own');
  assert.equal(participleVerb('submitted'), 'submit');
  assert.equal(agentName('written by'), 'writer');
  assert.equal(agentName('owned by'), 'owner');
  assert.equal(agentName('book directed by'), 'book director');
  assert.equal(agentName('written'), null, 'a participle alone names a time or a fact, not a person');
  assert.ok(otherNames('schoolteacher').includes('school teacher'));
  assert.ok(otherNames('zip postcode').includes('zip code'), 'the modifier already said is folded in');
  assert.ok(otherNames('postcode').includes('postal code'));
  assert.deepEqual(otherNames('title'), []);
});

test('an agent noun is read back to its column, and said in people questions', () => {
  const path = makeLibraryDb(tmpDir());
  const schema = introspectSchema(path);
  const lex = buildLexicon(schema);
  assert.deepEqual(lex.aliases?.get(colKey('books', 'written_by'))?.[0], 'writer');
  assert.deepEqual(lex.columns.get('writer'), ['books', 'written_by']);
  const env = makeParseEnv(schema, buildSchemaGraph(schema), lex);
  // A question as a person would type it, not the factory's sentence.
  assert.equal(printQuery(parseQuestion('What are the writers of all books?', env)), printQuery(list('books', 'written_by')));
  assert.equal(printQuery(parseQuestion('List the zip codes of all branches.', env)), printQuery(list('branches', 'zip_postcode')));
  const said = [...roundTrip(list('books', 'written_by'), schema, lex), ...roundTrip(list('branches', 'zip_postcode'), schema, lex)].join('\n');
  assert.match(said, /\bwriters\b/, said);
  assert.match(said, /\bzip codes\b/, said);
});

test('a run-together table name is read by its words too, and asked so', () => {
  const path = makeLibraryDb(tmpDir());
  const schema = introspectSchema(path);
  const lex = buildLexicon(schema);
  assert.deepEqual(lex.synonymTables.get('Schoolteacher'), ['school teacher', 'school teachers']);
  const env = makeParseEnv(schema, buildSchemaGraph(schema), lex);
  assert.equal(printQuery(parseQuestion('How many school teachers are there?', env)), printQuery(countAll('Schoolteacher')));
  assert.match(roundTrip(countAll('Schoolteacher'), schema, lex).join('\n'), /school teachers/);
});

test('a documented description short enough to be a name names the column, in its questions and when read', () => {
  const path = makeLibraryDb(tmpDir());
  const schema = introspectSchema(path);
  const docs: DbDocs = { tables: [{ table: 'branches', description: 'Library branch', columns: [{ column: 'zone_ref', description: 'delivery zone' }, { column: 'branch_name', description: 'The name the branch is known by on its sign.' }] }] };
  const lex = withData(buildLexicon(schema, docs), new Map(), [], docs);
  assert.equal(spokenColumn(lex, 'branches', 'zone_ref'), 'delivery zone');
  assert.equal(spokenColumn(lex, 'branches', 'branch_name'), 'branch name', 'a sentence is a description, not a name');
  const said = roundTrip(list('branches', 'zone_ref'), schema, lex).join('\n');
  assert.match(said, /delivery zones?/, said);
  const env = makeParseEnv(schema, buildSchemaGraph(schema), lex);
  assert.equal(printQuery(parseQuestion('How many library branches are there?', env)), printQuery(countAll('branches')), "the table's documented name");
});

describe("a PostgreSQL database's COMMENTs name its columns", { skip: PG.skip }, () => {
  let url: string;
  const live = postgresForTests(async (server) => {
    await server.createDatabase('archive');
    await server.admin(
      `CREATE TABLE parcels (parcel_id integer PRIMARY KEY, wt_kg real, dst_cd text);
       INSERT INTO parcels VALUES (1, 2.5, 'A1'), (2, 7.0, 'B2'), (3, 1.25, 'A1');
       COMMENT ON TABLE parcels IS 'Parcels sent by the archive.';
       COMMENT ON COLUMN parcels.dst_cd IS 'destination code';
       COMMENT ON COLUMN parcels.wt_kg IS 'Weight in kilograms, as weighed at the counter.'`,
      'archive',
    );
    url = live.server.adminUrl('archive');
  });

  test('a short comment becomes the name the factory says and reads; a long one stays a description', async () => {
    const docs = await databaseDocs(url);
    assert.ok(docs, 'the COMMENTs are the documentation');
    const schema = await introspectDatabase(url);
    const lex = buildLexicon(schema, docs);
    assert.equal(spokenColumn(lex, 'parcels', 'dst_cd'), 'destination code');
    assert.notEqual(spokenColumn(lex, 'parcels', 'wt_kg'), 'weight in kilograms, as weighed at the counter');
    const said = roundTrip(list('parcels', 'dst_cd'), schema, lex).join('\n');
    assert.match(said, /destination codes?/, said);
  });
});

/** Service tickets whose outcome is a long category value; 'Awaiting parts from the depot' only past the rows first read. */
function makeTicketsDb(dir: string): string {
  const path = join(dir, 'tickets.sqlite');
  const db = new Database(path);
  db.exec('CREATE TABLE tickets (ticket_id INTEGER PRIMARY KEY, device TEXT, priority TEXT, outcome TEXT, hours REAL)');
  const outcomes = ['Review finished; no fault found', 'Review finished; fault confirmed', 'Awaiting parts from supplier', 'Closed'];
  const ins = db.prepare('INSERT INTO tickets VALUES (?, ?, ?, ?, ?)');
  for (let i = 1; i <= 48; i++) ins.run(i, ['Pump', 'Valve', 'Meter'][i % 3], ['High', 'Low'][i % 2], outcomes[i % 4], 1 + (i % 7));
  ins.run(49, 'Pump', 'Low', 'Awaiting parts from the depot', 2);
  db.close();
  return path;
}

describe('stored values named in part', () => {
  test('the parts of a long value: its first and last words, never opening or closing on a grammar word', () => {
    assert.ok(valueParts('Review finished; no fault found').includes('fault found'));
    assert.ok(valueParts('On or near Elm Street').includes('near Elm Street'));
    assert.ok(valueParts('On or near Elm Street').includes('Elm Street'));
    assert.ok(!valueParts('On or near Elm Street').some((p) => /^on\b/i.test(p)), 'no part opens on a grammar word');
    assert.deepEqual(valueParts('Closed'), []);
  });

  test('a part is a form of its value only when a LIKE on it finds that value alone', async () => {
    const path = makeTicketsDb(tmpDir());
    const schema = introspectSchema(path);
    // The values as the factory read them (the first rows): 'Awaiting parts from the depot' is past them.
    const read = new Map([['tickets\u0000outcome', ['Review finished; no fault found', 'Review finished; fault confirmed', 'Awaiting parts from supplier', 'Closed']]]);
    const exec = createExecutor({ size: 1 });
    try {
      const lex = await withValueParts(withData(buildLexicon(schema), read), read, path, exec, 5000);
      const forms = lex.typed!.get('tickets\u0000outcome')!;
      assert.equal(forms.get('fault found'), 'Review finished; no fault found');
      assert.equal(forms.get('fault confirmed'), 'Review finished; fault confirmed');
      assert.equal(forms.get('review finished'), undefined, 'two values share it');
      assert.equal(forms.get('awaiting parts'), undefined, 'the database has another value with it (found by the LIKE, not in the values read)');
      assert.equal(forms.get('from supplier'), undefined, 'a part opening on a grammar word');
      assert.equal(forms.get('parts from supplier'), 'Awaiting parts from supplier');
    } finally {
      await exec.close();
    }
  });

  test('the factory asks for a long value by its part, with the whole value in the SQL, verified and read back', async () => {
    const path = makeTicketsDb(tmpDir());
    const r = await runFactory({ db: path, out: join(tmpDir(), 'out'), n: 150, seed: 3, variants: 0, people: 1, phrasings: 3 });
    const schema = introspectSchema(path);
    const env = makeParseEnv(schema, buildSchemaGraph(schema), r.lex);
    const inPart = r.pairs.flatMap((p) => [p.question, ...(p.paraphrases ?? [])].map((q) => ({ p, q }))).filter(({ p, q }) => /'Review finished; no fault found'/.test(p.sql) && /fault found/i.test(q) && !/review finished/i.test(q));
    assert.ok(inPart.length > 0, 'some question names the value by its part');
    const db = new Database(path, { readonly: true });
    try {
      for (const { p, q } of inPart) {
        // Read back to the same answer (the parser restores the implicit tie-breaker and NOT NULL guard).
        const read = printQuery(parseQuestion(q, env));
        assert.match(read, /= 'Review finished; no fault found'/, q);
        assert.deepEqual(db.prepare(read).raw().all(), db.prepare(p.sql).raw().all(), `${q}\n  ${read}\n  ${p.sql}`);
        assert.ok(db.prepare(p.sql).all().length > 0, `${p.sql} returns the value's rows`);
      }
    } finally {
      db.close();
    }
  });

  test("a user's question naming a value in part: the value index names the whole value, and a filter moves to it", () => {
    const path = makeTicketsDb(tmpDir());
    const idx = buildValueIndex(path);
    const q = 'How many tickets had no fault found?';
    const [m] = idx.lookup(q);
    assert.deepEqual([m.column, m.value, m.score], ['outcome', 'Review finished; no fault found', 0.9]);
    assert.ok(idx.lookup('tickets whose review finished').every((x) => x.score < 0.7), 'a part two values share names neither');
    const [e] = moveFilters("SELECT COUNT(*) FROM tickets WHERE priority = 'High'", q, idx.lookup(q));
    const db = new Database(path, { readonly: true });
    try {
      const got = db.prepare(e.sql).pluck().get();
      const want = db.prepare("SELECT COUNT(*) FROM tickets WHERE outcome LIKE '%fault found%'").pluck().get();
      assert.equal(e.sql, "SELECT COUNT(*) FROM tickets WHERE outcome = 'Review finished; no fault found'");
      assert.equal(got, want);
    } finally {
      db.close();
    }
  });
});
