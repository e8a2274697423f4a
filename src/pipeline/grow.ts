/**
 * Growing a database's memory (`agro memory grow`): rounds of the factory at the memory's recipe, each with a seed
 * of its own, their verified pairs appended to the store in one transaction together with the round counter. A
 * kill loses nothing committed; the round it interrupts resumes from the factory's own stage checkpoints (kept in
 * a work folder beside the store, with the round's size), so a resumed grow ends with the pairs an uninterrupted
 * one would have. A server answering from the store (`agro serve`, `agro chat`) picks the new pairs up as it picks
 * up corrections.
 *
 * Under a time budget the rounds are sized by the factory's measured speed on this database (the first is a short
 * probe), so a slow database, a 10M-row table behind the cost gate, costs at most about one probe beyond the budget.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { parseWith } from '../errors.ts';
import { dropServerVariants } from '../factory/augment.ts';
import { MEMORY_RECIPE } from '../factory/memory-recipe.ts';
import { runFactory } from '../factory/pipeline.ts';
import { buildMemory } from '../memory/build.ts';
import { pairsOfDataset } from '../memory/entry.ts';
import { openMemory } from '../memory/legacy.ts';
import { memoryFileKind } from '../memory/store.ts';
import { dbDocsSchema } from '../prompt/docs-types.ts';
import { createExecutor, introspectDatabase } from '../sql/executor.ts';
import { isPostgresUrl } from '../sql/postgres.ts';
import type { SqlExecutor } from '../sql/types.ts';
import { ensureDir, writeFileAtomic } from '../util/fs.ts';
import type { ProgressSink } from '../util/progress.ts';

/** The first round's seed: `agro synth` (which made the memory) defaults to seed 0, so a grow asks for others. */
const SEED_BASE = 1;
/** Pairs of the first round under a time budget: enough to measure the factory's speed on this database. */
export const PROBE_PAIRS = 300;
/** Under a time budget, a round the rest of it cannot pay for at least this many pairs is not started. */
const MIN_ROUND_PAIRS = 100;
/** Rounds in a row adding under 1% of their pairs as new queries: the factory has little more to say here. */
const SATURATED_ROUNDS = 2;
/** The store's meta key counting committed rounds. */
const ROUNDS_KEY = 'grow_rounds';

/** The time budget of a grow given none (nor rounds, nor pairs). */
export const DEFAULT_GROW_MINUTES = 5;

export const growOptionsSchema = z.object({
    db: z.string().min(1),
    memory: z.string().min(1),
    /** Time budget; rounds are sized to fit it. */
    minutes: z.number().positive().max(24 * 60).optional(),
    /** At most this many rounds (each of `batch` pairs when there is no time budget). */
    rounds: z.number().int().positive().max(10_000).optional(),
    /** Stop once the memory holds this many queries. */
    pairs: z.number().int().positive().max(10_000_000).optional(),
    /** Pairs a round asks the factory for, at most. */
    batch: z.number().int().min(1).default(MEMORY_RECIPE.pairs),
    docs: dbDocsSchema.optional(),
    /** The database's id for a memory the grow starts (none at `memory`). */
    create: z.string().min(1).optional(),
  });
export type GrowOptions = z.input<typeof growOptionsSchema>;

export interface GrowRound {
  round: number;
  seed: number;
  /** Pairs the factory asked for and verified pairs it made. */
  asked: number;
  made: number;
  /** Queries new to the memory, and queries it held that gained questions. */
  added: number;
  merged: number;
  seconds: number;
  /** Queries in the memory after the round. */
  size: number;
  resumed: boolean;
}

export type GrowStop = 'minutes' | 'rounds' | 'pairs' | 'saturated';

export interface GrowResult {
  before: number;
  size: number;
  rounds: GrowRound[];
  stopped: GrowStop;
  seconds: number;
}

export interface GrowRunOptions {
  executor?: SqlExecutor;
  progress?: ProgressSink;
  log?: (line: string) => void;
  /** One line per committed round. */
  onRound?: (r: GrowRound) => void;
  /** Stop the factory after this stage of a round (as if killed): for tests of resume. */
  stopAfter?: string;
}

/**
 * The round in progress, as the work folder remembers it: its size must match for the checkpoints to be reused
 * (its seed follows from its number). A plan that does not read is no plan: the round starts again.
 */
const planSchema = z.object({ round: z.number().int(), asked: z.number().int() });

function readPlan(path: string): z.infer<typeof planSchema> | undefined {
  if (!existsSync(path)) return undefined;
  try {
    const p = planSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
    return p.success ? p.data : undefined;
  } catch {
    return undefined;
  }
}

export const growWorkDir = (memory: string): string => `${memory}.grow`;

export async function growMemory(input: GrowOptions, opts: GrowRunOptions = {}): Promise<GrowResult> {
  const o = parseWith(growOptionsSchema, input, 'memory grow', 'usage');
  const t0 = performance.now();
  const minutes = o.minutes ?? (o.rounds === undefined && o.pairs === undefined ? DEFAULT_GROW_MINUTES : undefined);
  const deadline = minutes !== undefined ? t0 + minutes * 60_000 : Infinity;
  const schema = await introspectDatabase(o.db);
  const starts = o.create !== undefined && memoryFileKind(o.memory) === 'none';
  if (starts) ensureDir(dirname(o.memory));
  const store = openMemory(o.memory, { ...(opts.log ? { note: opts.log } : {}), ...(starts ? { create: { dbId: o.create!, schema } } : {}) });
  // The factory's own queries (src/sql/pg-role.ts), as agro synth runs them.
  const executor = opts.executor ?? createExecutor({ size: 2, allowPrivilegedRole: true });
  const work = growWorkDir(o.memory);
  const planPath = join(work, 'round.json');
  try {
    store.check(schema);
    const dbId = store.meta().dbId;
    const before = store.size();
    let size = before;
    const rounds: GrowRound[] = [];
    let rate: number | undefined;
    let low = 0;
    let stopped: GrowStop;
    for (;;) {
      const done = Number(store.metaValue(ROUNDS_KEY) ?? 0);
      if (o.rounds !== undefined && rounds.length >= o.rounds) { stopped = 'rounds'; break; }
      if (o.pairs !== undefined && size >= o.pairs) { stopped = 'pairs'; break; }
      if (low >= SATURATED_ROUNDS) { stopped = 'saturated'; break; }
      const seed = SEED_BASE + done;
      const plan = readPlan(planPath);
      const resumed = plan?.round === done + 1;
      let asked: number;
      if (plan && resumed) asked = plan.asked;
      else {
        rmSync(work, { recursive: true, force: true });
        const left = (deadline - performance.now()) / 1000;
        asked = minutes === undefined ? o.batch : Math.min(o.batch, rate === undefined ? PROBE_PAIRS : Math.floor(rate * left));
        if (!(left > 0) || asked < Math.min(MIN_ROUND_PAIRS, o.batch)) { stopped = 'minutes'; break; }
        ensureDir(work);
        writeFileAtomic(planPath, JSON.stringify({ round: done + 1, asked }) + '\n');
      }
      const r0 = performance.now();
      const out = join(work, `round-${done + 1}`);
      const r = await runFactory(
        { db: o.db, out, n: asked, seed, variants: MEMORY_RECIPE.variants, phrasings: MEMORY_RECIPE.phrasings, ...(o.docs ? { docs: o.docs } : {}) },
        { executor, ...(opts.progress ? { progress: opts.progress } : {}), ...(opts.log ? { log: opts.log } : {}), ...(opts.stopAfter ? { stopAfter: opts.stopAfter } : {}) },
      );
      const memory = await buildMemory(dbId, schema, pairsOfDataset(r.rows), executor, o.db);
      const { added, merged } = store.addFactory(memory.entries, { [ROUNDS_KEY]: String(done + 1) });
      if (isPostgresUrl(o.db)) await dropServerVariants(o.db, join(out, 'variants', r.manifest.dbId), opts.log);
      rmSync(work, { recursive: true, force: true });
      const seconds = (performance.now() - r0) / 1000;
      // Counted in the store: a person's correction stored meanwhile counts too.
      size = store.size();
      const round: GrowRound = { round: done + 1, seed, asked, made: r.rows.length, added, merged, seconds, size, resumed };
      rounds.push(round);
      opts.onRound?.(round);
      // A resumed round's time is not the factory's speed (its early stages were read back).
      if (!resumed && seconds > 0) rate = r.rows.length / seconds;
      low = added < Math.max(1, 0.01 * asked) ? low + 1 : 0;
    }
    return { before, size, rounds, stopped, seconds: (performance.now() - t0) / 1000 };
  } finally {
    store.close();
    if (!opts.executor) await executor.close();
  }
}
