/**
 * `agro memory`: a database's memory of verified pairs (src/answer/memory.ts), which the answer path consults.
 *   build  from a dataset (a factory output names its database; else --db)
 *   add    a person's pair: the SQL runs in the sandbox first, and only a query that runs is stored
 *   show   what a memory holds, and the pairs nearest a question
 */
import { basename, dirname, extname, join, resolve } from 'node:path';
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { AgroError } from '../../errors.ts';
import { catalogFromFactoryOutput, factoryOutputOf } from '../../data/catalog.ts';
import { readDataset } from '../../data/read-dataset.ts';
import { createExecutor, introspectDatabase } from '../../sql/executor.ts';
import { isPostgresUrl, redactUrl } from '../../sql/postgres.ts';
import { pgDbId } from '../../sql/pg-introspect.ts';
import { readJsonl } from '../../util/fs.ts';
import { buildMemory, MemoryIndex, MEMORY_FILE, pairsOfDataset, readMemory, storeCorrection, writeMemory, type MemoryPair } from '../../answer/memory.ts';
import { numberArg } from '../options.ts';
import { printOut } from '../print.ts';

const dbIdOf = (db: string): string => (isPostgresUrl(db) ? pgDbId(db) : basename(db, extname(db)));

async function build(o: { data: string; db?: string; out?: string }): Promise<void> {
  const factory = factoryOutputOf(o.data);
  const data = factory === o.data ? join(o.data, 'dataset.jsonl') : o.data;
  if (!existsSync(data)) throw new AgroError('not_found', `memory build: ${data} not found`);
  const db = o.db ?? (factory ? catalogFromFactoryOutput(factory).resolve(readDataset(data).items[0]?.dbId ?? '').path : undefined);
  if (!db) throw new AgroError('usage', 'memory build: give --db (the data is not a factory output, which names its database)');
  const pairs: MemoryPair[] = data.endsWith('.jsonl') ? pairsOfDataset(readJsonl(data)) : readDataset(data).items.flatMap((it) => (it.question ? [{ sql: it.gold, question: it.question }] : []));
  if (!pairs.length) throw new AgroError('invalid_input', `memory build: ${data} holds no (question, SQL) pairs`);
  const out = o.out ?? join(factory ?? dirname(resolve(data)), MEMORY_FILE);
  const exec = createExecutor({ size: 2 });
  try {
    const schema = await introspectDatabase(db);
    const memory = await buildMemory(readDataset(data).items[0]?.dbId ?? dbIdOf(db), schema, pairs, exec, db);
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
    printOut(`stored in ${o.memory}: "${o.question.trim()}" -> ${o.sql.trim()} (${r.rows.length} rows)\n`);
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

export function register(program: Command): void {
  const cmd = program.command('memory').description("A database's memory of verified (question, SQL) pairs, which ask, predict and serve answer with");
  cmd
    .command('build')
    .description('Build a memory from a dataset (a factory output names its database)')
    .requiredOption('--data <path>', 'a factory output (folder or dataset.jsonl), or a BIRD/Spider question file with --db')
    .option('--db <path>', 'the database (SQLite file or postgres:// URL); default: the one the factory output names')
    .option('--out <file>', `where to write it (default: ${MEMORY_FILE} beside the data)`)
    .action((o) => build(o));
  cmd
    .command('add')
    .description("Store a person's pair (a correction): the SQL must run on the database")
    .requiredOption('--memory <file>', 'the memory file')
    .requiredOption('--db <path>', 'the database the memory serves')
    .requiredOption('--question <text>', 'the question')
    .requiredOption('--sql <sql>', 'the right SQL for it')
    .action((o) => add(o));
  cmd
    .command('show')
    .description('What a memory holds; with --question, its nearest pairs')
    .requiredOption('--memory <file>', 'the memory file')
    .option('--question <text>', 'a question to look up')
    .option('-k <n>', 'pairs to show', numberArg('-k', { min: 1, max: 100 }), 5)
    .action((o) => show(o));
}
