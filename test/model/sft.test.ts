import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Tokenizer, DEFAULT_SPECIAL_TOKENS } from '../../src/model/tokenizer.ts';
import { renderChat, renderPrompt, renderChatText, chatStopTokens } from '../../src/model/chat.ts';
import type { ChatMessage } from '../../src/model/chat.ts';

const TOK = Tokenizer.train(['SELECT name FROM singer WHERE age > 30', 'How many singers are there?'], { vocabSize: 300, specialTokens: DEFAULT_SPECIAL_TOKENS });

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
