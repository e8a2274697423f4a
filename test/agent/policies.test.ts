import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { readGgufFileInfo } from 'node-llama-cpp';
import { initBackend } from '../../src/model/backend.ts';
import { LlamaModel } from '../../src/model/llama.ts';
import { resolveModelConfig } from '../../src/model/config.ts';
import { saveCheckpoint } from '../../src/model/checkpoint.ts';
import { CHAT_TEMPLATE_JINJA, renderChatText, renderPrompt, type ChatMessage } from '../../src/model/chat.ts';
import { Tokenizer } from '../../src/model/tokenizer.ts';
import { AGENT_SPECIAL_TOKENS } from '../../src/agent/protocol.ts';
import { GgufPolicy } from '../../src/agent/policies/gguf.ts';
import { CheckpointPolicy } from '../../src/agent/policies/checkpoint.ts';
import { openPolicy } from '../../src/agent/policies/open.ts';

const BIN = fileURLToPath(new URL('../../bin/agro.js', import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'agro-policies-'));
const CONV: ChatMessage[] = [
  { role: 'system', content: 'You answer questions about a SQLite database.' },
  { role: 'user', content: 'How many albums are there?' },
  { role: 'assistant', content: '<think>count</think>\n<sql>SELECT COUNT(*) FROM albums</sql>' },
  { role: 'tool', content: '<observation>COUNT(*)\n347\n(1 rows)</observation>' },
];

test('agro export gguf: the GGUF renders prompts with its own template exactly as agro does, and generates on llama.cpp', async () => {
  await initBackend();
  const tk = Tokenizer.train(['SELECT COUNT(*) FROM albums', 'How many albums are there?', 'answer questions about a SQLite database'], { vocabSize: 330, specialTokens: AGENT_SPECIAL_TOKENS });
  const model = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: tk.vocabSize }), { seed: 5 });
  const ck = join(tmp, 'ck');
  saveCheckpoint(ck, { model, tokenizer: tk });
  model.dispose();
  const gguf = join(tmp, 'policy.gguf');
  const r = spawnSync(process.execPath, [BIN, 'export', 'gguf', ck, gguf], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^wrote .*policy\.gguf/);
  const md = (await readGgufFileInfo(gguf)).metadata as unknown as { tokenizer: { chat_template: string; ggml: { eos_token_id: number; eot_token_id: number } } };
  assert.equal(md.tokenizer.chat_template, CHAT_TEMPLATE_JINJA);
  assert.equal(md.tokenizer.ggml.eot_token_id, tk.tokenId('<|end|>'));

  const g = await GgufPolicy.open(gguf, { sequences: 2 });
  const c = await CheckpointPolicy.open(ck, { engine: 'llama.cpp' });
  try {
    assert.equal(g.render(CONV), renderChatText(CONV, { addGenerationPrompt: true }));
    // llama.cpp's tokenizer gives the ids agro's model was trained on (control tokens and protocol tags atomic).
    const ids = (g as unknown as { model: { tokenize(t: string, s: boolean): number[] } }).model.tokenize(g.render(CONV), true);
    assert.deepEqual([...ids], renderPrompt(tk, CONV));
    const streamed: string[] = [];
    const a = await g.complete({ messages: CONV, maxTokens: 10, temperature: 0, onText: (d) => streamed.push(d) });
    assert.ok(a.completionTokens! >= 1 && a.completionTokens! <= 10);
    assert.equal(streamed.join(''), a.text);
    // Same weights, same prompt ids, greedy: the agro checkpoint on its llama.cpp engine writes the same turn.
    const b = await c.complete({ messages: CONV, maxTokens: 10, temperature: 0 });
    assert.equal(a.text, b.text);
    assert.equal(a.finish, b.finish);
  } finally {
    await g.close();
    await c.close();
  }
  await assert.rejects(openPolicy({ path: gguf, engine: 'tfjs' }), /runs on llama.cpp only/);
  const bad = spawnSync(process.execPath, [BIN, 'export', 'gguf', join(tmp, 'missing'), join(tmp, 'x.gguf')], { encoding: 'utf8' });
  assert.equal(bad.status, 3);
  assert.match(bad.stderr, /^agro: checkpoint directory not found/);
});

test.after(() => rmSync(tmp, { recursive: true, force: true }));
