/** Flag parsing shared by the commands: every bad flag becomes one `usage` line naming the flag. */
import type { Command } from 'commander';
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import { ALLOW_PRIVILEGED_ROLE_FLAG } from '../sql/pg-role.ts';
import { MAX_TIMEOUT_MS } from '../sql/pool.ts';

/**
 * Upper bounds of the numeric flags, in one place. Every numeric flag has a range: a value past it
 * would overflow a timer (2^31-1 ms), alias a 32-bit seed, or try to allocate more than a machine has.
 */
export const LIMITS = {
  timeoutMs: MAX_TIMEOUT_MS,
  seed: 2 ** 32 - 1,
  steps: 10_000_000,
  every: 10_000_000,
  batch: 4096,
  tokens: 1 << 24,
  vocab: 1 << 18,
  rows: 100_000_000,
  chars: 100_000_000,
  /** A query result held in memory: 1 GiB. */
  resultBytes: 2 ** 30,
  threads: 256,
} as const;

interface NumberSpec {
  min?: number;
  max?: number;
  integer?: boolean;
  /** The value must be > min rather than >= min. */
  positive?: boolean;
}

/** The one message for a number out of range: `--steps must be an integer from 1 to 10000000, got "0"`. */
function rangeText({ min = -Infinity, max = Infinity, integer = true, positive = false }: NumberSpec): string {
  const kind = integer ? 'an integer' : 'a number';
  if (positive) return Number.isFinite(max) ? `${kind} > 0 and <= ${max}` : `${kind} > 0`;
  if (Number.isFinite(min) && Number.isFinite(max)) return `${kind} from ${min} to ${max}`;
  if (Number.isFinite(min)) return `${kind} >= ${min}`;
  if (Number.isFinite(max)) return `${kind} <= ${max}`;
  return kind;
}

/** Parse one numeric flag value; a value outside the spec is a usage error naming the flag and the range. */
export function parseNumber(flag: string, v: string, spec: NumberSpec = {}): number {
  const { min = -Infinity, max = Infinity, integer = true, positive = false } = spec;
  const n = Number(v);
  const ok =
    v.trim() !== '' && Number.isFinite(n) && n >= min && n <= max && (!integer || Number.isSafeInteger(n)) && (!positive || n > 0);
  if (!ok) throw new AgroError('usage', `${flag} must be ${rangeText(spec)}, got "${v}"`);
  return n;
}

/** A commander argument parser for a number flag: `--steps <n>` with `numberArg('--steps', { min: 1, max: LIMITS.steps })`. */
export function numberArg(flag: string, spec: NumberSpec = {}): (v: string) => number {
  return (v) => parseNumber(flag, v, spec);
}

/** `--timeout <ms>`: 1 ms up to what a timer can hold. */
export const timeoutArg = (flag = '--timeout'): ((v: string) => number) => numberArg(flag, { min: 1, max: LIMITS.timeoutMs });
/** `--seed <n>`: a 32-bit unsigned seed (larger values would silently alias smaller ones). */
export const seedArg = (flag = '--seed'): ((v: string) => number) => numberArg(flag, { min: 0, max: LIMITS.seed });

/** A zod number schema's range (through optional/default wrappers), as the spec parseNumber words; undefined for other schemas. */
function numberSpecOf(schema: unknown): NumberSpec | undefined {
  let s = schema as { minValue?: number | null; maxValue?: number | null; isInt?: boolean; unwrap?: () => unknown; safeParse?: (v: unknown) => { success: boolean } } | undefined;
  for (let i = 0; s && !('isInt' in s) && typeof s.unwrap === 'function' && i < 4; i++) s = s.unwrap() as typeof s;
  if (!s || !('isInt' in s)) return undefined;
  const min = s.minValue ?? -Infinity, max = s.maxValue ?? Infinity;
  // `.positive()` reads as min 0; the schema refusing its own minimum tells it apart from `.min(0)`.
  const positive = min === 0 && s.safeParse?.(0).success === false;
  return { min, max, integer: Boolean(s.isInt), positive };
}

/**
 * Validate a command's parsed options with a zod schema; the first issue becomes `agro: <command>: --flag: message`,
 * and a bad number is worded as every numeric flag is (`--n must be an integer from 1 to 1000000, got "abc"`).
 */
export function parseCliOptions<S extends z.ZodType>(schema: S, raw: unknown, command: string): z.infer<S> {
  const r = schema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0];
    const key = String(issue.path[0] ?? '');
    const flag = key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    const spec = numberSpecOf((schema as { shape?: Record<string, unknown> }).shape?.[key]);
    const value = (raw as Record<string, unknown> | null)?.[key];
    if (spec && issue.path.length === 1 && value !== undefined) throw new AgroError('usage', `${command}: --${flag} must be ${rangeText(spec)}, got "${String(value)}"`);
    throw new AgroError('usage', `${command}: --${flag}: ${issue.message}`);
  }
  return r.data;
}

/** A repeatable option's parser: every occurrence appended (commander's default keeps the last). */
export const repeatable = (value: string, previous: string[]): string[] => [...previous, value];

/** `--allow-privileged-role`, for every command that runs SQL it did not write itself (src/sql/pg-role.ts). */
export interface PrivilegedRoleCliOption {
  allowPrivilegedRole?: boolean;
}

export function addPrivilegedRoleOption(cmd: Command): Command {
  return cmd.option(ALLOW_PRIVILEGED_ROLE_FLAG, "PostgreSQL: run untrusted SQL even when the URL's role can do more than read (superuser, table owner or writer, server-file roles): such a query could change data or read and write the server's files");
}

/** The options both synthesizers (`agro synth`, `agro synth-search`) take: the database, the output folder, the seed, how many examples to print, --json. */
export const synthOptionsSchema = z.object({
  db: z.string().min(1),
  out: z.string().min(1),
  seed: z.coerce.number().int().min(0).max(LIMITS.seed),
  show: z.coerce.number().int().min(0).max(10_000),
  json: z.boolean().optional(),
});
