import { z } from 'zod';
import { AgroError } from '../errors.ts';
import type { Tokenizer } from './tokenizer.ts';

/**
 * The chat template of the built-in model. Exact text form (no newlines are added anywhere):
 *
 *   <|bos|><|system|>{system}<|end|><|user|>{question}<|end|><|assistant|>{reply}<|end|><|tool|>{observation}<|end|><|assistant|>...
 *
 * i.e. `<|bos|>` once, then for every message `<|{role}|>` + content + `<|end|>`. A prompt for
 * generation ends with the bare `<|assistant|>` header and the model stops at `<|end|>` (or
 * `<|eos|>`). Each piece is encoded separately and the ids are concatenated, so the ids of a
 * prompt are always a prefix of the ids of the same conversation with its reply.
 *
 * Loss mask: 1 on the tokens of assistant contents and their closing `<|end|>` (what the policy
 * must learn to produce, including when to stop); 0 on `<|bos|>`, every role header and every
 * system, user and tool token. Inside an assistant content, an `<observation>...</observation>`
 * span (tags included) is masked too: observations come from the environment, not the policy.
 */

export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';
export interface ChatMessage {
  role: ChatRole;
  content: string;
}

export const chatMessageSchema = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string(),
});

export const CHAT_TOKENS = {
  bos: '<|bos|>',
  eos: '<|eos|>',
  pad: '<|pad|>',
  end: '<|end|>',
  system: '<|system|>',
  user: '<|user|>',
  assistant: '<|assistant|>',
  tool: '<|tool|>',
} as const;

/** The chat control tokens in the order a new tokenizer gets their ids (pad first, so it is id 0). */
export const CHAT_SPECIAL_TOKENS: readonly string[] = (['pad', 'bos', 'eos', 'system', 'user', 'assistant', 'tool', 'end'] as const).map((k) => CHAT_TOKENS[k]);

interface ChatIds { bos: number; eos: number; end: number; role: Record<ChatRole, number>; obsOpen: number | null; obsClose: number | null }

function chatIds(tk: Tokenizer): ChatIds {
  const need = (t: string): number => {
    if (!tk.hasToken(t)) throw new AgroError('invalid_input', `tokenizer lacks the chat token ${t}; the built-in chat template needs ${Object.values(CHAT_TOKENS).join(' ')}`);
    return tk.tokenId(t);
  };
  return {
    bos: need(CHAT_TOKENS.bos),
    eos: need(CHAT_TOKENS.eos),
    end: need(CHAT_TOKENS.end),
    role: { system: need(CHAT_TOKENS.system), user: need(CHAT_TOKENS.user), assistant: need(CHAT_TOKENS.assistant), tool: need(CHAT_TOKENS.tool) },
    obsOpen: tk.hasToken('<observation>') ? tk.tokenId('<observation>') : null,
    obsClose: tk.hasToken('</observation>') ? tk.tokenId('</observation>') : null,
  };
}

/** The conversation as text, exactly as the template lays it out (for display and docs). */
export function renderChatText(messages: ChatMessage[], opts: { addGenerationPrompt?: boolean } = {}): string {
  let s = CHAT_TOKENS.bos;
  for (const m of messages) s += `<|${m.role}|>${m.content}${CHAT_TOKENS.end}`;
  if (opts.addGenerationPrompt) s += CHAT_TOKENS.assistant;
  return s;
}

/** Token ids and the parallel loss mask (1 = trained) of a whole conversation. */
export function renderChat(tk: Tokenizer, messages: ChatMessage[]): { ids: number[]; mask: number[] } {
  const c = chatIds(tk);
  const ids: number[] = [c.bos];
  const mask: number[] = [0];
  for (const m of messages) {
    const roleId = c.role[m.role];
    if (roleId === undefined) throw new AgroError('invalid_input', `chat message role "${String(m.role)}" is not one of system, user, assistant, tool`);
    ids.push(roleId);
    mask.push(0);
    const body = tk.encode(m.content);
    if (m.role === 'assistant') {
      let inObs = false;
      for (const id of body) {
        if (id === c.obsOpen) inObs = true;
        ids.push(id);
        mask.push(inObs ? 0 : 1);
        if (id === c.obsClose) inObs = false;
      }
    } else {
      for (const id of body) { ids.push(id); mask.push(0); }
    }
    ids.push(c.end);
    mask.push(m.role === 'assistant' ? 1 : 0);
  }
  return { ids, mask };
}

/** Ids of the conversation followed by the assistant header: the prompt to generate a reply from. */
export function renderPrompt(tk: Tokenizer, messages: ChatMessage[]): number[] {
  const c = chatIds(tk);
  return [...renderChat(tk, messages).ids, c.role.assistant];
}

/** The ids generation should stop at: `<|end|>` closes a turn, `<|eos|>` a document. */
export function chatStopTokens(tk: Tokenizer): number[] {
  const c = chatIds(tk);
  return [c.end, c.eos];
}
