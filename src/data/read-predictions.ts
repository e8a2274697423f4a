import { AgroError } from '../errors.ts';
import { isJsonl, parseJson, parseJsonl, readText } from './read-json.ts';
import type { EvalItem } from './types.ts';

/** BIRD's official prediction files store `SQL\t----- bird -----\tdb_id`. */
const BIRD_SEPARATOR = '\t----- bird -----\t';

interface RawPrediction {
  /** Where it came from, for error messages: `line 3`, `item 2`, `key "17"`. */
  where: string;
  key?: string;
  sql: string;
  dbId?: string;
}

function splitBird(value: string): { sql: string; dbId?: string } {
  const at = value.indexOf(BIRD_SEPARATOR);
  if (at < 0) return { sql: value };
  return { sql: value.slice(0, at), dbId: value.slice(at + BIRD_SEPARATOR.length).trim() };
}

function fromValue(value: unknown, where: string, path: string, key?: string): RawPrediction {
  if (typeof value === 'string') return { where, ...(key !== undefined ? { key } : {}), ...splitBird(value) };
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const o = value as Record<string, unknown>;
    const sql = o.SQL ?? o.sql ?? o.query ?? o.pred ?? o.prediction;
    if (typeof sql !== 'string') {
      throw new AgroError('invalid_input', `${path}: ${where}: expected a string in "SQL", "sql" or "query"`);
    }
    const id = o.question_id ?? key;
    if (id !== undefined && typeof id !== 'string' && typeof id !== 'number') {
      throw new AgroError('invalid_input', `${path}: ${where}: question_id must be a number or a string`);
    }
    const dbId = typeof o.db_id === 'string' ? o.db_id : undefined;
    return { where, ...(id !== undefined ? { key: String(id) } : {}), ...splitBird(sql), ...(dbId ? { dbId } : {}) };
  }
  throw new AgroError('invalid_input', `${path}: ${where}: expected a SQL string or an object with "SQL"`);
}

function readRaw(path: string): RawPrediction[] {
  const text = readText(path, 'predictions');
  if (/\.(sql|txt)$/i.test(path)) {
    // Spider's format: one query per line, in data order; an optional `\tdb_id` tail is dropped.
    const lines = text.split('\n').map((l) => l.replace(/\r$/, ''));
    while (lines.length > 0 && lines[lines.length - 1].trim() === '') lines.pop();
    return lines.map((l, i) => {
      const bird = splitBird(l);
      if (bird.dbId !== undefined) return { where: `line ${i + 1}`, ...bird };
      const tab = l.indexOf('\t');
      return tab >= 0 ? { where: `line ${i + 1}`, sql: l.slice(0, tab), dbId: l.slice(tab + 1).trim() } : { where: `line ${i + 1}`, sql: l };
    });
  }
  if (isJsonl(path, text)) return parseJsonl(text, path).map(({ line, value }) => fromValue(value, `line ${line}`, path));
  const value = parseJson(text, path);
  if (Array.isArray(value)) return value.map((v, i) => fromValue(v, `item ${i}`, path));
  if (value !== null && typeof value === 'object') {
    return Object.entries(value as Record<string, unknown>).map(([k, v]) => fromValue(v, `key "${k}"`, path, k));
  }
  throw new AgroError('invalid_input', `${path}: expected a JSON array or object of predictions`);
}

/**
 * Reads predictions and lines them up with the data: returns one SQL string per item, in item order.
 * Keyed predictions (JSON objects, JSONL with question_id) are matched by question_id when every key
 * is one, else by position in the data; unkeyed ones must come in data order. The count must match.
 */
export function readPredictions(path: string, items: readonly EvalItem[]): string[] {
  const raw = readRaw(path);
  if (raw.length !== items.length) {
    throw new AgroError('invalid_input', `${path}: ${raw.length} predictions for ${items.length} questions in the data`);
  }
  const keyed = raw.filter((r) => r.key !== undefined);
  if (keyed.length > 0 && keyed.length < raw.length) {
    throw new AgroError('invalid_input', `${path}: ${raw.find((r) => r.key === undefined)!.where}: has no question_id while others do`);
  }
  let ordered: RawPrediction[];
  if (keyed.length === 0) {
    ordered = raw;
  } else {
    const byId = new Map(items.filter((it) => it.questionId !== undefined).map((it) => [String(it.questionId), it.index]));
    const useIds = byId.size === items.length && raw.every((r) => byId.has(r.key!));
    const slots: (RawPrediction | undefined)[] = new Array(items.length);
    for (const r of raw) {
      const idx = useIds ? byId.get(r.key!)! : /^\d+$/.test(r.key!) ? Number(r.key) : -1;
      if (idx < 0 || idx >= items.length) {
        throw new AgroError('invalid_input', `${path}: ${r.where}: "${r.key}" is neither a question_id nor an index into the data`);
      }
      if (slots[idx]) throw new AgroError('invalid_input', `${path}: ${r.where}: a second prediction for question ${r.key}`);
      slots[idx] = r;
    }
    ordered = slots as RawPrediction[];
  }
  return ordered.map((r, i) => {
    const it = items[i];
    if (r.dbId !== undefined && r.dbId !== '' && r.dbId !== it.dbId) {
      throw new AgroError('invalid_input', `${path}: ${r.where}: prediction is for db_id "${r.dbId}" but question ${i} is on "${it.dbId}"`);
    }
    return r.sql;
  });
}
