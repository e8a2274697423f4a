import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import { serve } from '@hono/node-server';
import { AgroError } from '../../errors.ts';
import { SqlPool } from '../../sql/pool.ts';
import { dashboardRoutes, webBundleBuilt } from '../../server/dashboard.ts';
import { numberArg } from '../options.ts';

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

export function register(program: Command): void {
  program
    .command('dashboard')
    .description('Serve the dashboard on loopback: runs, data, evaluations and a playground over a folder of runs.')
    .argument('[dir]', 'folder of runs, factory outputs and evaluation reports', 'runs')
    .option('--port <n>', 'port (0 = any free one)', numberArg('--port', { min: 0 }), 8321)
    .option('--host <addr>', 'address to listen on', '127.0.0.1')
    .option('--no-open', 'do not launch a browser')
    .action(async (dir: string, opts: { port: number; host: string; open: boolean }) => {
      if (opts.port > 65535) throw new AgroError('usage', `--port must be at most 65535, got ${opts.port}`);
      if (!webBundleBuilt()) throw new AgroError('not_found', 'the dashboard app is not built: run `npm run build:web` (npm install does it)');
      const pool = new SqlPool();
      const app = dashboardRoutes({ dir, executor: pool });
      const server = serve({ fetch: app.fetch, port: opts.port, hostname: opts.host });
      await new Promise<void>((res, rej) => {
        server.once('listening', res);
        server.once('error', (e: NodeJS.ErrnoException) =>
          rej(e.code === 'EADDRINUSE' ? new AgroError('usage', `port ${opts.port} is in use (choose another with --port)`) : e),
        );
      });
      const addr = server.address();
      const port = typeof addr === 'object' && addr ? addr.port : opts.port;
      const url = `http://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port}/`;
      process.stdout.write(`agro dashboard: ${url} (${dir}); Ctrl-C to stop\n`);
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
      await pool.close();
    });
}
