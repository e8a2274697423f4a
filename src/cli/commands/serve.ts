import type { Command } from 'commander';
import { addJudgeOption, judgeFromCli } from '../answer-options.ts';
import { serve, type ServerType } from '@hono/node-server';
import { AgroError } from '../../errors.ts';
import { createApp, type RouteGroup } from '../../server/app.ts';
import { DEFAULT_MAX_INPUT_CHARS } from '../../server/openai.ts';
import { envRoutes, type EnvRoutes } from '../../server/env.ts';
import { guard } from '../../server/guard.ts';
import { BUNDLED_DATABASES, dashboardRoutes } from '../../server/dashboard.ts';
import { policyRouteGroups } from '../../server/policy-routes.ts';
import { turnTokens } from '../../prompt/contract.ts';
import { catalogFromDbRoot, catalogFromFactoryOutput, combineCatalogs, type DatabaseCatalog } from '../../data/catalog.ts';
import { createExecutor, introspectDatabase } from '../../sql/executor.ts';
import { openMemory } from '../../memory/legacy.ts';
import { assertDir } from '../../data/databases.ts';
import type { Policy } from '../../agent/policies/types.ts';
import { addPrivilegedRoleOption, type PrivilegedRoleCliOption, numberArg, repeatable } from '../options.ts';
import { accessFromCli, addAccessOptions, type AccessCliOptions } from '../access-options.ts';
import { addPromptOptions, envDepsFromCli, promptFromCli, type PromptCliOptions } from '../prompt-options.ts';
import { addEndpointOptions, addPolicyOptions, openPolicyFromCli, playgroundPolicies, type PolicyCliOptions } from '../policy-options.ts';
import { printOut } from '../print.ts';
import { Tokenizer } from '../../model/tokenizer.ts';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';

interface ServeCliOptions extends PolicyCliOptions, PromptCliOptions, PrivilegedRoleCliOption, AccessCliOptions {
  judge?: string | boolean;
  port: number;
  modelName?: string;
  concurrency: number;
  maxQueue: number;
  timeout: number;
  maxBody: number;
  maxTokens: number;
  maxInputChars: number;
  grace: number;
  dbRoot?: string;
  variants?: string;
  factory?: string[];
  tokenizer?: string;
  dashboard?: string;
  memory: string[];
}

function listen(app: ReturnType<typeof createApp>, host: string, port: number): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname: host, port }, () => resolve(server));
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new AgroError(err.code === 'EADDRINUSE' ? 'usage' : 'internal', err.code === 'EADDRINUSE' ? `port ${port} on ${host} is in use` : `server: ${err.message}`)),
    );
  });
}

/** The environment API's databases: a db-root (with variants) and/or factory outputs. */
function catalogOf(o: ServeCliOptions): DatabaseCatalog | undefined {
  const parts: DatabaseCatalog[] = [];
  // Missing folders stop the server before it starts (it would answer 404 to every request).
  if (o.dbRoot) assertDir('--db-root', o.dbRoot);
  if (o.variants) assertDir('--variants', o.variants);
  if (o.dbRoot) parts.push(catalogFromDbRoot(o.dbRoot, o.variants));
  for (const f of o.factory ?? []) parts.push(catalogFromFactoryOutput(f));
  return parts.length ? combineCatalogs(parts) : undefined;
}

/** --tokenizer: a checkpoint folder (its tokenizer.json) or a Hugging Face tokenizer.json, named as given. */
function tokensOf(path: string): { name: string; tokenizer: Tokenizer } {
  const file = existsSync(path) && statSync(path).isDirectory() ? join(path, 'tokenizer.json') : path;
  return { name: path, tokenizer: Tokenizer.load(file) };
}

/** A --memory store opens, names a database the server serves, and was built on that database's schema. */
async function checkServedMemory(path: string, cat: DatabaseCatalog): Promise<void> {
  const store = openMemory(path);
  try {
    const { dbId } = store.meta();
    let db: string;
    try {
      db = cat.resolve(dbId).path;
    } catch {
      throw new AgroError('invalid_input', `--memory ${path} is the memory of ${dbId}, which this server does not serve (${cat.describe})`);
    }
    store.check(await introspectDatabase(db));
  } finally {
    store.close();
  }
}

async function run(o: ServeCliOptions): Promise<void> {
  const catalog = catalogOf(o);
  // Nothing to serve named: the OpenAI API over the built-in base model.
  if (!o.policy && !catalog && !o.dashboard) o.policy = 'base';
  if (o.tokenizer && !catalog) throw new AgroError('usage', 'serve: --tokenizer gives the environment API\'s token ids: give it with --db-root or --factory');
  const tokens = o.tokenizer ? tokensOf(o.tokenizer) : undefined;
  // The answer path (/v1/ask, the Playground) takes its confidence from it; the environment API alone needs none.
  const judge = o.policy || o.dashboard ? judgeFromCli(o) : undefined;
  if (o.llmUrl && !o.dashboard) throw new AgroError('usage', 'serve: --llm-url is a Playground policy: give it with --dashboard <dir>');
  // The API runs SQL on your files and your model: any address but loopback needs a token.
  const access = {
    ...accessFromCli(o, 'serve'),
    openPaths: ['/health'],
    // The dashboard's HTML may be opened from a link elsewhere; its API may not.
    isPage: (path: string) => path.startsWith('/dashboard') && !path.startsWith('/dashboard/api/'),
  };
  // Bad --allowed-host, --cors or --token values stop here, before a model is loaded.
  guard({ ...access, maxBodyBytes: o.maxBody });
  const askCatalog = catalog ?? catalogFromDbRoot(BUNDLED_DATABASES);
  // A memory of another schema, or of a database not served, stops here too (exit 4), not at the first question on it.
  for (const path of o.memory) await checkServedMemory(path, askCatalog);
  const groups: RouteGroup[] = [];
  const closers: Array<() => Promise<void>> = [];
  let policy: Policy | undefined;
  let server: ServerType;
  try {
    if (o.policy) {
      policy = await openPolicyFromCli({ ...o, llmUrl: undefined }, o.concurrency);
      const p = policy;
      closers.push(() => p.close());
      // Questions over HTTP (POST /v1/ask, a completion naming a database): on the served databases, else the bundled ones.
      const askPool = createExecutor();
      closers.push(() => askPool.close());
      groups.push(
        ...policyRouteGroups({
          openai: { policy, modelName: o.modelName, concurrency: o.concurrency, maxQueue: o.maxQueue, timeoutMs: o.timeout, maxTokens: o.maxTokens, maxInputChars: o.maxInputChars },
          ask: { catalog: askCatalog, executor: askPool, env: promptFromCli(policy.promptContract, o), envDeps: envDepsFromCli(o), maxTurnTokens: turnTokens(policy.promptContract, undefined).maxTurnTokens, episodeTimeoutMs: o.timeout, memory: o.memory, judge },
        }),
      );
    }
    if (catalog) {
      // The environment's prompts are the ones the policy in training reads: --prompt-from, else the served policy's contract.
      const env: EnvRoutes = envRoutes({ catalog, env: promptFromCli(policy?.promptContract ?? null, o), envDeps: envDepsFromCli(o), allowPrivilegedRole: o.allowPrivilegedRole, ...(tokens ? { tokens } : {}) });
      closers.push(() => env.close());
      groups.push({ app: env });
    }
    if (o.dashboard) {
      const pool = createExecutor({ allowPrivilegedRole: o.allowPrivilegedRole });
      closers.push(() => pool.close());
      // The Playground runs the served policy itself (no second copy of the model) and any --llm-url.
      const dash = dashboardRoutes({ dir: o.dashboard, executor: pool, policies: { ...playgroundPolicies(o, policy), judge } });
      closers.unshift(() => dash.close());
      groups.push({ prefix: '/dashboard', app: dash });
    }
    server = await listen(createApp({ groups, maxBodyBytes: o.maxBody, guard: access }), o.host, o.port);
  } catch (err) {
    for (const close of closers) await close();
    throw err;
  }
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : o.port;
  const base = `http://${o.host.includes(':') ? `[${o.host}]` : o.host}:${port}`;
  if (policy) printOut(`agro serve: ${policy.description}\nOpenAI API: ${base}/v1 (model "${o.modelName ?? policy.name}")\nask: POST ${base}/v1/ask {"db_id", "question"} (${catalog ? catalog.describe : 'the bundled databases'})\n`);
  if (catalog) printOut(`environment API: ${base}/v1/sql, /v1/reward, /v1/env/sessions (${catalog.describe})\n`);
  if (o.dashboard) printOut(`dashboard: ${base}/dashboard/${access.token ? `?token=${encodeURIComponent(access.token)}` : ''}\n`);
  // The only place a token is ever shown: a made one must reach the person who started the server.
  if (access.minted && (policy || o.dashboard)) printOut(`writes (corrections, removals${o.dashboard ? ', Playground runs' : ''}) need: Authorization: Bearer ${access.token}\n`);
  printOut(`listening on ${base}; Ctrl-C stops\n`);
  // Graceful shutdown: stop accepting, let requests in flight finish (up to --grace ms), then free the model.
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.removeListener('SIGINT', stop);
      process.removeListener('SIGTERM', stop);
      printOut('agro serve: shutting down\n');
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
  for (const close of closers) await close();
}

export function register(program: Command): void {
  const cmd = program
    .command('serve')
    .description('One server on loopback: a policy over the OpenAI chat-completions API, the environment API for TRL/verl, the dashboard');
  addPolicyOptions(cmd, { endpoint: false });
  addEndpointOptions(cmd, 'with --dashboard: an OpenAI-compatible endpoint offered in the Playground')
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--port <n>', 'port (0 = any free one)', numberArg('--port', { min: 0 }), 8000)
    .option('--model-name <name>', 'model name in /v1/models (default: the checkpoint folder or GGUF file name)')
    .option('--concurrency <n>', 'completions running at once (a local engine batches them)', numberArg('--concurrency', { min: 1 }), 4)
    .option('--max-queue <n>', 'requests waiting beyond that before 429', numberArg('--max-queue', { min: 0 }), 64)
    .option('--timeout <ms>', 'per-request time limit (504 beyond)', numberArg('--timeout', { min: 1 }), 300_000)
    .option('--max-body <bytes>', 'largest request body (413 beyond)', numberArg('--max-body', { min: 1024 }), 4 * 1024 * 1024)
    .option('--max-tokens <n>', 'cap on max_tokens per completion', numberArg('--max-tokens', { min: 1 }), 1024)
    .option('--max-input-chars <n>', 'characters of message text per completion, checked before tokenizing (400 beyond)', numberArg('--max-input-chars', { min: 1 }), DEFAULT_MAX_INPUT_CHARS)
    .option('--grace <ms>', 'on shutdown, how long requests in flight may finish', numberArg('--grace', { min: 0 }), 10_000)
    .option('--db-root <dir|url>', 'environment API: databases as <dir>/<db_id>/<db_id>.sqlite, or a postgres:// server whose databases are named by db_id')
    .option('--variants <dir>', 'environment API: variant databases as <dir>/<db_id>/*.sqlite (the test-suite reward)')
    .option('--factory <dir...>', 'environment API: agro synth output folders (their databases and variants)')
    .option('--tokenizer <path>', 'environment API: token ids of every prompt and observation under this tokenizer (a checkpoint folder or a Hugging Face tokenizer.json)')
    .option('--token <token>', 'token every route but /health asks for (Authorization: Bearer, or the printed dashboard link; default env AGRO_TOKEN; required off loopback). None on loopback: a random one, printed at start, guards the writes')
    .option('--dashboard <dir>', 'serve the dashboard over this runs folder at /dashboard/')
    .option('--memory <file>', "a database's memory (agro memory build) for /v1/ask beside those the policy's contract names, where POST /v1/corrections stores; repeatable", repeatable, []);
  addJudgeOption(addPrivilegedRoleOption(addPromptOptions(addAccessOptions(cmd), { from: true }))).action((o: ServeCliOptions) => run(o));
}
