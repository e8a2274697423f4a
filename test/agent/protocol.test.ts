import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  formatAction,
  formatObservation,
  parseAction,
  SEARCH_AGENT_ACTIONS,
  PROTOCOL_TOKENS,
  SQL_AGENT_ACTIONS,
  TAGS,
} from '../../src/agent/protocol.ts';

const sql = SQL_AGENT_ACTIONS;

function invalidReason(text: string, allowed = sql): string {
  const r = parseAction(text, allowed);
  assert.equal(r.kind, 'invalid', `expected invalid: ${text}`);
  return r.kind === 'invalid' ? r.reason : '';
}

test('a well-formed SQL turn parses into kind, content and think (trimmed)', () => {
  const r = parseAction('<think> which table? </think>\n<sql>\n  SELECT name FROM singer WHERE age < 30 AND a <> b\n</sql>\n', sql);
  assert.deepEqual(r, { kind: 'sql', content: 'SELECT name FROM singer WHERE age < 30 AND a <> b', think: 'which table?' });
  assert.deepEqual(parseAction('<think></think><answer>SELECT 1</answer>', sql), { kind: 'answer', content: 'SELECT 1', think: '' });
});

test('tags match case-insensitively; search actions for the search agent', () => {
  assert.deepEqual(parseAction('<THINK>x</Think><SQL>SELECT 1</sql>', sql), { kind: 'sql', content: 'SELECT 1', think: 'x' });
  assert.deepEqual(parseAction('<think>look</think><search>capital of France</search>', SEARCH_AGENT_ACTIONS), {
    kind: 'search',
    content: 'capital of France',
    think: 'look',
  });
  assert.deepEqual(parseAction('<think>read</think><open>doc-17</open>', SEARCH_AGENT_ACTIONS), { kind: 'open', content: 'doc-17', think: 'read' });
});

test('strict structure: every way to break it is invalid with a reason', () => {
  assert.match(invalidReason('SELECT 1'), /no protocol tags/);
  assert.match(invalidReason('<sql>SELECT 1</sql>'), /must start with <think>/);
  assert.match(invalidReason('<think>x</think>'), /no action/);
  assert.match(invalidReason('<think>x</think><sql>SELECT 1</sql><sql>SELECT 2</sql>'), /exactly one action/);
  assert.match(invalidReason('<think>x</think><sql>SELECT 1</sql><answer>SELECT 1</answer>'), /exactly one action/);
  assert.match(invalidReason('<think>x<sql>SELECT 1</sql></think><answer>a</answer>'), /not closed before|nested/);
  assert.match(invalidReason('<think>x</think><sql>SELECT 1'), /unbalanced/);
  assert.match(invalidReason('<think>x</think><sql>SELECT 1</answer>'), /closed by <\/answer>/);
  assert.match(invalidReason('Sure! <think>x</think><sql>SELECT 1</sql>'), /text outside the tags before <think>/);
  assert.match(invalidReason('<think>x</think> then <sql>SELECT 1</sql>'), /text outside the tags before <sql>/);
  assert.match(invalidReason('<think>x</think><sql>SELECT 1</sql> done'), /after the action/);
  assert.match(invalidReason('<think>x</think><sql>   </sql>'), /empty <sql>/);
  assert.match(invalidReason('<think>x</think><search>q</search>'), /not allowed here \(allowed: sql, answer\)/);
  assert.match(invalidReason('<think>x</think><observation>rows</observation>'), /not an action/);
  assert.match(invalidReason('</think><sql>SELECT 1</sql>'), /unbalanced|stray/);
  assert.match(invalidReason('</think>x<think><sql>SELECT 1</sql>'), /stray closing tag/);
});

test('formatAction round-trips through parseAction; tags are exported for the tokenizer', () => {
  const a = { kind: 'sql' as const, content: 'SELECT COUNT(*) FROM t', think: 'count' };
  assert.equal(formatAction(a), '<think>count</think>\n<sql>SELECT COUNT(*) FROM t</sql>');
  assert.deepEqual(parseAction(formatAction(a), sql), a);
  assert.equal(formatObservation('3 rows'), '<observation>3 rows</observation>');
  assert.equal(TAGS.answer.close, '</answer>');
  for (const t of ['<think>', '</think>', '<sql>', '</sql>', '<answer>', '<search>', '<open>', '</observation>']) {
    assert.ok(PROTOCOL_TOKENS.includes(t), t);
  }
  assert.equal(PROTOCOL_TOKENS.length, 14);
});
