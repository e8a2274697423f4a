/**
 * What the answer path needs of a database, opened once and kept: its schema, value index, the factory's
 * reader, and its memory store when one is given (checked against the schema). One `Answerer` serves every
 * question of every database a run asks about (predict's many, ask's one). The memory's changes are applied
 * at each question, so a correction stored (here, by `agro memory add`, or by another server) is used from the
 * next question on.
 */
import { statSync } from 'node:fs';
import type { DbDocs } from '../prompt/docs-types.ts';
import { introspectDatabase } from '../sql/executor.ts';
import { dialectOf } from '../sql/dialect.ts';
import { schemaSpelling } from '../sql/spelling.ts';
import { databaseDocs, databaseValueIndex } from '../prompt/sources.ts';
import type { DbSchema, SqlExecutor } from '../sql/types.ts';
import { AgroError } from '../errors.ts';
import type { ColumnRange } from './edit.ts';
import { answerQuestion, type Answer, type AnswerConfig, type AnswerResources, type CandidateJudge, type PolicyAnswer } from './answer.ts';
import { countedNames } from './intent.ts';
import { returnedNames } from './returned.ts';
import { swapNames } from './swap.ts';
import { storeCorrection } from '../memory/build.ts';
import { openMemory } from '../memory/legacy.ts';
import type { MemoryStore, StoredEntry } from '../memory/store.ts';
import { MemoryIndex } from './memory.ts';
import { databaseLanguageOf, makeReader } from './reading.ts';
import { suggestQuestions, SUGGESTIONS } from './suggest.ts';
import { makeQuestionSynth } from './synth.ts';

export interface AnswererOptions {
  /** Memory files; each serves the database its dbId names. */
  memory?: readonly string[];
  /** Documentation per database path (else found beside it, as everywhere). */
  docs?: (db: string) => DbDocs | undefined;
  config?: Partial<AnswerConfig>;
  /** The learned judge (src/judge): the confidence, and the choice under `chooser: 'judge'`; without one, the transparent ranker's. */
  judge?: CandidateJudge | undefined;
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

/** A database's memory store, held open, and the index of it as of the store's sequence `seq`. */
interface HeldMemory {
  path: string;
  store: MemoryStore;
  ino: number;
  index?: MemoryIndex;
  seq: number;
  generation: string;
}

const inodeOf = (path: string): number | undefined => {
  try {
    return statSync(path).ino;
  } catch {
    return undefined;
  }
};

const hold = (store: MemoryStore): HeldMemory => ({ path: store.path, store, ino: inodeOf(store.path) ?? -1, seq: 0, generation: '' });

type Opened = { res: Omit<AnswerResources, 'memory'>; schema: DbSchema };

export class Answerer {
  private readonly open = new Map<string, Promise<Opened>>();
  private readonly memories = new Map<string, HeldMemory>();

  constructor(
    private readonly executor: SqlExecutor,
    private readonly opts: AnswererOptions = {},
  ) {
    for (const path of opts.memory ?? []) {
      const store = openMemory(path);
      this.memories.set(store.meta().dbId, hold(store));
    }
  }

  private opened(db: string): Promise<Opened> {
    let r = this.open.get(db);
    if (!r) {
      r = (async () => {
        const schema = await introspectDatabase(db);
        const docs = this.opts.docs?.(db) ?? (await databaseDocs(db));
        const [index, language] = await Promise.all([databaseValueIndex(db), databaseLanguageOf(schema, this.executor, docs)]);
        const reader = await makeReader(schema, this.executor, docs, undefined, language);
        const synth = makeQuestionSynth(schema, this.executor, db, language.graph, language.profiles, index);
        return { schema, res: { executor: this.executor, dbPath: db, values: (q: string) => index.lookup(q, { limit: 10 }), reader, synth, ranges: columnRanges(schema), counted: countedNames(schema.tables.map((t) => t.name)), returned: returnedNames(schema), swaps: swapNames(schema) } };
      })();
      this.open.set(db, r);
    }
    return r;
  }

  /**
   * The memory of a database as its store is now, checked against the schema the questions run on (a memory of an
   * edited or other database is refused): built once, then kept current with the store's changes since (a
   * correction here, by `agro memory add`, or by another server), rebuilt when the store was rebuilt or replaced.
   */
  private memoryIndex(dbId: string, schema: DbSchema): MemoryIndex | undefined {
    const mem = this.held(dbId);
    if (!mem) return undefined;
    if (mem.index) {
      const c = mem.store.changes(mem.seq);
      if (c.generation === mem.generation) {
        mem.index.apply(c.added, c.removed);
        mem.seq = c.seq;
        return mem.index;
      }
    }
    mem.store.check(schema);
    const snap = mem.store.snapshot();
    mem.index = new MemoryIndex(snap);
    mem.seq = snap.seq;
    mem.generation = snap.generation;
    return mem.index;
  }

  /** The store of a database's memory, reopened when its file was replaced (a rebuild, a conversion) since. */
  private held(dbId: string): HeldMemory | undefined {
    let mem = this.memories.get(dbId);
    if (!mem) return undefined;
    const ino = inodeOf(mem.path);
    if (ino !== undefined && ino !== mem.ino) {
      mem.store.close();
      mem = hold(openMemory(mem.path));
      this.memories.set(dbId, mem);
    }
    return mem;
  }

  /** People's corrections in a database's memory, oldest first (removed or replaced ones too when asked); none without a memory. */
  corrections(dbId: string, o: { since?: string; removed?: boolean } = {}): StoredEntry[] {
    return this.held(dbId)?.store.list({ source: 'person', ...o }) ?? [];
  }

  /** Undoes a person's correction (kept in the store as removed); false when the memory has no live correction of that id. */
  removeCorrection(dbId: string, id: number): boolean {
    return this.held(dbId)?.store.remove(id, { source: 'person' }) ?? false;
  }

  /** The memory file this answerer consults for a database (where a correction of it is stored), if any. */
  memoryPath(dbId: string): string | undefined {
    return this.memories.get(dbId)?.path;
  }

  /** The answer path on one question; `config` overrides this answerer's for the one call (a follow-up asks no memory). */
  async answer(db: string, dbId: string, question: string, policy: readonly PolicyAnswer[], config: Partial<AnswerConfig> = {}): Promise<Answer> {
    const { res, schema } = await this.opened(db);
    const memory = this.memoryIndex(dbId, schema);
    const a = await answerQuestion(question, policy, { ...res, ...(memory ? { memory } : {}), ...(this.opts.judge ? { judge: this.opts.judge } : {}) }, { ...this.opts.config, ...config });
    // What a person sees and copies names tables and columns as the schema does (sql/spelling.ts).
    const spell = (sql: string): string => schemaSpelling(sql, schema, dialectOf(db));
    return { ...a, sql: a.sql === null ? null : spell(a.sql), candidates: a.candidates.map((c) => ({ ...c, sql: spell(c.sql) })) };
  }

  /** Up to `k` other questions the database's memory holds about the tables the answered SQL reads (suggest.ts). */
  async suggestions(db: string, dbId: string, answered: { sql: string; question: string }, k = SUGGESTIONS): Promise<string[]> {
    if (!this.memories.has(dbId)) return [];
    const { schema } = await this.opened(db);
    const index = this.memoryIndex(dbId, schema);
    return index ? suggestQuestions(index.memory.entries, answered, k) : [];
  }

  /**
   * A person's pair stored in the database's memory (memory.ts storeCorrection: the SQL runs in the sandbox first;
   * refused or failing SQL writes nothing), used from the next question on. Without a memory of the database, `start`
   * names where to begin one (written with the first pair that runs); without that, one line (usage), nothing written.
   */
  async correct(db: string, dbId: string, question: string, sql: string, start?: string): Promise<{ id: number; path: string; rows: number; columns: string[] }> {
    const path = this.memories.get(dbId)?.path ?? start;
    if (!path) throw new AgroError('usage', `no memory of ${dbId} to store a correction in (agro memory build makes one)`);
    const { schema } = await this.opened(db);
    const r = await storeCorrection(path, db, schema, question, sql, this.executor, { create: dbId });
    if (!this.memories.has(dbId)) this.memories.set(dbId, hold(openMemory(r.path)));
    return { id: r.entry.id, path: r.path, rows: r.rows.length, columns: r.columns };
  }
}
