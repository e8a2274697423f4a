/**
 * Question-time synthesis: the factory run around one question. Its templates draw queries over the tables the
 * question is about (the schema linker's best tables and those of the values it names), with literals from
 * sampled rows; the answer path then re-grounds those literals to the question's own values (edit.ts) and ranks
 * them with every other candidate. Bounded: a few dozen drafts, none verified here (the answer path runs each
 * once), a seed from the question so the same question gets the same candidates.
 */
import { linkSchema } from '../prompt/schema-link.ts';
import type { DbSchema, SqlExecutor } from '../sql/types.ts';
import type { ValueIndex } from '../prompt/value-index.ts';
import { fnv1a } from '../util/hash.ts';
import { Rng } from '../util/rng.ts';
import type { TableProfile } from '../factory/profile.ts';
import type { SchemaGraph } from '../factory/schema-graph.ts';
import { synthesize } from '../factory/synthesize.ts';
import { STRONG_VALUE } from './edit.ts';
import { silentProgress } from '../util/progress.ts';

export type QuestionSynth = (question: string, n: number) => Promise<string[]>;

/** Tables a question's candidates are drawn over: the linker's best two and those of the values it names. */
const LINKED_TABLES = 2;

export function makeQuestionSynth(schema: DbSchema, executor: SqlExecutor, dbPath: string, graph: SchemaGraph, profiles: Map<string, TableProfile>, index: ValueIndex, timeoutMs = 2000): QuestionSynth {
  return async (question, n) => {
    const link = linkSchema(schema, question, { index });
    const tables = new Set([...link.tables.slice(0, LINKED_TABLES).map((t) => t.table), ...link.values.filter((v) => v.score >= STRONG_VALUE).map((v) => v.table)]);
    const near = new Map([...profiles].filter(([t]) => tables.has(t)));
    if (!near.size) return [];
    const ctx = {
      dbId: schema.dbId,
      dbPath,
      schema,
      executor,
      rng: new Rng(fnv1a(question)),
      progress: silentProgress,
      variants: [],
      timeoutMs,
      reject: () => {},
    };
    try {
      return (await synthesize(ctx, { graph, profiles: near }, n)).map((p) => p.sql);
    } catch {
      // A schema the templates cannot draw from (no usable columns) gives no candidates, not an error.
      return [];
    }
  };
}
