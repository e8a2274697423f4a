// `npm run bench -- factory [--reference REV (default 0d91a9a)] [--db PATH ...] [--pairs N] [--phrasings K] [--variants V] [--rounds R (default 2)]`
// `npm run bench -- factory --no-reference [--n N] [--big-n N] [--no-big] [--scaling] [--scale-n N] [--repeat K (default 3)]`
// With a reference (the default): the memory recipe's factory job (src/factory/memory-recipe.ts: pairs,
// phrasings, variants; each overridable) on each --db (default: the bundled music_store and retail), run by
// this checkout's code and by the code of REV side by side, alternating, R rounds, each run in its own
// process (bench/_factory_job.ts). REV is checked out once under .tmp/ref-REV (git worktree, gitignored),
// with this checkout's node_modules and build/ linked in; a rerun reuses it while it is at REV's commit and
// checks it out again otherwise. Per run: pairs, wall seconds, CPU seconds (the job's
// process plus its SQL processes, module loading not counted), pairs and verified candidates per CPU-second,
// peak RSS of the job and of its SQL processes, the 1-minute load average (the machine is shared: per
// CPU-second is the fair figure), and whether both wrote the same dataset.jsonl. Then the ratio of the
// medians of pairs per CPU-second.
// --no-reference: the data factory end to end in this process: final pairs per second per database (and per CPU-second of this process
// and the SQL children, with the 1-minute load average beside it: the machine is shared), stage acceptance rates, how
// many pairs the variant databases caught that the original alone would have accepted, and peak
// RSS of this process (the SQL pool's child processes are not included). Runs on the bundled
// databases and on a shop database of about a million rows, built once and kept under .tmp/bench-shop/
// (gitignored).
// --scaling: the same shop at about 1k, 10k, 100k and 1M rows, pairs/s at each size.
import Database from 'better-sqlite3';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { MEMORY_RECIPE } from '../src/factory/memory-recipe.ts';
import { runFactory } from '../src/factory/pipeline.ts';
import { SqlPool } from '../src/sql/pool.ts';
import { processCpuMs } from '../src/util/proc.ts';
import { flag, num } from './_args.ts';
import { databaseId } from '../src/sql/db-id.ts';

/** CPU seconds of process `pid` (0 once it is gone). */
const cpuSecs = (pid: number): number => (processCpuMs(pid) ?? 0) / 1000;

/**
 * Runs `fn` and returns its wall seconds and the CPU seconds it cost: this process plus the SQL
 * pool's children (a child replaced during the run loses what it had used; rare without timeouts).
 * On a shared machine pairs per CPU-second says more than pairs per second.
 */
async function measured<T>(pool: SqlPool, fn: () => Promise<T>): Promise<{ value: T; secs: number; cpu: number; load: string }> {
  const load = loadavg()[0].toFixed(1);
  const before = new Map(pool.childPids().map((p) => [p, cpuSecs(p)]));
  const u0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await fn();
  const secs = (performance.now() - t0) / 1000;
  const u = process.cpuUsage(u0);
  let child = 0;
  for (const p of pool.childPids()) child += cpuSecs(p) - (before.get(p) ?? 0);
  return { value, secs, cpu: (u.user + u.system) / 1e6 + child, load };
}

/** The shop at `scale` (1 = about a million rows: 50k customers, 2k products, 400k orders, 550k items). */
export function buildBig(path: string, scale = 1): number {
  const k = (x: number) => Math.max(10, Math.round(x * scale));
  const db = new Database(path);
  db.pragma('journal_mode = OFF');
  db.pragma('synchronous = OFF');
  db.exec(`
    CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, city TEXT, signup_date TEXT);
    CREATE TABLE products (product_id INTEGER PRIMARY KEY, title TEXT, category TEXT, price REAL, stock INTEGER);
    CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(customer_id), order_date TEXT, status TEXT);
    CREATE TABLE order_items (item_id INTEGER PRIMARY KEY, order_id INTEGER REFERENCES orders(order_id), product_id INTEGER REFERENCES products(product_id), quantity INTEGER);
    WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < ${k(50000)})
      INSERT INTO customers SELECT x, 'customer ' || x, 'country ' || (x % 40), 'city ' || (x % 400), date('2015-01-01', '+' || (x % 3000) || ' days') FROM r;
    WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < ${Math.min(2000, k(2000))})
      INSERT INTO products SELECT x, 'product ' || x, 'category ' || (x % 25), (x * 37 % 10000) / 100.0, x % 300 FROM r;
    WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < ${k(400000)})
      INSERT INTO orders SELECT x, (x * 7919) % ${k(50000)} + 1, date('2020-01-01', '+' || (x % 1400) || ' days'), CASE x % 4 WHEN 0 THEN 'shipped' WHEN 1 THEN 'pending' WHEN 2 THEN 'returned' ELSE 'cancelled' END FROM r;
    WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < ${k(550000)})
      INSERT INTO order_items SELECT x, (x * 104729) % ${k(400000)} + 1, (x * 31) % ${Math.min(2000, k(2000))} + 1, x % 7 + 1 FROM r;
    CREATE INDEX orders_customer ON orders(customer_id);
    CREATE INDEX items_order ON order_items(order_id);
    CREATE INDEX items_product ON order_items(product_id);
  `);
  const n = (db.prepare("SELECT (SELECT COUNT(*) FROM customers) + (SELECT COUNT(*) FROM products) + (SELECT COUNT(*) FROM orders) + (SELECT COUNT(*) FROM order_items) AS n").get() as { n: number }).n;
  db.close();
  return n;
}


/** The shop at `scale`, built once and kept under .tmp/bench-shop/ (gitignored) for later runs. */
export function cachedShop(scale: number): { path: string; rows: number; built: boolean } {
  const dir = join('.tmp', 'bench-shop');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `shop_${scale}.sqlite`);
  if (existsSync(path)) {
    const db = new Database(path, { readonly: true });
    const rows = (db.prepare('SELECT (SELECT COUNT(*) FROM customers) + (SELECT COUNT(*) FROM products) + (SELECT COUNT(*) FROM orders) + (SELECT COUNT(*) FROM order_items) AS n').get() as { n: number }).n;
    db.close();
    return { path, rows, built: false };
  }
  const tmp = `${path}.${process.pid}.tmp`;
  rmSync(tmp, { force: true });
  const rows = buildBig(tmp, scale);
  renameSync(tmp, path);
  return { path, rows, built: true };
}

/** The commit before the speed-up of #57: the factory as it was. */
const DEFAULT_REFERENCE = '0d91a9a';

/**
 * A checkout of `rev` under .tmp/ref-REV, sharing this checkout's node_modules and native build. A rerun reuses
 * it when it is still at the commit `rev` names; otherwise (a branch that moved, a half-made or deleted folder,
 * a stale worktree entry) it is removed and checked out again, so every run measures the same code.
 */
function referenceTree(rev: string): string {
  const dir = resolve('.tmp', `ref-${rev.replace(/[^\w.-]/g, '_')}`);
  const want = execFileSync('git', ['rev-parse', '--verify', `${rev}^{commit}`], { encoding: 'utf8' }).trim();
  let have = '';
  try {
    // Its own worktree's HEAD: a plain folder there would answer with the enclosing checkout's.
    const [top, head] = existsSync(join(dir, 'src')) ? execFileSync('git', ['-C', dir, 'rev-parse', '--show-toplevel', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim().split('\n') : [];
    if (top && resolve(top) === dir) have = head;
  } catch {
    have = '';
  }
  if (have !== want) {
    rmSync(dir, { recursive: true, force: true });
    execFileSync('git', ['worktree', 'prune'], { stdio: 'ignore' });
    mkdirSync('.tmp', { recursive: true });
    execFileSync('git', ['worktree', 'add', '--force', '--detach', dir, want], { stdio: 'ignore' });
  }
  for (const link of ['node_modules', 'build']) {
    const at = join(dir, link);
    // A link left dangling (its target moved) is made again; a real folder there is the checkout's own.
    if (!existsSync(at)) rmSync(at, { force: true });
    if (!existsSync(at) && existsSync(link)) symlinkSync(resolve(link), at);
  }
  return dir;
}

interface Job {
  rows: number;
  verified: number;
  secs: number;
  cpuSelf: number;
  cpuSql: number;
  rssMiB: number;
  sqlRssMiB: number;
  stages: Record<string, number>;
  sha: string;
}

function job(root: string, db: string, a: { pairs: number; phrasings: number; variants: number }, out: string): Job {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/_factory_job.ts', '--root', root, '--db', db, '--out', out, '--n', String(a.pairs), '--phrasings', String(a.phrasings), '--variants', String(a.variants)], { encoding: 'utf8', maxBuffer: 64 << 20 });
  const line = r.stdout.trim().split('\n').pop() ?? '';
  if (r.status !== 0 || !line.startsWith('{')) throw new Error(`bench factory: the job in ${root} on ${db} failed (${r.status}): ${(r.stderr || r.stdout).slice(-2000)}`);
  return JSON.parse(line) as Job;
}

async function compare(args: string[]): Promise<void> {
  const rev = flag(args, '--reference', DEFAULT_REFERENCE);
  const ref = referenceTree(rev);
  const dbs = args.flatMap((a, i) => (a === '--db' && i + 1 < args.length ? [args[i + 1]] : []));
  if (!dbs.length) for (const id of ['music_store', 'retail']) dbs.push(join('data', 'databases', id, `${id}.sqlite`));
  const recipe = { pairs: num(args, '--pairs', MEMORY_RECIPE.pairs), phrasings: num(args, '--phrasings', MEMORY_RECIPE.phrasings), variants: num(args, '--variants', MEMORY_RECIPE.variants) };
  const rounds = num(args, '--rounds', 2);
  const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim() ? '+changes' : '';
  const tmp = mkdtempSync(join(tmpdir(), 'agro-bench-factory-'));
  console.log(`factory job: ${recipe.pairs} pairs, ${recipe.phrasings} phrasings, ${recipe.variants} variants; this checkout ${head}${dirty} vs reference ${rev} (${ref}); ${rounds} rounds`);
  console.log('db            code       pairs verified   secs  cpu-s (self+sql)  pairs/cpu-s  verified/cpu-s  rss MiB (self+sql)  load  dataset');
  const per = new Map<string, number[]>();
  try {
    for (let k = 0; k < rounds; k++) {
      for (const db of dbs) {
        const id = databaseId(db);
        // Alternating which goes first: a shared machine's load drifts.
        const order: Array<[string, string]> = k % 2 === 0 ? [['this', '.'], ['reference', ref]] : [['reference', ref], ['this', '.']];
        const shas: string[] = [];
        for (const [code, root] of order) {
          const load = loadavg()[0].toFixed(1);
          const j = job(root, db, recipe, join(tmp, `${code}-${id}-${k}`));
          const cpu = j.cpuSelf + j.cpuSql;
          shas.push(j.sha);
          const key = `${id}\u0000${code}`;
          per.set(key, [...(per.get(key) ?? []), j.rows / cpu]);
          console.log(
            `${id.padEnd(13)} ${code.padEnd(9)} ${String(j.rows).padStart(6)} ${String(j.verified).padStart(8)} ${j.secs.toFixed(1).padStart(6)} ${cpu.toFixed(1).padStart(6)} (${j.cpuSelf.toFixed(1)}+${j.cpuSql.toFixed(1)})`.padEnd(68) +
              `${(j.rows / cpu).toFixed(1).padStart(11)} ${(j.verified / cpu).toFixed(1).padStart(15)}  ${(j.rssMiB + j.sqlRssMiB).toFixed(0).padStart(6)} (${j.rssMiB.toFixed(0)}+${j.sqlRssMiB.toFixed(0)})`.padEnd(28) +
              `${load.padStart(5)}  ${j.sha}  stages ${Object.entries(j.stages).map(([s, v]) => `${s} ${v}`).join(', ')}`,
          );
        }
        console.log(`${''.padEnd(13)} same dataset.jsonl: ${shas[0] === shas[1] ? 'yes' : 'NO'}`);
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
    console.log('\npairs per CPU-second, median of the rounds (this / reference):');
    for (const db of dbs) {
      const id = databaseId(db);
      const a = median(per.get(`${id}\u0000this`) ?? [0]);
      const b = median(per.get(`${id}\u0000reference`) ?? [0]);
      console.log(`  ${id.padEnd(13)} ${a.toFixed(1)} / ${b.toFixed(1)} = ${(a / b).toFixed(2)}x`);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

export async function run(args: string[]): Promise<void> {
  if (!args.includes('--no-reference')) return compare(args);
  const n = num(args, '--n', 200);
  const bigN = num(args, '--big-n', 100);
  // Each database K times, in rounds (db1 db2 ... db1 db2 ...): the spread on a shared machine, and the
  // median per database is the figure. A first run on the first database goes before them and is
  // reported on its own: it pays for V8's warm-up and the SQL processes' start, once per process.
  const repeat = num(args, '--repeat', 3);
  const tmp = mkdtempSync(join(tmpdir(), 'agro-bench-factory-'));
  const pool = new SqlPool({ size: 2 });
  const dbs: Array<[string, string, number]> = [];
  for (const id of ['music_store', 'retail', 'school']) {
    const p = join('data', 'databases', id, `${id}.sqlite`);
    if (existsSync(p)) dbs.push([id, p, n]);
  }
  if (args.includes('--scaling')) {
    const sn = num(args, '--scale-n', 50);
    console.log(`scaling: the shop at growing size, --n ${sn}, 3 variants`);
    console.log('rows        pairs   secs  pairs/s  verified/s  cpu-s  pairs/cpu-s  load');
    try {
      for (const scale of [0.001, 0.01, 0.1, 1]) {
        const { path: p, rows } = cachedShop(scale);
        const { value: r, secs, cpu, load } = await measured(pool, () => runFactory({ db: p, out: join(tmp, `scale_${scale}`), n: sn, seed: 1, variants: 3 }, { executor: pool }));
        const verified = r.manifest.stages.find((s) => s.stage === 'verify')?.out ?? 0;
        console.log(`${String(rows).padEnd(10)} ${String(r.manifest.rows).padStart(5)} ${secs.toFixed(1).padStart(6)} ${(r.manifest.rows / secs).toFixed(2).padStart(8)} ${(verified / secs).toFixed(2).padStart(11)} ${cpu.toFixed(1).padStart(6)} ${(r.manifest.rows / cpu).toFixed(1).padStart(12)}  ${load}${r.manifest.shortfall ? '  ' + r.manifest.shortfall : ''}`);
      }
    } finally {
      await pool.close();
      rmSync(tmp, { recursive: true, force: true });
    }
    return;
  }
  if (!args.includes('--no-big')) {
    const t0 = performance.now();
    const { path: big, rows, built } = cachedShop(1);
    console.log(`${built ? 'built' : 'reused'} big_shop (.tmp/bench-shop): ${rows.toLocaleString()} rows in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    dbs.push(['big_shop', big, bigN]);
  }
  try {
    if (dbs.length) {
      const [id, path, want] = dbs[0];
      const { value: r, secs, cpu, load } = await measured(pool, () => runFactory({ db: path, out: join(tmp, `${id}-first`), n: want, seed: 1, variants: 3 }, { executor: pool }));
      console.log(`first run in this process (V8 warm-up and SQL process start included): ${id} ${r.manifest.rows} pairs in ${secs.toFixed(2)} s = ${(r.manifest.rows / secs).toFixed(2)} pairs/s, ${cpu.toFixed(1)} CPU-s, load ${load}\n`);
    }
    console.log('db           pairs   secs  pairs/s  verified/s  cpu-s  pairs/cpu-s  load  caught-by-variants  difficulty (s/m/c)');
    const rates: string[] = [];
    const perSec = new Map<string, number[]>();
    const runs = Array.from({ length: repeat }, (_, k) => dbs.map(([id, path, want]) => [id, path, want, k] as const)).flat();
    for (const [id, path, want, k] of runs) {
      const { value: r, secs, cpu, load } = await measured(pool, () => runFactory({ db: path, out: join(tmp, `${id}-${k}`), n: want, seed: 1, variants: 3 }, { executor: pool }));
      const m = r.manifest;
      const verified = m.stages.find((s) => s.stage === 'verify')?.out ?? 0;
      const d = m.difficulty;
      console.log(
        `${id.padEnd(12)} ${String(m.rows).padStart(5)} ${secs.toFixed(1).padStart(6)} ${(m.rows / secs).toFixed(2).padStart(8)} ${(verified / secs).toFixed(2).padStart(11)} ${cpu.toFixed(1).padStart(6)} ${(m.rows / cpu).toFixed(1).padStart(12)}  ${load.padStart(4)} ${String(m.caughtByVariants).padStart(19)}  ${d.simple ?? 0}/${d.moderate ?? 0}/${d.challenging ?? 0}`,
      );
      if (k === 0) rates.push(`${id}: ` + m.stages.map((s) => `${s.stage} ${s.in ? ((100 * s.out) / s.in).toFixed(0) : '-'}%`).join(', '));
      perSec.set(id, [...(perSec.get(id) ?? []), m.rows / secs]);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
    console.log(`\npairs/s, median of ${repeat}: ` + [...perSec].map(([id, xs]) => `${id} ${median(xs).toFixed(1)}`).join(', '));
    console.log('\nstage acceptance (out/in):');
    for (const l of rates) console.log('  ' + l);
    console.log(`\npeak RSS (this process): ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
  } finally {
    await pool.close();
    rmSync(tmp, { recursive: true, force: true });
  }
}
