import { spawn } from 'node:child_process';
import { addJudgeOption, judgeFromCli } from '../answer-options.ts';
import type { Command } from 'commander';
import { serve } from '@hono/node-server';
import { AgroError } from '../../errors.ts';
import { existsSync } from 'node:fs';
import { createExecutor } from '../../sql/executor.ts';
import { isPostgresUrl } from '../../sql/postgres.ts';
import { dashboardRoutes, MAX_API_BODY, webBundleBuilt } from '../../server/dashboard.ts';
import { guard, guardedApp } from '../../server/guard.ts';
import { addPrivilegedRoleOption, numberArg, repeatable, type PrivilegedRoleCliOption } from '../options.ts';
import { accessFromCli, addAccessOptions, type AccessCliOptions } from '../access-options.ts';
import { addPolicyOptions, playgroundPolicies, type PolicyCliOptions } from '../policy-options.ts';
import { printOut } from '../print.ts';

/** The desktop's URL opener; a machine without one (a server, CI) just prints the address. */
function openBrowser(url: string): void {
  const cmd = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open';
  try {
    const child = spawn(cmd, [url], { stdio: 'ignore', detached: true });
    child.on('error', () => {});
    child.unref();
  } catch {
    // No opener: the address is printed.
  }
}

interface DashboardCliOptions extends PolicyCliOptions, PrivilegedRoleCliOption, AccessCliOptions {
  port: number;
  open: boolean;
  db: string[];
  judge?: string | boolean;
}

export function register(program: Command): void {
  const cmd = program
    .command('dashboard')
    .description('Serve the dashboard on loopback: runs, data, evaluations and a playground over a folder of runs.')
    .argument('[dir]', 'folder of runs, factory outputs and evaluation reports', 'runs');
  // The Playground offers the folder's checkpoints and .gguf files, plus these.
  addPolicyOptions(cmd, {
    policy: 'Playground: also a checkpoint folder or .gguf file from elsewhere',
    llmUrl: 'Playground: also an OpenAI-compatible endpoint (e.g. http://127.0.0.1:8000/v1)',
  })
    .option('--db <database>', 'Playground and SQL runner: also this database, a SQLite file or a postgres:// URL (beside the bundled ones and those the folder\'s factory outputs name); repeatable', repeatable, [])
    .option('--port <n>', 'port (0 = any free one)', numberArg('--port', { min: 0 }), 8321)
    .option('--host <addr>', 'address to listen on', '127.0.0.1')
    .option('--no-open', 'do not launch a browser')
    .option('--token <token>', 'token every request needs (the printed link sets it as a cookie; default env AGRO_TOKEN; required off loopback). None on loopback: a random one guards the writes, in the printed link');
  addJudgeOption(addPrivilegedRoleOption(addAccessOptions(cmd)))
    .action(async (dir: string, opts: DashboardCliOptions) => {
      if (opts.port > 65535) throw new AgroError('usage', `--port must be at most 65535, got ${opts.port}`);
      const access = {
        ...accessFromCli(opts, 'dashboard'),
        maxBodyBytes: MAX_API_BODY,
        // The app's HTML may be opened from a link elsewhere; its API may not.
        isPage: (path: string) => !path.startsWith('/api/'),
      };
      // Bad --allowed-host, --cors or --token values stop here, before anything starts.
      guard(access);
      if (!webBundleBuilt()) throw new AgroError('not_found', 'the dashboard app is not built: run `npm run build:web` (npm install does it)');
      for (const db of opts.db) if (!isPostgresUrl(db) && !existsSync(db)) throw new AgroError('not_found', `--db: database not found: ${db}`);
      const pool = createExecutor({ allowPrivilegedRole: opts.allowPrivilegedRole });
      const app = dashboardRoutes({ dir, executor: pool, policies: { ...playgroundPolicies(opts), judge: judgeFromCli(opts) }, databases: opts.db });
      const guarded = guardedApp(app, access);
      const server = serve({ fetch: guarded.fetch, port: opts.port, hostname: opts.host });
      await new Promise<void>((res, rej) => {
        server.once('listening', res);
        server.once('error', (e: NodeJS.ErrnoException) =>
          rej(e.code === 'EADDRINUSE' ? new AgroError('usage', `port ${opts.port} is in use (choose another with --port)`) : e),
        );
      });
      const addr = server.address();
      const port = typeof addr === 'object' && addr ? addr.port : opts.port;
      // With a token, the printed link carries it once: the server sets a cookie and drops it from the address bar.
      const url = `http://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port}/${access.token ? `?token=${encodeURIComponent(access.token)}` : ''}`;
      printOut(`agro dashboard: ${url} (${dir}); Ctrl-C to stop\n`);
      if (opts.open) openBrowser(url);
      await new Promise<void>((res) => {
        const stop = (): void => {
          server.close();
          // Open event streams would hold close() forever.
          (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
          res();
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      await app.close();
      await pool.close();
    });
}
