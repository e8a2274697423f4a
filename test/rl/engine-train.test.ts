import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { initBackend } from '../../src/model/backend.ts';
import { LlamaModel } from '../../src/model/llama.ts';
import { resolveModelConfig } from '../../src/model/config.ts';
import { Tokenizer } from '../../src/model/tokenizer.ts';
import { saveCheckpoint } from '../../src/model/checkpoint.ts';
import type { Sample, SampleOptions } from '../../src/model/generate.ts';
import type { RolloutEngine } from '../../src/model/engine.ts';
import { createEngine } from '../../src/model/engines.ts';
import { runGrpo } from '../../src/rl/trainer.ts';
import type { StepRecord } from '../../src/rl/phases.ts';
import { ShortAnswerEnv } from '../support/short-answer-env.ts';
import { AGENT_SPECIAL_TOKENS } from '../../src/agent/protocol.ts';

const BIN = fileURLToPath(new URL('../../bin/agro.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'agro-engine-train-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const TOK = Tokenizer.train(
  ['SELECT name FROM singer WHERE age > 30', 'How many singers are there? <think>count</think><sql>SELECT COUNT(*) FROM singer</sql>', 'abc def ghi'],
  { vocabSize: 320, specialTokens: AGENT_SPECIAL_TOKENS },
);

before(async () => {
  await initBackend();
});

/** A real engine that also records what the trainer asks of it. */
class Recording implements RolloutEngine {
  readonly name: string;
  events: string[] = [];
  constructor(private readonly inner: RolloutEngine) {
    this.name = inner.name;
  }
  sampleGroups(prompts: number[][], g: number, o: SampleOptions): Promise<Sample[][]> {
    this.events.push('sample');
    return this.inner.sampleGroups(prompts, g, o);
  }
  sync(model: LlamaModel): Promise<void> {
    this.events.push('sync');
    return this.inner.sync(model);
  }
  dispose(): Promise<void> {
    return this.inner.dispose();
  }
}

test('GRPO with llama.cpp rollouts: synced after every update, and the reward of the learnable task rises', { timeout: 120_000 }, async () => {
  const model = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: TOK.vocabSize, maxPositions: 512 }), { seed: 7 });
  const engine = new Recording(await createEngine('llama.cpp', model, { tokenizer: TOK }));
  const records: StepRecord[] = [];
  const steps = 30;
  try {
    await runGrpo({
      outDir: join(dir, 'short'),
      env: new ShortAnswerEnv(),
      tasks: [{ id: 'a' }, { id: 'b' }],
      model,
      tokenizer: TOK,
      engine,
      config: { algo: 'grpo', algoOverrides: { kl: { coef: 0 }, rewards: [{ name: 'overlong', weight: 1, params: { maxLen: 9, cache: 8 } }] }, steps, promptsPerStep: 2, groupSize: 8, lr: 1e-2, maxTurnTokens: 9, maxResponseTokens: 9, checkpointEvery: 0, seed: 1 },
      onStep: (r) => records.push(r),
    });
  } finally {
    await engine.dispose();
    model.dispose();
  }
  // One sync at the start, then rollout -> update -> sync every step (one-turn episodes: one sample call each).
  assert.deepEqual(engine.events, ['sync', ...Array.from({ length: steps }, () => ['sample', 'sync']).flat()]);
  for (const r of records) assert.ok(typeof r.time_sync_s === 'number' && r.time_sync_s > 0 && !r.skipped, `step ${r.step}: time_sync_s ${r.time_sync_s}, skipped ${r.skipped}`);
  // The samples come from the engine: if it kept the initial weights the reward could not move.
  const first = records.slice(0, 5).reduce((a, r) => a + r.reward, 0) / 5;
  const last = records.slice(-5).reduce((a, r) => a + r.reward, 0) / 5;
  assert.ok(last > first + 0.2, `reward went from ${first.toFixed(3)} to ${last.toFixed(3)}`);
});

test('agro train --engine llama.cpp runs end to end; a bad engine name is one usage line', { timeout: 300_000 }, () => {
  const ck = join(dir, 'init');
  const model = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: TOK.vocabSize, maxPositions: 2048 }), { seed: 1 });
  saveCheckpoint(ck, { model, tokenizer: TOK });
  model.dispose();
  const out = join(dir, 'cli-run');
  const agro = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });
  const r = agro('train', '--data', 'data/dev.json', '--init', ck, '--out', out, '--algo', 'dr_grpo', '--steps', '2', '--group-size', '2', '--prompts', '1', '--schema-chars', '300', '--engine', 'llama.cpp', '--json');
  assert.equal(r.status, 0, r.stderr);
  assert.equal((JSON.parse(r.stdout) as { steps: number }).steps, 2);
  const lines = readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as StepRecord);
  assert.equal(lines.length, 2);
  for (const l of lines) assert.ok(typeof l.time_sync_s === 'number' && l.time_sync_s > 0 && l.response_tokens > 0);
  const bad = agro('train', '--data', 'data/dev.json', '--init', ck, '--out', join(dir, 'bad'), '--engine', 'vllm');
  assert.equal(bad.status, 2);
  assert.equal(bad.stderr.trim(), 'agro: --engine must be one of tfjs, llama.cpp, got "vllm"');
});
