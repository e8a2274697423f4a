// The Evaluations page's side by side: the reports on the same question file, each once, named by policy.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dashboardRoutes } from '../../src/server/dashboard.ts';
import type { EvalPeer } from '../../src/server/dashboard/api-types.ts';
import { scratchAndPool } from '../support/with.ts';

const { dir: tmp, pool } = scratchAndPool('agro-dash-peers-');

const report = (data: string, pred: string, correct: number) =>
  JSON.stringify({
    version: 1,
    data,
    pred,
    dbRoot: 'data/databases',
    mode: 'bird',
    timeoutMs: 1000,
    summary: { count: 4, correct, accuracy: (100 * correct) / 4, byDifficulty: [{ bucket: 'simple', count: 4, correct, accuracy: (100 * correct) / 4 }, { bucket: 'challenging', count: 0, correct: 0, accuracy: 0 }], outcomes: {} },
    questions: [],
  });

test('api/eval/peers: reports on the same question file, each file once, named by the predict run policy', async () => {
  const root = join(tmp, 'runs');
  for (const d of ['sft', 'grpo', 'other']) mkdirSync(join(root, d), { recursive: true });
  writeFileSync(join(root, 'sft', 'report.json'), report('held_out.jsonl', 'runs/sft/predict_dev.json', 1));
  writeFileSync(join(root, 'sft', 'run.json'), JSON.stringify({ version: 1, policy: 'step-3000' }));
  writeFileSync(join(root, 'grpo', 'report.json'), report('held_out.jsonl', 'runs/grpo/predict_dev.json', 3));
  writeFileSync(join(root, 'other', 'report.json'), report('dev.json', 'x.json', 2));
  // The same file reached twice: listed once.
  symlinkSync(join(root, 'grpo', 'report.json'), join(root, 'grpo-latest.json'));
  const app = dashboardRoutes({ dir: root, executor: pool });
  try {
    const listed = ((await (await app.request('/api/overview')).json()) as { evals: { id: string }[] }).evals.map((e) => e.id);
    assert.ok(listed.includes('grpo-latest.json') && listed.includes('grpo/report.json'), 'the folder lists the report under both paths');
    const res = await app.request('/api/eval/peers?id=sft/report.json');
    const { reports } = (await res.json()) as { reports: EvalPeer[] };
    assert.deepEqual(reports.map((r) => r.policy).sort(), ['predict_dev.json', 'step-3000']);
    assert.deepEqual(reports.map((r) => r.summary.correct).sort(), [1, 3]);
    const alone = (await (await app.request('/api/eval/peers?id=other/report.json')).json()) as { reports: EvalPeer[] };
    assert.equal(alone.reports.length, 1);
  } finally {
    await app.close();
  }
});
