/**
 * `--session FILE` of `agro ask`: a conversation kept in a JSON file for scripts, so that the next
 * `agro ask --session FILE "only the top three"` follows up the last one. The file holds the earlier turns
 * (`{"turns": [{"question", "sql"}]}`, oldest first); each ask reads them into the prompt
 * (src/prompt/conversation.ts) and appends its own, written atomically. A missing file is a new conversation.
 */
import { existsSync } from 'node:fs';
import { Option, type Command } from 'commander';
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import { previousTurnSchema, type PreviousTurn } from '../prompt/conversation.ts';
import { readInputText, writeJsonAtomic } from '../util/fs.ts';
import { prepareOutFile } from './out-path.ts';

const sessionSchema = z.strictObject({ turns: z.array(previousTurnSchema) });

export function addSessionOption(cmd: Command): Command {
  return cmd.addOption(new Option('--session <file.json>', 'a conversation file: its earlier questions and their SQL go into the prompt (a follow-up refers to them), and this question is appended'));
}

/** The turns of a session file ([] when it does not exist yet); a file that is not one is exit 4. */
export function readSession(path: string): PreviousTurn[] {
  if (!existsSync(path)) {
    prepareOutFile({ flag: '--session', path });
    return [];
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readInputText(path, '--session'));
  } catch (err) {
    if (err instanceof AgroError) throw err;
    throw new AgroError('invalid_input', `--session ${path}: not JSON (${(err as Error).message})`);
  }
  const r = sessionSchema.safeParse(raw);
  if (!r.success) throw new AgroError('invalid_input', `--session ${path}: expected {"turns": [{"question": "...", "sql": "..."}]} (${r.error.issues[0].path.join('.')}: ${r.error.issues[0].message})`);
  return r.data.turns;
}

/** A session as ask uses it: the earlier turns, and save() to append this one (no file named: both empty). */
export function openSession(o: { session?: string }): { previous: PreviousTurn[]; save(question: string, sql: string | undefined): void } {
  if (!o.session) return { previous: [], save: () => {} };
  const path = o.session;
  const previous = readSession(path);
  return { previous, save: (question, sql) => writeJsonAtomic(path, { turns: [...previous, { question: question.trim(), sql: sql?.trim() ?? '' }] }) };
}
