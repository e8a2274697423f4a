import type { Command } from 'commander';
import { serve, type ServerType } from '@hono/node-server';
import { AgroError } from '../../errors.ts';
import { createApp, type RouteGroup } from '../../server/app.ts';
import { openaiRoutes } from '../../server/openai.ts';
import { numberArg } from '../options.ts';
import { addPolicyOptions, openPolicyFromCli, type PolicyCliOptions } from '../policy-options.ts';

interface ServeCliOptions extends PolicyCliOptions {
  host: string;
  port: number;
  modelName?: string;
  concurrency: number;
  maxQueue: number;
  timeout: number;
  maxBody: number;
  maxTokens: number;
  grace: number;
}

function listen(app: ReturnType<typeof createApp>, host: string, port: number): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname: host, port }, () => resolve(server));
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new AgroError(err.code === 'EADDRINUSE' ? 'usage' : 'internal', err.code === 'EADDRINUSE' ? `port ${port} on ${host} is in use` : `server: ${err.message}`)),
    );
  });
}

async function run(o: ServeCliOptions): Promise<void> {
  const policy = await openPolicyFromCli(o, o.concurrency);
  const groups: RouteGroup[] = [{ app: openaiRoutes({ policy, modelName: o.modelName, concurrency: o.concurrency, maxQueue: o.maxQueue, timeoutMs: o.timeout, maxTokens: o.maxTokens }) }];
  const app = createApp({ groups, maxBodyBytes: o.maxBody });
  let server: ServerType;
  try {
    server = await listen(app, o.host, o.port);
  } catch (err) {
    await policy.close();
    throw err;
  }
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : o.port;
  process.stdout.write(`agro serve: ${policy.description}\nlistening on http://${o.host}:${port}/v1 (model "${o.modelName ?? policy.name}"); Ctrl-C stops\n`);
  // Graceful shutdown: stop accepting, let requests in flight finish (up to --grace ms), then free the model.
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.removeListener('SIGINT', stop);
      process.removeListener('SIGTERM', stop);
      process.stdout.write('agro serve: shutting down\n');
      const force = setTimeout(() => (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.(), o.grace);
      server.close(() => {
        clearTimeout(force);
        resolve();
      });
      (server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await policy.close();
}

export function register(program: Command): void {
  const cmd = program.command('serve').description('Serve a policy (agro checkpoint or GGUF) over the OpenAI chat-completions API');
  addPolicyOptions(cmd, { endpoint: false })
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--port <n>', 'port (0 = any free one)', numberArg('--port', { min: 0 }), 8000)
    .option('--model-name <name>', 'model name in /v1/models (default: the checkpoint folder or GGUF file name)')
    .option('--concurrency <n>', 'completions running at once (a local engine batches them)', numberArg('--concurrency', { min: 1 }), 4)
    .option('--max-queue <n>', 'requests waiting beyond that before 429', numberArg('--max-queue', { min: 0 }), 64)
    .option('--timeout <ms>', 'per-request time limit (504 beyond)', numberArg('--timeout', { min: 1 }), 300_000)
    .option('--max-body <bytes>', 'largest request body (413 beyond)', numberArg('--max-body', { min: 1024 }), 4 * 1024 * 1024)
    .option('--max-tokens <n>', 'cap on max_tokens per completion', numberArg('--max-tokens', { min: 1 }), 1024)
    .option('--grace <ms>', 'on shutdown, how long requests in flight may finish', numberArg('--grace', { min: 0 }), 10_000)
    .action((o: ServeCliOptions) => run(o));
}
