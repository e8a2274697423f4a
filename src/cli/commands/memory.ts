/**
 * `agro memory`: a database's memory of verified pairs (src/memory), which the answer path consults.
 *   build  from a dataset (a factory output names its database; else --db)
 *   add    a person's pair: the SQL runs in the sandbox first, and only a query that runs is stored
 *   show   what a memory holds, and the pairs nearest a question
 *   list   its pairs with who wrote them and when (people's corrections: --source person)
 *   remove a pair by id (a correction undone): marked removed, kept for the record
 *   export its pairs as JSON lines
 *   migrate a memory.json of an earlier agro to a store
 *   grow   more of the factory's pairs, round by round, within a time budget (src/pipeline/grow.ts)
 * The memory lives in a SQLite store (src/memory/store.ts): each correction is one transaction, so several
 * processes may add at once.
 */
import { dirname, join, resolve } from 'node:path';
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { AgroError } from '../../errors.ts';
import { catalogFromFactoryOutput, factoryOutputOf } from '../../data/catalog.ts';
import { readDataset } from '../../data/read-dataset.ts';
import { createExecutor, introspectDatabase } from '../../sql/executor.ts';
import { isPostgresUrl, redactUrl } from '../../sql/postgres.ts';
import { readJsonl } from '../../util/fs.ts';
import { buildMemory, storeCorrection } from '../../memory/build.ts';
import { MEMORY_STORE, memorySourceSchema, pairsOfDataset, sinceTime, type MemoryPair } from '../../memory/entry.ts';
import { migrateMemory, openMemory, readMemory, storePathOf } from '../../memory/legacy.ts';
import { memoryFileKind, writeMemory, type StoredEntry } from '../../memory/store.ts';
import { MemoryIndex } from '../../answer/memory.ts';
import { numberArg } from '../options.ts';
import { duration, printErr, printOut } from '../print.ts';
import { stageBars } from '../progress.ts';
import { documentationOf } from '../../prompt/sources.ts';
import { MEMORY_RECIPE } from '../../factory/memory-recipe.ts';
import { DEFAULT_GROW_MINUTES, growMemory, type GrowStop } from '../../pipeline/grow.ts';
import { databaseId } from '../../sql/db-id.ts';


async function build(o: { data: string; db?: string; out?: string }): Promise<void> {
  const factory = factoryOutputOf(o.data);
  const data = factory === o.data ? join(o.data, 'dataset.jsonl') : o.data;
  if (!existsSync(data)) throw new AgroError('not_found', `memory build: ${data} not found`);
  const db = o.db ?? (factory ? catalogFromFactoryOutput(factory).resolve(readDataset(data).items[0]?.dbId ?? '').path : undefined);
  if (!db) throw new AgroError('usage', 'memory build: give --db (the data is not a factory output, which names its database)');
  const pairs: MemoryPair[] = data.endsWith('.jsonl') ? pairsOfDataset(readJsonl(data)) : readDataset(data).items.flatMap((it) => (it.question ? [{ sql: it.gold, question: it.question }] : []));
  if (!pairs.length) throw new AgroError('invalid_input', `memory build: ${data} holds no (question, SQL) pairs`);
  const out = o.out ?? join(factory ?? dirname(resolve(data)), MEMORY_STORE);
  const exec = createExecutor({ size: 2 });
  try {
    const schema = await introspectDatabase(db);
    const memory = await buildMemory(readDataset(data).items[0]?.dbId ?? databaseId(db), schema, pairs, exec, db);
    writeMemory(out, memory);
    const questions = memory.entries.reduce((a, e) => a + e.questions.length, 0);
    printOut(`wrote ${out}: ${memory.entries.length} queries asked ${questions} ways, of ${isPostgresUrl(db) ? redactUrl(db) : db}\n`);
    printOut(`next: agro ask --db ${isPostgresUrl(db) ? redactUrl(db) : db} --memory ${out} 'your question'\n`);
  } finally {
    await exec.close();
  }
}

async function add(o: { memory: string; db: string; question: string; sql: string }): Promise<void> {
  const exec = createExecutor({ size: 1 });
  try {
    const r = await storeCorrection(o.memory, o.db, await introspectDatabase(o.db), o.question, o.sql, exec);
    printOut(`stored in ${r.path} as pair ${r.entry.id}: "${o.question.trim()}" -> ${o.sql.trim()} (${r.rows.length} rows)\n`);
  } finally {
    await exec.close();
  }
}

function show(o: { memory: string; question?: string; k: number }): void {
  const memory = readMemory(o.memory);
  const people = memory.entries.filter((e) => e.source === 'person').length;
  printOut(`${o.memory}: database ${memory.dbId}, ${memory.entries.length} queries (${people} from people)\n`);
  if (!o.question) return;
  for (const r of new MemoryIndex(memory).nearest(o.question, o.k)) printOut(`${r.score.toFixed(3)}  ${r.question}\n       ${r.entry.sql}\n`);
}

/** A time given to --since: an ISO date or date-time (what the store records), else one line and exit 2. */
function sinceArg(v: string): string {
  const t = sinceTime(v);
  if (t === undefined) throw new AgroError('usage', `--since: give an ISO date or time such as 2026-12-01 or 2026-12-01T09:30:00Z, not ${JSON.stringify(v)}`);
  return t;
}

function sourceArg(v: string): 'factory' | 'person' {
  const r = memorySourceSchema.safeParse(v);
  if (!r.success) throw new AgroError('usage', `--source: factory or person, not ${JSON.stringify(v)}`);
  return r.data;
}

function list(o: { memory: string; source?: 'factory' | 'person'; since?: string; removed?: boolean }): void {
  const store = openMemory(o.memory);
  try {
    const rows = store.list({ ...(o.source ? { source: o.source } : {}), ...(o.since ? { since: o.since } : {}), removed: !!o.removed });
    for (const e of rows) {
      const fate = e.replacedBy ? `  (replaced by ${e.replacedBy})` : e.removedAt ? '  (removed)' : '';
      printOut(`${String(e.id).padStart(6)}  ${e.source.padEnd(7)}  ${(e.at ?? '-').padEnd(24)}  ${JSON.stringify(e.questions[0])}  ${e.sql}${fate}\n`);
    }
    process.stderr.write(`${rows.length} pair${rows.length === 1 ? '' : 's'} in ${store.path}\n`);
  } finally {
    store.close();
  }
}

function remove(o: { memory: string; id: string }): void {
  if (!/^[1-9]\d{0,15}$/.test(o.id)) throw new AgroError('usage', `memory remove: the id is a pair's number (agro memory list shows them), not ${JSON.stringify(o.id)}`);
  const store = openMemory(o.memory);
  try {
    if (!store.remove(Number(o.id))) throw new AgroError('not_found', `memory remove: no live pair ${o.id} in ${store.path}`);
    printOut(`removed pair ${o.id} from ${store.path}\n`);
  } finally {
    store.close();
  }
}

function exportPairs(o: { memory: string; format: string; removed?: boolean }): void {
  if (o.format !== 'jsonl') throw new AgroError('usage', `memory export: --format jsonl is the one format, not ${JSON.stringify(o.format)}`);
  const store = openMemory(o.memory);
  try {
    const { dbId } = store.meta();
    for (const e of store.list({ removed: !!o.removed }) as StoredEntry[]) printOut(`${JSON.stringify({ db_id: dbId, ...e })}\n`);
  } finally {
    store.close();
  }
}

const GROW_STOPS: Record<GrowStop, string> = {
  minutes: 'the time budget is spent',
  rounds: 'the rounds asked for are done',
  pairs: 'the memory holds the pairs asked for',
  saturated: 'the factory finds few new queries on this database',
};

async function grow(o: { db: string; memory: string; minutes?: number; rounds?: number; pairs?: number; batch?: number; docs?: string; json?: boolean }): Promise<void> {
  const quiet = Boolean(o.json) || !process.stderr.isTTY;
  const r = await growMemory(
    { db: o.db, memory: o.memory, create: databaseId(o.db), ...(o.minutes !== undefined ? { minutes: o.minutes } : {}), ...(o.rounds !== undefined ? { rounds: o.rounds } : {}), ...(o.pairs !== undefined ? { pairs: o.pairs } : {}), ...(o.batch !== undefined ? { batch: o.batch } : {}), docs: await documentationOf(o.db, o.docs) },
    {
      progress: stageBars(!quiet),
      log: (line) => printErr(`agro: ${line}\n`),
      onRound: (x) => printErr(`agro: memory grow: round ${x.round}${x.resumed ? ' (resumed)' : ''}: ${x.made} pairs made, ${x.added} new queries, ${x.merged} with new questions; ${x.size} queries in memory (${duration(x.seconds * 1000)})\n`),
    },
  );
  if (o.json) {
    printOut(JSON.stringify({ memory: o.memory, before: r.before, size: r.size, rounds: r.rounds, stopped: r.stopped, seconds: Math.round(r.seconds * 10) / 10 }) + '\n');
    return;
  }
  printOut(`grew ${o.memory}: ${r.before} -> ${r.size} queries in ${r.rounds.length} round${r.rounds.length === 1 ? '' : 's'} (${duration(r.seconds * 1000)}); stopped: ${GROW_STOPS[r.stopped]}\n`);
}

function migrate(o: { file: string; out?: string }): void {
  // A store there already may hold people's corrections: converting over it would replace them unasked.
  const out = o.out ?? storePathOf(o.file);
  const kind = memoryFileKind(out);
  if (kind !== 'none' && kind !== 'empty') throw new AgroError('usage', `memory migrate: ${out} exists; give another --out, or remove it first (agro memory export keeps its pairs)`);
  const r = migrateMemory(o.file, out);
  printOut(`wrote ${r.out}: ${r.entries} pairs of ${o.file}\n`);
}

export function register(program: Command): void {
  const cmd = program.command('memory').description("A database's memory of verified (question, SQL) pairs, which ask, predict and serve answer with");
  cmd
    .command('build')
    .description('Build a memory from a dataset (a factory output names its database)')
    .requiredOption('--data <path>', 'a factory output (folder or dataset.jsonl), or a BIRD/Spider question file with --db')
    .option('--db <path>', 'the database (SQLite file or postgres:// URL); default: the one the factory output names')
    .option('--out <file>', `where to write it (default: ${MEMORY_STORE} beside the data)`)
    .action((o) => build(o));
  cmd
    .command('add')
    .description("Store a person's pair (a correction): the SQL must run on the database")
    .requiredOption('--memory <file>', 'the memory store')
    .requiredOption('--db <path>', 'the database the memory serves')
    .requiredOption('--question <text>', 'the question')
    .requiredOption('--sql <sql>', 'the right SQL for it')
    .action((o) => add(o));
  cmd
    .command('show')
    .description('What a memory holds; with --question, its nearest pairs')
    .requiredOption('--memory <file>', 'the memory store')
    .option('--question <text>', 'a question to look up')
    .option('-k <n>', 'pairs to show', numberArg('-k', { min: 1, max: 100 }), 5)
    .action((o) => show(o));
  cmd
    .command('list')
    .description('Its pairs, oldest first: id, source, time, first question, SQL')
    .requiredOption('--memory <file>', 'the memory store')
    .option('--source <who>', 'only factory or person pairs', sourceArg)
    .option('--since <time>', 'only pairs stored at or after an ISO date or time', sinceArg)
    .option('--removed', 'also pairs removed or replaced')
    .action((o) => list(o));
  cmd
    .command('remove')
    .description('Remove a pair by id (kept in the store as removed, listed with --removed)')
    .requiredOption('--memory <file>', 'the memory store')
    .argument('<id>', 'the pair, as agro memory list numbers it')
    .action((id: string, o) => remove({ ...o, id }));
  cmd
    .command('export')
    .description('Its pairs as JSON lines, one per pair, with source and time')
    .requiredOption('--memory <file>', 'the memory store')
    .option('--format <format>', 'jsonl', 'jsonl')
    .option('--removed', 'also pairs removed or replaced')
    .action((o) => exportPairs(o));
  cmd
    .command('migrate')
    .description(`Convert a memory.json of an earlier agro to a store (${MEMORY_STORE} beside it)`)
    .argument('<file>', 'the memory.json')
    .option('--out <file>', 'where to write the store')
    .action((file: string, o) => migrate({ ...o, file }));
  cmd
    .command('grow')
    .description("More of the factory's verified pairs, round by round within a time budget; resumable (rerun after a kill), and a running agro serve or chat picks them up")
    .requiredOption('--db <path>', 'the database the memory serves (SQLite file or postgres:// URL)')
    .requiredOption('--memory <file>', `the memory store (started when missing)`)
    .option('--minutes <m>', `time budget, rounds sized to fit it (default ${DEFAULT_GROW_MINUTES} when neither --rounds nor --pairs is given)`, numberArg('--minutes', { min: 0.01, max: 24 * 60, integer: false }))
    .option('--rounds <n>', 'at most this many rounds, each of --batch pairs when there is no --minutes', numberArg('--rounds', { min: 1, max: 10_000 }))
    .option('--pairs <n>', 'stop once the memory holds this many queries', numberArg('--pairs', { min: 1, max: 10_000_000 }))
    .option('--batch <n>', `pairs one round asks the factory for, at most (default ${MEMORY_RECIPE.pairs}, the memory recipe)`, numberArg('--batch', { min: 1, max: 1_000_000 }))
    .option('--docs <path>', "the database's documentation, as agro synth --docs reads it")
    .option('--json', 'print a JSON summary instead of text (no progress bars)')
    .action((o) => grow(o));
}
