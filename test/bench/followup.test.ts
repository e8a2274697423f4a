// The follow-up bench: the measure weighs the stand-alone EX to the follow-ups' shapes, and the bench runs end to
// end on a tiny setting (a small synth of one bundled database, a few questions each way, the base model).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { followUpMeasure, pairedSets } from '../../bench/followup.ts';
import type { DatasetRow } from '../../src/data/dataset-row.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const row = (SQL: string, followUp?: 'limit' | 'order'): DatasetRow => ({
  question_id: 0,
  db_id: 'd',
  question: 'q',
  evidence: '',
  SQL,
  difficulty: 'simple',
  source: 'agro-synth',
  style: 'terse',
  provenance: { stages: [], checks: [], ...(followUp ? { followUp } : {}) },
  ...(followUp ? { previous: [{ question: 'p', sql: 'SELECT 1' }] } : {}),
});

test('the measure: stand-alone EX weighted to the follow-ups shapes, and their ratio', () => {
  const plain = 'SELECT a FROM t WHERE b = 1';
  const top = 'SELECT a FROM t ORDER BY b DESC LIMIT 3';
  const stand = [
    { row: row(plain), correct: true },
    { row: row(plain), correct: true },
    { row: row(top), correct: false },
    { row: row(top), correct: true },
  ];
  // Three ranked follow-ups and one plain one: the stand-alone figure is 3/4 × 1/2 + 1/4 × 1 = 0.625, not the plain 0.75.
  const follow = [
    { row: row(top, 'limit'), correct: true },
    { row: row(top, 'limit'), correct: false },
    { row: row(top, 'limit'), correct: false },
    { row: row(plain, 'order'), correct: true },
  ];
  const m = followUpMeasure(follow, stand);
  assert.equal(m.standAlone.ex, 0.75);
  assert.equal(m.standAlone.exAtFollowUpShapes, 0.625);
  assert.equal(m.followUps.ex, 0.5);
  assert.equal(m.ratio, 0.5 / 0.625);
  assert.deepEqual(m.byEdit, { limit: { n: 3, ex: 1 / 3 }, order: { n: 1, ex: 1 } });
  // A follow-up of a shape no stand-alone question has is left out of both sides.
  const odd = followUpMeasure([...follow, { row: row('SELECT COUNT(*) FROM t GROUP BY a', 'order'), correct: false }], stand);
  assert.equal(odd.followUps.n, 4);
  const sets = pairedSets([...follow, ...stand].map((s) => s.row).concat(row('SELECT COUNT(*) FROM t GROUP BY a', 'order')), 0, 0);
  assert.equal(sets.followUps.length, 4);
  assert.equal(sets.standAlone.length, 4);
});

test('npm run bench -- followup runs on a tiny setting and writes its figures', { timeout: 240_000 }, async () => {
  const out = join(mkdtempSync(join(tmpdir(), 'agro-bench-followup-')), 'run');
  const args = ['--import', 'tsx', join(ROOT, 'bench/index.ts'), 'followup', '--dbs', 'school', '--pairs', '30', '--share', '0.5', '--held-out', '1', '--max', '2', '--out', out];
  const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((res) => {
    const c = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    c.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    c.on('close', (code) => res({ code, stdout, stderr }));
  });
  assert.equal(r.code, 0, r.stderr.slice(-800));
  assert.match(r.stdout, /^school +\d+ /m);
  assert.match(r.stdout, /goal: follow-up EX ≥ 0\.80 × stand-alone EX/);
  const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as { policy: string; databases: Record<string, { followUps: { n: number }; standAlone: { n: number } }> };
  assert.equal(summary.policy, 'base');
  assert.ok(summary.databases.school.followUps.n >= 1 && summary.databases.school.followUps.n <= 2);
  assert.ok(summary.databases.school.standAlone.n >= 1 && summary.databases.school.standAlone.n <= 2);
  // Each follow-up question went to the policy with the turn it continues.
  const asked = readFileSync(join(out, 'school', 'follow-ups', 'questions.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as DatasetRow);
  assert.ok(asked.every((q) => q.previous?.length === 1));
});
