// Every command that saves a checkpoint writes its whole prompt contract (environment and tokens per turn), and
// `agro predict` resolves the same prompt and decoding from it. (pretrain and quickstart: their own tests.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { listCheckpoints } from '../../src/train/run-state.ts';
import { TURN_TOKENS } from '../../src/prompt/contract.ts';
import { predictResolution, writtenResolution } from '../support/contract-roundtrip.ts';

const BIN = fileURLToPath(new URL('../../bin/agro.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'agro-contract-cli-'));
const agro = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });

// BIRD-style rows on the bundled school database: rendered with the agent's prompt, so the prompt settings matter.
const rows = join(dir, 'rows.jsonl');
writeFileSync(rows, [
  { db_id: 'school', question: 'How many students are there?', SQL: 'SELECT count(*) FROM students' },
  { db_id: 'school', question: 'List the student names.', SQL: 'SELECT name FROM students' },
  { db_id: 'school', question: 'How many courses are there?', SQL: 'SELECT count(*) FROM courses' },
  { db_id: 'school', question: 'List the course titles.', SQL: 'SELECT title FROM courses' },
].map((r) => JSON.stringify(r)).join('\n') + '\n');

test('agro sft and then agro train: each checkpoint carries the whole contract and predict resolves the same prompt and tokens per turn', { timeout: 300_000 }, async () => {
  const sft = join(dir, 'sft');
  const s = agro('sft', '--data', rows, '--out', sft, '--preset', 'tiny', '--vocab-size', '400', '--steps', '1', '--batch-size', '4', '--schema-chars', '300', '--max-turns', '3', '--backend', 'wasm', '--json');
  assert.equal(s.status, 0, s.stderr);
  const sftCk = (JSON.parse(s.stdout) as { checkpoint: string }).checkpoint;
  const written = writtenResolution(sftCk);
  assert.ok(written?.hasDecoding, 'the SFT checkpoint\'s contract has its tokens per turn');
  assert.equal(written.prompt.schemaChars, 300);
  assert.equal(written.prompt.maxTurns, 3);
  assert.equal(written.maxTurnTokens, TURN_TOKENS, 'SFT trains the turns the RL trainer samples by default');
  const { hasDecoding: _, ...sftWritten } = written;
  assert.deepEqual(await predictResolution(sftCk), sftWritten);

  // RL at another turn length: its checkpoints say so, and predict samples at it.
  const cfg = join(dir, 'train.json');
  writeFileSync(cfg, JSON.stringify({ maxTurnTokens: 48, maxResponseTokens: 160 }));
  const train = join(dir, 'train');
  const t = agro('train', '--data', rows, '--init', sftCk, '--out', train, '--config', cfg, '--algo', 'dr_grpo', '--steps', '1', '--group-size', '2', '--prompts', '1', '--backend', 'wasm', '--json');
  assert.equal(t.status, 0, t.stderr);
  const rlCk = listCheckpoints(train).at(-1)!.dir;
  const rlWritten = writtenResolution(rlCk);
  assert.ok(rlWritten?.hasDecoding, 'the RL checkpoint\'s contract has its tokens per turn');
  assert.equal(rlWritten.maxTurnTokens, 48);
  assert.deepEqual(rlWritten.prompt, sftWritten.prompt, 'RL keeps the prompt of the policy it started from');
  assert.deepEqual(await predictResolution(rlCk), { prompt: sftWritten.prompt, maxTurnTokens: 48 });
});
