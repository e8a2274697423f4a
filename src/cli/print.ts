/**
 * Text the CLI prints from user data (paths, db_ids, cells, questions, a model's output) goes through
 * here: control characters escaped (errors.ts escapeControls), newlines kept. JSON output needs no such
 * step (JSON.stringify escapes C0 controls); the progress bars write their own cursor codes.
 */
import { escapeControls, redactSecrets } from '../errors.ts';

export function printOut(text: string): void {
  process.stdout.write(escapeControls(redactSecrets(text), { keepNewlines: true }));
}

export function printErr(text: string): void {
  process.stderr.write(escapeControls(redactSecrets(text), { keepNewlines: true }));
}

/** A duration as the CLI prints it: `42s`, `1m50s`, `2h05m`. */
export function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s >= 3600 ? `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m` : s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}
