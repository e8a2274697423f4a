/**
 * Diversity-aware cold-start selection (AGRO-SQL): instead of the first N or a random N
 * trajectories, embed each one by its SQL actions (structure features of every SQL it ran) and
 * its reasoning text (lexical embedding), then pick a subset that covers that space.
 */
import { z } from 'zod';
import { AgroError, parseWith } from '../errors.ts';
import { embedHybrid } from '../factory/diversity/embed.ts';
import { selectIndices } from '../factory/diversity/select.ts';

export interface ColdStartTrajectory {
  id: string;
  /** Every SQL the trajectory executed, in order (the final answer included). */
  sqls: string[];
  /** The model's reasoning text (thoughts between actions), concatenated. */
  reasoning: string;
  difficulty?: string;
}

export const ColdStartOptionsSchema = z.object({
  seed: z.number().int().default(0),
  /** 'kcenter': farthest-point cover; 'cluster': k-means then round-robin over clusters. */
  method: z.enum(['kcenter', 'cluster']).default('kcenter'),
  /** Weight of the SQL-structure half of the embedding in [0, 1]; the rest is reasoning text. */
  sqlWeight: z.number().min(0).max(1).default(0.5),
  /** Optional share per difficulty, e.g. { simple: 0.3, moderate: 0.4, challenging: 0.3 }. */
  mix: z.record(z.string(), z.number().nonnegative()).optional(),
});
export type ColdStartOptions = z.input<typeof ColdStartOptionsSchema>;

/** Ids of `n` trajectories that cover the space, in selection order. */
export function selectColdStart(trajectories: readonly ColdStartTrajectory[], n: number, opts: ColdStartOptions = {}): string[] {
  if (!Number.isInteger(n) || n < 0) throw new AgroError('usage', `cold-start size must be a non-negative integer, got ${n}`);
  const o = parseWith(ColdStartOptionsSchema, opts, 'cold-start options');
  if (n >= trajectories.length) return trajectories.map((t) => t.id);
  const vectors = embedHybrid(
    trajectories.map((t) => ({ sqls: t.sqls, text: t.reasoning })),
    { sqlWeight: o.sqlWeight },
  );
  const groups = o.mix ? trajectories.map((t) => t.difficulty ?? 'unknown') : undefined;
  const idx = selectIndices(vectors, n, o.method, { seed: o.seed, groups, mix: o.mix });
  return idx.map((i) => trajectories[i].id);
}
