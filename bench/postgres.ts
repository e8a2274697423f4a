// `npm run bench -- postgres [--queries N] [--url postgres://admin@host/db]` (N point lookups, N/10 mixed queries)
// Queries/second through agro's PgExecutor (guard, cursor, limits, caps) versus direct `pg` queries over a
// pool of the same size (what pgbench would send), on bench/sql.ts's database copied into PostgreSQL.
// Without --url it starts a throwaway server (test/support/postgres.ts) and removes it afterwards.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { PgExecutor, copySqliteToPostgres } from 'agro/sql';
import { startPostgres, type PgServer } from '../test/support/postgres.ts';
import { flag, num } from './_args.ts';
import { buildDb, queryMix } from './sql.ts';

async function drive(sqls: string[], inFlight: number, run: (sql: string) => Promise<unknown>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < sqls.length) await run(sqls[next++]);
    }),
  );
  return sqls.length / ((performance.now() - t0) / 1000);
}

export async function run(args: string[]): Promise<void> {
  const n = num(args, '--queries', 4000);
  const size = num(args, '--size', 2);
  let server: PgServer | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'agro-bench-pg-'));
  try {
    let url = flag(args, '--url', '');
    if (!url) {
      server = await startPostgres();
      url = server.adminUrl('bench');
    }
    const file = join(dir, 'bench.sqlite');
    buildDb(file);
    const copied = await copySqliteToPostgres(file, url, { replace: true });
    console.log(`copied ${copied.tables.map((t) => `${t.name} ${t.rows}`).join(', ')} in ${(copied.elapsedMs / 1000).toFixed(1)} s`);
    const { light, mixed } = queryMix(n, Math.round(n / 10));
    const exec = new PgExecutor({ size });
    const direct = new pg.Pool({ connectionString: url, max: size });
    direct.on('error', () => undefined); // an idle connection dropped at the server's shutdown
    try {
      for (const [label, sqls] of [['point lookups', light], ['mixed', mixed]] as const) {
        // Warm both (logins, plans cached by neither: each query is new text to both).
        await drive(sqls.slice(0, 50), size * 2, (q) => exec.execute(url, q));
        await drive(sqls.slice(0, 50), size * 2, (q) => direct.query({ text: q, rowMode: 'array' }));
        const viaAgro = await drive(sqls, size * 2, async (q) => {
          const r = await exec.execute(url, q);
          if (!r.ok) throw new Error(`${q}: ${r.message}`);
        });
        const viaPg = await drive(sqls, size * 2, (q) => direct.query({ text: q, rowMode: 'array' }));
        console.log(`${label}: ${sqls.length} queries, ${size} connections, ${size * 2} in flight: agro ${viaAgro.toFixed(0)} q/s, direct pg ${viaPg.toFixed(0)} q/s (agro at ${((100 * viaAgro) / viaPg).toFixed(0)}% of direct)`);
      }
    } finally {
      await exec.close();
      await direct.end();
    }
  } finally {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
