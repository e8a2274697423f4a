// Follow-up pairs: an edit of a verified query, checked by execution as every pair is, of one of the named
// kinds, and carrying the turn it continues.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { SqlPool } from '../../src/sql/pool.ts';
import { Rng } from '../../src/util/rng.ts';
import { col, emptySelect, lit, type SelectAst } from '../../src/factory/ast.ts';
import { printQuery } from '../../src/factory/print.ts';
import { verifyPair } from '../../src/factory/verify.ts';
import { candidateEdits, checkFollowUp, followUpPair, type Edit, type FollowUpEnv } from '../../src/factory/follow-up.ts';
import { buildLexicon, colKey } from '../../src/factory/language/names.ts';
import { FOLLOW_UP_FRAMES } from '../../src/factory/language/follow-ups.ts';
import { runFactory } from '../../src/factory/pipeline.ts';
import { FOLLOW_UP_EDITS, type DatasetRow } from '../../src/data/dataset-row.ts';
import { tokenize } from '../../src/sql/lexer.ts';
import { silentProgress } from '../../src/util/progress.ts';
import type { StageContext, SynthPair } from '../../src/factory/types.ts';
import { customerNamesIn, makeShopDb, synthInputs, tmpDir } from './fixtures.ts';
import { withPool } from '../support/with.ts';

const dir = tmpDir();
const path = makeShopDb(dir);
const { schema, profiles } = synthInputs(path);
const C = (column: string) => col('T1', 'customers', column);

function ctxWith(pool: SqlPool): StageContext {
  return { dbId: 'shop', dbPath: path, schema, executor: pool, rng: new Rng(1), progress: silentProgress, variants: [], reject: () => {}, timeoutMs: 3000 };
}

function pairOf(ast: SelectAst): SynthPair {
  return { id: 'b', dbId: 'shop', sql: printQuery(ast), ast, question: 'What are the names of customers in Japan?', evidence: '', style: 'formal', difficulty: 'simple', provenance: { stages: [], checks: [] } };
}

const env: FollowUpEnv = {
  lex: buildLexicon(schema),
  profiles,
  values: new Map([
    [colKey('customers', 'country'), ['USA', 'Canada', 'France', 'Japan', 'Brazil']],
    [colKey('customers', 'city'), ['Springfield', 'Lyon', 'Osaka']],
  ]),
};

test('a follow-up is verified by execution: an edit whose query finds nothing, or answers what the last turn did, is rejected', async () => {
  await withPool({ size: 2 }, async (pool) => {
    const ctx = ctxWith(pool);
    const q = customerNamesIn('Japan');
    const base = pairOf(q);
    assert.equal(await verifyPair(ctx, base), null);

    const to = (value: string): Edit => ({ kind: 'filter-change', ast: { ...q, where: [{ kind: 'cmp', left: C('country'), op: '=', right: lit(value) }] }, words: { kind: 'filter-change', value: `'${value}'` } });
    const nowhere = to('Atlantis');
    assert.equal(await checkFollowUp(ctx, base, nowhere, followUpPair(ctx, base, nowhere, env, 0)), 'empty_result');
    const same = to('Japan');
    assert.equal(await checkFollowUp(ctx, base, same, followUpPair(ctx, base, same, env, 0)), 'follow_up_unchanged');
    const france = to('France');
    const f = followUpPair(ctx, base, france, env, 0);
    assert.equal(await checkFollowUp(ctx, base, france, f), null);
    assert.deepEqual(f.previous, [{ question: base.question, sql: base.sql }]);
    assert.equal(f.provenance.followUp, 'filter-change');
    assert.match(f.sql, /'France'/);
    assert.match(f.question, /'France'/);
  });
});

test('the edits a query admits are of the named kinds, each one step from the query, each worded by its own frames', () => {
  const q = emptySelect('customers');
  q.columns = [C('name')];
  q.where = [{ kind: 'cmp', left: C('country'), op: '=', right: lit('Japan') }];
  const kinds = new Set<string>();
  for (let seed = 0; seed < 30; seed++) {
    for (const e of candidateEdits(q, env, new Rng(seed), 8, () => [])) {
      kinds.add(e.kind);
      assert.ok((FOLLOW_UP_EDITS as readonly string[]).includes(e.kind));
      const a = e.ast;
      if (e.kind === 'column-add') assert.equal(a.columns.length, q.columns.length + 1);
      if (e.kind === 'column-replace') assert.notDeepEqual(a.columns, q.columns);
      if (e.kind === 'filter-add') assert.equal(a.where.length, q.where.length + 1);
      if (e.kind === 'filter-change') assert.notDeepEqual(a.where, q.where);
      if (e.kind === 'order') assert.equal(a.orderBy.length, 1);
      if (e.kind === 'limit') assert.ok(a.limit !== null);
    }
  }
  // A plain list with a text filter: a column added or replaced, the filter's value changed, another filter, a sort.
  for (const k of ['column-add', 'column-replace', 'filter-change', 'filter-add', 'order']) assert.ok(kinds.has(k), `no ${k} edit`);
  for (const k of FOLLOW_UP_EDITS) assert.ok(FOLLOW_UP_FRAMES[k].length >= 3, `${k}: too few ways to say it`);
});

/** What a follow-up's SQL changed of the SQL it continues, read from the two texts alone. */
function editOf(prev: string, next: string): string {
  const words = (s: string) => tokenize(s).map((t) => t.text);
  const [a, b] = [words(prev), words(next)];
  const has = (xs: string[], w: string) => xs.some((x) => x.toUpperCase() === w);
  const from = (xs: string[]) => xs.slice(xs.findIndex((x) => x.toUpperCase() === 'FROM'));
  if (has(b, 'LIMIT') && (!has(a, 'LIMIT') || Number(b[b.length - 1]) < Number(a[a.length - 1]))) return 'limit';
  if (!has(a, 'ORDER') && has(b, 'ORDER')) return 'order';
  if (JSON.stringify(from(a)) === JSON.stringify(from(b))) return b.indexOf('FROM') > a.indexOf('FROM') ? 'column-add' : 'column-replace';
  const where = (xs: string[]) => xs.filter((x) => /^(WHERE|AND)$/i.test(x)).length;
  if (where(b) > where(a)) return 'filter-add';
  if (a.length === b.length && a.filter((x, i) => x !== b[i]).length === 1) return 'filter-change';
  return 'other';
}

test('agro synth writes follow-ups of its own pairs: each runs, answers differently from the turn it continues, and makes the edit it names', async () => {
  const db = resolve('data/databases/school/school.sqlite');
  const out = join(tmpDir(), 'synth');
  const r = await runFactory({ db, out, n: 40, variants: 1, seed: 3, followUps: 0.5 });
  const rows: DatasetRow[] = r.rows;
  const followUps = rows.filter((x) => x.previous);
  assert.ok(followUps.length >= 8, `only ${followUps.length} follow-ups of 40 pairs at a share of 0.5`);
  assert.equal(Object.values(r.manifest.followUps).reduce((a, b) => a + b, 0), followUps.length);
  // They take the place of as many first questions: the run writes the pairs it was asked for.
  assert.equal(rows.length, 40, r.manifest.shortfall);
  const sqlite = new Database(db, { readonly: true });
  try {
    const run = (sql: string) => JSON.stringify(sqlite.prepare(sql).raw().all());
    for (const f of followUps) {
      const [prev] = f.previous!;
      assert.ok(rows.some((x) => !x.previous && x.SQL === prev.sql && x.question === prev.question), `the turn "${prev.question}" is not a pair of the dataset`);
      assert.ok((FOLLOW_UP_EDITS as readonly string[]).includes(f.provenance.followUp!));
      assert.equal(editOf(prev.sql, f.SQL), f.provenance.followUp, `${prev.sql}\n -> ${f.SQL}`);
      const result = run(f.SQL);
      assert.notEqual(result, '[]', `${f.SQL} finds nothing`);
      assert.notEqual(result, run(prev.sql), `${f.SQL} answers what ${prev.sql} did`);
      assert.ok(f.provenance.checks.includes('exec') && f.provenance.checks.includes('changed'));
    }
  } finally {
    sqlite.close();
  }
  // A share of 0 writes none.
  const none = await runFactory({ db, out: join(tmpDir(), 'synth0'), n: 40, variants: 0, seed: 3, followUps: 0 });
  assert.equal(none.rows.filter((x) => x.previous).length, 0);
});
