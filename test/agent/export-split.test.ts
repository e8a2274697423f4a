// agro export's train/val split keeps a follow-up with the turn it continues, as the quickstart's split does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { splitRows, taskSqls } from '../../src/agent/export.ts';
import type { ExportRow } from '../../src/data/export-formats.ts';
import type { SqlTask } from '../../src/agent/sql-env.ts';

test('export: a follow-up row and the row it continues land in the same split', () => {
  const tasks: SqlTask[] = Array.from({ length: 10 }, (_, i) => {
    const base = `SELECT name FROM table_${i}`;
    return [
      { id: `${i}`, dbId: 'd', dbPath: 'd.sqlite', question: `list ${i}`, goldSql: base },
      { id: `${i}f`, dbId: 'd', dbPath: 'd.sqlite', question: 'just the top 3', goldSql: `${base} ORDER BY name LIMIT 3`, previous: [{ question: `list ${i}`, sql: base }] },
    ];
  }).flat();
  const rows = tasks.map((t): ExportRow => ({ id: t.id, dbId: t.dbId, question: t.question, evidence: '', difficulty: '', goldSql: t.goldSql, dbPath: t.dbPath, variantPaths: [], prompt: [] }));
  const sqls = new Map(rows.map((r, i) => [r, taskSqls(tasks[i])]));
  let apartByGoldAlone = 0;
  for (let seed = 0; seed < 20; seed++) {
    const s = splitRows(rows, 0.3, seed, (r) => sqls.get(r)!);
    const side = (id: string) => (s.val.some((r) => r.id === id) ? 'val' : 'train');
    for (let i = 0; i < 10; i++) assert.equal(side(`${i}f`), side(`${i}`), `seed ${seed}: conversation ${i} split`);
    const g = splitRows(rows, 0.3, seed);
    const gside = (id: string) => (g.val.some((r) => r.id === id) ? 'val' : 'train');
    if (Array.from({ length: 10 }, (_, i) => gside(`${i}f`) !== gside(`${i}`)).some(Boolean)) apartByGoldAlone++;
  }
  assert.ok(apartByGoldAlone > 0, 'by the gold SQL alone the turns never part: the test shows nothing');
});
