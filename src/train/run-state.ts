/**
 * What the SFT and GRPO trainers share about a run directory: restoring a trainer from a checkpoint and
 * keeping metrics.jsonl consistent with the step it resumed from.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { z } from 'zod';
import { AgroError } from '../errors.ts';
import { writeFileAtomic } from '../util/fs.ts';
import { cleanStaleCheckpointTemps } from '../model/checkpoint.ts';
import type { WeightMap } from '../model/llama.ts';
import type { AdamW } from './optim.ts';

/**
 * The trainer state of a checkpoint, validated against the trainer's own schema (so an SFT state is refused by
 * the GRPO trainer and the other way round), with the optimizer moments loaded into `opt`.
 */
export function restoreTrainerState<S extends { step: number; kind?: string }>(
  schema: z.ZodType<S>,
  resumeFrom: { trainerState: object; optimizerState?: WeightMap },
  opt: AdamW,
  /** With its article, as in the message: 'an SFT', 'a GRPO'. */
  trainer: string,
): Omit<S, 'kind'> {
  const parsed = schema.safeParse(resumeFrom.trainerState);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw new AgroError('invalid_input', `resume: trainer_state.json is not ${trainer} trainer state (${i.path.join('.') || 'state'}: ${i.message})`);
  }
  if (!resumeFrom.optimizerState) throw new AgroError('invalid_input', 'resume: the checkpoint has no optimizer.safetensors');
  const { kind: _kind, ...state } = parsed.data;
  opt.importState(resumeFrom.optimizerState, state.step);
  return state;
}

/** On resume, forget metric lines past the resumed step so the file reads like one run. */
export function truncateMetrics(path: string, step: number): void {
  if (!existsSync(path)) return;
  const kept = readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => {
      if (!line.trim()) return false;
      try {
        return (JSON.parse(line) as { step: number }).step <= step;
      } catch {
        return false;
      }
    });
  writeFileAtomic(path, kept.map((l) => l + '\n').join(''));
}

/** A run directory's leftovers of checkpoint writes that were killed (model/checkpoint.ts); call before listing or resuming. */
export function cleanRunCheckpoints(outDir: string): string[] {
  return cleanStaleCheckpointTemps(join(outDir, 'checkpoints'));
}

/** Settings as `a.b.c` → JSON text of the value; arrays and scalars are leaves. */
function flatten(value: unknown, prefix: string, out: Map<string, string>): Map<string, string> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else if (value !== undefined) out.set(prefix, JSON.stringify(value));
  return out;
}

/** What differs between the settings a run was trained with and the ones it resumes with, one `name old → new` each. */
export function settingsChanges(before: object, after: object): string[] {
  const a = flatten(before, '', new Map());
  const b = flatten(after, '', new Map());
  const out: string[] = [];
  for (const k of new Set([...a.keys(), ...b.keys()])) {
    if (a.get(k) !== b.get(k)) out.push(`${k} ${a.get(k) ?? '(none)'} → ${b.get(k) ?? '(none)'}`);
  }
  return out;
}

/** The settings a run recorded (sft_config.json, train_config.json); {} when it has none yet. */
export function recordedSettings(configPath: string): Record<string, unknown> {
  if (!existsSync(configPath)) return {};
  try {
    const v = JSON.parse(readFileSync(configPath, 'utf8')) as unknown;
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw new AgroError('invalid_input', `resume: ${configPath} is not a JSON object`);
}

/**
 * The config a resume trains with: the run's recorded settings (`keys` of them), overridden by the ones
 * given now; a flag left out on resume therefore keeps the run's value and is no change.
 */
export function resumeConfig(recorded: Record<string, unknown>, keys: readonly string[], given: object | undefined): Record<string, unknown> {
  const base = Object.fromEntries(keys.filter((k) => recorded[k] !== undefined).map((k) => [k, recorded[k]]));
  const now = Object.fromEntries(Object.entries(given ?? {}).filter(([, v]) => v !== undefined));
  return { ...base, ...now };
}

/** One resume with changed settings, as the run's config file records it. */
export interface ResumeChange {
  step: number;
  changes: string[];
}

/**
 * A resume must train with the settings the run was trained with: `configPath` (sft_config.json,
 * train_config.json) holds them as written, `settings` the resumed run's, compared over `settings`'s keys.
 * Changes are refused with one usage line listing them, or, with `allowChanges`, returned with the
 * earlier ones so that the config file keeps the history.
 */
export function checkResumeSettings(configPath: string, settings: object, opts: { step: number; allowChanges?: boolean; flag: string }): ResumeChange[] {
  if (!existsSync(configPath)) return [];
  const before = recordedSettings(configPath);
  const history = Array.isArray(before.resumeChanges) ? (before.resumeChanges as ResumeChange[]) : [];
  const earlier = Object.fromEntries(Object.keys(settings).map((k) => [k, before[k]]));
  const changes = settingsChanges(earlier, settings);
  if (changes.length === 0) return history;
  if (!opts.allowChanges) {
    throw new AgroError('usage', `resume: the run was trained with other settings: ${changes.join(', ')} (resume with the same settings, or pass ${opts.flag} to continue with the new ones)`);
  }
  return [...history, { step: opts.step, changes }];
}

/** Checkpoints of a run directory, newest last (their home is model/checkpoint.ts, beside the resolver of `--init` and `--policy`). */
export { listCheckpoints } from '../model/checkpoint.ts';
