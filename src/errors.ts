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

/**
 * A URL's credentials in any text, written as `***`: the one redaction every message, log line,
 * observation and report goes through (AgroError, the CLI's printing, redactUrl in sql/postgres.ts).
 * Textual, so it holds for URLs that do not parse too (an unknown scheme such as mysql://, a typo such as
 * postgre://, a `/` or `@` left unencoded in the password: everything from the user's `:` to the last `@`
 * of the run is masked; a path made of such a URL, its `//` joined to `/`, too), and for libpq's `password=` parameter (in a query string or a key=value string).
 */
const URL_PASSWORD = /\b([A-Za-z][A-Za-z0-9+.-]*:\/\/?[^\s:/@"'`<>]*:)[^\s"'`<>]*@/g;
const PASSWORD_PARAM = /\b(password=)[^\s&"'`<>]+/gi;

export function redactSecrets(text: string): string {
  if (!text.includes('@') && !/password=/i.test(text)) return text;
  return text.replace(URL_PASSWORD, (_, head: string) => `${head}***@`).replace(PASSWORD_PARAM, (m, head: string) => (m.slice(head.length) === '***' ? m : `${head}***`));
}

export class AgroError extends Error {
  readonly kind: ErrorKind;
  constructor(kind: ErrorKind, message: string, options?: { cause?: unknown }) {
    // Messages are single lines by contract: the CLI prints them as-is; never with a password in them.
    super(redactSecrets(message.replace(/\s*\n\s*/g, ' ')), options);
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

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
// eslint-disable-next-line no-control-regex -- as above
const CONTROL_OR_NEWLINE_KEPT = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g;
const NAMED: Record<string, string> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/**
 * Control characters (C0, DEL, C1) written as visible escapes (`\x1b`, `\t`...): a line agro prints from
 * user data (a db_id, a path, a cell, a model's output) then cannot set the terminal's title, clear it,
 * move the cursor or hide text. `keepNewlines` keeps `\n` for multi-line text (a table, a schema).
 */
export function escapeControls(text: string, opts: { keepNewlines?: boolean } = {}): string {
  return text.replace(opts.keepNewlines ? CONTROL_OR_NEWLINE_KEPT : CONTROL, (c) => NAMED[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
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
