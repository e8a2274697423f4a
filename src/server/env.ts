/**
 * The environment API: agro's sandboxed SQL, rewards and multi-turn SQL episodes over HTTP, so that
 * outside trainers (TRL, verl; integrations/python/) drive agro's environment and score with agro's
 * rewards. A route group: `envRoutes(opts)` returns a Hono sub-app (plus close() and stats()).
 *
 *   GET  /health                          liveness, no token
 *   GET  /v1/schema?db_id=X               the schema text agro puts in the prompt, and the tables
 *   POST /v1/sql {db_id, sql}             one read-only query in the sandbox; the agent's observation too
 *   POST /v1/reward {items, rewards?}     score a batch of completions / SQL against gold (test suite)
 *   POST /v1/env/sessions {db_id, question, evidence?, gold_sql?, rewards?}   open an episode
 *   POST /v1/env/sessions/:id/step {text} one policy turn; the observation, or the end and its reward
 *   DELETE /v1/env/sessions/:id
 *
 * With a tokenizer (`tokens`: the checkpoint's own, or any Hugging Face byte-level BPE tokenizer.json), every
 * text the environment writes comes with its token ids under that tokenizer's name, each piece encoded on its own
 * as agro's chat template lays them (src/model/chat.ts): a session's opening messages (`message_ids`), each
 * observation (`observation_ids`), a /v1/sql observation; a trainer appends them and never re-tokenizes.
 *
 * Limits: at most maxInFlight requests run at once and maxQueued wait (503 beyond), bodies over
 * maxBodyBytes get 413, requests over requestTimeoutMs get 504, batches over maxBatch get 400; every
 * query has its own time limit in the SQL pool (stopped inside its process), and a query past the short
 * fast-lane budget finishes in a separate low-priority lane so runaway SQL does not hold up the rest.
 */
import { Hono, type Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { bodyLimit } from 'hono/body-limit';
import { timeout } from 'hono/timeout';
import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { AgroError, type ErrorKind } from '../errors.ts';
import { SqlEnvironment, type SqlEnvConfig, type SqlEnvDeps, type SqlTask } from '../agent/sql-env.ts';
import { formatResultTable } from '../prompt/observation.ts';
import { parseAction, SQL_AGENT_ACTIONS } from '../agent/protocol.ts';
import type { DatabaseCatalog } from '../data/catalog.ts';
import type { SqlExecutor, SqlValue } from '../sql/types.ts';
import { LanedExecutor } from '../sql/lanes.ts';
import { EngineRouter } from '../sql/executor.ts';
import { SessionStore, textBytes } from './env-sessions.ts';
import { assertTokenForHost, guardedApp } from './guard.ts';
import type { Tokenizer } from '../model/tokenizer.ts';
import { DEFAULT_REWARDS, rewardItemSchema, rewardSpecSchema, scoreItems, type RewardItem } from './env-reward.ts';

export const envRoutesOptionsSchema = z.strictObject({
  maxInFlight: z.number().int().min(1).default(64),
  maxQueued: z.number().int().min(0).default(512),
  maxBodyBytes: z.number().int().min(1024).default(8 * 1024 * 1024),
  requestTimeoutMs: z.number().int().min(100).default(120_000),
  maxBatch: z.number().int().min(1).default(4096),
  maxSessions: z.number().int().min(1).default(4096),
  sessionTtlMs: z.number().int().min(10).default(10 * 60_000),
  /** Time limit of a /v1/sql query (tool calls); episodes use the environment's execTimeoutMs, rewards its judge's limits. */
  sqlTimeoutMs: z.number().int().min(1).default(3000),
  /** Rows a /v1/sql reply carries at most. */
  sqlMaxRows: z.number().int().min(1).default(1000),
  /**
   * SQL processes of the fast lane and of the slow (runaway) lane, and the fast lane's budget per query:
   * CPU time on Linux (a quick query starved of CPU does not use it up; every limit is then CPU time,
   * see sql/lanes.ts), wall time elsewhere.
   */
  poolSize: z.number().int().min(1).max(64).default(2),
  slowPoolSize: z.number().int().min(1).max(64).default(1),
  fastLaneMs: z.number().int().min(1).default(process.platform === 'linux' ? 10 : 1000),
  /** Open sessions hold at most this many bytes of text together (questions, turns, observations). */
  maxSessionBytes: z.number().int().min(1024).default(64 * 1024 * 1024),
});
export type EnvRoutesOptions = z.input<typeof envRoutesOptionsSchema> & {
  catalog: DatabaseCatalog;
  /** The SQL environment's settings (turns, observation size, schema budget, compare mode). */
  env?: Partial<SqlEnvConfig>;
  /** Use this executor instead of the server's own laned pools (closed by the caller). */
  executor?: SqlExecutor;
  /** Where the environment finds each database's documentation (default: beside the file). */
  envDeps?: SqlEnvDeps;
  /** Token ids of the environment's text under this tokenizer, named in every reply that carries them. */
  tokens?: { name: string; tokenizer: Tokenizer };
  /** PostgreSQL: serve a role that can do more than read (src/sql/pg-role.ts; `--allow-privileged-role`). */
  allowPrivilegedRole?: boolean;
};

export interface EnvStats {
  inFlight: number;
  queued: number;
  rejected: number;
  sessions: number;
  /** Bytes of text the open sessions hold. */
  sessionBytes: number;
  sessionsExpired: number;
  /** Queries that ran past the fast lane's budget and went on in the slow lane (own lanes only). */
  movedToSlow?: number;
  /** Queries past the fast budget not run further: the slow lane's backlog could not reach them in time (own lanes only). */
  shed?: number;
  /** SQL processes started so far, respawns after kills included (own lanes only). */
  sqlProcessesStarted?: number;
}

export type EnvRoutes = Hono & { close(): Promise<void>; stats(): EnvStats };

const STATUS: Record<ErrorKind, 400 | 404 | 422 | 504 | 500> = {
  usage: 400,
  invalid_input: 400,
  not_found: 404,
  refused: 422,
  sql_error: 422,
  timeout: 504,
  internal: 500,
};

const sqlBody = z.strictObject({
  db_id: z.string().min(1),
  sql: z.string().min(1),
  max_rows: z.number().int().min(1).optional(),
});

const rewardBody = z.strictObject({
  items: z.array(z.unknown()).min(1),
  rewards: z.array(rewardSpecSchema).min(1).optional(),
});

const sessionBody = z.strictObject({
  db_id: z.string().min(1),
  question: z.string().min(1),
  evidence: z.string().optional(),
  gold_sql: z.string().min(1).optional(),
  id: z.string().optional(),
  rewards: z.array(rewardSpecSchema).min(1).optional(),
});

const stepBody = z.strictObject({ text: z.string() });

function zodLine(err: z.ZodError, where = ''): string {
  const i = err.issues[0];
  const path = [where, ...i.path.map(String)].filter(Boolean).join('.');
  return `${path ? `${path}: ` : ''}${i.message}`;
}

async function readBody<S extends z.ZodType>(c: Context, schema: S): Promise<z.infer<S>> {
  let raw: unknown;
  try {
    raw = await c.req.json();
  } catch {
    throw new AgroError('invalid_input', 'the request body is not valid JSON');
  }
  const r = schema.safeParse(raw);
  if (!r.success) throw new AgroError('invalid_input', zodLine(r.error));
  return r.data;
}

/** JSON has no bigint or bytes: big integers as strings beyond 2^53, blobs as hex. */
function jsonCell(v: SqlValue): string | number | null {
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (v instanceof Uint8Array) return Buffer.from(v).toString('hex');
  return v;
}

export function envRoutes(opts: EnvRoutesOptions): EnvRoutes {
  const { catalog, env: envConfig, executor: given, envDeps, tokens, allowPrivilegedRole, ...rest } = opts;
  const idsOf = (field: string, texts: string | string[]): Record<string, unknown> =>
    tokens ? { tokenizer: tokens.name, [field]: Array.isArray(texts) ? texts.map((t) => tokens.tokenizer.encode(t)) : tokens.tokenizer.encode(texts) } : {};
  const parsed = envRoutesOptionsSchema.safeParse(rest);
  if (!parsed.success) throw new AgroError('usage', `environment server: ${zodLine(parsed.error)}`);
  const o = parsed.data;
  const lanes = given ? undefined : new LanedExecutor({ fastSize: o.poolSize, slowSize: o.slowPoolSize, fastMs: o.fastLaneMs });
  // SQLite files run in the laned pools, postgres:// databases (a --db-root URL) on the PostgreSQL executor.
  const executor: SqlExecutor = given ?? new EngineRouter({ sqlite: lanes, size: o.poolSize, allowPrivilegedRole });
  const env = new SqlEnvironment(executor, envConfig, envDeps);
  const sessions = new SessionStore(o.maxSessions, o.sessionTtlMs, o.maxSessionBytes);
  let inFlight = 0;
  let queued = 0;
  let rejected = 0;
  const waiting: Array<() => void> = [];

  const taskFor = (dbId: string, fields: { question?: string; evidence?: string; gold_sql?: string; id?: string }): SqlTask => {
    const db = catalog.resolve(dbId);
    return {
      id: fields.id ?? '',
      dbId,
      dbPath: db.path,
      question: fields.question ?? '',
      evidence: fields.evidence,
      goldSql: fields.gold_sql ?? '',
      variantPaths: db.variants,
    };
  };

  const app = new Hono();
  app.onError((err, c) => {
    if (err instanceof HTTPException) return c.json({ error: err.message || 'request failed' }, err.status);
    if (err instanceof AgroError) return c.json({ error: err.message, kind: err.kind }, STATUS[err.kind]);
    return c.json({ error: `internal error: ${String((err as Error)?.message ?? err).split('\n')[0]}` }, 500);
  });
  app.notFound((c) => c.json({ error: `no route ${c.req.method} ${c.req.path}` }, 404));

  app.get('/health', (c) => c.json({ ok: true, databases: catalog.describe, sessions: sessions.size }));

  // Bounded concurrency: maxInFlight run, maxQueued wait in order, the rest are told to come back later.
  app.use('/v1/*', async (c, next) => {
    if (inFlight >= o.maxInFlight) {
      if (queued >= o.maxQueued) {
        rejected++;
        return c.json({ error: `server busy: ${inFlight} requests running and ${queued} queued` }, 503, { 'Retry-After': '1' });
      }
      queued++;
      await new Promise<void>((r) => waiting.push(r));
      queued--;
    }
    inFlight++;
    try {
      await next();
    } finally {
      inFlight--;
      waiting.shift()?.();
    }
  });
  app.use(
    '/v1/*',
    bodyLimit({ maxSize: o.maxBodyBytes, onError: (c) => c.json({ error: `request body over ${o.maxBodyBytes} bytes` }, 413) }),
  );
  app.use('/v1/*', timeout(o.requestTimeoutMs, () => new HTTPException(504, { message: `request ran past ${o.requestTimeoutMs} ms` })));

  app.get('/v1/schema', async (c) => {
    const dbId = c.req.query('db_id');
    if (!dbId) throw new AgroError('usage', 'give ?db_id=');
    const db = catalog.resolve(dbId);
    // The environment's own read of the database (once per database, a server's too): the prompt's schema and the tables.
    await env.prepare(db.path);
    const schema = env.schemaOf(db.path);
    return c.json({
      db_id: dbId,
      variants: db.variants.length,
      schema: env.schemaFor(db.path),
      tables: schema.tables.map((t) => ({ name: t.name, rows: t.rowCount, columns: t.columns.map((col) => ({ name: col.name, type: col.type })) })),
    });
  });

  app.post('/v1/sql', async (c) => {
    const b = await readBody(c, sqlBody);
    const db = catalog.resolve(b.db_id);
    const maxRows = Math.min(b.max_rows ?? o.sqlMaxRows, o.sqlMaxRows);
    const r = await executor.execute(db.path, b.sql, { timeoutMs: o.sqlTimeoutMs, maxRows });
    const observation = formatResultTable(r, env.config.observationRows, env.config.observationChars);
    if (!r.ok) return c.json({ ok: false, error: r.error, message: r.message, elapsed_ms: r.elapsedMs, observation, ...idsOf('observation_ids', observation) });
    return c.json({ ok: true, columns: r.columns, rows: r.rows.map((row) => row.map(jsonCell)), truncated: r.truncated, elapsed_ms: r.elapsedMs, observation, ...idsOf('observation_ids', observation) });
  });

  app.post('/v1/reward', async (c) => {
    const b = await readBody(c, rewardBody);
    if (b.items.length > o.maxBatch) throw new AgroError('invalid_input', `items: ${b.items.length} items, at most ${o.maxBatch} per request`);
    const items: RewardItem[] = b.items.map((raw, i) => {
      const r = rewardItemSchema.safeParse(raw);
      if (!r.success) throw new AgroError('invalid_input', zodLine(r.error, `items.${i}`));
      return r.data;
    });
    const tasks = items.map((it) => taskFor(it.db_id, { gold_sql: it.gold_sql }));
    const scored = await scoreItems(env, (_, i) => tasks[i], items, b.rewards ?? DEFAULT_REWARDS);
    return c.json(scored);
  });

  app.post('/v1/env/sessions', async (c) => {
    const b = await readBody(c, sessionBody);
    const task = taskFor(b.db_id, b);
    const episode = await env.start(task);
    const bytes = textBytes(b.question, b.evidence, b.gold_sql, ...episode.opening.map((m) => m.content));
    const s = sessions.create(task, episode, b.rewards ?? DEFAULT_REWARDS, bytes);
    if (!s) return c.json({ error: `too many open sessions (${o.maxSessions} at most, ${o.maxSessionBytes} bytes of text together); delete finished ones` }, 503, { 'Retry-After': '1' });
    return c.json({ session_id: s.id, messages: episode.opening, max_turns: env.config.maxTurns, ttl_s: o.sessionTtlMs / 1000, ...idsOf('message_ids', episode.opening.map((m) => m.content)) }, 201);
  });

  app.post('/v1/env/sessions/:id/step', async (c) => {
    const s = sessions.get(c.req.param('id'));
    if (!s) return c.json({ error: 'unknown or expired session' }, 404);
    const b = await readBody(c, stepBody);
    if (s.done) return c.json({ error: 'the episode is over; delete the session' }, 409);
    if (s.busy) return c.json({ error: 'a step of this session is already running' }, 409);
    // The turn and its observation (at most observationChars characters) stay with the session.
    if (!sessions.grow(s, textBytes(b.text) + 4 * env.config.observationChars)) {
      return c.json({ error: `open sessions hold ${o.maxSessionBytes} bytes of text already; delete finished ones` }, 503, { 'Retry-After': '1' });
    }
    s.busy = true;
    try {
      const parsed = parseAction(b.text, SQL_AGENT_ACTIONS);
      const r = await s.episode.step(b.text, parsed);
      s.turns.push(b.text);
      if (!r.done) {
        if (parsed.kind === 'sql') s.toolCalls++;
        return c.json({ done: false, observation: r.observation, turn: s.turns.length, ...idsOf('observation_ids', r.observation ?? '') });
      }
      s.done = true;
      let reward: unknown = null;
      if (s.task.goldSql) {
        const item: RewardItem = { db_id: s.task.dbId, gold_sql: s.task.goldSql, turns: s.turns, tool_calls: s.toolCalls };
        const scored = await scoreItems(env, () => s.task, [item], s.rewards);
        reward = { ...scored.results[0], labels: scored.labels };
      }
      return c.json({ done: true, reason: r.reason, answer: r.answer ?? null, observation: r.observation ?? null, turn: s.turns.length, reward });
    } finally {
      s.busy = false;
    }
  });

  app.delete('/v1/env/sessions/:id', (c) => (sessions.delete(c.req.param('id')) ? c.body(null, 204) : c.json({ error: 'unknown or expired session' }, 404)));

  return Object.assign(app, {
    async close(): Promise<void> {
      sessions.close();
      if (!given) await executor.close();
    },
    stats(): EnvStats {
      const base = { inFlight, queued, rejected, sessions: sessions.size, sessionBytes: sessions.bytes, sessionsExpired: sessions.expired };
      return lanes ? { ...base, movedToSlow: lanes.movedToSlow, shed: lanes.shed, sqlProcessesStarted: lanes.fast.spawned + lanes.slow.spawned } : base;
    },
  });
}

export interface RunningEnvServer {
  url: string;
  port: number;
  routes: EnvRoutes;
  /** Stop accepting, let running requests finish (up to graceMs), then close the pools. */
  close(graceMs?: number): Promise<void>;
}

/** The environment routes alone on a Node HTTP server (tests, the bench, the e2e launcher). */
export async function serveEnv(opts: EnvRoutesOptions & { host?: string; port?: number; token?: string; allowedHosts?: string[]; cors?: string[] }): Promise<RunningEnvServer> {
  const { host = '127.0.0.1', port = 0, token, allowedHosts, cors, ...routeOpts } = opts;
  assertTokenForHost(host, token);
  const routes = envRoutes(routeOpts);
  const app = guardedApp(routes, { listenHost: host, token, allowedHosts, cors, openPaths: ['/health'], maxBodyBytes: routeOpts.maxBodyBytes ?? envRoutesOptionsSchema.shape.maxBodyBytes.parse(undefined) });
  const server: ServerType = await new Promise((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: host, port }, () => resolve(s));
    s.once('error', reject);
  });
  const addr = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${addr.port}`,
    port: addr.port,
    routes,
    async close(graceMs = 10_000) {
      const closed = new Promise<void>((r) => server.close(() => r()));
      const http = server as unknown as { closeIdleConnections?: () => void; closeAllConnections?: () => void };
      // Keep-alive connections go as soon as they are idle: a finished request must not hold shutdown.
      http.closeIdleConnections?.();
      const idle = setInterval(() => http.closeIdleConnections?.(), 25);
      const timer = setTimeout(() => http.closeAllConnections?.(), graceMs);
      await closed;
      clearInterval(idle);
      clearTimeout(timer);
      await routes.close();
    },
  };
}
