/**
 * A database's documentation, whatever file it came from (BIRD's database_description/*.csv, a Spider or
 * KaggleDBQA tables.json, agro's own JSON): what the factory words columns and values with, and what the
 * prompt shows beside the schema. One shape for every reader, so nothing downstream knows the source format.
 */
import { z } from 'zod';

export const columnDocSchema = z.strictObject({
  /** The column as stored (case as in the database). */
  column: z.string().min(1),
  /** A readable name ("total federal revenue" for t_fed_rev), when the documentation gives one. */
  name: z.string().min(1).optional(),
  /** Free-text description. */
  description: z.string().min(1).optional(),
  /** Stored value → what it means ('PHWR' → 'Pressurised Heavy Water Reactor'). */
  values: z.record(z.string(), z.string()).optional(),
});
export type ColumnDoc = z.infer<typeof columnDocSchema>;

export const tableDocSchema = z.strictObject({
  /** The table as stored. */
  table: z.string().min(1),
  name: z.string().min(1).optional(),
  description: z.string().min(1).optional(),
  columns: z.array(columnDocSchema).default([]),
});
export type TableDoc = z.infer<typeof tableDocSchema>;

/** agro's own documentation format; every reader produces it. */
export const dbDocsSchema = z.strictObject({
  /** What the database is about, in a sentence or two. */
  overview: z.string().min(1).optional(),
  tables: z.array(tableDocSchema).default([]),
});
export type DbDocs = z.infer<typeof dbDocsSchema>;
