import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveQuickstartConfig, rlPoolPlan, startOf, type QuickstartReport } from '../../src/pipeline/quickstart.ts';
import { skeletonKey } from '../../src/data/splits.ts';
import { TURN_TOKENS } from '../../src/prompt/contract.ts';
import { predictResolution, writtenResolution } from '../support/contract-roundtrip.ts';

const BIN = fileURLToPath(new URL('../../bin/agro.js', import.meta.url));
const lines = (p: string) => readFileSync(p, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, number>);

// The CI-sized quickstart through the real CLI: every stage runs and leaves sane, consistent outputs.
test('agro quickstart --small runs synth → cold start → GRPO → eval end to end', { timeout: 600_000 }, async () => {
  const out = join(mkdtempSync(join(tmpdir(), 'agro-qs-')), 'run');
  const r = spawnSync(process.execPath, [BIN, 'quickstart', '--small', '--out', out, '--json'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const report = JSON.parse(r.stdout) as QuickstartReport;
  const { synth, split, coldStart, sft, rl } = report;
  assert.ok(synth && split && coldStart && sft && rl, 'every stage reported');

  assert.ok(synth.rows >= 30, `synth produced ${synth.rows} rows`);
  assert.equal(synth.variants, 1);
  const dataset = readFileSync(join(out, 'synth', 'dataset.jsonl'), 'utf8').trim().split('\n');
  assert.equal(dataset.length, synth.rows);
  assert.equal(split.sft + split.rl + split.heldOut, synth.rows);
  // SFT trains on the paraphrases the factory wrote for its queries too (phrasings 2), never on held-out ones.
  assert.ok((split.sftQuestions ?? 0) > split.sft, `SFT questions ${split.sftQuestions} for ${split.sft} queries`);
  // No held-out SQL skeleton is trained on, by SFT or by RL, and RL's questions are new to SFT.
  const skeletons = (f: string) => new Set(readFileSync(join(out, f), 'utf8').trim().split('\n').map((l) => skeletonKey((JSON.parse(l) as { SQL: string }).SQL)));
  const [sftSk, rlSk, heldSk] = ['train.jsonl', 'rl.jsonl', 'held_out.jsonl'].map(skeletons);
  for (const k of heldSk) assert.ok(!sftSk.has(k) && !rlSk.has(k), `held-out skeleton ${k} was trained on`);
  for (const k of rlSk) assert.ok(!sftSk.has(k), `RL skeleton ${k} is also an SFT one`);
  assert.ok(report.rlFilter && report.rlFilter.candidates === split.rl);
  assert.equal(report.rlFilter.byCorrect.reduce((a, b) => a + b, 0), split.rl);
  assert.equal(report.rlFilter.byCorrect.length, startOf(report.config).rlPassSamples + 1);
  assert.ok(sft.passAt && rl.passAt && sft.passAt[1] <= sft.passAt[2] + 1e-12);

  assert.equal(coldStart.selected, Math.min(24, coldStart.candidates));
  // Coverage versus a random subset is measured in test/rl/coldstart.test.ts on a designed pool; here it must just be counted.
  assert.ok(coldStart.structures > 0 && coldStart.randomStructures > 0);

  const sftLog = lines(join(out, 'sft', 'metrics.jsonl'));
  assert.equal(sftLog.length, 30);
  assert.ok(sftLog.every((m) => Number.isFinite(m.loss)));
  assert.ok(sftLog[sftLog.length - 1].loss < sftLog[0].loss, 'SFT loss went down');
  assert.ok(existsSync(join(sft.checkpoint, 'model.safetensors')));

  const rlLog = lines(join(out, 'grpo', 'metrics.jsonl'));
  assert.equal(rlLog.length, 3);
  // The default pool: every RL question trains through the active-pool sampler, which starts from the filter's counts.
  const trainCfg = JSON.parse(readFileSync(join(out, 'grpo', 'train_config.json'), 'utf8')) as { algo: { sampler: { name: string } }; tasks: number };
  assert.equal(trainCfg.algo.sampler.name, 'active');
  assert.equal(trainCfg.tasks, split.rl);
  for (const m of rlLog) assert.equal((m.hooks as unknown as Record<string, number>).active_known, split.rl);
  // The RL learning rate decays by a cosine from rlLr to rlLr × rlMinLrRatio at the last step.
  const { rlMinLrRatio } = report.config;
  const { rlLr } = startOf(report.config);
  assert.ok(rlMinLrRatio < 1);
  assert.ok(Math.abs(rlLog[0].lr - (rlLr * rlMinLrRatio + (rlLr - rlLr * rlMinLrRatio) * 0.5 * (1 + Math.cos(Math.PI / 3)))) < 1e-12, `step 1 lr ${rlLog[0].lr}`);
  assert.ok(Math.abs(rlLog[2].lr - rlLr * rlMinLrRatio) < 1e-12, `last lr ${rlLog[2].lr}`);
  // From the base model every RL step mixes in the cold-start loss (the recipe's anchor).
  assert.equal(report.config.from, 'base');
  assert.ok(startOf(report.config).rlAnchor > 0);
  for (const m of rlLog) {
    for (const k of ['reward', 'loss', 'entropy', 'response_tokens', 'tool_calls', 'time_rollout_s', 'zero_signal', 'anchor_loss']) assert.ok(Number.isFinite(m[k]), `${k} = ${m[k]}`);
    assert.ok(m.reward >= 0 && m.reward <= 1.1);
  }
  for (const ev of [sft.eval, rl.eval]) {
    assert.equal(ev.n, split.heldOut);
    assert.ok(ev.accuracy >= 0 && ev.accuracy <= 1);
  }
  // The trainer's held-out accuracy is the evaluator's: score the policy's predictions with `agro eval --suite`.
  const preds = JSON.parse(readFileSync(join(out, 'grpo', 'predictions.json'), 'utf8')) as string[];
  assert.equal(preds.length, split.heldOut);
  const ev = spawnSync(
    process.execPath,
    [BIN, 'eval', '--data', join(out, 'held_out.jsonl'), '--pred', join(out, 'grpo', 'predictions.json'), '--db-root', 'data/databases', '--suite', join(out, 'synth', 'variants'), '--timeout', '5000', '--json'],
    { encoding: 'utf8' },
  );
  assert.equal(ev.status, 0, ev.stderr);
  const evReport = JSON.parse(ev.stdout) as { summary: { count: number; correct: number } };
  assert.equal(evReport.summary.count, split.heldOut);
  assert.equal(evReport.summary.correct, Math.round(rl.eval.accuracy * rl.eval.n));

  // A rerun finds every stage done and only reprints the summary.
  const again = spawnSync(process.execPath, [BIN, 'quickstart', '--small', '--out', out], { encoding: 'utf8' });
  assert.equal(again.status, 0, again.stderr);
  assert.match(again.stdout, /held-out execution accuracy: SFT .* → grpo /);

  // The last lines show how to use the agent; the ask command they print runs as printed, with no prompt
  // flags: the checkpoint carries the prompt it was trained with.
  const ask = /ask your agent: +agro ask --policy (\S+) --db (\S+) '(.*)'$/m.exec(again.stdout);
  assert.ok(ask, again.stdout);
  assert.equal(resolve(ask[1]), join(out, 'grpo', 'checkpoints', 'step-3'));
  const contract = JSON.parse(readFileSync(join(ask[1], 'prompt_contract.json'), 'utf8')) as { schemaChars: number; decoding: { maxTurnTokens: number } };
  assert.equal(contract.schemaChars, report.config.schemaChars);
  // Both checkpoints carry the whole contract, and predict resolves the prompt and tokens per turn they trained with.
  for (const ck of [sft.checkpoint, rl.checkpoint]) {
    const written = writtenResolution(ck);
    assert.ok(written?.hasDecoding, ck);
    assert.equal(written.maxTurnTokens, TURN_TOKENS);
    assert.deepEqual(await predictResolution(ck), { prompt: written.prompt, maxTurnTokens: written.maxTurnTokens });
  }
  const asked = spawnSync(process.execPath, [BIN, 'ask', '--policy', ask[1], '--db', ask[2], '--json', ask[3].replace(/'\\''/g, "'")], { encoding: 'utf8' });
  // 0 when the agent's answer runs, 6 (SQL error) when it does not: the command ran as printed either way.
  assert.ok(asked.status === 0 || asked.status === 6, `exit ${asked.status}: ${asked.stderr}`);
  assert.doesNotMatch(asked.stderr, /contract differs|warning/i, 'no warning: nothing contradicts the contract');
  const episode = JSON.parse(asked.stdout) as { turns: { completionTokens: number }[]; endReason: string };
  assert.ok(episode.turns.length >= 1 && episode.endReason.length > 0);
  assert.ok(episode.turns.every((t) => t.completionTokens <= contract.decoding.maxTurnTokens + 1), 'the contract\'s tokens per turn');

  // The predict command it prints scores what the quickstart reported, question by question.
  const pred = /run it on a file: agro predict (.*)$/m.exec(again.stdout);
  assert.ok(pred, again.stdout);
  const predOut = join(out, 'predict-check');
  const args = pred[1].split(' ').map((a, i, all) => (all[i - 1] === '--out' ? predOut : a));
  const p = spawnSync(process.execPath, [BIN, 'predict', ...args, '--json'], { encoding: 'utf8' });
  assert.equal(p.status, 0, p.stderr);
  const predicted = JSON.parse(p.stdout) as { summary: { count: number; correct: number } };
  assert.equal(predicted.summary.count, rl.eval.n);
  assert.equal(predicted.summary.correct, Math.round(rl.eval.accuracy * rl.eval.n));
  // Question by question, the policy's own (greedy) answers the quickstart scored.
  const printed = Object.values(JSON.parse(readFileSync(join(predOut, 'predict_dev.json'), 'utf8')) as Record<string, string>).map((v) => v.split('\t')[0]);
  assert.deepEqual(printed, JSON.parse(readFileSync(join(out, 'grpo', 'predictions.json'), 'utf8')));
  // The answer path's command reproduces the answer path's figure the quickstart reported.
  const ans = /the answer path: +agro predict (.*)$/m.exec(again.stdout);
  assert.ok(ans && rl.eval.chosen !== undefined, again.stdout);
  const ansOut = join(out, 'predict-answer-check');
  const pa = spawnSync(process.execPath, [BIN, 'predict', ...ans[1].split(' ').map((a, i, all) => (all[i - 1] === '--out' ? ansOut : a)), '--json'], { encoding: 'utf8' });
  assert.equal(pa.status, 0, pa.stderr);
  assert.equal((JSON.parse(pa.stdout) as { summary: { correct: number } }).summary.correct, Math.round(rl.eval.chosen * rl.eval.n));
  // A flag that contradicts the contract wins, and says so on one line.
  const other = spawnSync(process.execPath, [BIN, 'ask', '--policy', ask[1], '--db', ask[2], '--schema-chars', String(contract.schemaChars + 100), '--max-turn-tokens', '8', '--json', 'How many genres are there?'], { encoding: 'utf8' });
  assert.equal(other.status, 0, other.stderr);
  assert.match(other.stderr, /^agro: warning: .*--schema-chars \d+ \(trained with \d+\)/m);
});

test('rlPoolPlan: which RL questions train under each pool, from the SFT policy\'s correct answers out of 4', () => {
  const qs = ['a', 'b', 'c', 'd', 'e'].map((id) => ({ id }));
  const correct = [0, 2, 4, 1, 0];
  const cfg = { passSamples: 4, promptsPerStep: 2 };
  const ids = (ts: Array<{ id: string }>) => ts.map((t) => t.id).join('');
  const active = rlPoolPlan('active', qs, correct, cfg, 'grpo');
  assert.equal(ids(active.tasks), 'abcde');
  assert.equal(ids(active.kept), 'bd');
  assert.deepEqual([...active.passRates!].map(([id, r]) => `${id}${r.correct}/${r.samples}`), ['a0/4', 'b2/4', 'c4/4', 'd1/4', 'e0/4']);
  // An algorithm with a sampler of its own keeps it, on the filtered questions.
  const mmr1 = rlPoolPlan('active', qs, correct, cfg, 'mmr1');
  assert.equal(mmr1.passRates, undefined);
  assert.equal(ids(mmr1.tasks), 'bd');
  assert.equal(ids(rlPoolPlan('filtered', qs, correct, cfg, 'grpo').tasks), 'bd');
  // Fewer in-between questions than one step's prompts: every candidate.
  assert.equal(ids(rlPoolPlan('filtered', qs, correct, { passSamples: 4, promptsPerStep: 3 }, 'grpo').tasks), 'abcde');
  assert.equal(ids(rlPoolPlan('all', qs, correct, cfg, 'grpo').tasks), 'abcde');
});

test('startOf: the budget follows the start (base or scratch), and each config field overrides its recipe', () => {
  const base = startOf(resolveQuickstartConfig({}));
  const scratch = startOf(resolveQuickstartConfig({ from: 'scratch', passSamples: 3 }));
  // From a checkpoint the RL pool is sampled on fewer candidates than from scratch (all of them), with the anchor on.
  assert.ok(base.rlCandidates < scratch.rlCandidates && scratch.rlCandidates === Infinity);
  assert.ok(base.rlAnchor > 0 && scratch.rlAnchor === 0);
  assert.equal(scratch.rlPassSamples, 3, 'from scratch the pool is sampled passSamples times');
  const given = startOf(resolveQuickstartConfig({ rlSteps: 7, rlCandidates: 11, rlPassSamples: 5, rlAnchor: 0 }));
  assert.deepEqual([given.rlSteps, given.rlCandidates, given.rlPassSamples, given.rlAnchor], [7, 11, 5, 0]);
});
