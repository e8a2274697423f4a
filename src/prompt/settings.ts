/**
 * The settings that shape what the SQL policy reads: the system prompt, how the schema is shown and how much of
 * it, what an observation shows, how many turns. The SQL environment's config is these plus what does not
 * change the prompt (timeouts, scoring: src/agent/sql-env.ts), and a checkpoint's prompt contract
 * (contract.ts) carries them whole.
 */
import { z } from 'zod';

export const SQL_AGENT_SYSTEM_PROMPT =
  'You answer questions about a SQLite database. Each turn: <think>reasoning</think> then either ' +
  '<sql>one read-only query</sql> to look at the data, or <answer>the final SQL query</answer>.';

export const promptSettingsSchema = z.strictObject({
  /** The instructions before the schema: the protocol the policy was trained to follow. */
  systemPrompt: z.string().min(1).default(SQL_AGENT_SYSTEM_PROMPT),
  /**
   * How the schema is shown: grounded = the tables and columns the question needs first, with their
   * documentation and the stored values the question names (grounded.ts); ddl = the same DDL for every
   * question (checkpoints trained before grounding).
   */
  schemaFormat: z.enum(['grounded', 'ddl']).default('grounded'),
  /** Character budget of the schema in the system prompt. */
  schemaChars: z.number().int().min(200).default(1800),
  schemaSamples: z.number().int().min(0).default(2),
  /** Stored values matching the question's words shown under the schema (grounded; 0 = none). */
  valueHints: z.number().int().min(0).max(50).default(5),
  /** Show the database's documentation (found beside it, or given) with its columns (grounded). */
  docs: z.boolean().default(true),
  /** Policy turns per episode, the answer turn included. */
  maxTurns: z.number().int().min(1).default(4),
  /** Rows and characters of a result shown to the agent. */
  observationRows: z.number().int().min(1).default(5),
  observationChars: z.number().int().min(40).default(400),
});
export type PromptSettings = z.infer<typeof promptSettingsSchema>;
