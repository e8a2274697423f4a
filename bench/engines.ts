// `npm run bench -- engines [--seeds 0,1,2] [--engines sqlite,postgres] [--db music_store] [--small] [--url postgres://admin@host/] [--keep DIR]`
// The same quickstart on SQLite and on PostgreSQL, seed by seed: held-out EX after SFT and after RL, and minutes,
// with each engine's mean and spread over the seeds (issue #34: PostgreSQL's EX within SQLite's seed-to-seed
// spread). Each run is `agro quickstart` from the command line, one at a time. The database is copied into a
// throwaway server (test/support/postgres.ts) unless --url names one; the runs connect as its superuser so that
// the factory can make variant schemas there (agro's sessions are read-only whatever the role).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { copySqliteToPostgres } from 'agro/sql';
import { startPostgres, type PgServer } from '../test/support/postgres.ts';
import type { QuickstartReport } from '../src/pipeline/quickstart.ts';
import { flag } from './_args.ts';
import { mean, pct, table } from './rl.ts';

interface Run {
  sft: number;
  rl: number;
  minutes: number;
}

function quickstart(db: string, seed: number, out: string, small: boolean): Run {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['bin/agro.js', 'quickstart', '--db', db, '--seed', String(seed), '--out', out, '--json', ...(small ? ['--small'] : [])], { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`quickstart on ${db.replace(/:[^:@/]*@/, ':***@')} seed ${seed} exited ${r.status}: ${r.stderr.trim().split('\n').pop()}`);
  const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as QuickstartReport;
  return { sft: report.sft!.eval.accuracy, rl: report.rl!.eval.accuracy, minutes: (performance.now() - t0) / 60_000 };
}

const spread = (xs: number[]): string => `${pct(Math.min(...xs))}..${pct(Math.max(...xs))}`;

export async function run(args: string[]): Promise<void> {
  const seeds = flag(args, '--seeds', '0,1,2').split(',').map(Number);
  const name = flag(args, '--db', 'music_store');
  const small = args.includes('--small');
  const file = resolve(`data/databases/${name}/${name}.sqlite`);
  const engines = flag(args, '--engines', 'sqlite,postgres').split(',').filter(Boolean) as ('sqlite' | 'postgres')[];
  // --keep: the runs stay in DIR (report.json, metrics) for a look afterwards; else a temporary folder, removed.
  const keep = flag(args, '--keep', '');
  const work = keep ? resolve(keep) : mkdtempSync(join(tmpdir(), 'agro-bench-engines-'));
  let server: PgServer | undefined;
  try {
    let url = flag(args, '--url', '');
    if (!url) {
      server = await startPostgres();
      url = server.adminUrl(name);
    } else url = `${url.replace(/\/[^/]*$/, '')}/${name}`;
    await copySqliteToPostgres(file, url, { replace: true });
    const runs: Record<'sqlite' | 'postgres', Run[]> = { sqlite: [], postgres: [] };
    for (const seed of seeds) {
      for (const engine of engines) {
        const r = quickstart(engine === 'sqlite' ? file : url, seed, join(work, `${engine}-${seed}`), small);
        runs[engine].push(r);
        console.log(`${name} seed ${seed} on ${engine}: held-out EX SFT ${pct(r.sft)}% → RL ${pct(r.rl)}%, ${r.minutes.toFixed(1)} min`);
      }
    }
    const rows = [['engine', 'seeds', 'SFT mean', 'SFT min..max', 'RL mean', 'RL min..max', 'minutes (mean)']];
    for (const engine of engines) {
      const rs = runs[engine];
      rows.push([engine, seeds.join(','), pct(mean(rs.map((r) => r.sft))), spread(rs.map((r) => r.sft)), pct(mean(rs.map((r) => r.rl))), spread(rs.map((r) => r.rl)), mean(rs.map((r) => r.minutes)).toFixed(1)]);
    }
    console.log('');
    table(rows);
    if (runs.sqlite.length === 0 || runs.postgres.length === 0) return;
    const lo = Math.min(...runs.sqlite.map((r) => r.rl));
    const hi = Math.max(...runs.sqlite.map((r) => r.rl));
    const pgMean = mean(runs.postgres.map((r) => r.rl));
    console.log(`PostgreSQL's mean after RL ${pct(pgMean)}% is ${pgMean >= lo && pgMean <= hi ? 'within' : 'outside'} SQLite's seed-to-seed range ${pct(lo)}..${pct(hi)}%`);
  } finally {
    await server?.stop();
    if (!keep) rmSync(work, { recursive: true, force: true });
  }
}
