import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { initBackend } from '../../src/model/backend.ts';
import { LlamaModel } from '../../src/model/llama.ts';
import { resolveModelConfig } from '../../src/model/config.ts';
import { Tokenizer } from '../../src/model/tokenizer.ts';
import { saveCheckpoint } from '../../src/model/checkpoint.ts';
import { AGENT_SPECIAL_TOKENS } from '../../src/agent/protocol.ts';

const BIN = fileURLToPath(new URL('../../bin/agro.js', import.meta.url));
const SCHOOL = fileURLToPath(new URL('../../data/databases/school/school.sqlite', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'agro-train-cli-'));
const ck = join(dir, 'init');

function agro(...args: string[]) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });
}

before(async () => {
  await initBackend();
  const tok = Tokenizer.train(['SELECT name FROM students', 'Which course? <search>x</search>', 'school music'], { vocabSize: 400, specialTokens: AGENT_SPECIAL_TOKENS });
  const model = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: tok.vocabSize, maxPositions: 2048 }), { seed: 1 });
  saveCheckpoint(ck, { model, tokenizer: tok });
  model.dispose();
});

test('agro train --task sql runs GRPO steps from a checkpoint and writes metrics and a checkpoint', { timeout: 300_000 }, () => {
  const out = join(dir, 'sql-run');
  const r = agro('train', '--data', 'data/dev.json', '--init', ck, '--out', out, '--algo', 'dr_grpo', '--steps', '2', '--group-size', '2', '--prompts', '1', '--schema-chars', '300', '--json');
  assert.equal(r.status, 0, r.stderr);
  const summary = JSON.parse(r.stdout) as { steps: number; checkpoint: string };
  assert.equal(summary.steps, 2);
  assert.ok(existsSync(join(summary.checkpoint, 'optimizer.safetensors')));
  const lines = readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n');
  assert.equal(lines.length, 2);
  // A second run into the same folder without --resume is refused, naming the way out.
  const again = agro('train', '--data', 'data/dev.json', '--init', ck, '--out', out, '--steps', '2');
  assert.equal(again.status, 2);
  assert.match(again.stderr, /^agro: .*already has checkpoints.*--resume/);
});

test('agro train --task search trains the search agent with E-GRPO on synth-search output', { timeout: 300_000 }, () => {
  const data = join(dir, 'search-data');
  const s = agro('synth-search', '--db', SCHOOL, '--out', data, '--n', '30', '--seed', '1', '--json');
  assert.equal(s.status, 0, s.stderr);
  const out = join(dir, 'search-run');
  const r = agro('train', '--task', 'search', '--data', data, '--init', ck, '--out', out, '--algo', 'egrpo', '--steps', '2', '--group-size', '2', '--prompts', '2', '--json');
  assert.equal(r.status, 0, r.stderr);
  const summary = JSON.parse(r.stdout) as { steps: number; eval: { n: number; accuracy: number } | null };
  assert.equal(summary.steps, 2);
  assert.ok(summary.eval && summary.eval.n > 0, 'evaluated on the held-out split');
  const rec = JSON.parse(readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n')[0]) as { rewards: Record<string, number> };
  assert.ok('entity_match' in rec.rewards || 'exact_match' in rec.rewards, `reward components: ${Object.keys(rec.rewards)}`);
});

test('agro train --algo reinforce_pp_kl loads --init as the KL reference and logs the KL-in-reward hook', { timeout: 300_000 }, () => {
  const out = join(dir, 'kl-run');
  const r = agro('train', '--data', 'data/dev.json', '--init', ck, '--out', out, '--algo', 'reinforce_pp_kl', '--steps', '1', '--group-size', '2', '--prompts', '1', '--schema-chars', '300', '--json');
  assert.equal(r.status, 0, r.stderr);
  const rec = JSON.parse(readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim()) as { hooks?: Record<string, number> };
  assert.equal(rec.hooks?.kl_reward_beta, 0.001);
  assert.equal(rec.hooks?.kl_reward_kl, 0, 'the first step\'s policy is the reference');
});

test('agro train refuses bad input with one line', () => {
  const r = agro('train', '--data', 'nope.json', '--init', ck, '--out', join(dir, 'x'));
  assert.equal(r.status, 3);
  assert.equal(r.stderr.trim().split('\n').length, 1);
  const t = agro('train', '--task', 'chess', '--data', 'data/dev.json', '--init', ck, '--out', join(dir, 'y'));
  assert.equal(t.status, 2);
  assert.match(t.stderr, /--task must be sql or search/);
});
