// `npm run bench -- memory [--procs 8] [--each 250] [--kill 3] [--pairs 40000] [--corrections 20] [--out runs/bench-memory]`
//
// The memory store (src/memory/store.ts) against the memory.json it replaced, in one run:
//   race   --procs writers each store --each corrections at once on one memory of the bundled database, --kill of
//          them killed at random moments; then: every acknowledged correction present once? PRAGMA integrity_check?
//          The same race (without kills) on one JSON file rewritten per correction, as agro did before.
//   scale  a memory of --pairs pairs: --corrections corrections stored one by one, each timed from the call to
//          the answer path's index holding it (store, then the reader applies the store's changes), against
//          rewriting the whole memory.json once; the store's size and this process's peak RSS; then the store read
//          and indexed by a fresh process, three times: its time, CPU and peak RSS.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { flag, num } from './_args.ts';
import { createExecutor, introspectDatabase } from '../src/sql/executor.ts';
import { buildMemory, storeCorrection } from '../src/memory/build.ts';
import { MemoryStore, writeMemory } from '../src/memory/store.ts';
import { MemoryIndex } from '../src/answer/memory.ts';
import { readJsonFile, writeJsonAtomic } from '../src/util/fs.ts';
import type { MemoryEntry } from '../src/memory/entry.ts';

const DB = 'data/databases/music_store/music_store.sqlite';
const WORKER = new URL('./_memory_worker.ts', import.meta.url).pathname;
const LOADER = new URL('./_memory_load.ts', import.meta.url).pathname;
const quantile = (xs: number[], q: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];

async function race(mode: 'store' | 'json', path: string, procs: number, each: number, kill: number): Promise<{ acked: string[]; killed: number; seconds: number }> {
  const acked: string[] = [];
  const t0 = performance.now();
  const kids = Array.from({ length: procs }, (_, p) => {
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER, mode, path, DB, String(p), String(each)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    let mine = 0;
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split('\n');
      buf = lines.pop()!;
      for (const l of lines) {
        if (!l.startsWith('ack ')) continue;
        acked.push(l.slice(4));
        mine++;
      }
    });
    return { child, acks: () => mine, done: new Promise<void>((ok) => child.on('close', () => ok())) };
  });
  // Kills: each victim at a random moment between its first acknowledged correction and its last.
  let killed = 0;
  const victims = kids.slice(0, kill);
  const timers = victims.map(
    (k) =>
      new Promise<void>((ok) => {
        const target = 1 + Math.floor(Math.random() * (each - 1));
        const tick = setInterval(() => {
          if (k.acks() >= target || k.child.exitCode !== null) {
            clearInterval(tick);
            // A little later still, so the kill lands inside a write as often as between two.
            setTimeout(() => {
              if (k.child.exitCode === null && k.child.kill('SIGKILL')) killed++;
              ok();
            }, Math.random() * 20);
          }
        }, 2);
      }),
  );
  await Promise.all([...kids.map((k) => k.done), ...timers]);
  return { acked, killed, seconds: (performance.now() - t0) / 1000 };
}

function row(cells: Array<string | number>): string {
  return cells.map((c) => String(c).padEnd(14)).join(' ');
}

export async function run(args: string[]): Promise<void> {
  const procs = num(args, '--procs', 8);
  const each = num(args, '--each', 250);
  const kill = num(args, '--kill', 3);
  const pairs = num(args, '--pairs', 40_000);
  const corrections = num(args, '--corrections', 20);
  const out = flag(args, '--out', 'runs/bench-memory');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const schema = await introspectDatabase(DB);
  const exec = createExecutor({ size: 1 });
  const base = await buildMemory('music_store', schema, [{ sql: 'SELECT COUNT(*) FROM customers', question: 'How many customers are there?' }], exec, DB);

  // race
  console.log(`race: ${procs} processes × ${each} corrections at once, ${kill} killed at random moments (${new Date().toISOString()})`);
  const storePath = join(out, 'race.db');
  writeMemory(storePath, base);
  const s = await race('store', storePath, procs, each, kill);
  const store = MemoryStore.open(storePath);
  const asked = store.list({ source: 'person' }).flatMap((e) => e.questions);
  const counts = new Map<string, number>();
  for (const q of asked) counts.set(q, (counts.get(q) ?? 0) + 1);
  const lost = s.acked.filter((q) => !counts.has(q)).length;
  const twice = [...counts.values()].filter((n) => n > 1).length;
  const integrity = store.integrity();
  store.close();
  const jsonPath = join(out, 'race.json');
  writeJsonAtomic(jsonPath, { kind: 'agro-memory', version: 1, dbId: base.dbId, schema: base.schema, entries: base.entries });
  const j = await race('json', jsonPath, procs, each, 0);
  const jsonAsked = new Set((readJsonFile(jsonPath, 'memory') as { entries: MemoryEntry[] }).entries.flatMap((e) => e.questions));
  const jsonLost = j.acked.filter((q) => !jsonAsked.has(q)).length;
  console.log(row(['memory', 'acknowledged', 'lost', 'twice', 'killed', 'integrity', 'seconds', 'corr/s']));
  console.log(row(['store (WAL)', s.acked.length, lost, twice, s.killed, integrity, s.seconds.toFixed(1), (s.acked.length / s.seconds).toFixed(0)]));
  console.log(row(['memory.json', j.acked.length, jsonLost, '-', 0, '-', j.seconds.toFixed(1), (j.acked.length / j.seconds).toFixed(0)]));

  // scale
  console.log(`\nscale: a memory of ${pairs.toLocaleString('en')} pairs, ${corrections} corrections each stored and used at once`);
  const words = ['total', 'average', 'number', 'name', 'list', 'customers', 'tracks', 'albums', 'genre', 'invoices', 'country', 'city', 'price', 'longest', 'first', 'last', 'each', 'most', 'least', 'year'];
  const entries: MemoryEntry[] = Array.from({ length: pairs }, (_, i) => ({
    sql: `SELECT name FROM tracks WHERE track_id = ${i}`,
    questions: [0, 1].map((k) => `${words[(i + k) % 20]} ${words[(i * 7 + k) % 20]} ${words[(i * 13) % 20]} of item ${i}`),
    source: 'factory',
  }));
  const bigPath = join(out, 'big.db');
  let t = performance.now();
  writeMemory(bigPath, { dbId: base.dbId, schema: base.schema, entries });
  const writeStoreMs = performance.now() - t;
  const reader = MemoryStore.open(bigPath);
  t = performance.now();
  const snap = reader.snapshot();
  const index = new MemoryIndex(snap);
  const loadMs = performance.now() - t;
  let seq = snap.seq;
  const ms: number[] = [];
  const storeOnly: number[] = [];
  for (let i = 0; i < corrections; i++) {
    const t0 = performance.now();
    await storeCorrection(bigPath, DB, schema, `bench correction ${i} about the longest tracks`, `SELECT name FROM tracks ORDER BY milliseconds DESC LIMIT ${i + 1}`, exec);
    storeOnly.push(performance.now() - t0);
    const c = reader.changes(seq);
    index.apply(c.added, c.removed);
    seq = c.seq;
    if (index.nearest(`bench correction ${i} about the longest tracks`, 1)[0]?.entry.sql !== `SELECT name FROM tracks ORDER BY milliseconds DESC LIMIT ${i + 1}`) throw new Error('bench: the correction is not recalled at once');
    ms.push(performance.now() - t0);
  }
  reader.close();
  const jsonBig = join(out, 'big.json');
  t = performance.now();
  writeJsonAtomic(jsonBig, { kind: 'agro-memory', version: 1, dbId: base.dbId, schema: base.schema, entries });
  const rewriteMs = performance.now() - t;
  await exec.close();
  console.log(row(['what', 'p50 ms', 'max ms']));
  console.log(row(['store+use', quantile(ms, 0.5).toFixed(1), Math.max(...ms).toFixed(1)]));
  console.log(row(['store only', quantile(storeOnly, 0.5).toFixed(1), Math.max(...storeOnly).toFixed(1)]));
  console.log(row(['json rewrite', rewriteMs.toFixed(1), '(once, reference)']));
  console.log(`store built in ${writeStoreMs.toFixed(0)} ms (${(statSync(bigPath).size / 2 ** 20).toFixed(1)} MiB; memory.json ${(statSync(jsonBig).size / 2 ** 20).toFixed(1)} MiB); read + indexed in ${loadMs.toFixed(0)} ms; peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB (this process: the race, the store's writing, the JSON)`);
  // What a reader alone costs (#57: the 40k index under 200 MB and loaded in under 2 s): a fresh process reads it.
  for (let i = 0; i < 3; i++) {
    const r = JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', LOADER, bigPath], { encoding: 'utf8' }).trim().split('\n').pop()!) as { ms: number; cpuMs: number; baseRssMiB: number; peakRssMiB: number };
    console.log(`a reader alone, run ${i + 1}: read + indexed in ${r.ms.toFixed(0)} ms (${r.cpuMs.toFixed(0)} CPU-ms), peak RSS ${r.peakRssMiB.toFixed(0)} MiB (${r.baseRssMiB.toFixed(0)} MiB before the store: node, tsx, agro's modules)`);
  }
}
