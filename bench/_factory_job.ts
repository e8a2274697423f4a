// One factory run for `npm run bench -- factory --reference`: runs the factory of the source tree at
// --root (this checkout, or the reference checkout under .tmp/) on one database with a 2-process SQL
// pool, and prints one JSON line: pairs, verified candidates, wall seconds, CPU seconds of this process
// and of the pool's processes, peak RSS of each, and a hash of dataset.jsonl (same pairs or not).
// Module loading is not measured: the clock starts just before runFactory.
import { createHash } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { flag, num } from './_args.ts';

const args = process.argv.slice(2);
const root = resolve(flag(args, '--root', '.'));
const out = resolve(flag(args, '--out', ''));
const from = (p: string) => import(pathToFileURL(join(root, p)).href);
const { runFactory } = await from('src/factory/pipeline.ts');
const { SqlPool } = await from('src/sql/pool.ts');

/** CPU ms and peak resident KiB (VmHWM) of a live process, from /proc. */
function usage(pid: number): { cpuMs: number; hwmKiB: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const hwm = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return { cpuMs: (Number(f[11]) + Number(f[12])) * 10, hwmKiB: hwm ? Number(hwm[1]) : 0 };
  } catch {
    return { cpuMs: 0, hwmKiB: 0 };
  }
}

rmSync(out, { recursive: true, force: true });
const pool = new SqlPool({ size: 2 });
const u0 = process.cpuUsage();
const t0 = performance.now();
const r = await runFactory(
  { db: flag(args, '--db', ''), out, n: num(args, '--n', 200), seed: num(args, '--seed', 0), variants: num(args, '--variants', 2), phrasings: num(args, '--phrasings', 1) },
  { executor: pool },
);
const secs = (performance.now() - t0) / 1000;
const u = process.cpuUsage(u0);
const kids = (pool.childPids() as number[]).map(usage);
await pool.close();
const dataset = readFileSync(join(out, 'dataset.jsonl'));
console.log(
  JSON.stringify({
    rows: r.manifest.rows,
    verified: r.manifest.stages.find((s: { stage: string }) => s.stage === 'verify')?.out ?? 0,
    secs,
    cpuSelf: (u.user + u.system) / 1e6,
    cpuSql: kids.reduce((a, k) => a + k.cpuMs, 0) / 1000,
    rssMiB: process.resourceUsage().maxRSS / 1024,
    sqlRssMiB: kids.reduce((a, k) => a + k.hwmKiB, 0) / 1024,
    stages: Object.fromEntries(r.manifest.stages.map((s: { stage: string; seconds: number }) => [s.stage, Math.round(s.seconds * 10) / 10])),
    sha: createHash('sha256').update(dataset).digest('hex').slice(0, 12),
  }),
);
rmSync(out, { recursive: true, force: true });
