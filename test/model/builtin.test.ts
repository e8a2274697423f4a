/**
 * The base model agro ships (models/base): what its card promises is what is in the folder — the base
 * preset in the Hugging Face layout with F16 weights, its tokenizer and prompt contract, under 50 MB — and
 * it is what a name and an empty --policy mean: `agro ask` with no policy answers with it, `agro export gguf
 * base` writes a GGUF llama.cpp reads.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readGgufFileInfo } from 'node-llama-cpp';
import { builtinModelDir, resolveModelPath } from '../../src/model/builtin.ts';
import { loadCheckpoint } from '../../src/model/checkpoint.ts';
import { initBackend } from '../../src/model/backend.ts';
import { PRESETS } from '../../src/model/config.ts';
import { readPromptContract } from '../../src/prompt/contract.ts';

const BIN = fileURLToPath(new URL('../../bin/agro.js', import.meta.url));
const DIR = builtinModelDir('base');
const agro = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 120_000 });

test('models/base: the base preset in the Hugging Face layout, F16, with its tokenizer, prompt contract and card, under 50 MB', async () => {
  assert.equal(resolveModelPath('base'), DIR);
  assert.equal(resolveModelPath('./base'), './base', 'a path is a path');
  const files = readdirSync(DIR).sort();
  assert.deepEqual(files, ['README.md', 'config.json', 'generation_config.json', 'model.safetensors', 'prompt_contract.json', 'tokenizer.json', 'tokenizer_config.json']);
  const bytes = files.reduce((a, f) => a + statSync(join(DIR, f)).size, 0);
  assert.ok(bytes < 50e6, `${bytes} bytes`);
  const st = readFileSync(join(DIR, 'model.safetensors'));
  const header = JSON.parse(st.subarray(8, 8 + Number(st.readBigUInt64LE(0))).toString('utf8')) as Record<string, { dtype?: string }>;
  assert.ok(Object.entries(header).every(([k, v]) => k === '__metadata__' || v.dtype === 'F16'), 'every tensor is F16');
  await initBackend('cpu');
  const ck = loadCheckpoint(DIR);
  try {
    const { vocabSize, ...shape } = ck.model.config;
    assert.deepEqual({ ...shape, headDim: undefined }, { ...PRESETS.base, headDim: undefined });
    assert.ok(vocabSize >= ck.tokenizer.vocabSize);
    assert.equal(ck.trainerState, undefined, 'no trainer state is shipped');
  } finally {
    ck.model.dispose();
  }
  const contract = readPromptContract(DIR);
  assert.equal(contract?.schemaFormat, 'grounded');
  // The card says how it was made and how to make it again.
  const card = readFileSync(join(DIR, 'README.md'), 'utf8');
  assert.match(card, /agro pretrain --dbs \.\.\/shared\/data\/spider-train\/database/);
  assert.match(card, /licen[cs]e/i);
});

test('agro ask with no --policy answers with the base model; agro export gguf base writes a llama GGUF', async () => {
  const r = agro('ask', '--db', 'data/databases/music_store/music_store.sqlite', '--json', 'How many artists are there?');
  // 0 when its answer runs, 6 (SQL error) when the small model's SQL does not: either way the base model answered.
  assert.ok(r.status === 0 || r.status === 6, `exit ${r.status}: ${r.stderr}`);
  const out = JSON.parse(r.stdout) as { policy: string; turns: unknown[] };
  assert.equal(out.policy, 'base');
  assert.ok(out.turns.length >= 1, r.stdout);
  const gguf = join(mkdtempSync(join(tmpdir(), 'agro-base-')), 'base.gguf');
  const e = agro('export', 'gguf', 'base', gguf);
  assert.equal(e.status, 0, e.stderr);
  assert.ok(existsSync(gguf));
  const info = await readGgufFileInfo(gguf);
  const md = info.metadata as unknown as { general: { architecture: string }; llama: { block_count: number; embedding_length: number } };
  assert.equal(md.general.architecture, 'llama');
  assert.deepEqual([md.llama.block_count, md.llama.embedding_length], [PRESETS.base.numLayers, PRESETS.base.hiddenSize]);
});
