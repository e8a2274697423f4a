// Issue #21, crashes and honest questions scored wrong: attacking predictions inside a real eval.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { agro, assertOneLine, DB_ROOT, DEV, MUSIC, tempDir } from './support.ts';

const tmp = tempDir();
after(() => tmp.cleanup());

interface Report {
  summary: { n: number; correct: number };
  questions: Array<{ index: number; outcome: string; message?: string }>;
}

function evalJson(items: unknown[], preds: string[], extra: string[] = []): Report {
  const data = join(tmp.dir, `data-${items.length}.json`);
  const pred = join(tmp.dir, `pred-${items.length}.json`);
  // Fresh question ids: the same dev question may appear twice, once with an honest and once with an attacking prediction.
  writeFileSync(data, JSON.stringify(items.map((it, i) => ({ ...(it as object), question_id: i }))));
  writeFileSync(pred, JSON.stringify(preds));
  const out = join(tmp.dir, `report-${items.length}.json`);
  // The report file, not --json on stdout: the report repeats each prediction (one is 10 MB).
  const r = agro(['eval', '--data', data, '--pred', pred, '--db-root', DB_ROOT, '--out', out, ...extra], { timeoutMs: 300_000 });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(readFileSync(out, 'utf8')) as Report;
}

test('a 120 MB blob prediction is scored, not a crash (hex of a blob was ~60 bytes of heap per byte)', () => {
  const [q] = JSON.parse(readFileSync(DEV, 'utf8')) as unknown[];
  const rep = evalJson([q, q], ['SELECT randomblob(120000000)', (q as { SQL: string }).SQL]);
  assert.equal(rep.questions[0].outcome, 'mismatch');
  assert.match(rep.questions[0].message ?? '', /cut at the row\/byte cap/);
  assert.equal(rep.questions[1].outcome, 'match');
});

test('eight 500 MB zeroblobs fail inside the executor\'s memory limit: one line, exit 6', () => {
  const cols = Array.from({ length: 8 }, () => 'zeroblob(500000000)').join(', ');
  assertOneLine(agro(['sql', '--db', MUSIC, `SELECT ${cols}`]), 6, /more memory than the SQL executor may use/);
});

test('honest questions mixed with attacks all score right; each attack scores as its own failure', () => {
  const dev = JSON.parse(readFileSync(DEV, 'utf8')) as Array<{ SQL: string }>;
  const attacks = [
    'SELECT randomblob(25000000)',
    `SELECT 1 /* ${'x'.repeat(10_000_000)} */`,
    'WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r',
    `SELECT ${Array.from({ length: 8 }, () => 'zeroblob(500000000)').join(', ')}`,
    "ATTACH DATABASE '/tmp/agro-x.sqlite' AS x",
  ];
  const items = [...dev, ...attacks.map((_, i) => dev[i])];
  const preds = [...dev.map((q) => q.SQL), ...attacks];
  const rep = evalJson(items, preds, ['--timeout', '4000']);
  const honest = rep.questions.slice(0, dev.length);
  assert.deepEqual(honest.filter((q) => q.outcome !== 'match').map((q) => `${q.index}: ${q.outcome} ${q.message ?? ''}`), []);
  const outcomes = rep.questions.slice(dev.length).map((q) => q.outcome);
  // The 10 MB comment is refused before it is parsed (the sandbox's 100,000-character cap): an error, not a wrong result.
  assert.deepEqual(outcomes, ['mismatch', 'pred_error', 'timeout', 'pred_error', 'pred_error']);
  assert.match(rep.questions[dev.length + 1].message ?? '', /characters/);
});
