/** Flag parsing shared by the commands: every bad flag becomes one `usage` line naming the flag. */
import type { z } from 'zod';
import { AgroError } from '../errors.ts';

/** A commander argument parser for a number flag: `--steps <n>` with `numberArg('--steps', { min: 1 })`. */
export function numberArg(flag: string, opts: { min?: number; integer?: boolean; positive?: boolean } = {}): (v: string) => number {
  const { min = -Infinity, integer = true, positive = false } = opts;
  return (v) => {
    const n = Number(v);
    const ok = v.trim() !== '' && Number.isFinite(n) && n >= min && (!integer || Number.isInteger(n)) && (!positive || n > 0);
    if (!ok) {
      const kind = integer ? 'an integer' : 'a number';
      const bound = positive ? ' > 0' : Number.isFinite(min) ? ` >= ${min}` : '';
      throw new AgroError('usage', `${flag} must be ${kind}${bound}, got "${v}"`);
    }
    return n;
  };
}

/** Validate a command's parsed options with a zod schema; the first issue becomes `agro: <command>: --flag: message`. */
export function parseCliOptions<S extends z.ZodType>(schema: S, raw: unknown, command: string): z.infer<S> {
  const r = schema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0];
    const flag = String(issue.path[0] ?? '').replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    throw new AgroError('usage', `${command}: --${flag}: ${issue.message}`);
  }
  return r.data;
}
