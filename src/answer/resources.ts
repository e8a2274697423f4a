/**
 * What the answer path needs of a database, opened once and kept: its schema, value index, the factory's
 * reader, and its memory when one is given (checked against the schema). One `Answerer` serves every
 * question of every database a run asks about (predict's many, ask's one).
 */
import type { DbDocs } from '../prompt/docs-types.ts';
import { introspectDatabase } from '../sql/executor.ts';
import { databaseDocs, databaseValueIndex } from '../prompt/sources.ts';
import type { DbSchema, SqlExecutor } from '../sql/types.ts';
import type { ColumnRange } from './edit.ts';
import { answerQuestion, type Answer, type AnswerConfig, type AnswerResources, type PolicyAnswer } from './answer.ts';
import { checkMemorySchema, MemoryIndex, readMemory, type MemoryFile } from './memory.ts';
import { databaseLanguageOf, makeReader } from './reading.ts';
import { makeQuestionSynth } from './synth.ts';

export interface AnswererOptions {
  /** Memory files; each serves the database its dbId names. */
  memory?: readonly string[];
  /** Documentation per database path (else found beside it, as everywhere). */
  docs?: (db: string) => DbDocs | undefined;
  config?: Partial<AnswerConfig>;
}

/** Each numeric column's stored range by lower-cased name (the union over tables that share the name). */
export function columnRanges(schema: DbSchema): ColumnRange {
  const out = new Map<string, { min: number; max: number }>();
  for (const t of schema.tables) {
    for (const c of t.columns) {
      const { min, max } = c.stats;
      if (typeof min !== 'number' || typeof max !== 'number') continue;
      const k = c.name.toLowerCase();
      const cur = out.get(k);
      out.set(k, cur ? { min: Math.min(cur.min, min), max: Math.max(cur.max, max) } : { min, max });
    }
  }
  return (column) => out.get(column);
}

export class Answerer {
  private readonly open = new Map<string, Promise<AnswerResources>>();
  private readonly memories = new Map<string, { path: string; file: MemoryFile }>();

  constructor(
    private readonly executor: SqlExecutor,
    private readonly opts: AnswererOptions = {},
  ) {
    for (const path of opts.memory ?? []) {
      const file = readMemory(path);
      this.memories.set(file.dbId, { path, file });
    }
  }

  private resources(db: string, dbId: string): Promise<AnswerResources> {
    let r = this.open.get(db);
    if (!r) {
      r = (async () => {
        const schema = await introspectDatabase(db);
        const mem = this.memories.get(dbId);
        // Checked against the schema the questions run on: a memory of an edited or other database is refused.
        if (mem) checkMemorySchema(mem.file, schema, mem.path);
        const memory = mem ? new MemoryIndex(mem.file) : undefined;
        const docs = this.opts.docs?.(db) ?? (await databaseDocs(db));
        const [index, language] = await Promise.all([databaseValueIndex(db), databaseLanguageOf(schema, this.executor, docs)]);
        const reader = await makeReader(schema, this.executor, docs, undefined, language);
        const synth = makeQuestionSynth(schema, this.executor, db, language.graph, language.profiles, index);
        return { executor: this.executor, dbPath: db, ...(memory ? { memory } : {}), values: (q: string) => index.lookup(q, { limit: 10 }), reader, synth, ranges: columnRanges(schema) };
      })();
      this.open.set(db, r);
    }
    return r;
  }

  /** The answer path on one question; `config` overrides this answerer's for the one call (a follow-up asks no memory). */
  async answer(db: string, dbId: string, question: string, policy: readonly PolicyAnswer[], config: Partial<AnswerConfig> = {}): Promise<Answer> {
    return answerQuestion(question, policy, await this.resources(db, dbId), { ...this.opts.config, ...config });
  }
}
