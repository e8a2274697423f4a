/**
 * Dataset rows as the SQL agent's conversations: a BIRD-style row ({db_id, question, evidence?, SQL}) becomes the
 * agent's own opening (its environment's prompt) and one answer turn; a row of ready chat `messages` is used as it
 * is. What `agro sft` trains on and `agro train --anchor` mixes into RL.
 */
import { z } from 'zod';
import { AgroError } from '../../errors.ts';
import { tablesRead } from '../../sql/lexer.ts';
import { chatMessageSchema, type ChatMessage } from '../../model/chat.ts';
import type { ExecResult } from '../../sql/types.ts';
import { resolveDatabase } from '../../data/databases.ts';
import { previousTurnSchema } from '../../prompt/conversation.ts';
import type { DatabaseCatalog } from '../../data/catalog.ts';
import { formatAction } from '../protocol.ts';
import { SqlEnvironment } from '../sql-env.ts';

const sqlRow = z.object({
  db_id: z.string().min(1),
  question: z.string().min(1),
  evidence: z.string().nullish(),
  SQL: z.string().min(1).optional(),
  query: z.string().min(1).optional(),
  /** Optional reasoning to put in <think>; otherwise a short note naming the tables the SQL reads. */
  think: z.string().optional(),
  /** A follow-up's earlier turns: the prompt carries them as the answer path's does (conversation.ts). */
  previous: z.array(previousTurnSchema).optional(),
});
const messagesRow = z.object({ messages: z.array(chatMessageSchema).min(1) });

/** An executor for an environment that only builds prompts: it never runs SQL. */
export const noExecution = {
  execute: (): Promise<ExecResult> => Promise.reject(new AgroError('internal', 'sft builds prompts only; it runs no SQL')),
  close: async (): Promise<void> => {},
};

/** A db_id's database: under a db-root, or from a catalog. */
function dbPathResolver(databases: string | DatabaseCatalog): (dbId: string) => string {
  return (dbId) => (typeof databases === 'string' ? resolveDatabase(databases, dbId) : databases.resolve(dbId).path);
}

/** The distinct databases of the rows made from a question (rows of ready messages and malformed rows name none). */
export function rowDatabases(rows: { value: unknown }[], databases: string | DatabaseCatalog): string[] {
  const dbPathOf = dbPathResolver(databases);
  const ids = new Set<string>();
  for (const { value } of rows) {
    if (messagesRow.safeParse(value).success) continue;
    const r = sqlRow.safeParse(value);
    if (r.success) ids.add(r.data.db_id);
  }
  return [...ids].map(dbPathOf);
}

/**
 * Dataset rows to chat conversations: the SQL agent's opening + one answer turn, or the row's messages.
 * `databases` is a db-root (`<dir>/<db_id>/<db_id>.sqlite`) or a catalog (a factory output names its own).
 */
export function rowsToConversations(rows: { line: number; value: unknown }[], databases: string | DatabaseCatalog, label: string, env = new SqlEnvironment(noExecution)): ChatMessage[][] {
  const dbPathOf = dbPathResolver(databases);
  return rows.map(({ line, value }) => {
    const asMessages = messagesRow.safeParse(value);
    if (asMessages.success) return asMessages.data.messages;
    const r = sqlRow.safeParse(value);
    if (!r.success) {
      const issue = r.error.issues[0];
      throw new AgroError('invalid_input', `${label}:${line}: expected {db_id, question, evidence?, SQL} or {messages}: ${issue.path.join('.') || 'row'}: ${issue.message}`);
    }
    const sql = (r.data.SQL ?? r.data.query ?? '').trim();
    if (!sql) throw new AgroError('invalid_input', `${label}:${line}: row has neither SQL nor query`);
    const dbPath = dbPathOf(r.data.db_id);
    const opening = env.openingFor({ id: `${line}`, dbId: r.data.db_id, dbPath, question: r.data.question, evidence: r.data.evidence ?? undefined, goldSql: sql, ...(r.data.previous?.length ? { previous: r.data.previous } : {}) });
    const tables = tablesRead(sql);
    const think = r.data.think ?? (tables.length ? `The answer reads ${tables.join(', ')}.` : '');
    return [...opening, { role: 'assistant' as const, content: formatAction({ kind: 'answer', content: sql, think }) }];
  });
}
