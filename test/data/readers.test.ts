import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AgroError } from '../../src/errors.ts';
import { readDataset } from '../../src/data/read-dataset.ts';
import { readPredictions } from '../../src/data/read-predictions.ts';
import { resolveDatabase, suiteVariants } from '../../src/data/databases.ts';
import type { EvalItem } from '../../src/data/types.ts';

const DATA = fileURLToPath(new URL('../../data/', import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'agro-eval-readers-'));

function file(name: string, text: string): string {
  const p = join(tmp, name);
  writeFileSync(p, text);
  return p;
}

/** The error must be an AgroError of `kind`, on one line, naming the file and matching `where`. */
function assertOneLineError(fn: () => unknown, kind: string, path: string, where: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof AgroError, `expected AgroError, got ${String(err)}`);
    assert.equal(err.kind, kind, err.message);
    assert.doesNotMatch(err.message, /\n/);
    assert.ok(err.message.includes(path), `message should name ${path}: ${err.message}`);
    assert.match(err.message, where);
    return true;
  });
}

test('reads the bundled BIRD-style dev set: 45 questions, 15/18/12 by difficulty, three databases', () => {
  const ds = readDataset(join(DATA, 'dev.json'));
  assert.equal(ds.format, 'bird');
  assert.equal(ds.items.length, 45);
  const by = (d: string) => ds.items.filter((it) => it.difficulty === d).length;
  assert.deepEqual([by('simple'), by('moderate'), by('challenging')], [15, 18, 12]);
  assert.deepEqual([...new Set(ds.items.map((it) => it.dbId))].sort(), ['music_store', 'retail', 'school']);
  assert.equal(ds.items[0].questionId, 0);
  assert.equal(ds.items[0].gold, "SELECT COUNT(*) FROM tracks AS T JOIN genres AS G ON T.genre_id = G.genre_id WHERE G.name = 'Jazz'");
  assert.equal(ds.items[2].evidence, 'the year of an invoice is the year of invoice_date; amount refers to total');
});

test('reads Spider-style data (query, no difficulty) and JSONL', () => {
  const sp = readDataset(join(DATA, 'dev_spider.json'));
  assert.equal(sp.format, 'spider');
  assert.equal(sp.items.length, 6);
  assert.equal(sp.items[2].dbId, 'retail');
  assert.equal(sp.items[2].difficulty, undefined);
  const p = file('d.jsonl', '{"db_id":"retail","question":"q1","SQL":"SELECT 1","difficulty":"simple"}\n\n{"db_id":"school","question":"q2","query":"SELECT 2"}\n');
  const ds = readDataset(p);
  assert.equal(ds.format, 'bird');
  assert.deepEqual(ds.items.map((it) => [it.index, it.dbId, it.gold, it.difficulty]), [
    [0, 'retail', 'SELECT 1', 'simple'],
    [1, 'school', 'SELECT 2', undefined],
  ]);
});

test('malformed data files fail with one line naming the file and the place', () => {
  const cases: Array<[string, string, string, RegExp]> = [
    ['bad.json', '[{"db_id": "retail", "question": "q", "SQL": "SELECT 1"},\n {"db_id": "retail" "question": "x"}]', 'invalid_input', /malformed JSON: line 2/],
    ['obj.json', '{"db_id": "retail"}', 'invalid_input', /expected a JSON array/],
    ['nodb.json', '[{"question": "q", "SQL": "SELECT 1"}]', 'invalid_input', /item 0: missing field "db_id"/],
    ['nosql.json', '[{"db_id": "retail", "question": "q", "SQL": "SELECT 1"}, {"db_id": "retail", "question": "q"}]', 'invalid_input', /item 1: needs a gold query/],
    ['diff.json', '[{"db_id": "retail", "question": "q", "SQL": "SELECT 1", "difficulty": "hard"}]', 'invalid_input', /item 0: field "difficulty"/],
    ['dup.json', '[{"question_id": 3, "db_id": "a", "question": "q", "SQL": "SELECT 1"}, {"question_id": 3, "db_id": "a", "question": "q", "SQL": "SELECT 1"}]', 'invalid_input', /item 1: duplicate question_id 3/],
    ['empty.json', '[]', 'invalid_input', /no questions/],
    ['bad.jsonl', '{"db_id":"a","question":"q","SQL":"SELECT 1"}\n{"db_id":"a","question":"q","SQL":"SELECT 1"}\n{oops}\n', 'invalid_input', /line 3: malformed JSON/],
    ['type.jsonl', '{"db_id":"a","question":"q","SQL":"SELECT 1"}\n\n{"db_id":7,"question":"q","SQL":"SELECT 1"}\n', 'invalid_input', /line 3: field "db_id"/],
  ];
  for (const [name, text, kind, where] of cases) {
    const p = file(name, text);
    assertOneLineError(() => readDataset(p), kind, p, where);
  }
  const missing = join(tmp, 'nope.json');
  assertOneLineError(() => readDataset(missing), 'not_found', missing, /data file not found/);
});

const ITEMS: EvalItem[] = [
  { index: 0, questionId: 'q-a', dbId: 'retail', question: 'a', gold: 'SELECT 1' },
  { index: 1, questionId: 'q-b', dbId: 'school', question: 'b', gold: 'SELECT 2' },
  { index: 2, questionId: 'q-c', dbId: 'retail', question: 'c', gold: 'SELECT 3' },
];

test('predictions in every supported format line up with the data', () => {
  const want = ['SELECT 10', 'SELECT 20', 'SELECT 30'];
  const formats: Array<[string, string]> = [
    ['arr.json', JSON.stringify(want)],
    ['byindex.json', JSON.stringify({ 2: 'SELECT 30', 0: 'SELECT 10', 1: 'SELECT 20' })],
    ['byid.json', JSON.stringify({ 'q-c': 'SELECT 30', 'q-b': 'SELECT 20', 'q-a': 'SELECT 10' })],
    ['bird.json', JSON.stringify({ 0: 'SELECT 10\t----- bird -----\tretail', 1: 'SELECT 20\t----- bird -----\tschool', 2: 'SELECT 30\t----- bird -----\tretail' })],
    ['objs.json', JSON.stringify([{ SQL: 'SELECT 10' }, { sql: 'SELECT 20' }, { query: 'SELECT 30' }])],
    ['keyed.jsonl', '{"question_id":"q-b","SQL":"SELECT 20"}\n{"question_id":"q-a","sql":"SELECT 10"}\n{"question_id":"q-c","query":"SELECT 30"}\n'],
    ['plain.jsonl', '{"SQL":"SELECT 10"}\n{"SQL":"SELECT 20"}\n\n{"SQL":"SELECT 30"}\n'],
    ['spider.sql', 'SELECT 10\nSELECT 20\r\nSELECT 30\n\n'],
    ['tabbed.txt', 'SELECT 10\tretail\nSELECT 20\tschool\nSELECT 30\tretail\n'],
  ];
  for (const [name, text] of formats) {
    assert.deepEqual(readPredictions(file(name, text), ITEMS), want, name);
  }
});

test('the bundled partly-wrong predictions (BIRD predict format) read as 45 queries', () => {
  const ds = readDataset(join(DATA, 'dev.json'));
  const preds = readPredictions(join(DATA, 'predictions', 'partly-wrong.json'), ds.items);
  assert.equal(preds.length, 45);
  assert.equal(preds[17], 'SELECT COUNT(*) FROM orders');
  assert.equal(preds[3], ds.items[3].gold);
});

test('malformed prediction files fail with one line naming the file and the place', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['short.json', '["SELECT 1", "SELECT 2"]', /2 predictions for 3 questions/],
    ['long.sql', 'SELECT 1\nSELECT 2\nSELECT 3\nSELECT 4\n', /4 predictions for 3 questions/],
    ['badkey.json', '{"0": "SELECT 1", "1": "SELECT 2", "x": "SELECT 3"}', /key "x": "x" is neither a question_id nor an index/],
    ['range.json', '{"0": "SELECT 1", "1": "SELECT 2", "7": "SELECT 3"}', /key "7"/],
    ['wrongdb.json', JSON.stringify({ 0: 'SELECT 1\t----- bird -----\tretail', 1: 'SELECT 2\t----- bird -----\tretail', 2: 'SELECT 3\t----- bird -----\tretail' }), /key "1": prediction is for db_id "retail" but question 1 is on "school"/],
    ['broken.json', '["SELECT 1",\n"SELECT 2",\n"SELECT 3"', /malformed JSON/],
    ['nums.json', '["SELECT 1", 2, "SELECT 3"]', /item 1: expected a SQL string/],
    ['mixed.jsonl', '{"question_id":"q-a","SQL":"SELECT 1"}\n{"SQL":"SELECT 2"}\n{"question_id":"q-c","SQL":"SELECT 3"}\n', /line 2: has no question_id while others do/],
    ['bad.jsonl', '{"SQL":"SELECT 1"}\n{"SQL": }\n{"SQL":"SELECT 3"}\n', /line 2: malformed JSON/],
    ['nosql.jsonl', '{"SQL":"SELECT 1"}\n{"answer":"SELECT 2"}\n{"SQL":"SELECT 3"}\n', /line 2: expected a string in "SQL"/],
  ];
  for (const [name, text, where] of cases) {
    const p = file(name, text);
    assertOneLineError(() => readPredictions(p, ITEMS), 'invalid_input', p, where);
  }
  const missing = join(tmp, 'none.json');
  assertOneLineError(() => readPredictions(missing, ITEMS), 'not_found', missing, /predictions file not found/);
});

test('databases resolve as <root>/<db_id>/<db_id>.sqlite; unknown ones fail clearly', () => {
  const root = join(DATA, 'databases');
  assert.equal(resolveDatabase(root, 'school'), join(root, 'school', 'school.sqlite'));
  assertOneLineError(() => resolveDatabase(root, 'hospital'), 'not_found', join(root, 'hospital', 'hospital.sqlite'), /unknown db_id "hospital"/);
  assertOneLineError(() => resolveDatabase(join(tmp, 'no-root'), 'school'), 'not_found', join(tmp, 'no-root'), /database root not found/);
  assertOneLineError(() => resolveDatabase(root, '../retail'), 'invalid_input', '../retail', /not a plain name/);
  assert.deepEqual(suiteVariants(join(tmp, 'no-suite'), 'school', join(tmp, 'school.sqlite')), []);
});
