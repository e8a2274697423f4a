/**
 * What the judge reads and what it learns from. A candidate is what the answer path ran (answer.ts
 * RankedCandidate, less what only the display needs); a list is one question with every candidate the answer
 * path offered for it, each labelled by execution against the question's gold (pretraining, fine-tuning).
 * The zod schemas are the one home of these shapes: the lists on disk are read through them.
 */
import { z } from 'zod';
import type { JudgedCandidate } from '../answer/answer.ts';
import { CANDIDATE_SOURCES, type Features } from '../answer/rank.ts';


/** The answer path's checked-reading features of a candidate (answer/rank.ts Features), as the judge reads them. */
export const rankFeaturesSchema = z.object({
  reading: z.number(),
  precision: z.number(),
  recall: z.number(),
  values: z.number(),
  strayValues: z.number(),
  numbers: z.number(),
  strayNumbers: z.number(),
  agreement: z.number(),
  greedy: z.number(),
  person: z.number(),
  degenerate: z.number(),
  negation: z.number(),
}) satisfies z.ZodType<Features>;

export const judgeCandidateSchema = z.object({
  sql: z.string(),
  sources: z.array(z.enum(CANDIDATE_SOURCES)),
  /** The factory's reading closest to the question, if the factory can read the query. */
  reading: z.string().nullable(),
  features: rankFeaturesSchema,
  /** The transparent ranker's score (rank.ts score). */
  score: z.number(),
  rows: z.number().int().min(0),
  columns: z.number().int().min(0),
  /** Result group key: candidates with one result share it. */
  signature: z.string(),
}) satisfies z.ZodType<JudgedCandidate>;
export type JudgeCandidate = z.infer<typeof judgeCandidateSchema>;

export const labelledListSchema = z.object({
  dbId: z.string(),
  /** Where the question came from: a human gold query worded by the factory, or a factory pair held out of the memory. */
  origin: z.enum(['gold', 'factory', 'quickstart']),
  question: z.string(),
  gold: z.string(),
  candidates: z.array(judgeCandidateSchema.extend({ right: z.boolean() })),
});
export type LabelledList = z.infer<typeof labelledListSchema>;
