/**
 * Follow-up questions: the previous turns of a conversation (each question and the SQL that answered it)
 * and the one place they are written into the agent's prompt. `agro ask --session`, `agro chat`, the
 * Playground, `POST /v1/ask` and a chat completion that names a database all pass them as `previous`, so a
 * question such as "and only the top three?" is read against the query it continues.
 */
import { z } from 'zod';

/** One earlier turn: a conversation's (ask, chat, serve) and a follow-up dataset row's (data/dataset-row.ts). */
export const previousTurnSchema = z.strictObject({
  question: z.string().min(1),
  /** The SQL that answered it (what the next question edits); empty when it got none. */
  sql: z.string(),
});
export type PreviousTurn = z.infer<typeof previousTurnSchema>;

/** Turns the prompt carries (the latest ones): a follow-up edits the last answer, rarely one further back. */
export const MAX_PREVIOUS_TURNS = 3;

/** Characters of one earlier question or SQL in the prompt (a pasted essay does not crowd out the schema). */
const MAX_TURN_CHARS = 1000;

const clip = (s: string): string => {
  const t = s.trim().replace(/\s+/g, ' ');
  return t.length > MAX_TURN_CHARS ? `${t.slice(0, MAX_TURN_CHARS - 1)}…` : t;
};

/** The turns the prompt shows: the last MAX_PREVIOUS_TURNS with a question. */
export function promptTurns(previous: readonly PreviousTurn[] | undefined): PreviousTurn[] {
  return (previous ?? []).filter((t) => t.question.trim()).slice(-MAX_PREVIOUS_TURNS);
}

/**
 * The user message of a question: the earlier turns (oldest first) with their SQL, then the question, then
 * BIRD's evidence. With no earlier turns it is the question alone, as every policy was trained on.
 */
export function renderUserMessage(question: string, evidence?: string, previous?: readonly PreviousTurn[]): string {
  const ev = evidence?.trim() ? `\nEvidence: ${evidence.trim()}` : '';
  const turns = promptTurns(previous);
  if (turns.length === 0) return `${question.trim()}${ev}`;
  const earlier = turns.map((t) => `Q: ${clip(t.question)}\nSQL: ${t.sql.trim() ? clip(t.sql) : '(no answer)'}`).join('\n');
  return `Earlier in this conversation:\n${earlier}\nFollow-up (it may refer to the SQL above): ${question.trim()}${ev}`;
}

/** The text the schema is linked against: the follow-up and the questions it continues (their tables and values). */
export function linkingText(question: string, previous?: readonly PreviousTurn[]): string {
  return [...promptTurns(previous).map((t) => t.question), question].join('\n');
}
