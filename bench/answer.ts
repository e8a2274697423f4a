// `npm run bench -- answer [--pairs 2400] [--rows 1000000] [--index 40000] [--out runs/bench-answer]`
// The answer path's cost, without a policy (its five episodes come on top, and depend on the model):
//   1. the bundled databases: the factory's pairs (`agro synth --n <pairs>`) as the memory, then every question of
//      data/dev.json about that database answered; median and p90 time per question to choose;
//   2. a table of <rows> rows (made here, deterministic): a memory from its own synth, a few questions, the time
//      per question (the budget bounds question-time synthesis and the candidates' runs);
//   3. an index of <index> remembered questions: its build time and the heap it holds, beside the file's size.
// Every figure is this machine's, under whatever else runs (the load is printed).
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { Answerer } from '../src/answer/resources.ts';
import type { MemoryFile } from '../src/memory/entry.ts';
import { readMemory } from '../src/memory/legacy.ts';
import { MemoryIndex } from '../src/answer/memory.ts';
import { createExecutor } from '../src/sql/executor.ts';
import { quantile } from '../src/util/stats.ts';
import { flag, num } from './_args.ts';
import { agroCli } from './_agro.ts';
import { table } from './rl.ts';


async function timeQuestions(db: string, dbId: string, memory: string, questions: string[]): Promise<number[]> {
  const exec = createExecutor({ size: 2 });
  try {
    const answerer = new Answerer(exec, { memory: [memory] });
    // The database's resources (schema, value index, the factory's language, the memory's index) open once: timed apart.
    await answerer.answer(db, dbId, 'warm up', []);
    const ms: number[] = [];
    for (const q of questions) ms.push((await answerer.answer(db, dbId, q, [])).ms);
    return ms;
  } finally {
    await exec.close();
  }
}

/** A table of n rows with a category, a year, an amount and a name: filters and aggregates over it read it all. */
function bigDatabase(path: string, n: number): void {
  if (existsSync(path)) return;
  const db = new Database(path);
  db.exec('CREATE TABLE regions (region_id INTEGER PRIMARY KEY, name TEXT); CREATE TABLE sales (sale_id INTEGER PRIMARY KEY, region_id INTEGER REFERENCES regions(region_id), category TEXT, year INTEGER, amount REAL, customer TEXT)');
  const regions = ['North', 'South', 'East', 'West', 'Central'];
  regions.forEach((r, i) => db.prepare('INSERT INTO regions VALUES (?, ?)').run(i + 1, r));
  const cats = ['Books', 'Garden', 'Toys', 'Music', 'Sports', 'Kitchen'];
  const ins = db.prepare('INSERT INTO sales VALUES (?, ?, ?, ?, ?, ?)');
  let x = 12345;
  const rnd = (): number => ((x = (x * 1103515245 + 12345) % 2147483648) / 2147483648);
  db.transaction(() => {
    for (let i = 1; i <= n; i++) ins.run(i, 1 + Math.floor(rnd() * 5), cats[Math.floor(rnd() * cats.length)], 2000 + Math.floor(rnd() * 25), Math.round(rnd() * 100000) / 100, `Customer ${Math.floor(rnd() * 5000)}`);
  })();
  db.close();
}

export async function run(args: string[]): Promise<void> {
  const pairs = num(args, '--pairs', 2400);
  const rows = num(args, '--rows', 1_000_000);
  const indexSize = num(args, '--index', 40_000);
  const out = resolve(flag(args, '--out', 'runs/bench-answer'));
  mkdirSync(out, { recursive: true });
  const log = join(out, 'bench.log');
  const lines: string[][] = [['database', 'pairs in memory', 'questions', 'median ms', 'p90 ms', 'load']];

  // 1. The bundled databases and their questions in data/dev.json.
  const dev = JSON.parse(readFileSync('data/dev.json', 'utf8')) as { db_id: string; question: string }[];
  for (const dbId of [...new Set(dev.map((q) => q.db_id))]) {
    const db = resolve('data/databases', dbId, `${dbId}.sqlite`);
    const synth = join(out, dbId);
    if (!existsSync(join(synth, 'memory.db'))) agroCli(['synth', '--db', db, '--out', synth, '--n', String(pairs), '--variants', '0', '--phrasings', '2', '--json'], { log });
    const ms = await timeQuestions(db, dbId, join(synth, 'memory.db'), dev.filter((q) => q.db_id === dbId).map((q) => q.question));
    lines.push([dbId, String(readMemory(join(synth, 'memory.db')).entries.length), String(ms.length), Math.round(quantile(ms, 0.5)).toString(), Math.round(quantile(ms, 0.9)).toString(), loadavg()[0].toFixed(1)]);
  }

  // 2. A table of `rows` rows.
  const big = join(out, 'big', 'big.sqlite');
  mkdirSync(join(out, 'big'), { recursive: true });
  bigDatabase(big, rows);
  const bigSynth = join(out, 'big-synth');
  if (!existsSync(join(bigSynth, 'memory.db'))) agroCli(['synth', '--db', big, '--out', bigSynth, '--n', '200', '--variants', '0', '--json'], { log });
  const bigQs = ['How many sales were there in 2010?', 'What is the total amount of Garden sales?', 'Which category has the most sales?', 'What is the average amount of sales in the North region?', 'List the customers of sales over 999 in 2024.', 'How many sales of Toys were made after 2015?'];
  const bigMs = await timeQuestions(big, 'big', join(bigSynth, 'memory.db'), bigQs);
  lines.push([`big (${rows.toLocaleString('en')} rows)`, String(readMemory(join(bigSynth, 'memory.db')).entries.length), String(bigMs.length), Math.round(quantile(bigMs, 0.5)).toString(), Math.round(quantile(bigMs, 0.9)).toString(), loadavg()[0].toFixed(1)]);
  table(lines);

  // 3. An index of `indexSize` remembered questions (the bundled pairs repeated with numbered wording).
  const base = readMemory(join(out, 'music_store', 'memory.db'));
  const entries: MemoryFile['entries'] = [];
  for (let i = 0; entries.length < indexSize; i++) {
    const e = base.entries[i % base.entries.length];
    entries.push({ ...e, sql: `${e.sql} -- ${i}`, questions: e.questions.map((q) => `${q} (${i})`) });
  }
  const file = { ...base, entries };
  (globalThis as { gc?: () => void }).gc?.();
  const heap0 = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  const index = new MemoryIndex(file);
  const buildMs = performance.now() - t0;
  (globalThis as { gc?: () => void }).gc?.();
  const heap1 = process.memoryUsage().heapUsed;
  const q0 = performance.now();
  for (let i = 0; i < 100; i++) index.nearest(base.entries[i % base.entries.length].questions[0], 20);
  const lookupMs = (performance.now() - q0) / 100;
  const bytes = Buffer.byteLength(JSON.stringify(file));
  console.log(`\nmemory index of ${indexSize.toLocaleString('en')} pairs (${entries.reduce((a, e) => a + e.questions.length, 0).toLocaleString('en')} questions): built in ${(buildMs / 1000).toFixed(1)} s, heap +${Math.round((heap1 - heap0) / 2 ** 20)} MiB${(globalThis as { gc?: unknown }).gc ? '' : ' (run node with --expose-gc for an exact figure)'}, file ${Math.round(bytes / 2 ** 20)} MiB, ${lookupMs.toFixed(1)} ms a lookup; process RSS ${Math.round(process.memoryUsage().rss / 2 ** 20)} MiB`);
  console.log(`data: ${out} (kept: a rerun reuses its synth outputs)`);
}
