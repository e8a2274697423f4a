/**
 * The agent protocol: what one assistant turn must look like, for the SQL agent and the search agent.
 *
 *   <think>free text</think>           reasoning, required, first
 *   <sql>ONE SQL query</sql>            a tool call (SQL agent); the environment answers <observation>…</observation>
 *   <search>query</search>              a tool call (search agent)
 *   <open>doc id</open>                 a tool call (search agent)
 *   <answer>final answer</answer>       ends the episode (final SQL for the SQL agent, text for the search agent)
 *
 * Strict about structure, lenient about spelling:
 *  - exactly one <think> block first and exactly one action block after it; only whitespace around and
 *    between them; no protocol tag inside a block (no nesting), none unclosed or stray;
 *  - tag names match case-insensitively (`<SQL>` = `<sql>`) and may not carry attributes or inner spaces;
 *  - the contents are trimmed; the action content must not be empty (the think content may be);
 *  - only the protocol's own tag names count as tags, so `a < b` or `x<>y` inside SQL is just text.
 * One SQL statement per <sql> is enforced by the SQL sandbox, not here.
 */
import { CHAT_SPECIAL_TOKENS } from '../model/chat.ts';

export const ACTION_KINDS = ['sql', 'answer', 'search', 'open'] as const;
export type ActionKind = (typeof ACTION_KINDS)[number];

export const SQL_AGENT_ACTIONS: readonly ActionKind[] = ['sql', 'answer'];
export const SEARCH_AGENT_ACTIONS: readonly ActionKind[] = ['search', 'open', 'answer'];

/** Every tag name of the protocol; `observation` and `information` are written by environments only. */
export const TAG_NAMES = ['think', 'sql', 'answer', 'observation', 'search', 'open', 'information'] as const;
export type TagName = (typeof TAG_NAMES)[number];

export const TAGS = Object.fromEntries(TAG_NAMES.map((t) => [t, { open: `<${t}>`, close: `</${t}>` }])) as Record<
  TagName,
  { open: string; close: string }
>;

/** The literal tag strings, for a tokenizer's special/added tokens and the chat template. */
export const PROTOCOL_TOKENS: readonly string[] = TAG_NAMES.flatMap((t) => [TAGS[t].open, TAGS[t].close]);

/** Every special token of a tokenizer agro trains: the chat control tokens, then the protocol tags (ids in this order). */
export const AGENT_SPECIAL_TOKENS: readonly string[] = [...CHAT_SPECIAL_TOKENS, ...PROTOCOL_TOKENS];

export type ParsedAction = { kind: ActionKind; content: string; think: string } | { kind: 'invalid'; reason: string };

const TAG_RE = new RegExp(`<(/?)(${TAG_NAMES.join('|')})>`, 'gi');

interface TagHit {
  name: string;
  closing: boolean;
  start: number;
  end: number;
}

function findTags(text: string): TagHit[] {
  return [...text.matchAll(TAG_RE)].map((m) => ({
    name: m[2].toLowerCase(),
    closing: m[1] === '/',
    start: m.index,
    end: m.index + m[0].length,
  }));
}

const invalid = (reason: string): ParsedAction => ({ kind: 'invalid', reason });

/** Parse one assistant turn. `allowed` is the action set of the environment (SQL_AGENT_ACTIONS, SEARCH_AGENT_ACTIONS). */
export function parseAction(text: string, allowed: readonly ActionKind[]): ParsedAction {
  const tags = findTags(text);
  if (tags.length === 0) return invalid('no protocol tags: expected <think>…</think> then one action tag');
  // Blocks must be open/close pairs of the same name, side by side: open a, close a, open b, close b.
  if (tags.length % 2 !== 0) return invalid(`unbalanced tags: ${tags.length} tags found`);
  const blocks: { name: string; content: string; start: number; end: number }[] = [];
  for (let i = 0; i < tags.length; i += 2) {
    const open = tags[i];
    const close = tags[i + 1];
    if (open.closing) return invalid(`stray closing tag </${open.name}>`);
    if (!close.closing) return invalid(`<${open.name}> is not closed before <${close.name}> (nested or unclosed tag)`);
    if (close.name !== open.name) return invalid(`<${open.name}> is closed by </${close.name}>`);
    blocks.push({ name: open.name, content: text.slice(open.end, close.start).trim(), start: open.start, end: close.end });
  }
  let cursor = 0;
  for (const b of blocks) {
    if (text.slice(cursor, b.start).trim() !== '') return invalid(`text outside the tags before <${b.name}>`);
    cursor = b.end;
  }
  if (text.slice(cursor).trim() !== '') return invalid('text outside the tags after the action');
  if (blocks[0].name !== 'think') return invalid(`the turn must start with <think>, not <${blocks[0].name}>`);
  if (blocks.length === 1) return invalid('no action after </think>');
  if (blocks.length > 2) return invalid(`exactly one action per turn: found ${blocks.length - 1} blocks after </think>`);
  const action = blocks[1];
  if (!(ACTION_KINDS as readonly string[]).includes(action.name)) return invalid(`<${action.name}> is not an action`);
  const kind = action.name as ActionKind;
  if (!allowed.includes(kind)) return invalid(`action <${kind}> is not allowed here (allowed: ${allowed.join(', ')})`);
  if (action.content === '') return invalid(`empty <${kind}> action`);
  return { kind, content: action.content, think: blocks[0].content };
}

/** Render one assistant turn in the protocol; parseAction(formatAction(a), [a.kind]) gives `a` back (trimmed). */
export function formatAction(action: { kind: ActionKind; content: string; think?: string }): string {
  return `${TAGS.think.open}${action.think ?? ''}${TAGS.think.close}\n${TAGS[action.kind].open}${action.content}${TAGS[action.kind].close}`;
}

/** The environment's reply to a tool call, sent in its own turn. */
export function formatObservation(text: string): string {
  return `${TAGS.observation.open}${text}${TAGS.observation.close}`;
}
