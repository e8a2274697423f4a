import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROMPT_CONTRACT_FILE, promptContract, promptContractFiles, readPromptContract, resolvePromptSettings, turnTokens } from '../../src/prompt/contract.ts';
import { SqlEnvironment, sqlEnvConfigSchema } from '../../src/agent/sql-env.ts';
import { saveCheckpoint } from '../../src/model/checkpoint.ts';
import { LlamaModel } from '../../src/model/llama.ts';
import { resolveModelConfig } from '../../src/model/config.ts';
import { Tokenizer } from '../../src/model/tokenizer.ts';
import { AGENT_SPECIAL_TOKENS } from '../../src/agent/protocol.ts';
import { initBackend } from '../../src/model/backend.ts';

const tmp = (): string => mkdtempSync(join(tmpdir(), 'agro-contract-'));
const noSql = { execute: () => Promise.reject(new Error('no SQL here')), close: async () => {} };

test('a checkpoint carries its prompt contract through the atomic save, and reading it back gives the same settings', async () => {
  await initBackend('cpu');
  const dir = join(tmp(), 'ck');
  const tokenizer = Tokenizer.train(['SELECT name FROM t'], { vocabSize: 300, specialTokens: [...AGENT_SPECIAL_TOKENS] });
  const model = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: tokenizer.vocabSize }), { seed: 1 });
  const config = sqlEnvConfigSchema.parse({ schemaChars: 640, maxTurns: 3, observationRows: 7 });
  saveCheckpoint(dir, { model, tokenizer, sideFiles: promptContractFiles(config, { maxTurnTokens: 77 }) });
  // Saved again (as a trainer does at each checkpoint): the swap keeps the side file.
  saveCheckpoint(dir, { model, tokenizer, sideFiles: promptContractFiles(config, { maxTurnTokens: 77 }) });
  model.dispose();
  const back = readPromptContract(dir);
  assert.deepEqual(back, promptContract(config, { maxTurnTokens: 77 }));
  // The environment built from it shows the same opening as the one it was trained with.
  const { settings } = resolvePromptSettings(back, {});
  const task = { id: 'q', dbId: 'music_store', dbPath: 'data/databases/music_store/music_store.sqlite', question: 'How many genres?', goldSql: 'SELECT 1' };
  assert.deepEqual(new SqlEnvironment(noSql, settings).openingFor(task), new SqlEnvironment(noSql, config).openingFor(task));
  assert.notDeepEqual(new SqlEnvironment(noSql, {}).openingFor(task), new SqlEnvironment(noSql, config).openingFor(task));
});

test('a checkpoint without a contract reads as null; a broken one is invalid input', () => {
  const dir = tmp();
  assert.equal(readPromptContract(dir), null);
  writeFileSync(join(dir, PROMPT_CONTRACT_FILE), '{"kind":"agro-prompt-contract","version":1,"schemaChars":12}');
  assert.throws(() => readPromptContract(dir), (e: Error & { kind?: string }) => e.kind === 'invalid_input' && /schemaChars/.test(e.message));
  writeFileSync(join(dir, PROMPT_CONTRACT_FILE), '{');
  assert.throws(() => readPromptContract(dir), /not valid JSON/);
});

test('flags win over the contract and each contradiction is named in one warning line', () => {
  const contract = promptContract(sqlEnvConfigSchema.parse({ schemaChars: 500, maxTurns: 3 }));
  const same = resolvePromptSettings(contract, { schemaChars: 500 });
  assert.equal(same.warning, null);
  assert.equal(same.settings.maxTurns, 3);
  const other = resolvePromptSettings(contract, { schemaChars: 900, maxTurns: 2 });
  assert.equal(other.settings.schemaChars, 900);
  assert.equal(other.settings.maxTurns, 2);
  assert.ok(other.warning && !other.warning.includes('\n'));
  assert.match(other.warning, /--schema-chars 900 \(trained with 500\)/);
  assert.match(other.warning, /--max-turns 2 \(trained with 3\)/);
  // Tokens per turn follow the same rule: the contract's unless asked, a contradiction named.
  const withTokens = promptContract(sqlEnvConfigSchema.parse({}), { maxTurnTokens: 96 });
  assert.deepEqual(turnTokens(withTokens, undefined), { maxTurnTokens: 96, warning: null });
  assert.deepEqual(turnTokens(withTokens, 96), { maxTurnTokens: 96, warning: null });
  assert.match(turnTokens(withTokens, 8).warning ?? '', /trained and evaluated with 96 new tokens per turn; using --max-turn-tokens 8/);
  assert.deepEqual(turnTokens(null, undefined), { maxTurnTokens: 256, warning: null });
  // No contract: the flags alone, nothing to contradict.
  assert.deepEqual(resolvePromptSettings(null, { schemaChars: 900 }), { settings: { schemaChars: 900 }, warning: null });
});

test('agro sft writes the contract it trained with; a run from --init inherits it; a contradicting flag warns and is recorded', () => {
  const dir = tmp();
  const data = join(dir, 'd.jsonl');
  const rows = Array.from({ length: 8 }, (_, i) => JSON.stringify({ db_id: 'music_store', question: `How many rows are in table ${i % 2 ? 'genres' : 'artists'}?`, SQL: `SELECT count(*) FROM ${i % 2 ? 'genres' : 'artists'}` }));
  writeFileSync(data, rows.join('\n') + '\n');
  const base = ['bin/agro.js', 'sft', '--data', data, '--preset', 'tiny', '--vocab-size', '400', '--backend', 'wasm', '--batch-size', '4', '--steps', '1', '--json'];
  const a = spawnSync(process.execPath, [...base, '--out', join(dir, 'a'), '--schema-chars', '700'], { encoding: 'utf8' });
  assert.equal(a.status, 0, a.stderr);
  const ckA = join(dir, 'a', 'checkpoints', 'step-1');
  assert.equal(readPromptContract(ckA)?.schemaChars, 700);
  const b = spawnSync(process.execPath, [...base, '--out', join(dir, 'b'), '--init', ckA], { encoding: 'utf8' });
  assert.equal(b.status, 0, b.stderr);
  assert.doesNotMatch(b.stderr, /warning/);
  assert.equal(readPromptContract(join(dir, 'b', 'checkpoints', 'step-1'))?.schemaChars, 700);
  const c = spawnSync(process.execPath, [...base, '--out', join(dir, 'c'), '--init', ckA, '--schema-chars', '900'], { encoding: 'utf8' });
  assert.equal(c.status, 0, c.stderr);
  assert.match(c.stderr, /^agro: warning: .*--schema-chars 900 \(trained with 700\)/m);
  assert.equal(readPromptContract(join(dir, 'c', 'checkpoints', 'step-1'))?.schemaChars, 900);
  const contract = JSON.parse(readFileSync(join(dir, 'c', 'checkpoints', 'step-1', PROMPT_CONTRACT_FILE), 'utf8')) as { kind: string };
  assert.equal(contract.kind, 'agro-prompt-contract');
});
