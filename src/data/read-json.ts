import { AgroError } from '../errors.ts';
import { readInputText } from '../util/fs.ts';

/**
 * Reads a user's text file (dataset, predictions, config): a regular file of at most MAX_INPUT_BYTES
 * (util/fs.ts); a missing file is not_found, a directory, device or FIFO invalid_input, each one line.
 */
export function readText(path: string, what: string): string {
  return readInputText(path, what);
}

/** V8's JSON messages may quote the whole input; keep the reason and turn the position into a line. */
function describeJsonError(text: string, err: unknown): string {
  let msg = err instanceof Error ? err.message : String(err);
  msg = msg.replace(/, ".*" is not valid JSON$/s, '');
  const pos = /at position (\d+)/.exec(msg);
  if (pos) {
    const offset = Number(pos[1]);
    const line = text.slice(0, offset).split('\n').length;
    msg = `line ${line}: ${msg.replace(/ in JSON at position \d+.*$/s, '')}`;
  }
  return msg.replace(/\s*\n\s*/g, ' ');
}

export function parseJson(text: string, path: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new AgroError('invalid_input', `${path}: malformed JSON: ${describeJsonError(text, err)}`);
  }
}

export interface JsonlLine {
  line: number;
  value: unknown;
}

/** One JSON value per non-blank line; errors name the line. */
export function parseJsonl(text: string, path: string): JsonlLine[] {
  const out: JsonlLine[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i].trim();
    if (raw === '') continue;
    try {
      out.push({ line: i + 1, value: JSON.parse(raw) });
    } catch (err) {
      throw new AgroError('invalid_input', `${path}: line ${i + 1}: malformed JSON: ${describeJsonError(raw, err).replace(/^line 1: /, '')}`);
    }
  }
  return out;
}

/** JSONL by extension; for other extensions, JSONL unless the whole text is one JSON value. */
export function isJsonl(path: string, text: string): boolean {
  if (/\.jsonl$/i.test(path)) return true;
  if (/\.json$/i.test(path)) return false;
  try {
    JSON.parse(text);
    return false;
  } catch {
    return true;
  }
}

/** Rows of a .jsonl file (one JSON object a line) or of a .json array (BIRD's dev.json). */
export function readRows(path: string): { line: number; value: unknown }[] {
  const text = readText(path, 'dataset');
  if (text.trimStart().startsWith('[')) {
    let arr: unknown;
    try {
      arr = JSON.parse(text);
    } catch (err) {
      throw new AgroError('invalid_input', `${path}: not valid JSON: ${(err as Error).message}`);
    }
    return (arr as unknown[]).map((value, i) => ({ line: i + 1, value }));
  }
  const rows: { line: number; value: unknown }[] = [];
  text.split('\n').forEach((raw, i) => {
    if (!raw.trim()) return;
    try {
      rows.push({ line: i + 1, value: JSON.parse(raw) });
    } catch (err) {
      throw new AgroError('invalid_input', `${path}:${i + 1}: not valid JSON: ${(err as Error).message}`);
    }
  });
  return rows;
}
