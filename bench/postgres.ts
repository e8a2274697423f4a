// `npm run bench -- postgres [--queries N] [--url postgres://admin@host/db] [--rounds R] [--baseline DIR]`
// (N point lookups, N/10 mixed queries). Queries/second through agro's PgExecutor (guard, one round trip,
// limits, caps) versus direct `pg` queries over a pool of the same size (what pgbench would send; and the same
// by pg's extended protocol, the messages agro sends), on
// bench/sql.ts's database copied into PostgreSQL. Without --url it starts a throwaway server
// (test/support/postgres.ts) and removes it afterwards.
//
// --baseline DIR adds another checkout's PgExecutor (DIR/src/sql/postgres.ts: main, say) to the same run, so a
// change is measured against what it changes under the same load. The contenders take turns, R rounds (default
// 1, 5 with a baseline), each round in another order; the median of each contender's rounds is reported.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { PgExecutor, copySqliteToPostgres } from 'agro/sql';
import type { ExecResult } from 'agro/sql';
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

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

interface Executor {
  execute(db: string, sql: string): Promise<ExecResult>;
  close(): Promise<void>;
}

export async function run(args: string[]): Promise<void> {
  const n = num(args, '--queries', 4000);
  const size = num(args, '--size', 2);
  const baselineDir = flag(args, '--baseline', '');
  const rounds = num(args, '--rounds', baselineDir ? 5 : 1);
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
    const direct = new pg.Pool({ connectionString: url, max: size });
    direct.on('error', () => undefined); // an idle connection dropped at the server's shutdown
    // Direct pg twice: its simple protocol (one Query message: what the percentages compare with) and its extended
    // protocol (Parse, Bind, Describe, Execute, Sync: the messages agro sends), so agro's own cost shows apart from the protocol's.
    const contenders: Array<{ label: string; exec?: Executor; extended?: boolean }> = [{ label: 'agro', exec: new PgExecutor({ size }) }, { label: 'direct pg extended', extended: true }, { label: 'direct pg' }];
    if (baselineDir) {
      const mod = (await import(pathToFileURL(resolve(baselineDir, 'src', 'sql', 'postgres.ts')).href)) as { PgExecutor: new (o: { size: number }) => Executor };
      contenders.splice(1, 0, { label: `baseline (${baselineDir})`, exec: new mod.PgExecutor({ size }) });
    }
    const runner = (c: (typeof contenders)[number]) =>
      c.exec
        ? async (q: string) => {
            const r = await c.exec!.execute(url, q);
            if (!r.ok) throw new Error(`${q}: ${r.message}`);
          }
        : (q: string) => direct.query({ text: q, rowMode: 'array', ...(c.extended ? { queryMode: 'extended' as const } : {}) });
    try {
      for (const [label, sqls] of [['point lookups', light], ['mixed', mixed]] as const) {
        // Warm each (logins, plans cached by none: each query is new text to all).
        for (const c of contenders) await drive(sqls.slice(0, 50), size * 2, runner(c));
        const rates = contenders.map(() => [] as number[]);
        for (let r = 0; r < rounds; r++) {
          for (let k = 0; k < contenders.length; k++) {
            const i = (k + r) % contenders.length;
            rates[i].push(await drive(sqls, size * 2, runner(contenders[i])));
          }
        }
        const m = rates.map(median);
        const directRate = m[contenders.length - 1];
        const each = contenders.map((c, i) => `${c.label} ${m[i].toFixed(0)} q/s${i < contenders.length - 1 ? ` (${((100 * m[i]) / directRate).toFixed(0)}% of direct)` : ''}`);
        const spread = rounds > 1 ? `; rounds: ${contenders.map((c, i) => `${c.label} ${rates[i].map((x) => x.toFixed(0)).join('/')}`).join(', ')}` : '';
        console.log(`${label}: ${sqls.length} queries, ${size} connections, ${size * 2} in flight${rounds > 1 ? `, median of ${rounds} rounds` : ''}: ${each.join(', ')}${spread}`);
      }
    } finally {
      for (const c of contenders) await c.exec?.close();
      await direct.end();
    }
  } finally {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
