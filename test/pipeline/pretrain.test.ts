import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync, existsSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { tidySql } from '../../src/factory/gold.ts';
import { heldOutDatabases, listDatabases, type PretrainReport } from '../../src/pipeline/pretrain.ts';
import { readPromptContract, TURN_TOKENS } from '../../src/prompt/contract.ts';
import { predictResolution, writtenResolution } from '../support/contract-roundtrip.ts';
import { floatToHalf, halfToFloat, readSafetensors } from '../../src/model/safetensors.ts';

const BIN = 'bin/agro.js';

test('held-out databases are chosen by seed, the same on every call, never all of them', () => {
  const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
  assert.deepEqual([...heldOutDatabases(ids, 2, 0)], [...heldOutDatabases([...ids].reverse(), 2, 0)]);
  assert.equal(heldOutDatabases(ids, 2, 0).size, 2);
  assert.equal(heldOutDatabases(['a', 'b'], 5, 0).size, 1);
  assert.equal(heldOutDatabases(['a'], 5, 0).size, 0);
  assert.throws(() => listDatabases([join(tmpdir(), 'no-such-agro-dir')]), /database folder not found/);
  assert.deepEqual(listDatabases(['data/databases']).map((d) => d.dbId), ['music_store', 'retail', 'school']);
});

test('agro pretrain: the factory on every database, one tokenizer, SFT with the grounded prompt contract; a rerun resumes bit for bit; a second stage starts from its model', { timeout: 900_000 }, async () => {
  const out = join(mkdtempSync(join(tmpdir(), 'agro-pretrain-')), 'run');
  const args = [BIN, 'pretrain', '--dbs', 'data/databases', '--out', out, '--pairs', '30', '--held-out-dbs', '1', '--preset', 'tiny', '--vocab-size', '500', '--steps', '4', '--batch-size', '4', '--checkpoint-every', '2', '--eval-every', '2', '--backend', 'wasm', '--json'];
  const first = spawnSync(process.execPath, args, { encoding: 'utf8' });
  assert.equal(first.status, 0, first.stderr);
  const report = JSON.parse(first.stdout) as PretrainReport;
  assert.equal(report.databases.length, 3);
  assert.equal(report.databases.filter((d) => d.heldOut).length, 1);
  assert.ok(report.databases.every((d) => d.pairs >= 10), JSON.stringify(report.databases));
  assert.ok(report.episodes && report.episodes.train > 0 && report.episodes.heldOut > 0);
  // Episodes of a held-out database never reach training: its loss measures transfer.
  const episodes = readFileSync(join(out, 'episodes.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { dbId: string; heldOut: boolean });
  const heldDb = report.databases.find((d) => d.heldOut)!.dbId;
  assert.ok(episodes.filter((e) => e.dbId === heldDb).every((e) => e.heldOut));
  assert.equal(report.sft?.steps, 4);
  assert.ok(Number.isFinite(report.sft?.heldOutLoss));
  const final = join(out, 'sft', 'checkpoints', 'step-4');
  assert.equal(report.sft?.checkpoint, final);
  const contract = readPromptContract(final);
  assert.equal(contract?.schemaFormat, 'grounded');
  assert.equal(contract?.schemaChars, 600);
  const weights = readFileSync(join(final, 'model.safetensors'));
  // The model to ship: the final weights in F16 with the tokenizer and the contract, no trainer state.
  assert.equal(report.model, join(out, 'model'));
  assert.deepEqual(readdirSync(report.model!).sort(), ['config.json', 'generation_config.json', 'model.safetensors', 'prompt_contract.json', 'tokenizer.json', 'tokenizer_config.json']);
  assert.deepEqual(readPromptContract(report.model!), contract);
  // predict runs the shipped model with the prompt and tokens per turn it was trained with.
  const written = writtenResolution(report.model!)!;
  assert.equal(written.maxTurnTokens, TURN_TOKENS);
  assert.deepEqual(await predictResolution(report.model!), { prompt: written.prompt, maxTurnTokens: TURN_TOKENS });
  const f16 = readSafetensors(join(report.model!, 'model.safetensors')).tensors;
  for (const [name, t] of readSafetensors(join(final, 'model.safetensors')).tensors) {
    assert.ok(t.data.every((x, i) => f16.get(name)!.data[i] === halfToFloat(floatToHalf(x))), name);
  }

  // Lose the last checkpoint: the rerun of the same command resumes from step 2 and ends on the same weights.
  rmSync(final, { recursive: true });
  const again = spawnSync(process.execPath, args.slice(0, -1), { encoding: 'utf8' });
  assert.equal(again.status, 0, again.stderr);
  assert.match(again.stderr, /resuming from .*step-2/);
  assert.doesNotMatch(again.stderr, /synthesizing|training a \d+-token tokenizer/, 'finished stages are not redone');
  assert.ok(existsSync(final));
  assert.ok(readFileSync(join(final, 'model.safetensors')).equals(weights), 'resumed weights differ');

  // Other settings in the same folder are refused on one line.
  const other = spawnSync(process.execPath, [...args.slice(0, -1), '--pairs', '31'], { encoding: 'utf8' });
  assert.equal(other.status, 2);
  assert.match(other.stderr, /^agro: .* holds a pretraining run with other settings/);

  // A second stage from the first one's model (--init): its tokenizer, no new one; with --respell 1 every
  // training episode has respelled names. The factory's output is reused (copied), as a rerun reuses it.
  const out2 = join(out, '..', 'stage2');
  cpSync(join(out, 'synth'), join(out2, 'synth'), { recursive: true });
  const r2 = spawnSync(process.execPath, [BIN, 'pretrain', '--dbs', 'data/databases', '--out', out2, '--pairs', '30', '--held-out-dbs', '1', '--init', report.model!, '--respell', '1', '--steps', '2', '--batch-size', '4', '--eval-every', '0', '--backend', 'wasm', '--json'], { encoding: 'utf8' });
  assert.equal(r2.status, 0, r2.stderr);
  const rep2 = JSON.parse(r2.stdout) as PretrainReport;
  assert.equal(rep2.episodes?.respelled, rep2.episodes?.train);
  assert.equal(rep2.tokenizer?.vocabSize, report.tokenizer?.vocabSize);
  assert.ok(!existsSync(join(out2, 'tokenizer.json')), 'no tokenizer is trained from a checkpoint');
  assert.ok(existsSync(join(out2, 'model', 'model.safetensors')));
});

test('agro pretrain --gold: human gold SQL asked in the factory words gives extra episodes of its database, held out with it; a rerun resumes', { timeout: 600_000 }, () => {
  const root = mkdtempSync(join(tmpdir(), 'agro-pretrain-gold-'));
  const dbs = join(root, 'dbs');
  for (const id of ['music_store', 'school']) {
    mkdirSync(join(dbs, id), { recursive: true });
    symlinkSync(resolve('data', 'databases', id, `${id}.sqlite`), join(dbs, id, `${id}.sqlite`));
  }
  const gold: Array<[string, string]> = [
    ['music_store', 'SELECT count(*) FROM tracks WHERE milliseconds  >  300000'],
    ['music_store', 'SELECT name FROM artists WHERE country = "USA"'],
    ['music_store', 'SELECT billing_country, count(*) FROM invoices GROUP BY billing_country'],
    ['music_store', 'SELECT count(*) FROM (SELECT name FROM artists)'], // a derived table: the algebra cannot say it
    ['school', 'SELECT title FROM courses WHERE credits = 4'],
    ['school', 'SELECT count(*) FROM students WHERE enrollment_year >= 2021'],
    ['school', 'SELECT T2.name, avg(T1.salary) FROM instructors AS T1 JOIN departments AS T2 ON T1.dept_id = T2.dept_id GROUP BY T2.name'],
    ['retail', 'SELECT count(*) FROM products'], // a database not listed: counted, never read
  ];
  const goldFile = join(root, 'gold.jsonl');
  writeFileSync(goldFile, gold.map(([db_id, query]) => JSON.stringify({ db_id, query })).join('\n') + '\n');
  const out = join(root, 'run');
  const args = [BIN, 'pretrain', '--dbs', dbs, '--out', out, '--gold', goldFile, '--pairs', '10', '--held-out-dbs', '1', '--preset', 'tiny', '--vocab-size', '400', '--steps', '2', '--batch-size', '2', '--checkpoint-every', '1', '--eval-every', '1', '--backend', 'wasm', '--json'];
  const first = spawnSync(process.execPath, args, { encoding: 'utf8' });
  assert.equal(first.status, 0, first.stderr);
  const report = JSON.parse(first.stdout) as PretrainReport;
  const g = report.gold!;
  assert.equal(g.queries, gold.length - 1);
  assert.equal(g.otherDatabases, 1);
  assert.equal(g.skippedDatabases, 0);
  assert.equal(g.dropped['convert:derived_table'], 1);
  assert.ok(g.kept >= 4, JSON.stringify(g));
  assert.equal(report.databases.reduce((a, d) => a + (d.goldPairs ?? 0), 0), g.kept);
  const episodes = readFileSync(join(out, 'episodes.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { dbId: string; heldOut: boolean; source?: string; messages: Array<{ content: string }> });
  const fromGold = episodes.filter((e) => e.source === 'gold');
  // Every kept query gives an episode, its paraphrases more; the factory's episodes are there besides them.
  assert.equal(fromGold.length, g.episodes);
  assert.ok(g.episodes >= g.kept && episodes.length > fromGold.length);
  const held = new Map(report.databases.map((d) => [d.dbId, d.heldOut]));
  assert.ok(fromGold.every((e) => e.heldOut === held.get(e.dbId)), 'gold episodes follow their database into or out of the held-out split');
  const human = new Set(gold.map(([, q]) => tidySql(q)));
  assert.ok(fromGold.every((e) => [...human].some((q) => e.messages.at(-1)!.content.includes(q))), 'the answer is the human SQL');
  const final = join(out, 'sft', 'checkpoints', 'step-2');
  const weights = readFileSync(join(final, 'model.safetensors'));

  rmSync(final, { recursive: true });
  const again = spawnSync(process.execPath, args.slice(0, -1), { encoding: 'utf8' });
  assert.equal(again.status, 0, again.stderr);
  assert.match(again.stderr, /resuming from .*step-1/);
  assert.doesNotMatch(again.stderr, /synthesizing|human gold queries in the factory|training a \d+-token tokenizer/, 'finished stages are not redone');
  assert.ok(readFileSync(join(final, 'model.safetensors')).equals(weights), 'resumed weights differ');

  // The same folder without --gold is another run's settings.
  const other = spawnSync(process.execPath, args.slice(0, -1).filter((a, i, all) => a !== '--gold' && all[i - 1] !== '--gold'), { encoding: 'utf8' });
  assert.equal(other.status, 2);
  assert.match(other.stderr, /holds a pretraining run with other settings/);
});
