/**
 * What the SFT and GRPO trainers share about a run directory: restoring a trainer from a checkpoint and
 * keeping metrics.jsonl consistent with the step it resumed from.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { z } from 'zod';
import { AgroError } from '../errors.ts';
import { writeFileAtomic } from '../util/fs.ts';
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

/** Checkpoints of a run directory, newest last: checkpoints/step-N. */
export function listCheckpoints(outDir: string): { step: number; dir: string }[] {
  const root = join(outDir, 'checkpoints');
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .map((n) => /^step-(\d+)$/.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ step: Number(m[1]), dir: join(root, m[0]) }))
    .filter((c) => existsSync(join(c.dir, 'trainer_state.json')))
    .sort((a, b) => a.step - b.step);
}
