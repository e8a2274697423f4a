/**
 * metrics.jsonl → columns for charts, and reading what a training run appended since the last read.
 * The trainers append one line per step, and on resume rewrite the file (temp + rename) without the lines
 * past the resumed step: a shorter file or another inode means start over.
 */
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import type { MetricColumns } from './api-types.ts';

/** Nested objects become dotted keys ({rewards: {format: 1}} → 'rewards.format'); only finite numbers and booleans are kept. */
export function flattenRecord(rec: Record<string, unknown>, prefix = '', out: Record<string, number> = {}): Record<string, number> {
  for (const [k, v] of Object.entries(rec)) {
    const key = prefix + k;
    if (typeof v === 'number' && Number.isFinite(v)) out[key] = v;
    else if (typeof v === 'boolean') out[key] = v ? 1 : 0;
    else if (v && typeof v === 'object' && !Array.isArray(v)) flattenRecord(v as Record<string, unknown>, `${key}.`, out);
  }
  return out;
}

/** Lines of JSON → columns with one entry per parsed line (null where a line lacks the key); bad lines are skipped. */
export function toColumns(lines: readonly string[]): MetricColumns {
  const flat: Record<string, number>[] = [];
  for (const line of lines) {
    if (!line.trim()) continue;
    try {
      const v: unknown = JSON.parse(line);
      if (v && typeof v === 'object' && !Array.isArray(v)) flat.push(flattenRecord(v as Record<string, unknown>));
    } catch {
      // A half-written last line is read again once complete; other garbage is not a metric.
    }
  }
  const keys: string[] = [];
  const seen = new Set<string>();
  for (const r of flat)
    for (const k of Object.keys(r)) {
      if (seen.has(k)) continue;
      seen.add(k);
      keys.push(k);
    }
  const columns: MetricColumns['columns'] = {};
  for (const k of keys) columns[k] = flat.map((r) => (k in r ? r[k] : null));
  return { keys, columns };
}

export interface TailState {
  offset: number;
  ino: number;
}

export interface TailRead {
  /** True when the file was rewritten (or is new): `lines` are then the whole file. */
  reset: boolean;
  lines: string[];
  state: TailState;
}

/** Complete lines added to `path` since `state` (everything when state is null or the file was rewritten). */
export function readNewLines(path: string, state: TailState | null): TailRead | null {
  let st;
  try {
    st = statSync(path);
  } catch {
    return null;
  }
  const reset = !state || st.ino !== state.ino || st.size < state.offset;
  const from = reset ? 0 : state.offset;
  if (!reset && st.size === from) return { reset: false, lines: [], state: state! };
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const buf = Buffer.alloc(Math.max(0, size - from));
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, from + got);
      if (n === 0) break;
      got += n;
    }
    // Only up to the last newline: a line being written is read once it is whole.
    const end = buf.subarray(0, got).lastIndexOf(0x0a) + 1;
    const lines = buf.subarray(0, end).toString('utf8').split('\n');
    return { reset, lines, state: { offset: from + end, ino: st.ino } };
  } finally {
    closeSync(fd);
  }
}
