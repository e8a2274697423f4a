// `npm run bench -- sql [--db path.sqlite] [--queries N]` (N point lookups, N/10 mixed queries)
// Queries/second through SqlPool versus direct single-threaded better-sqlite3 on the same query mix,
// how late a runaway query is really stopped, and peak memory. Without --db it builds a temp
// database (customers 100k, orders 100k, products 1k rows) and removes it afterwards.
import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqlPool } from 'agro/sql';

export function buildDb(path: string): void {
  const db = new Database(path);
  db.exec(`
    CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, price REAL, category TEXT);
    CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, city TEXT, joined TEXT);
    CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id),
                         product_id INTEGER REFERENCES products(id), qty INTEGER, day TEXT);
    WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 1000)
      INSERT INTO products SELECT x, 'product ' || x, (x * 37 % 1000) / 10.0, 'cat' || (x % 12) FROM r;
    WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 100000)
      INSERT INTO customers SELECT x, 'customer ' || x, 'city' || (x % 97), date('2020-01-01', '+' || (x % 1500) || ' days') FROM r;
    WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 100000)
      INSERT INTO orders SELECT x, (x * 7919) % 100000 + 1, (x * 31) % 1000 + 1, x % 5 + 1, date('2023-01-01', '+' || (x % 365) || ' days') FROM r;
    CREATE INDEX orders_customer ON orders(customer_id);
  `);
  db.close();
}

/** Point lookups (microseconds each: IPC dominates) and scans/aggregates/joins (milliseconds). */
export function queryMix(nLight: number, nMixed: number): { light: string[]; mixed: string[] } {
  const light: string[] = [];
  const mixed: string[] = [];
  for (let i = 0; i < Math.max(nLight, nMixed); i++) {
    const k = (i * 7919) % 100000 + 1;
    if (i < nLight) light.push(`SELECT name, city FROM customers WHERE id = ${k}`);
    if (i < nMixed) mixed.push(
      [
        `SELECT name, city FROM customers WHERE id = ${k}`,
        `SELECT count(*), sum(qty) FROM orders WHERE customer_id = ${k}`,
        `SELECT city, count(*) FROM customers GROUP BY city ORDER BY 2 DESC LIMIT 5`,
        `SELECT p.category, sum(o.qty * p.price) FROM orders o JOIN products p ON p.id = o.product_id WHERE o.day >= '2023-0${(i % 9) + 1}-01' GROUP BY p.category`,
        `SELECT c.name, o.day FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.qty = ${(i % 5) + 1} ORDER BY o.day DESC LIMIT 20`,
      ][i % 5],
    );
  }
  return { light, mixed };
}

function direct(path: string, sqls: string[]): number {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  const t0 = performance.now();
  for (const sql of sqls) db.prepare(sql).raw(true).all();
  const ms = performance.now() - t0;
  db.close();
  return ms;
}

async function pooled(pool: SqlPool, path: string, sqls: string[]): Promise<number> {
  const t0 = performance.now();
  const results = await Promise.all(sqls.map((s) => pool.execute(path, s)));
  const ms = performance.now() - t0;
  const bad = results.find((r) => !r.ok);
  if (bad && !bad.ok) throw new Error(`bench query failed: ${bad.error}: ${bad.message}`);
  return ms;
}

function vmHwmKiB(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

const fmt = (x: number, d = 0) => x.toFixed(d).padStart(10);

export async function run(args: string[]): Promise<void> {
  const dbArg = args.indexOf('--db') >= 0 ? args[args.indexOf('--db') + 1] : undefined;
  const nArg = args.indexOf('--queries') >= 0 ? Number(args[args.indexOf('--queries') + 1]) : 2000;
  const nMixed = Math.max(10, Math.round(nArg / 10));
  const tmp = dbArg ? undefined : mkdtempSync(join(tmpdir(), 'agro-bench-sql-'));
  const path = dbArg ?? join(tmp!, 'bench.sqlite');
  try {
    if (!dbArg) {
      const t0 = performance.now();
      buildDb(path);
      console.log(`built ${path} (customers 100k, orders 100k, products 1k) in ${(performance.now() - t0).toFixed(0)} ms`);
    }
    const { light, mixed } = queryMix(nArg, nMixed);
    const size = Math.min(2, availableParallelism());
    const pool = new SqlPool({ size });
    const tCold = performance.now();
    await Promise.all(Array.from({ length: size }, () => pool.execute(path, 'SELECT 1')));
    const coldMs = performance.now() - tCold;
    console.log(`pool size ${size} on ${availableParallelism()} cores; cold start of ${size} children + first query: ${coldMs.toFixed(0)} ms`);
    // Warm both sides once so page cache and prepared plans are alike.
    direct(path, mixed.slice(0, 10));
    await pooled(pool, path, mixed.slice(0, 10));
    console.log(`\n${'workload'.padEnd(22)}${'direct q/s'.padStart(12)}${'pool q/s'.padStart(12)}${'pool/direct'.padStart(13)}`);
    for (const [name, sqls] of [[`point lookups x${light.length}`, light], [`mixed x${mixed.length}`, mixed]] as const) {
      const d = direct(path, sqls);
      const p = await pooled(pool, path, sqls);
      const dq = (sqls.length / d) * 1000;
      const pq = (sqls.length / p) * 1000;
      console.log(`${name.padEnd(22)}${fmt(dq)}  ${fmt(pq)}  ${fmt(pq / dq, 2)}x`);
    }

    console.log(`\ntimeout latency (runaway recursive CTE, limit 200 ms):`);
    console.log(`${'run'.padEnd(6)}${'stopped at'.padStart(12)}${'overshoot'.padStart(12)}${'next answer'.padStart(14)}`);
    const runaway = 'WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r';
    for (let i = 1; i <= 3; i++) {
      const t0 = performance.now();
      const r = await pool.execute(path, runaway, { timeoutMs: 200 });
      const stopped = performance.now() - t0;
      if (r.ok || r.error !== 'timeout') throw new Error('runaway query was not stopped by the timeout');
      const t1 = performance.now();
      const next = await pool.execute(path, 'SELECT count(*) FROM products');
      const nextMs = performance.now() - t1;
      if (!next.ok) throw new Error('pool did not answer after a timeout');
      console.log(`${String(i).padEnd(6)}${fmt(stopped, 1)} ms${fmt(stopped - 200, 1)} ms${fmt(nextMs, 1)} ms`);
    }

    const childHwm = pool.childPids().map(vmHwmKiB);
    await pool.close();
    const parentMaxRss = process.resourceUsage().maxRSS; // KiB on Linux
    console.log(`\npeak RSS: parent ${(parentMaxRss / 1024).toFixed(0)} MiB (includes the direct runs), children ${childHwm.map((k) => `${(k / 1024).toFixed(0)} MiB`).join(', ')} (VmHWM of the live children)`);
    console.log(`children started in total: ${pool.spawned} (${size} at start, then per timeout one replacement taken from a warm spare, plus the first spare)`);
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
}
