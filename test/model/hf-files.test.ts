import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Template } from '@huggingface/jinja';
import { CHAT_TEMPLATE_JINJA, renderChatText, type ChatMessage } from '../../src/model/chat.ts';
import { generationConfig, tokenizerConfig } from '../../src/model/hf-files.ts';
import { Tokenizer } from '../../src/model/tokenizer.ts';
import { AGENT_SPECIAL_TOKENS } from '../../src/agent/protocol.ts';
import { resolveModelConfig } from '../../src/model/config.ts';

const CONVERSATION: ChatMessage[] = [
  { role: 'system', content: 'You answer questions.\nTable t(a, b)' },
  { role: 'user', content: "How many rows? It's {{ not }} a template" },
  { role: 'assistant', content: '<think>count</think>\n<sql>SELECT COUNT(*) FROM t</sql>' },
  { role: 'tool', content: '<observation>COUNT(*)\n3\n(1 rows)</observation>' },
  { role: 'assistant', content: '<think>done</think>\n<answer>SELECT COUNT(*) FROM t</answer>' },
];

test('the Jinja chat template renders exactly the built-in template, with and without the generation prompt', () => {
  const tpl = new Template(CHAT_TEMPLATE_JINJA);
  for (let n = 1; n <= CONVERSATION.length; n++) {
    const msgs = CONVERSATION.slice(0, n);
    for (const add of [false, true]) {
      assert.equal(tpl.render({ messages: msgs, add_generation_prompt: add, bos_token: 'IGNORED' }), renderChatText(msgs, { addGenerationPrompt: add }));
    }
  }
  assert.equal(tpl.render({ messages: [{ role: 'user', content: 'hi' }], add_generation_prompt: true }), '<|bos|><|user|>hi<|end|><|assistant|>');
});

test('tokenizer_config and generation_config name the chat tokens; none for a tokenizer without them', () => {
  const tk = Tokenizer.train(['SELECT a FROM t'], { vocabSize: 300, specialTokens: AGENT_SPECIAL_TOKENS });
  const cfg = resolveModelConfig({ preset: 'tiny', vocabSize: tk.vocabSize });
  const t = tokenizerConfig(tk, cfg)!;
  assert.deepEqual([t.bos_token, t.eos_token, t.pad_token, t.chat_template, t.model_max_length], ['<|bos|>', '<|eos|>', '<|pad|>', CHAT_TEMPLATE_JINJA, cfg.maxPositions]);
  const g = generationConfig(tk)!;
  assert.deepEqual(g.eos_token_id, [tk.tokenId('<|end|>'), tk.tokenId('<|eos|>')]);
  assert.equal(g.pad_token_id, tk.tokenId('<|pad|>'));
  const plain = Tokenizer.train(['SELECT a FROM t'], { vocabSize: 270, specialTokens: ['<|end|>'] });
  assert.equal(tokenizerConfig(plain, cfg), null);
  assert.equal(generationConfig(plain), null);
});
