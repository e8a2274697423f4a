// The environment server alone in its own process, for bench/serve.ts (the load generator must not share
// its event loop). argv[2]: JSON options of serveEnv plus dbRoot; prints {"url": ...} once listening;
// SIGTERM closes it gracefully.
import { serveEnv } from '../src/server/env.ts';
import { catalogFromDbRoot } from '../src/data/catalog.ts';

const { dbRoot, variants, ...opts } = JSON.parse(process.argv[2] ?? '{}') as { dbRoot: string; variants?: string } & Record<string, unknown>;
const srv = await serveEnv({ catalog: catalogFromDbRoot(dbRoot, variants), ...opts });
process.stdout.write(JSON.stringify({ url: srv.url, pid: process.pid }) + '\n');
process.on('SIGTERM', () => {
  void srv.close().then(() => {
    process.stdout.write(JSON.stringify({ closed: true, stats: srv.routes.stats() }) + '\n');
    process.exit(0);
  });
});
