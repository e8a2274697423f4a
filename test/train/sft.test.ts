import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Tokenizer } from '../../src/model/tokenizer.ts';
import { renderChat, renderPrompt, renderChatText, chatStopTokens } from '../../src/model/chat.ts';
import type { ChatMessage } from '../../src/model/chat.ts';

const TOK = Tokenizer.train(['SELECT name FROM singer WHERE age > 30', 'How many singers are there?'], { vocabSize: 300, specialTokens: AGENT_SPECIAL_TOKENS });

test('chat template: ids follow the documented text form and the mask covers only assistant tokens and their <|end|>', () => {
  const msgs: ChatMessage[] = [
    { role: 'system', content: 'schema' },
    { role: 'user', content: 'How many?' },
    { role: 'assistant', content: '<sql>SELECT 1</sql><observation>[[1]]</observation>ok' },
    { role: 'tool', content: 'rows' },
    { role: 'assistant', content: '<answer>SELECT 1</answer>' },
  ];
  const id = (t: string): number => TOK.tokenId(t);
  const e = (s: string): number[] => TOK.encode(s);
  const { ids, mask } = renderChat(TOK, msgs);
  const expectIds: number[] = [];
  const expectMask: number[] = [];
  const push = (xs: number[], m: number): void => { for (const x of xs) { expectIds.push(x); expectMask.push(m); } };
  push([id('<|bos|>'), id('<|system|>')], 0); push(e('schema'), 0); push([id('<|end|>')], 0);
  push([id('<|user|>')], 0); push(e('How many?'), 0); push([id('<|end|>')], 0);
  push([id('<|assistant|>')], 0); push([id('<sql>'), ...e('SELECT 1'), id('</sql>')], 1);
  push([id('<observation>'), ...e('[[1]]'), id('</observation>')], 0); push(e('ok'), 1); push([id('<|end|>')], 1);
  push([id('<|tool|>')], 0); push(e('rows'), 0); push([id('<|end|>')], 0);
  push([id('<|assistant|>')], 0); push([id('<answer>'), ...e('SELECT 1'), id('</answer>'), id('<|end|>')], 1);
  assert.deepEqual(ids, expectIds);
  assert.deepEqual(mask, expectMask);
  assert.equal(TOK.decode(ids), renderChatText(msgs));
  assert.equal(renderChatText(msgs.slice(0, 2), { addGenerationPrompt: true }), '<|bos|><|system|>schema<|end|><|user|>How many?<|end|><|assistant|>');
  const prompt = renderPrompt(TOK, msgs.slice(0, 2));
  assert.deepEqual(prompt, ids.slice(0, prompt.length), 'the prompt is a prefix of the full conversation');
  assert.equal(prompt[prompt.length - 1], id('<|assistant|>'));
  assert.deepEqual(chatStopTokens(TOK), [id('<|end|>'), id('<|eos|>')]);
});

test('chat template refuses a tokenizer without the chat tokens', () => {
  const plain = Tokenizer.train(['abc'], { vocabSize: 260, specialTokens: [] });
  assert.throws(() => renderChat(plain, [{ role: 'user', content: 'x' }]), /tokenizer lacks the chat token <\|bos\|>/);
});

// ---- SFT ----
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { initBackend } from '../../src/model/backend.ts';
import { LlamaModel } from '../../src/model/llama.ts';
import { resolveModelConfig } from '../../src/model/config.ts';
import { loadCheckpoint } from '../../src/model/checkpoint.ts';
import { nativeKernelsActive } from '../../src/model/native.ts';
import { epochBatches, evaluateLoss, resolveSftConfig, runSft } from '../../src/train/sft.ts';
import { AdamW, clipByGlobalNorm, lrAt } from '../../src/train/optim.ts';
import { listCheckpoints } from '../../src/train/run-state.ts';
import type { SftSample } from '../../src/train/sft.ts';
import { Rng } from '../../src/util/rng.ts';
import { AgroError } from '../../src/errors.ts';

const close = (a: number, b: number, tol = 1e-6): void => assert.ok(Math.abs(a - b) <= tol, `${a} vs ${b}`);

test('LR schedule: linear warmup, then cosine to lr * minLrRatio', () => {
  const c = { lr: 1e-3, minLrRatio: 0.1, warmupSteps: 10, steps: 110 };
  close(lrAt(5, c), 5e-4, 1e-12);
  close(lrAt(10, c), 1e-3, 1e-12);
  close(lrAt(35, c), 1e-4 + 9e-4 * 0.5 * (1 + Math.SQRT1_2), 1e-12); // a quarter of the way: cos(pi/4)
  close(lrAt(60, c), 5.5e-4, 1e-12); // half way: the midpoint of 1e-3 and 1e-4
  close(lrAt(110, c), 1e-4, 1e-12);
  close(lrAt(1, { ...c, warmupSteps: 0 }), 1e-4 + 9e-4 * 0.5 * (1 + Math.cos(Math.PI / 110)), 1e-12);
});

// On wasm with the native addon the step is the fused native kernel; on cpu it is TF.js ops.
for (const backend of ['cpu', 'wasm'] as const)
test(`AdamW (${backend}): one step matches the hand computation, decay only on matrices`, async () => {
  await initBackend(backend);
  assert.equal(nativeKernelsActive(), backend === 'wasm' && process.env.AGRO_NATIVE !== '0');
  const w = tf.variable(tf.tensor2d([[1, -2]]));
  const b = tf.variable(tf.tensor1d([0.5]));
  const opt = new AdamW([w, b], { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.1 });
  opt.apply([tf.tensor2d([[0.1, -0.3]]), tf.tensor1d([2])], 0.01);
  // m = 0.1 g, v = 0.001 g^2; bias-corrected they are g and g^2, so the Adam step is lr * sign(g).
  // Matrix: p * (1 - 0.01 * 0.1) - 0.01 * sign(g) = [0.999 - 0.01, -1.998 + 0.01]. Vector: 0.5 - 0.01, no decay.
  const wv = w.dataSync(), bv = b.dataSync();
  close(wv[0], 0.989); close(wv[1], -1.988); close(bv[0], 0.49);
  const mv = opt.m[0].dataSync(), vv = opt.v[0].dataSync();
  close(mv[0], 0.01); close(mv[1], -0.03); close(vv[0], 1e-5, 1e-9); close(vv[1], 9e-5, 1e-9);
  const st = opt.exportState();
  assert.deepEqual([...st.keys()].sort(), ['adamw.m.0', 'adamw.m.1', 'adamw.v.0', 'adamw.v.1']);
  assert.throws(() => opt.importState(new Map(), 1), /adamw\.m\.0 is missing/);
  opt.dispose(); w.dispose(); b.dispose();
});

test('gradient clipping by global norm and length-bucketed epochs', async () => {
  await initBackend('cpu');
  const { grads, norm } = clipByGlobalNorm([tf.tensor1d([3]), tf.tensor1d([4])], 1);
  close(norm, 5);
  close(grads[0].dataSync()[0], 0.6, 1e-5); close(grads[1].dataSync()[0], 0.8, 1e-5);
  const small = [tf.tensor1d([0.3])];
  const unclipped = clipByGlobalNorm(small, 1);
  close(unclipped.norm, 0.3);
  assert.equal(unclipped.grads, small, 'under the limit the gradients pass through untouched');
  const lengths = Array.from({ length: 50 }, (_, i) => (i * 37) % 23 + 2);
  const a = epochBatches(lengths, 4, new Rng(9));
  assert.deepEqual(a, epochBatches(lengths, 4, new Rng(9)), 'deterministic for a seed');
  assert.deepEqual(a.flat().sort((x, y) => x - y), lengths.map((_, i) => i), 'every sample exactly once');
  for (const batch of a) for (let i = 1; i < batch.length; i++) assert.ok(lengths[batch[i - 1]] <= lengths[batch[i]], 'sorted by length inside a batch');
});

/** A tiny synthetic text-to-SQL set: the answer template is learnable in a few dozen steps. */
function syntheticConversations(n: number): ChatMessage[][] {
  const names = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi'];
  const cols = ['age', 'city', 'salary'];
  return Array.from({ length: n }, (_, i) => {
    const who = names[i % names.length], col = cols[i % cols.length];
    return [
      { role: 'user' as const, content: `What is the ${col} of ${who}?` },
      { role: 'assistant' as const, content: `<answer>SELECT ${col} FROM people WHERE name = '${who}'</answer>` },
    ];
  });
}
/** A tokenizer fitted to that set keeps the sequences short, so the tests stay fast. */
const STOK = Tokenizer.train(syntheticConversations(24).flat().map((m) => m.content), { vocabSize: 400, specialTokens: AGENT_SPECIAL_TOKENS });
const synthetic = (n: number): SftSample[] => syntheticConversations(n).map((c) => renderChat(STOK, c));

const MODEL_CFG = { preset: 'tiny', vocabSize: STOK.vocabSize, hiddenSize: 32, intermediateSize: 64, numHeads: 2, numKvHeads: 1, numLayers: 1, maxPositions: 128 };
const newModel = (seed: number): LlamaModel => new LlamaModel(resolveModelConfig(MODEL_CFG), { seed });
const tmp = (): string => mkdtempSync(join(tmpdir(), 'agro-sft-'));

test('SFT on a tiny model lowers the held-out loss and writes metrics and a checkpoint', async () => {
  await initBackend('cpu');
  const model = newModel(1);
  const data = synthetic(40);
  const heldOut = synthetic(48).slice(40);
  const before = evaluateLoss(model, heldOut, 8, STOK.tokenId('<|pad|>'));
  const out = tmp();
  const res = await runSft({ outDir: out, model, tokenizer: STOK, samples: data, heldOut, config: { steps: 20, batchSize: 8, lr: 1e-2, warmupSteps: 2, evalEvery: 10, checkpointEvery: 0 } });
  assert.equal(res.steps, 20);
  assert.ok(res.heldOutLoss !== null && res.heldOutLoss < before * 0.6, `held-out loss ${res.heldOutLoss} vs ${before} before`);
  const lines = readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(lines.length, 20);
  assert.deepEqual(Object.keys(lines[0]).sort(), ['elapsed_s', 'grad_norm', 'loss', 'lr', 'step', 'tokens', 'tokens_per_s']);
  assert.deepEqual(lines.filter((l) => 'heldout_loss' in l).map((l) => l.step), [10, 20]);
  close(lines[0].lr, 1e-2 / 2, 1e-12);
  assert.deepEqual(listCheckpoints(out).map((c) => c.step), [20]);
  model.dispose();
});

test('an interrupted and resumed run ends with exactly the weights of an uninterrupted one', async () => {
  await initBackend('cpu');
  const data = synthetic(24);
  const config = { steps: 6, batchSize: 4, gradAccum: 2, maxBatchTokens: 60, lr: 5e-3, warmupSteps: 2, checkpointEvery: 2, heldOutFraction: 0.1, evalEvery: 3, seed: 4 };
  const full = newModel(3);
  const outA = tmp();
  await runSft({ outDir: outA, model: full, tokenizer: STOK, samples: data, config });
  const part = newModel(3);
  const outB = tmp();
  const first = await runSft({ outDir: outB, model: part, tokenizer: STOK, samples: data, config, stopAfter: 3 });
  assert.equal(first.interrupted, true);
  assert.equal(first.steps, 3);
  part.dispose();
  // Resume the way the CLI does: from the newest checkpoint (step 3, written on interruption).
  const latest = listCheckpoints(outB).at(-1)!;
  assert.equal(latest.step, 3);
  const ck = loadCheckpoint(latest.dir);
  assert.equal((ck.trainerState as { kind?: string }).kind, 'sft');
  await assert.rejects(runSft({ outDir: tmp(), model: ck.model, tokenizer: ck.tokenizer, samples: data, config, resumeFrom: { trainerState: { ...ck.trainerState, kind: 'grpo' }, optimizerState: ck.optimizerState } }), /not an SFT trainer state/);
  const second = await runSft({ outDir: outB, model: ck.model, tokenizer: ck.tokenizer, samples: data, config, resumeFrom: { trainerState: ck.trainerState!, optimizerState: ck.optimizerState } });
  assert.equal(second.steps, 6);
  const wa = full.exportWeights(), wb = ck.model.exportWeights();
  for (const [name, t] of wa) assert.deepEqual(wb.get(name)!.data, t.data, name);
  const la = readFileSync(join(outA, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  const lb = readFileSync(join(outB, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(lb.map((l) => [l.step, l.loss, l.grad_norm, l.heldout_loss]), la.map((l) => [l.step, l.loss, l.grad_norm, l.heldout_loss]));
  full.dispose(); ck.model.dispose();
});

test('early stopping ends when the held-out loss stops improving and leaves the model at its best step', async () => {
  await initBackend('cpu');
  const data = synthetic(40);
  // Held-out answers that contradict the training ones: the loss falls while the format is learned,
  // then rises as the model grows sure of the training answers.
  const heldOut = syntheticConversations(16).map((c) => renderChat(STOK, [c[0], { role: 'assistant', content: c[1].content.replace(/SELECT (\w+)/, (_, col: string) => `SELECT ${col === 'age' ? 'city' : col === 'city' ? 'salary' : 'age'}`) }]));
  const pad = STOK.tokenId('<|pad|>');
  const config = { steps: 200, batchSize: 8, lr: 5e-2, warmupSteps: 2, evalEvery: 3, patience: 2, checkpointEvery: 0 };
  const out = tmp();
  const model = newModel(5);
  const res = await runSft({ outDir: out, model, tokenizer: STOK, samples: data, heldOut, config });
  assert.ok(res.best, 'early stopping reports the best step');
  assert.ok(res.best.stoppedEarly && res.steps < 200, `stopped early (ran ${res.steps} of 200 steps)`);
  const lines = readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { step: number; heldout_loss?: number });
  const evals = lines.filter((l) => l.heldout_loss !== undefined);
  const min = evals.reduce((a, b) => (b.heldout_loss! < a.heldout_loss! ? b : a));
  assert.equal(res.best.step, min.step, 'the kept step has the lowest held-out loss');
  assert.equal(res.steps, min.step + config.patience * config.evalEvery, 'it stops `patience` evaluations after the best');
  assert.ok(evals.at(-1)!.heldout_loss! > min.heldout_loss!, 'the last evaluation is worse than the best');
  close(evaluateLoss(model, heldOut, 8, pad), min.heldout_loss!, 1e-5);
  assert.equal(res.checkpoint, join(out, 'checkpoints', 'best'));
  const best = loadCheckpoint(res.checkpoint);
  close(evaluateLoss(best.model, heldOut, 8, pad), min.heldout_loss!, 1e-5);
  best.model.dispose();
  // Resuming a run that stopped early trains no further.
  const last = listCheckpoints(out).at(-1)!;
  assert.equal(last.step, res.steps);
  const ck = loadCheckpoint(last.dir);
  const again = await runSft({ outDir: out, model: ck.model, tokenizer: ck.tokenizer, samples: data, heldOut, config, resumeFrom: { trainerState: ck.trainerState!, optimizerState: ck.optimizerState } });
  assert.equal(again.steps, res.steps);
  assert.equal(again.best?.step, min.step);
  close(evaluateLoss(ck.model, heldOut, 8, pad), min.heldout_loss!, 1e-5);
  assert.throws(() => resolveSftConfig({ patience: 2, evalEvery: 0 }), /patience needs evalEvery/);
  model.dispose(); ck.model.dispose();
});

test('bad configs and empty datasets fail before training with one-line errors', async () => {
  await initBackend('cpu');
  const bad = (re: RegExp) => (e: unknown): boolean => e instanceof AgroError && e.kind === 'invalid_input' && re.test(e.message);
  assert.throws(() => resolveSftConfig({ steps: 0 }), bad(/sft config: steps:/));
  assert.throws(() => resolveSftConfig({ stpes: 5 }), bad(/sft config: .*stpes/));
  assert.throws(() => resolveSftConfig({ steps: 5, warmupSteps: 6 }), bad(/warmupSteps \(6\) exceeds steps \(5\)/));
  const model = newModel(1);
  await assert.rejects(runSft({ outDir: tmp(), model, tokenizer: TOK, samples: [] }), bad(/no training samples/));
  // A sample with nothing assistant-side to learn is as good as none.
  await assert.rejects(runSft({ outDir: tmp(), model, tokenizer: TOK, samples: [renderChat(TOK, [{ role: 'user', content: 'hi' }])] }), bad(/no training samples/));
  model.dispose();
});

// ---- agro sft ----
import { spawnSync } from 'node:child_process';
import { writeFileSync, existsSync } from 'node:fs';
import { runSftCommand } from '../../src/cli/commands/sft.ts';
import { rowsToConversations } from '../../src/agent/cold-start/row-conversations.ts';
import { readRows } from '../../src/data/read-json.ts';
import { tablesRead } from '../../src/sql/lexer.ts';
import { SQL_AGENT_SYSTEM_PROMPT } from '../../src/prompt/settings.ts';
import { prepareSamples, splitByTokens } from '../../src/train/sft.ts';
import { AGENT_SPECIAL_TOKENS } from '../../src/agent/protocol.ts';

test('dataset rows become the SQL agent opening plus an answer turn; messages rows pass through', () => {
  const dir = tmp();
  const path = join(dir, 'd.jsonl');
  const msgs = [{ role: 'user', content: 'q' }, { role: 'assistant', content: '<think></think>\n<answer>SELECT 1</answer>' }];
  writeFileSync(path, [
    JSON.stringify({ db_id: 'school', question: 'How many students?', evidence: 'students are rows', SQL: 'SELECT count(*) FROM students AS s JOIN classes ON 1' }),
    '',
    JSON.stringify({ messages: msgs }),
  ].join('\n'));
  const conv = rowsToConversations(readRows(path), 'data/databases', path);
  assert.equal(conv.length, 2);
  const [sys, user, asst] = conv[0];
  assert.equal(sys.role, 'system');
  assert.ok(sys.content.startsWith(SQL_AGENT_SYSTEM_PROMPT + '\n'), 'the environment prompt, so SFT and RL see the same opening');
  assert.match(sys.content, /CREATE TABLE/);
  assert.deepEqual(user, { role: 'user', content: 'How many students?\nEvidence: students are rows' });
  assert.deepEqual(asst, { role: 'assistant', content: '<think>The answer reads students, classes.</think>\n<answer>SELECT count(*) FROM students AS s JOIN classes ON 1</answer>' });
  assert.deepEqual(conv[1], msgs);
  assert.deepEqual(tablesRead('SELECT a FROM "odd ""name""" JOIN `b` ON x JOIN [c d]'), ['odd "name"', 'b', 'c d']);
  writeFileSync(path, JSON.stringify({ db_id: 'nope_db', question: 'q', SQL: 'SELECT 1' }) + '\n');
  assert.throws(() => rowsToConversations(readRows(path), 'data/databases', path), /unknown db_id "nope_db"/);
  writeFileSync(path, JSON.stringify({ question: 'q' }) + '\n{bad');
  assert.throws(() => readRows(path), /d\.jsonl:2: not valid JSON/);
  writeFileSync(path, JSON.stringify({ question: 'q' }) + '\n');
  assert.throws(() => rowsToConversations(readRows(path), 'data/databases', path), /d\.jsonl:1: expected \{db_id, question, evidence\?, SQL\} or \{messages\}: db_id/);
});

test('a batch over the token budget runs as several passes of consecutive samples', () => {
  const mk = (n: number): SftSample => ({ ids: new Array(n).fill(1), mask: new Array(n).fill(1) });
  const parts = splitByTokens([mk(3), mk(4), mk(5), mk(9), mk(9)], 10);
  // Padded sizes (rows x (longest - 1)): [3,4,5] -> 3 x 4 = 12 > 10, so [3,4] (2 x 3 = 6), [5] then [9] alone (8), [9].
  assert.deepEqual(parts.map((p) => p.map((s) => s.ids.length)), [[3, 4], [5], [9], [9]]);
  assert.deepEqual(splitByTokens([mk(50)], 10).map((p) => p.length), [1]);
});

test('samples longer than the context are skipped, not cut (cutting would drop the answer)', () => {
  const { kept, tooLong } = prepareSamples([{ ids: [1, 2, 3, 4], mask: [0, 0, 1, 1] }, { ids: [1, 2], mask: [0, 1] }, { ids: [1, 2, 3], mask: [0, 0, 0] }], 3, 't');
  assert.deepEqual(kept, [{ ids: [1, 2], mask: [0, 1] }]);
  assert.equal(tooLong, 1);
});

test('agro sft trains from scratch, refuses to clobber a run, and resumes with --resume', async () => {
  const dir = tmp();
  const data = join(dir, 'd.jsonl');
  const rows = [];
  for (let i = 0; i < 12; i++) rows.push(JSON.stringify({ messages: [{ role: 'user', content: `count rows of t${i % 3}` }, { role: 'assistant', content: `<think></think>\n<answer>SELECT count(*) FROM t${i % 3}</answer>` }] }));
  writeFileSync(data, rows.join('\n') + '\n');
  const out = join(dir, 'run');
  const args = ['bin/agro.js', 'sft', '--data', data, '--out', out, '--preset', 'tiny', '--vocab-size', '320', '--backend', 'wasm', '--batch-size', '4', '--checkpoint-every', '1', '--json'];
  // An impossible configuration is refused on one line before any work: no output folder appears.
  const refused = spawnSync(process.execPath, [...args, '--steps', '2', '--patience', '2', '--eval-every', '0'], { encoding: 'utf8' });
  assert.equal(refused.status, 4, refused.stderr);
  assert.equal(refused.stderr.trim(), 'agro: sft config: patience needs evalEvery > 0 (early stopping watches the held-out loss)');
  assert.equal(existsSync(out), false);
  const first = spawnSync(process.execPath, [...args, '--steps', '2'], { encoding: 'utf8' });
  assert.equal(first.status, 0, first.stderr);
  const s1 = JSON.parse(first.stdout);
  assert.equal(s1.steps, 2);
  assert.equal(s1.samples, 12);
  assert.ok(existsSync(join(out, 'tokenizer.json')) && existsSync(join(out, 'checkpoints', 'step-2', 'model.safetensors')));
  await assert.rejects(runSftCommand({ data, out, preset: 'tiny', dbRoot: 'data/databases', vocabSize: 320, steps: 3, backend: 'cpu', json: true }), /already has checkpoints .* pass --resume/);
  // More steps change the learning-rate schedule: a changed setting, accepted with --allow-changes.
  const second = spawnSync(process.execPath, [...args, '--steps', '3', '--resume', '--allow-changes'], { encoding: 'utf8' });
  assert.equal(second.status, 0, second.stderr);
  assert.equal(JSON.parse(second.stdout).steps, 3);
  const lines = readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l).step);
  assert.deepEqual(lines, [1, 2, 3]);
  // --init: a new run starting from that checkpoint's tokenizer and weights (no new tokenizer is trained).
  const out2 = join(dir, 'run2');
  const fromInit = spawnSync(process.execPath, ['bin/agro.js', 'sft', '--data', data, '--out', out2, '--init', join(out, 'checkpoints', 'step-3'), '--backend', 'cpu', '--steps', '1', '--json'], { encoding: 'utf8' });
  assert.equal(fromInit.status, 0, fromInit.stderr);
  assert.equal(JSON.parse(fromInit.stdout).steps, 1);
  assert.equal(existsSync(join(out2, 'tokenizer.json')), false);
  assert.equal(readFileSync(join(out2, 'checkpoints', 'step-1', 'tokenizer.json'), 'utf8'), readFileSync(join(out, 'checkpoints', 'step-3', 'tokenizer.json'), 'utf8'));
  const missing = spawnSync(process.execPath, ['bin/agro.js', 'sft', '--data', join(dir, 'none.jsonl'), '--out', out], { encoding: 'utf8' });
  assert.equal(missing.status, 3);
  assert.equal(missing.stderr.trim(), `agro: dataset file not found: ${join(dir, 'none.jsonl')}`);
});

test('runSft removes what a killed checkpoint write left in its folder, for callers other than the CLI (quickstart)', async () => {
  await initBackend('cpu');
  const out = tmp();
  // A pid above Linux's pid_max: the writer is gone.
  const stale = join(out, 'checkpoints', '.step-7.tmp-99999999-1-2');
  mkdirSync(stale, { recursive: true });
  writeFileSync(join(stale, 'model.safetensors'), 'half');
  const model = newModel(2);
  await runSft({ outDir: out, model, tokenizer: STOK, samples: synthetic(8), config: { steps: 1, batchSize: 4, warmupSteps: 0, checkpointEvery: 0, heldOutFraction: 0 } });
  assert.deepEqual(readdirSync(join(out, 'checkpoints')), ['step-1']);
  model.dispose();
});
