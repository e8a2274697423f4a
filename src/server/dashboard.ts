/**
 * The dashboard's route group: the browser app (built into web/dist at install time, served from memory
 * of the disk, nothing fetched at run time) and the JSON and server-sent-event APIs it reads a folder of
 * runs through. Mount it anywhere: the app uses relative URLs and hash routes.
 *
 *   GET  /                        the app (index.html, assets/*)
 *   GET  api/overview             runs, datasets, evaluations, policies, databases
 *   GET  api/run?id=              a run's metrics (as columns), config, held-out eval, quickstart report
 *   GET  api/events?run=&offset=  SSE: `metrics` events with the rows each run appends (repeat run/offset)
 *   GET  api/dataset?id=          manifest, schema coverage, pairs
 *   GET  api/eval?id=             an evaluation report (a quickstart's predictions are scored on demand)
 *   GET  api/eval/compare?id=&index=   predicted vs gold results, differing rows marked
 *   GET  api/eval/peers?id=       the reports on the same question file, with their policies and summaries
 *   POST api/sql {db, sql, chart?, full?}   one read-only query through the sandbox on a listed database (its chart; every row the sandbox returns)
 *   GET  api/playground/prompt?policy=&db=&question=   the system prompt (schema) the policy sees for that question
 *   GET  api/playground/ask?policy=&db=&question=&previous=&search=   SSE: the episode's steps (text as it is written, turns,
 *                                 checking, end with the answer path's reading, confidence and suggestions);
 *                                 previous: JSON [{question, sql}] of the conversation so far (follow-ups); search=0: the policy's answer alone
 *   POST api/playground/correct {policy, db, question, sql}   a person's right SQL, stored in the database's memory once it runs
 *   GET  api/playground/corrections?policy&db           the people's corrections in that memory, oldest first
 *   DELETE api/playground/corrections/ID?policy&db      one undone (kept in the store as removed)
 */
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Hono, type Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import { bodyLimit } from 'hono/body-limit';
import { z } from 'zod';
import { AgroError, oneLine } from '../errors.ts';
import { previousTurnSchema, type PreviousTurn } from '../prompt/conversation.ts';
import type { SqlExecutor } from '../sql/types.ts';
import { isPostgresUrl, redactUrl, withoutRedactedPassword } from '../sql/postgres.ts';
import type { DatabaseInfo, EvalPeer, MetricsEvent, RunDetail, RunInfo } from './dashboard/api-types.ts';
import { loadDataset } from './dashboard/data.ts';
import { compareQuestion, evalLabel, loadEval, reportHead } from './dashboard/evals.ts';
import { countLines, MetricsCache, readNewLines, toColumns, type TailState } from './dashboard/metrics.ts';
import { rowCount } from './dashboard/columns.ts';
import { defaultPolicy, policyBackend, type PlaygroundBackend, type PolicyBackendOptions } from './dashboard/playground.ts';
import { toChartedTable, toResultTable } from './dashboard/results.ts';
import { EXEC_DEFAULTS } from '../sql/pool.ts';
import { canWrite, writeRoute } from './guard.ts';
import { checkTypedText } from '../memory/entry.ts';
import { typedText } from './ask.ts';
import { realInside, scanFolder, type FolderScan, type FoundRun } from './dashboard/scan.ts';
import { databaseId } from '../sql/db-id.ts';

export type { ExtraPolicy, PlaygroundBackend, PolicyBackendOptions } from './dashboard/playground.ts';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Where `npm run build:web` (run by npm install) puts the bundle. */
export const DEFAULT_WEB_DIR = join(REPO_ROOT, 'web', 'dist');
/** The databases agro ships (data/databases/<db_id>/<db_id>.sqlite). */
export const BUNDLED_DATABASES = join(REPO_ROOT, 'data', 'databases');

export interface DashboardOptions {
  /** The folder of runs, data and evaluations to show. */
  dir: string;
  /** Runs every query (the caller owns it and closes it). */
  executor: SqlExecutor;
  /** The built app; default web/dist. */
  webDir?: string;
  /**
   * The Playground's policies beside the folder's checkpoints and GGUF files (an endpoint, a path, a policy
   * the server holds open), and their engine settings.
   */
  policies?: Omit<PolicyBackendOptions, 'executor' | 'scan'>;
  /** Another Playground backend altogether (replaces the one built from `policies`). */
  playground?: PlaygroundBackend;
  /** Folders of `<db_id>/<db_id>.sqlite` databases offered in the Playground; default the bundled ones. */
  databaseRoots?: string[];
  /** More databases offered in the Playground and the SQL runner: SQLite files or postgres:// URLs (`agro dashboard --db`). */
  databases?: string[];
  /** How often the live stream looks at metrics files. */
  pollMs?: number;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
};

/** Largest request body the API reads (a query typed in the app). */
export const MAX_API_BODY = 1024 * 1024;

/** Rows a query typed in the app returns. */
const SQL_ROWS = 1000;

/** The `previous` turns of a Playground question: a JSON list of {question, sql}; none when absent. */
function parsePrevious(raw: string | undefined): PreviousTurn[] {
  if (!raw) return [];
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new AgroError('usage', 'previous: not JSON');
  }
  const r = z.array(previousTurnSchema).max(64).safeParse(json);
  if (!r.success) throw new AgroError('usage', `previous: expected [{"question": "...", "sql": "..."}] (${r.error.issues[0].message})`);
  return r.data;
}

/** A person's answer to a Playground question: the policy names whose memories apply, the database where it runs. */
const correctionSchema = z.strictObject({ policy: z.string(), db: z.string().min(1), question: typedText('question'), sql: typedText('SQL') });

/** Errors as JSON with the status the CLI's exit codes map to. */
function fail(c: Context, err: unknown): Response {
  const kind = err instanceof AgroError ? err.kind : 'internal';
  const status = kind === 'not_found' ? 404 : kind === 'internal' ? 500 : 400;
  return c.json({ error: oneLine(err) }, status);
}

function runInfo(realRoot: string, r: FoundRun, steps = countLines(join(r.dir, 'metrics.jsonl'))): RunInfo {
  const metrics = join(r.dir, 'metrics.jsonl');
  let algo: string | undefined;
  if (r.kind === 'grpo') algo = (readJsonInside(realRoot, join(r.dir, 'train_config.json')) as { train?: { algo?: string } } | null)?.train?.algo;
  return { id: r.id, kind: r.kind, ...(algo ? { algo } : {}), steps, modifiedMs: statSync(metrics).mtimeMs, hasEval: realInside(realRoot, join(r.dir, 'eval.json')) !== undefined };
}

function readJsonOr(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return null;
  }
}

/** A JSON file of the folder, or null when it is missing, unreadable, or a symlink out of the folder. */
function readJsonInside(realRoot: string, path: string): unknown {
  const real = realInside(realRoot, path);
  return real === undefined ? null : readJsonOr(real);
}


/** The route group, and close() for the Playground's open models (the executor stays the caller's). */
export type DashboardRoutes = Hono & { close(): Promise<void> };

export function dashboardRoutes(opts: DashboardOptions): DashboardRoutes {
  const root = resolve(opts.dir);
  if (!existsSync(root) || !statSync(root).isDirectory()) throw new AgroError('not_found', `dashboard folder not found: ${opts.dir}`);
  const realRoot = realpathSync(root);
  const webDir = opts.webDir ?? DEFAULT_WEB_DIR;
  const exec = opts.executor;
  const pollMs = opts.pollMs ?? 500;
  const metricsCache = new MetricsCache();
  // One walk serves the requests of a page load; new runs show up a second later.
  let cached: { at: number; scan: FolderScan } | null = null;
  const scan = (): FolderScan => {
    if (!cached || Date.now() - cached.at > 1000) cached = { at: Date.now(), scan: scanFolder(root) };
    return cached.scan;
  };
  const playground = opts.playground ?? policyBackend({ ...opts.policies, executor: exec, scan, dir: root });

  const databases = (): (DatabaseInfo & { path: string })[] => {
    const out = new Map<string, DatabaseInfo & { path: string }>();
    for (const dbRoot of opts.databaseRoots ?? [BUNDLED_DATABASES]) {
      if (!existsSync(dbRoot)) continue;
      for (const id of readdirSync(dbRoot).sort()) {
        const p = join(dbRoot, id, `${id}.sqlite`);
        if (existsSync(p)) out.set(p, { id: p, label: id, path: p });
      }
    }
    // A server is listed under its URL without the password (the id goes to the browser); the path keeps it.
    const server = (url: string, label: string): void => {
      const id = redactUrl(url);
      if (!out.has(id)) out.set(id, { id, label, path: url, own: true });
    };
    // A database the person named or made data from: listed once (a bundled one keeps its name), marked as theirs.
    const mine = (file: string, label: string): void => {
      const cur = out.get(resolve(file));
      if (cur) cur.own = true;
      else out.set(resolve(file), { id: resolve(file), label, path: resolve(file), own: true });
    };
    for (const db of opts.databases ?? []) {
      if (isPostgresUrl(db)) server(db, `${databaseId(db)} (${redactUrl(db)})`);
      else if (existsSync(db)) mine(db, databaseId(db));
    }
    for (const d of scan().datasets) {
      const db = (readJsonOr(join(d.dir, 'manifest.json')) as { db?: unknown } | null)?.db;
      if (typeof db !== 'string') continue;
      // A factory output made on a server names it without the password: PGPASSWORD or ~/.pgpass gives it.
      if (isPostgresUrl(db)) server(withoutRedactedPassword(db), `${databaseId(db)} (${d.id})`);
      else if (existsSync(db)) mine(db, `${databaseId(db)} (${d.id})`);
    }
    return [...out.values()];
  };
  const database = (id: string | undefined): string => {
    const db = databases().find((d) => d.id === id);
    if (!db) throw new AgroError('not_found', `unknown database '${id ?? ''}'`);
    return db.path;
  };
  const findRun = (id: string | undefined): FoundRun => {
    const r = scan().runs.find((x) => x.id === id) ?? scanFolder(root).runs.find((x) => x.id === id);
    if (!r) throw new AgroError('not_found', `no run '${id ?? ''}' in ${root}`);
    return r;
  };

  let webReal: string | undefined;
  const realWebDir = (): string => {
    try {
      webReal ??= realpathSync(webDir);
    } catch {
      return resolve(webDir);
    }
    return webReal;
  };

  const app = new Hono();
  // The API's only body is a query: a huge one is refused before it is read (413).
  app.use('/api/*', bodyLimit({ maxSize: MAX_API_BODY, onError: (c) => c.json({ error: `request body is larger than ${MAX_API_BODY} bytes` }, 413) }));

  app.get('/api/overview', async (c) => {
    try {
      const s = scan();
      const policies = await playground.policies();
      const dbs = databases();
      return c.json({
        root,
        // A run deleted since the last walk (the walk is kept a second) is left out, not an error.
        runs: s.runs.filter((r) => existsSync(join(r.dir, 'metrics.jsonl'))).map((r) => runInfo(realRoot, r)),
        datasets: s.datasets.map((d) => ({ id: d.id })),
        evals: s.evals.map((e) => ({ id: e.id, source: e.source, label: evalLabel(e) })),
        policies,
        databases: dbs.map(({ id, label, own }) => ({ id, label, ...(own ? { own } : {}) })),
        // Where the Playground starts: the person's own policy and database, not the alphabetically first.
        defaults: { policy: defaultPolicy(policies) ?? null, database: (dbs.find((d) => d.own) ?? dbs[0])?.id ?? null },
        // Asking and correcting need the token (a page opened without the printed link reads only).
        writable: canWrite(c),
      });
    } catch (err) {
      return fail(c, err);
    }
  });

  app.get('/api/run', (c) => {
    try {
      const r = findRun(c.req.query('id'));
      const read = metricsCache.read(join(r.dir, 'metrics.jsonl'));
      // Every file is read through its real path, inside the folder: a symlink out of it reads as missing.
      const config = readJsonInside(realRoot, join(r.dir, r.kind === 'sft' ? 'sft_config.json' : 'train_config.json'));
      // A quickstart's report sits beside its run folder (never above the dashboard folder).
      const quickstart = r.dir !== root ? readJsonInside(realRoot, join(r.dir, '..', 'report.json')) : null;
      const rest: Omit<RunDetail, 'metrics'> = {
        run: runInfo(realRoot, r, rowCount(read.metrics)),
        offset: read.offset,
        config,
        eval: readJsonInside(realRoot, join(r.dir, 'eval.json')),
        ...(quickstart ? { quickstart } : {}),
      };
      // The columns are the bulk of the answer (megabytes for a long run): serialized once per change of the file.
      return c.body(`{"metrics":${read.json()},${JSON.stringify(rest).slice(1)}`, 200, { 'content-type': 'application/json' });
    } catch (err) {
      return fail(c, err);
    }
  });

  app.get('/api/events', (c) => {
    let runs: { r: FoundRun; state: TailState | null }[];
    try {
      const ids = c.req.queries('run') ?? [];
      const offsets = c.req.queries('offset') ?? [];
      runs = ids.map((id, i) => {
        const r = findRun(id);
        const offset = Number(offsets[i] ?? 0);
        // Continue after what the page already has, unless the file was replaced since.
        let state: TailState | null = null;
        try {
          if (offset > 0) state = { offset, ino: statSync(join(r.dir, 'metrics.jsonl')).ino };
        } catch {
          state = null;
        }
        return { r, state };
      });
    } catch (err) {
      return fail(c, err);
    }
    return streamSSE(c, async (stream) => {
      let aborted = false;
      stream.onAbort(() => {
        aborted = true;
      });
      let idle = 0;
      while (!aborted) {
        for (const run of runs) {
          const read = readNewLines(join(run.r.dir, 'metrics.jsonl'), run.state);
          if (!read) continue;
          run.state = read.state;
          if (!read.reset && read.lines.length === 0) continue;
          const ev: MetricsEvent = { run: run.r.id, reset: read.reset, metrics: toColumns(read.lines), offset: read.state.offset };
          if (ev.metrics.keys.length === 0 && !read.reset) continue;
          await stream.writeSSE({ event: 'metrics', data: JSON.stringify(ev) });
          idle = 0;
        }
        // A comment now and then keeps proxies and idle timers from closing a quiet stream.
        if (++idle * pollMs >= 15_000) {
          await stream.write(': keep-alive\n\n');
          idle = 0;
        }
        await stream.sleep(pollMs);
      }
    });
  });

  app.get('/api/dataset', async (c) => {
    try {
      const d = scan().datasets.find((x) => x.id === c.req.query('id'));
      if (!d) throw new AgroError('not_found', `no dataset '${c.req.query('id') ?? ''}' in ${root}`);
      return c.json(await loadDataset(d.id, d.dir));
    } catch (err) {
      return fail(c, err);
    }
  });

  const findEval = (id: string | undefined) => {
    const e = scan().evals.find((x) => x.id === id);
    if (!e) throw new AgroError('not_found', `no evaluation '${id ?? ''}' in ${root}`);
    return e;
  };
  app.get('/api/eval', async (c) => {
    try {
      return c.json((await loadEval(findEval(c.req.query('id')), exec)).detail);
    } catch (err) {
      return fail(c, err);
    }
  });
  // The reports on the same question file as this one (each file once, however many paths reach it), side by side.
  app.get('/api/eval/peers', (c) => {
    try {
      const head = reportHead(findEval(c.req.query('id')));
      if (!head) return c.json({ reports: [] });
      const seen = new Set<string>();
      const reports: EvalPeer[] = [];
      for (const e of scan().evals) {
        const h = reportHead(e);
        if (!h || h.data !== head.data) continue;
        const real = realpathSync(e.file);
        if (seen.has(real)) continue;
        seen.add(real);
        reports.push({ id: e.id, label: evalLabel(e), policy: h.policy, summary: h.summary });
      }
      return c.json({ reports });
    } catch (err) {
      return fail(c, err);
    }
  });
  app.get('/api/eval/compare', async (c) => {
    try {
      const ev = await loadEval(findEval(c.req.query('id')), exec);
      const res = await compareQuestion(ev, Number(c.req.query('index')), exec);
      if (!res) throw new AgroError('not_found', `no question ${c.req.query('index') ?? ''} in that evaluation`);
      return c.json(res);
    } catch (err) {
      return fail(c, err);
    }
  });

  app.post('/api/sql', async (c) => {
    try {
      const body = (await c.req.json().catch(() => null)) as { db?: unknown; sql?: unknown; chart?: unknown; full?: unknown } | null;
      if (!body || typeof body.sql !== 'string' || typeof body.db !== 'string') throw new AgroError('usage', 'expected {"db": "...", "sql": "...", "chart"?: true, "full"?: true}');
      // A download (`full`) gets the whole result as far as the sandbox bounds any result (rows and bytes).
      if (body.full === true) return c.json(toResultTable(await exec.execute(database(body.db), body.sql, { timeoutMs: 10_000, maxRows: EXEC_DEFAULTS.maxRows }), EXEC_DEFAULTS.maxRows));
      const r = await exec.execute(database(body.db), body.sql, { timeoutMs: 10_000, maxRows: SQL_ROWS + 1 });
      // The Playground asks for the chart of what it runs; other pages read the table only.
      return c.json(body.chart === true ? await toChartedTable(r, SQL_ROWS) : toResultTable(r, SQL_ROWS));
    } catch (err) {
      return fail(c, err);
    }
  });

  app.get('/api/playground/prompt', async (c) => {
    try {
      const db = database(c.req.query('db'));
      if (!playground.prompt) return c.json({ prompt: null });
      return c.json({ prompt: await playground.prompt(c.req.query('policy') ?? '', db, c.req.query('question') ?? '') });
    } catch (err) {
      return fail(c, err);
    }
  });

  // An episode starts work on the policy and the database: the token's, as every write is (guard.ts writeRoute).
  app.get('/api/playground/ask', writeRoute, (c) => {
    const policy = c.req.query('policy') ?? '';
    const question = (c.req.query('question') ?? '').trim();
    let db: string;
    let previous: PreviousTurn[];
    try {
      db = database(c.req.query('db'));
      if (!question) throw new AgroError('usage', 'ask a question');
      checkTypedText(question, 'question', 'question');
      previous = parsePrevious(c.req.query('previous'));
    } catch (err) {
      return fail(c, err);
    }
    return streamSSE(c, async (stream) => {
      // A closed page stops the episode (the policy finishes its current turn at most).
      const stop = new AbortController();
      stream.onAbort(() => stop.abort());
      const pending: Promise<void>[] = [];
      await playground.ask(
        policy,
        db,
        question,
        (e) => {
          if (!stop.signal.aborted) pending.push(stream.writeSSE({ event: e.type, data: JSON.stringify(e) }));
        },
        stop.signal,
        previous,
        { search: c.req.query('search') !== '0' },
      );
      await Promise.all(pending);
    });
  });

  app.post('/api/playground/correct', writeRoute, async (c) => {
    try {
      const body = correctionSchema.safeParse(await c.req.json().catch(() => null));
      if (!body.success) throw new AgroError('usage', `expected {"policy", "db", "question", "sql"} (${body.error.issues[0].path.join('.') || 'body'}: ${body.error.issues[0].message})`);
      if (!playground.correct) throw new AgroError('usage', 'this Playground stores no corrections');
      const { policy, db, question, sql } = body.data;
      return c.json(await playground.correct(policy, database(db), question, sql));
    } catch (err) {
      return fail(c, err);
    }
  });

  // The people's corrections in the memory the Playground answers the database with: listed for anyone, removed with the token.
  app.get('/api/playground/corrections', (c) => {
    try {
      if (!playground.corrections) throw new AgroError('usage', 'this Playground stores no corrections');
      return c.json({ corrections: playground.corrections(c.req.query('policy') ?? '', database(c.req.query('db'))) });
    } catch (err) {
      return fail(c, err);
    }
  });
  app.delete('/api/playground/corrections/:id', writeRoute, (c) => {
    try {
      const id = c.req.param('id');
      if (!/^[1-9]\d{0,15}$/.test(id)) throw new AgroError('usage', `the id is a correction's number, not ${JSON.stringify(id.slice(0, 40))}`);
      if (!playground.removeCorrection) throw new AgroError('usage', 'this Playground stores no corrections');
      if (!playground.removeCorrection(c.req.query('policy') ?? '', database(c.req.query('db')), Number(id))) throw new AgroError('not_found', `no correction ${id} in this database's memory`);
      return c.json({ id: Number(id), removed: true });
    } catch (err) {
      return fail(c, err);
    }
  });

  // Any other API path is a JSON 404, not the app's page.
  app.all('/api/*', (c) => c.json({ error: `no route ${c.req.method} ${c.req.path}` }, 404));

  // The app itself: files of the bundle, index.html for the folder.
  app.get('/*', (c) => {
    const rel = c.req.path.replace(/^.*?\/(assets\/[^/]+|favicon\.svg)$/, '$1');
    const name = rel.startsWith('assets/') || rel === 'favicon.svg' ? rel : 'index.html';
    // A bundle file's name is one plain segment: no `..`, no encoded separator, no link out of the bundle.
    const plain = !/(^|\/)\.\.?(\/|$)|\\|%|\0/.test(name);
    const file = resolve(webDir, name);
    const real = plain && file.startsWith(resolve(webDir) + sep) ? realInside(realWebDir(), file) : undefined;
    if (!real || !statSync(real).isFile()) {
      if (name === 'index.html') return c.text('The dashboard app is not built: run `npm run build:web` (npm install does it).', 503);
      return c.json({ error: 'not found' }, 404);
    }
    const immutable = name.startsWith('assets/');
    return c.body(readFileSync(real), 200, {
      'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
      'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
    });
  });

  return Object.assign(app, { close: async () => playground.close?.() });
}

/** True when the app bundle is there to serve. */
export function webBundleBuilt(webDir = DEFAULT_WEB_DIR): boolean {
  return existsSync(join(webDir, 'index.html'));
}
