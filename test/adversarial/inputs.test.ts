// Issue #21, bad input files: empty databases, a directory as data, a huge checkpoint config, a bad
// algorithm named to quickstart. Each fails at once with its one line.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { agro, assertOneLine, DB_ROOT, DEV, tempDir } from './support.ts';
import { emptyDatabases } from './support.ts';

const tmp = tempDir();
after(() => tmp.cleanup());
const dbs = emptyDatabases(tmp.dir);

test('a 0-byte or table-less database: synth and synth-search exit 4 naming the problem, writing nothing', () => {
  const out = join(tmp.dir, 'out');
  assertOneLine(agro(['synth', '--db', dbs.zeroBytes, '--out', out]), 4, /zero\.sqlite has no tables: nothing to synthesize from/);
  assertOneLine(agro(['synth', '--db', dbs.noTables, '--out', out]), 4, /notables\.sqlite has no tables/);
  assertOneLine(agro(['synth', '--db', dbs.noRows, '--out', out]), 4, /norows\.sqlite has 1 table but no rows/);
  assertOneLine(agro(['synth-search', '--db', dbs.zeroBytes, '--out', out]), 4, /zero\.sqlite has no table with rows/);
  assertOneLine(agro(['synth-search', '--db', dbs.noRows, '--out', out]), 4, /norows\.sqlite has no table with rows/);
  assert.equal(existsSync(join(out, 'dataset.jsonl')) || existsSync(join(out, 'questions.jsonl')), false);
});

test('sft --data <directory> is bad input (exit 4), not an internal error', () => {
  assertOneLine(agro(['sft', '--data', tmp.dir, '--out', join(tmp.dir, 'run')]), 4, /dataset path is a directory, not a file/);
});

test('a checkpoint config.json with huge dimensions is refused before anything is allocated', () => {
  const ck = join(tmp.dir, 'huge-ck');
  mkdirSync(ck);
  // 131072 x 65536 = 2^33 embedding values: "Invalid typed array length: 8589934592" before.
  writeFileSync(join(ck, 'config.json'), JSON.stringify({ model_type: 'llama', vocab_size: 131072, hidden_size: 65536, intermediate_size: 256, num_hidden_layers: 1, num_attention_heads: 8 }));
  for (const f of ['model.safetensors', 'tokenizer.json']) writeFileSync(join(ck, f), '');
  const r = agro(['sft', '--init', ck, '--data', DEV, '--db-root', DB_ROOT, '--out', join(tmp.dir, 'run2')]);
  assertOneLine(r, 4, /model config: the embedding \(vocabSize x hiddenSize\) would hold 8\.59e\+9 values/);
});

test('quickstart --algo sgd is refused before synthesis starts, leaving no report', () => {
  const out = join(tmp.dir, 'qs');
  const r = agro(['quickstart', '--algo', 'sgd', '--out', out]);
  assertOneLine(r, 2, /unknown algorithm "sgd"/);
  assert.equal(existsSync(join(out, 'report.json')), false);
  assert.equal(existsSync(join(out, 'synth')), false);
});
