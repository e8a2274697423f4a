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
