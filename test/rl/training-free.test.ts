import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { initBackend } from '../../src/model/backend.ts';
import { LlamaModel } from '../../src/model/llama.ts';
import { resolveModelConfig } from '../../src/model/config.ts';
import { Tokenizer } from '../../src/model/tokenizer.ts';
import { AGENT_SPECIAL_TOKENS } from '../../src/agent/protocol.ts';
import { LlmClient } from '../../src/llm/client.ts';
import { resolveTrainConfig } from '../../src/rl/train-config.ts';
import { applyExperienceOps, renderExperiences, runTrainingFreeGrpo, withPromptPrefix, type Experience } from '../../src/rl/training-free.ts';
import type { ChatMessage, Episode } from '../../src/agent/types.ts';
import { ShortAnswerEnv } from '../support/short-answer-env.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { saveTinyCheckpoint } from '../support/tiny-checkpoint.ts';

const TOK = Tokenizer.train(['abc def ghi', 'experiences lesson short answer'], { vocabSize: 320, specialTokens: AGENT_SPECIAL_TOKENS });
let llm: FakeOpenAI;
const dir = mkdtempSync(join(tmpdir(), 'agro-tfgrpo-'));

before(async () => {
  await initBackend();
  let n = 0;
  llm = await startFakeOpenAI(() => ({ kind: 'reply', content: JSON.stringify({ operations: [{ op: 'add', text: `lesson ${++n}: stop early` }] }) }));
});
after(() => llm.close());

test('experience ops: add, modify, delete by id; unknown ids and duplicates ignored; newest kept', () => {
  const lib: Experience[] = [{ id: 1, text: 'a' }, { id: 2, text: 'b' }];
  const r = applyExperienceOps(lib, [
    { op: 'add', text: '  c \n d ' },
    { op: 'modify', id: 1, text: 'a2' },
    { op: 'delete', id: 2 },
    { op: 'delete', id: 9 },
    { op: 'add', text: 'a2' },
  ]);
  assert.deepEqual(r.library, [{ id: 1, text: 'a2' }, { id: 3, text: 'c d' }]);
  assert.equal(r.ignored, 2);
  assert.deepEqual(applyExperienceOps(lib, [{ op: 'add', text: 'z' }], 2).library.map((e) => e.id), [2, 3]);
  assert.equal(renderExperiences([]), '');
  assert.equal(renderExperiences([{ id: 3, text: 'x' }]), 'Experiences from earlier attempts:\n[3] x');
});

test('the library rides in the system message of every episode', async () => {
  const env = withPromptPrefix(new ShortAnswerEnv(), () => 'EXP');
  const ep: Episode = await env.start({ id: 't' });
  assert.deepEqual(ep.opening, [
    { role: 'system', content: 'abc\n\nEXP' },
    { role: 'user', content: 'def' },
  ] satisfies ChatMessage[]);
  assert.equal((await withPromptPrefix(new ShortAnswerEnv(), () => '').start({ id: 't' })).opening[0].content, 'abc');
});

test('training-free GRPO: groups with differing rewards go to the LLM, its edits reach later prompts, weights never change', { timeout: 120_000 }, async () => {
  const model = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: TOK.vocabSize, maxPositions: 512 }), { seed: 3 });
  const weights = model.trainableVariables().map((v) => Array.from(v.dataSync()));
  const { train } = resolveTrainConfig({ steps: 3, promptsPerStep: 2, groupSize: 4, maxTurnTokens: 6, maxResponseTokens: 8, temperature: 1, seed: 5 });
  const out = join(dir, 'run');
  const libraryAfter: number[] = [];
  const systemOf: string[][] = [];
  const res = await runTrainingFreeGrpo({
    env: new ShortAnswerEnv(),
    tasks: [{ id: 'a' }, { id: 'b' }, { id: 'c' }],
    model,
    tokenizer: TOK,
    llm: new LlmClient({ baseUrl: llm.baseUrl, model: 'fake', maxRetries: 0 }),
    cfg: train,
    rewards: [{ name: 'overlong', weight: 1, params: { maxLen: 7, cache: 6 } }],
    outDir: out,
    onStep: (r, groups) => {
      libraryAfter.push(r.library_size);
      systemOf.push(groups.flat().map((s) => s.traj.messages[0].content));
    },
  });
  assert.equal(res.steps, 3);
  const lines = readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { distilled: number; library_size: number });
  assert.equal(lines.length, 3);
  const distilled = lines.reduce((a, l) => a + l.distilled, 0);
  // one LLM request per group whose rewards differed, each adding one lesson
  assert.equal(llm.requests.length, distilled);
  assert.ok(distilled > 0, 'a random tiny policy gives groups with differing lengths');
  const lib = JSON.parse(readFileSync(join(out, 'experiences.json'), 'utf8')) as Experience[];
  assert.equal(lib.length, Math.min(12, distilled));
  assert.equal(lines.at(-1)!.library_size, lib.length);
  // episodes start with the plain system message until there is a library, then carry it
  systemOf.forEach((systems, step) => {
    const had = step > 0 && libraryAfter[step - 1] > 0;
    for (const s of systems) assert.equal(s.includes('Experiences from earlier attempts:\n[1] lesson 1: stop early'), had, `step ${step + 1}`);
  });
  // the request carries the attempts with their rewards
  assert.match(llm.requests[0].body.messages!.map((m) => m.content).join('\n'), /Attempt 1 \(reward -?\d/);
  // no weight update
  model.trainableVariables().forEach((v, i) => assert.deepEqual(Array.from(v.dataSync()), weights[i]));
  model.dispose();
});

test('training-free GRPO resumes from its state and library', { timeout: 120_000 }, async () => {
  const model = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: TOK.vocabSize, maxPositions: 512 }), { seed: 3 });
  const out = join(dir, 'resume');
  const { train } = resolveTrainConfig({ steps: 2, promptsPerStep: 2, groupSize: 4, maxTurnTokens: 6, maxResponseTokens: 8, seed: 5 });
  const common = {
    env: new ShortAnswerEnv(),
    tasks: [{ id: 'a' }, { id: 'b' }],
    model,
    tokenizer: TOK,
    llm: new LlmClient({ baseUrl: llm.baseUrl, model: 'fake', maxRetries: 0 }),
    rewards: [{ name: 'overlong', weight: 1, params: { maxLen: 7, cache: 6 } }],
    outDir: out,
    cfg: train,
  };
  const ctrl = new AbortController();
  await runTrainingFreeGrpo({ ...common, onStep: () => ctrl.abort(), signal: ctrl.signal });
  assert.equal(JSON.parse(readFileSync(join(out, 'state.json'), 'utf8')).step, 1);
  const lib = JSON.parse(readFileSync(join(out, 'experiences.json'), 'utf8')) as Experience[];
  const firstSystems: string[] = [];
  const res = await runTrainingFreeGrpo({ ...common, resume: true, onStep: (_r, groups) => firstSystems.push(...groups.flat().map((s) => s.traj.messages[0].content)) });
  assert.equal(res.steps, 2);
  assert.equal(firstSystems.length, 8); // only step 2 ran
  for (const s of firstSystems) assert.equal(s, lib.length ? `abc\n\n${renderExperiences(lib)}` : 'abc');
  assert.equal(readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').length, 2);
  model.dispose();
});

test('agro train --algo training_free_grpo needs --llm-url (usage error, exit 2)', () => {
  const BIN = fileURLToPath(new URL('../../bin/agro.js', import.meta.url));
  const r = spawnSync(process.execPath, [BIN, 'train', '--data', 'data/dev.json', '--out', join(dir, 'cli'), '--algo', 'training_free_grpo'], { encoding: 'utf8' });
  assert.equal(r.status, 2);
  assert.equal(r.stderr.trim(), 'agro: --algo training_free_grpo needs --llm-url (an OpenAI-compatible endpoint that distils the experience library)');
  assert.ok(!existsSync(join(dir, 'cli', 'state.json')));
});

test('agro train --algo training_free_grpo --llm-url runs against an OpenAI-compatible server and writes the library', { timeout: 300_000 }, async () => {
  const BIN = fileURLToPath(new URL('../../bin/agro.js', import.meta.url));
  const ck = join(dir, 'init');
  await saveTinyCheckpoint(ck, ['SELECT name FROM students', 'school music'], { maxPositions: 2048 });
  const out = join(dir, 'cli-run');
  const before = llm.requests.length;
  // async child: the fake server answers from this process while the CLI runs
  const { stdout } = await promisify(execFile)(process.execPath, [
    BIN, 'train', '--data', 'data/dev.json', '--init', ck, '--out', out, '--algo', 'training_free_grpo', '--llm-url', llm.baseUrl,
    '--steps', '1', '--group-size', '2', '--prompts', '1', '--schema-chars', '300', '--json',
  ]);
  const summary = JSON.parse(stdout) as { steps: number; experiences: string; library: number };
  assert.equal(summary.steps, 1);
  const lib = JSON.parse(readFileSync(summary.experiences, 'utf8')) as Experience[];
  assert.equal(lib.length, summary.library);
  assert.equal(lib.length, llm.requests.length - before); // one lesson per distilled group
  assert.ok(!existsSync(join(out, 'checkpoints')), 'no weights written: nothing was trained');
});
