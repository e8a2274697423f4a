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
import { synthesize, TEMPLATE_WEIGHTS } from '../factory/synthesize.ts';
import { cueWords } from './text.ts';
import { STRONG_VALUE } from './edit.ts';
import { silentProgress } from '../util/progress.ts';

/** `weights`: the factory's template weights to draw with, over its own (TEMPLATE_WEIGHTS). */
export type QuestionSynth = (question: string, n: number, weights?: Readonly<Record<string, number>>) => Promise<string[]>;

/**
 * The templates a question's own words ask for, drawn more often: a superlative ("the oldest", "the most") asks for
 * a ranked row or group, an average or a total for an aggregate, "each" or "per" for groups, "how many" for a count.
 * The factory's mix is its memory's (mostly projections); a question says which of its shapes are likely, so forty
 * drafts spent where the question points find more of the right one. Multipliers of the factory's own weights,
 * read from the cue tokens the comparison reads (text.ts), nothing of any one database.
 */
const STEER: ReadonlyArray<[cue: string, templates: Readonly<Record<string, number>>]> = [
  ['qhigh', { topK: 4, groupTop: 2 }],
  ['qlow', { topK: 4, groupTop: 2 }],
  ['qavg', { aggregate: 3, groupAgg: 1.5 }],
  ['qsum', { aggregate: 3, groupAgg: 1.5 }],
  ['qeach', { groupAgg: 2, groupTop: 1.5 }],
  ['qcount', { count: 2, groupAgg: 1.5 }],
];

export function intentWeights(question: string): Record<string, number> {
  const cues = new Set(cueWords(question));
  const out: Record<string, number> = {};
  for (const [cue, ts] of STEER) {
    if (!cues.has(cue)) continue;
    for (const [t, m] of Object.entries(ts)) out[t] = Math.max(out[t] ?? 1, m);
  }
  return Object.fromEntries(Object.entries(out).map(([t, m]) => [t, m * TEMPLATE_WEIGHTS[t]]));
}

/** Tables a question's candidates are drawn over: the linker's best two and those of the values it names. */
const LINKED_TABLES = 2;

export function makeQuestionSynth(schema: DbSchema, executor: SqlExecutor, dbPath: string, graph: SchemaGraph, profiles: Map<string, TableProfile>, index: ValueIndex, timeoutMs = 2000): QuestionSynth {
  return async (question, n, weights = {}) => {
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
      return (await synthesize(ctx, { graph, profiles: near }, n, weights)).map((p) => p.sql);
    } catch {
      // A schema the templates cannot draw from (no usable columns) gives no candidates, not an error.
      return [];
    }
  };
}
