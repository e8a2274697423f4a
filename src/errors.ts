/**
 * One error type for everything a user can get wrong (bad file, unknown db, refused SQL...).
 * The CLI prints `agro: <message>` on one line and exits with `exitCode`; library callers can
 * switch on `kind` without parsing messages.
 */
import type { z } from 'zod';

export type ErrorKind =
  | 'usage' // bad flags or arguments
  | 'not_found' // a file, database, db_id or checkpoint that does not exist
  | 'invalid_input' // malformed JSON/JSONL, a config that fails validation, a corrupt file
  | 'refused' // SQL the sandbox will not run (writes, ATTACH, several statements...)
  | 'sql_error' // SQL that SQLite rejected or that failed while running
  | 'timeout' // a query or call that ran past its wall-clock limit
  | 'internal'; // a bug: should never reach a user

const EXIT_CODES: Record<ErrorKind, number> = {
  usage: 2,
  not_found: 3,
  invalid_input: 4,
  refused: 5,
  sql_error: 6,
  timeout: 7,
  internal: 70,
};

export class AgroError extends Error {
  readonly kind: ErrorKind;
  constructor(kind: ErrorKind, message: string, options?: { cause?: unknown }) {
    // Messages are single lines by contract: the CLI prints them as-is.
    super(message.replace(/\s*\n\s*/g, ' '), options);
    this.name = 'AgroError';
    this.kind = kind;
  }
  get exitCode(): number {
    return EXIT_CODES[this.kind];
  }
}

export function exitCodeFor(kind: ErrorKind): number {
  return EXIT_CODES[kind];
}

/** Turn anything thrown into a one-line message for the terminal. */
export function oneLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.replace(/\s*\n\s*/g, ' ').trim();
}

/**
 * Validate `input` against a zod schema; the first issue becomes one AgroError line,
 * `<what>: <field path>: <message>` (the path reads `config` for the value as a whole).
 */
export function parseWith<S extends z.ZodType>(schema: S, input: unknown, what: string, kind: ErrorKind = 'invalid_input'): z.infer<S> {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  throw new AgroError(kind, `${what}: ${issue.path.map(String).join('.') || 'config'}: ${issue.message}`);
}
