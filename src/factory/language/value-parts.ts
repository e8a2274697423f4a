/**
 * Stored values named in part: people name a long value by a few of its words ("investigation complete" for
 * 'Investigation complete; no suspect identified', "elm street" for 'On or near Elm Street'). A part is a form of
 * its value (names.ts Lexicon.typed: the realizer may say it, the parser reads it back to the whole value) only
 * when the database says so: the part, as a LIKE '%part%', matches that value and no other of its column.
 */
import type { SqlExecutor } from '../../sql/types.ts';
import { dialectOf, likeOp, nameIn } from '../../sql/dialect.ts';
import { printLiteral } from '../print.ts';
import { STOP_WORDS } from '../../prompt/words.ts';
import { withForms, type Lexicon } from './names.ts';

/** A value is named in part from this many words on. */
const MIN_WORDS = 3;
/** Executions spent checking parts, per database (each a LIKE over one column, under the factory's time limit). */
const MAX_CHECKS = 120;

/**
 * The parts people name a value by: its first and its last two or three words, as they stand in the value (so a
 * LIKE on the part matches it), none opening or closing on a grammar word ("or near", "of the") and none the
 * whole value. Most telling first (the longer run).
 */
export function valueParts(value: string): string[] {
  const words = [...value.matchAll(/[\p{L}\p{N}]+/gu)];
  if (words.length < MIN_WORDS || /[%_\\]/.test(value)) return [];
  const run = (from: number, to: number): string | null => {
    const ws = words.slice(from, to).map((m) => m[0].toLowerCase());
    if (STOP_WORDS.has(ws[0]) || STOP_WORDS.has(ws[ws.length - 1]) || ws.every((w) => w.length < 3 || /^\d+$/.test(w))) return null;
    const start = words[from].index!;
    const last = words[to - 1];
    return value.slice(start, last.index! + last[0].length);
  };
  const n = words.length;
  const out = new Set<string>();
  for (const k of [3, 2]) {
    if (k >= n) continue;
    for (const p of [run(0, k), run(n - k, n)]) if (p) out.add(p);
  }
  return [...out];
}

/**
 * The lexicon with the parts of its category values (Lexicon.typed) that name one value: first against the
 * column's values as read (so a part shared by two is never tried), then by execution, a LIKE on the part
 * that must return that one value. Parts already another form of the column are left. Mutates nothing given.
 */
export async function withValueParts(lex: Lexicon, values: Map<string, string[]>, dbPath: string, exec: SqlExecutor, timeoutMs: number): Promise<Lexicon> {
  if (!lex.typed) return lex;
  const d = dialectOf(dbPath);
  const parts = new Map<string, Map<string, string>>();
  let checks = 0;
  for (const [k, vals] of values) {
    const forms = lex.typed.get(k);
    if (!forms) continue;
    const found = new Map<string, string>();
    parts.set(k, found);
    const [table, column] = k.split('\u0000');
    const lower = vals.map((v) => v.toLowerCase());
    for (const value of new Set(vals)) {
      for (const part of valueParts(value)) {
        const p = part.toLowerCase();
        if (forms.has(p) || found.has(p) || lower.filter((v) => v.includes(p)).length !== 1) continue;
        if (checks++ >= MAX_CHECKS) return withForms(lex, parts);
        const sql = `SELECT COUNT(DISTINCT ${nameIn(column, d)}), MIN(${nameIn(column, d)}) FROM ${nameIn(table, d)} WHERE ${nameIn(column, d)} ${likeOp(d)} ${printLiteral(`%${part}%`)}`;
        const r = await exec.execute(dbPath, sql, { timeoutMs });
        if (r.ok && Number(r.rows[0]?.[0]) === 1 && r.rows[0][1] === value) found.set(p, value);
      }
    }
  }
  return withForms(lex, parts);
}
