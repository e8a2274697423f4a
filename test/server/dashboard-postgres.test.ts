// The dashboard on PostgreSQL: a server database given to it (`agro dashboard --db <url>`) and a factory output made
// on a server (its manifest names the URL without the password, which PGPASSWORD gives) are listed without the
// password, and the SQL runner, the Playground (prompt and episode) and the Data page's coverage run on the server.
// The Evaluations page, served by `agro dashboard` on loopback: a quickstart's predictions made on a server are
// scored there as `agro eval --db-root <url>` scores them, and an `agro eval --db-root <url>` report's side-by-side
// results are the server's rows; no response holds the password.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { copySqliteToPostgres, runAdminSql } from '../../src/sql/pg-copy.ts';
import { sandboxRoleSql } from '../../src/sql/pg-setup.ts';
import { redactUrl, withoutRedactedPassword } from '../../src/sql/postgres.ts';
import { createExecutor } from '../../src/sql/executor.ts';
import { onLoopback } from '../support/loopback-app.ts';
import { dashboardRoutes } from '../../src/server/dashboard.ts';
import { formatAction } from '../../src/agent/protocol.ts';
import { resolveQuickstartConfig } from '../../src/pipeline/quickstart.ts';
import { buildServerVariants, variantTag } from '../../src/factory/augment.ts';
import { buildSchemaGraph } from '../../src/factory/schema-graph.ts';
import { introspectDatabase } from '../../src/sql/executor.ts';
import type { EvalReport } from '../../src/eval/types.ts';
import type { CompareResult, DatasetDetail, EvalDetail, PlaygroundEvent } from '../../src/server/dashboard/api-types.ts';
import { sseEvents } from '../support/sse-events.ts';
import { startFakeOpenAI } from '../support/fake-openai.ts';
import { BIN, DEV, MUSIC, tempDir } from '../adversarial/support.ts';
import { PG, postgresForTests, startPostgres, type PgServer } from '../support/postgres.ts';

const PASSWORD = 'dash-pg-secret';


type Question = { question: string; gold: string; pred: string };
/** Held-out rows in BIRD's layout for `questions` under `dbId`. */
const heldOutRows = (questions: readonly Question[], dbId: string): string =>
  questions.map((q, i) => JSON.stringify({ question_id: i, db_id: dbId, question: q.question, evidence: '', SQL: q.gold, difficulty: 'simple' })).join('\n') + '\n';

/** A quickstart's layout at `qs` as the Evaluations page reads it: report.json (the server without its password), held_out.jsonl, grpo/predictions.json. */
function quickstartLayout(qs: string, url: string, questions: readonly Question[], dbId: string, report: Record<string, unknown> = {}): void {
  mkdirSync(join(qs, 'grpo'), { recursive: true });
  writeFileSync(join(qs, 'report.json'), JSON.stringify({ config: { ...resolveQuickstartConfig({ db: url, out: qs }), db: redactUrl(url) }, ...report }));
  writeFileSync(join(qs, 'held_out.jsonl'), heldOutRows(questions, dbId));
  writeFileSync(join(qs, 'grpo', 'predictions.json'), JSON.stringify(questions.map((q) => q.pred)));
}

describe('dashboard on PostgreSQL', { skip: PG.skip }, () => {
  let server: PgServer;
  let url: string;
  const tmp = tempDir();
  const savedPassword = process.env.PGPASSWORD;

  before(async () => {
    server = await startPostgres();
    await copySqliteToPostgres(MUSIC, server.adminUrl('music_store'));
    await runAdminSql(server.adminUrl('music_store'), sandboxRoleSql({ role: 'agro_dash', password: PASSWORD, database: 'music_store' }));
    url = server.url('agro_dash', PASSWORD, 'music_store');
    const synth = join(tmp.dir, 'runs', 'synth');
    mkdirSync(synth, { recursive: true });
    const rows = (JSON.parse(readFileSync(DEV, 'utf8')) as Array<{ db_id: string; SQL: string }>).filter((r) => r.db_id === 'music_store').slice(0, 4);
    writeFileSync(join(synth, 'dataset.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
    writeFileSync(join(synth, 'manifest.json'), JSON.stringify({ dbId: 'music_store', db: redactUrl(url) }));
    process.env.PGPASSWORD = PASSWORD;
  });
  after(async () => {
    if (savedPassword === undefined) delete process.env.PGPASSWORD;
    else process.env.PGPASSWORD = savedPassword;
    await server?.stop();
    tmp.cleanup();
  });

  test('SQL runner, Playground and Data page on a server database', { timeout: 120_000 }, async () => {
    const llm = await startFakeOpenAI((req) => ({
      kind: 'reply',
      content: req.body.messages?.some((m) => m.role === 'tool')
        ? formatAction({ kind: 'answer', think: 'done', content: 'SELECT COUNT(*) FROM genres' })
        : formatAction({ kind: 'sql', think: 'look first', content: 'SELECT genre_id FROM genres ORDER BY genre_id LIMIT 3' }),
    }));
    const exec = createExecutor({ size: 2 });
    const app = dashboardRoutes({ dir: join(tmp.dir, 'runs'), executor: exec, webDir: join(tmp.dir, 'no-bundle'), databaseRoots: [], databases: [url], policies: { extra: [{ spec: { llmUrl: llm.baseUrl, llmModel: 'm' } }] } });
    try {
      const ovText = await (await app.request('/api/overview')).text();
      assert.ok(!ovText.includes(PASSWORD), 'the overview holds the password');
      const ov = JSON.parse(ovText) as { databases: { id: string; label: string }[] };
      const given = redactUrl(url);
      const fromManifest = withoutRedactedPassword(redactUrl(url));
      assert.deepEqual(ov.databases.map((d) => d.id), [given, fromManifest]);
      for (const db of [given, fromManifest]) {
        const res = await app.request('/api/sql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ db, sql: 'SELECT COUNT(*) FROM genres' }) });
        assert.equal(res.status, 200, await res.clone().text());
        assert.deepEqual(((await res.json()) as { rows: unknown[][] }).rows, [[12]]);
      }
      // The guard holds on the server too.
      const write = await app.request('/api/sql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ db: given, sql: 'DELETE FROM genres' }) });
      const writeBody = (await write.json()) as { error?: string };
      assert.ok(writeBody.error, JSON.stringify(writeBody));
      assert.equal(Number((await server.admin('SELECT count(*) FROM genres', 'music_store'))[0][0]), 12);

      const policy = `${llm.baseUrl}#m`;
      const prompt = (await (await app.request(`/api/playground/prompt?${new URLSearchParams({ policy, db: given, question: 'How many genres?' })}`)).json()) as { prompt?: string; error?: string };
      assert.ok(prompt.prompt, JSON.stringify(prompt));
      assert.match(prompt.prompt, /\bgenres\b/);
      const ev = sseEvents(await (await onLoopback(app).request(`/api/playground/ask?${new URLSearchParams({ policy, db: fromManifest, question: 'How many genres?' })}`)).text());
      assert.deepEqual(ev.map((e) => e.type), ['start', 'text', 'assistant', 'observation', 'text', 'assistant', 'checking', 'end'], JSON.stringify(ev));
      assert.deepEqual((ev[3] as Extract<PlaygroundEvent, { type: 'observation' }>).table?.rows, [[1], [2], [3]]);
      const end = ev[7] as Extract<PlaygroundEvent, { type: 'end' }>;
      assert.equal(end.reason, 'answer');
      assert.deepEqual(end.result?.rows, [[12]]);

      const data = (await (await app.request('/api/dataset?id=synth')).json()) as DatasetDetail;
      assert.equal(data.dbAvailable, true);
      assert.equal(data.db, fromManifest);
      assert.ok(data.coverage.some((t) => t.table === 'genres' && t.pairs > 0), JSON.stringify(data.coverage.map((t) => [t.table, t.pairs])));
    } finally {
      await app.close();
      await llm.close();
      await exec.close();
    }
  });
});

/**
 * A quickstart's run folder (<dir>/evals/qs) over a server database as `url` reads it, and an environment without
 * PGPASSWORD: the password travels in the URL, as the quickstart writes it.
 */
function quickstartOnServer(url: string, dir: string, questions: readonly Question[], dbId: string, report: Record<string, unknown> = {}): { url: string; env: NodeJS.ProcessEnv; runs: string; qs: string } {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.PGPASSWORD;
  const runs = join(dir, 'evals');
  const qs = join(runs, 'qs');
  quickstartLayout(qs, url, questions, dbId, report);
  return { url, env, runs, qs };
}

/**
 * `agro dashboard <dir> ...args` on a free loopback port, with `env`; its base URL, get() of a JSON route (200, every
 * body kept in `bodies` for the password sweep), and stop() (SIGINT, as a user's Ctrl-C).
 */
async function startDashboard(
  dir: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ url: string; get: <T>(path: string) => Promise<T>; bodies: string[]; output: () => string; stop: () => Promise<number | null> }> {
  const child = spawn(process.execPath, [BIN, 'dashboard', dir, '--no-open', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  let out = '';
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const url = await new Promise<string>((res, rej) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
      if (m) res(m[1]);
    });
    child.once('exit', (code) => rej(new Error(`agro dashboard exited ${code}: ${out}`)));
  });
  const bodies: string[] = [];
  return {
    url,
    bodies,
    get: async <T>(path: string): Promise<T> => {
      const res = await fetch(url + path);
      const text = await res.text();
      bodies.push(text);
      assert.equal(res.status, 200, `${path}: ${text}`);
      return JSON.parse(text) as T;
    },
    output: () => out,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGINT');
      return exited;
    },
  };
}

describe('dashboard Evaluations page on PostgreSQL', { skip: PG.skip }, () => {
  const tmp = tempDir();
  const DB = 'bird_shop';
  // A genre only the server has: rows and counts that come from the bundled SQLite file would lack it.
  const SERVER_ONLY = 'Server Only';
  // Predictions and gold SQL of a quickstart's held-out file (db_id: the server database's name, as quickstart
  // writes it). #2's prediction is PostgreSQL's own (`~*`), an error on SQLite.
  const QUESTIONS: Question[] = [
    { question: 'How many genres are there?', gold: 'SELECT COUNT(*) FROM genres', pred: 'SELECT COUNT(*) FROM genres' },
    { question: 'Genres from id 11 on?', gold: 'SELECT name FROM genres WHERE genre_id >= 11 ORDER BY genre_id', pred: 'SELECT name FROM genres WHERE genre_id BETWEEN 11 AND 12' },
    { question: 'How many tracks have signals in their name?', gold: "SELECT COUNT(*) FROM tracks WHERE name ILIKE '%signals%'", pred: "SELECT COUNT(*) FROM tracks WHERE name ~* 'signals'" },
    { question: 'Which genre is Jazz?', gold: "SELECT genre_id FROM genres WHERE name = 'Jazz'", pred: 'SELECT nope FROM genres' },
    { question: 'How many media types?', gold: 'SELECT COUNT(*) FROM media_types', pred: 'DELETE FROM genres' },
  ];

  const live = postgresForTests(async (server) => {
    await copySqliteToPostgres(MUSIC, server.adminUrl(DB));
    await server.admin(`INSERT INTO genres (genre_id, name) VALUES (13, '${SERVER_ONLY}')`, DB);
    await runAdminSql(server.adminUrl(DB), sandboxRoleSql({ role: 'agro_evals', password: PASSWORD, database: DB }));
  });
  after(() => tmp.cleanup());

  test('a quickstart\'s predictions made on a server are scored as `agro eval` scores them; side by side, the server\'s rows', { timeout: 240_000 }, async () => {
    const { url, env, runs, qs } = quickstartOnServer(live.server.url('agro_evals', PASSWORD, DB), tmp.dir, QUESTIONS, DB);
    // The same questions under db_id `shop`, for a root that puts it where `{db_id}` is: bird_{db_id}.
    writeFileSync(join(tmp.dir, 'shop.jsonl'), heldOutRows(QUESTIONS, 'shop'));

    const agroEval = (data: string, dbRoot: string, out: string): EvalReport => {
      const r = spawnSync(process.execPath, [BIN, 'eval', '--data', data, '--pred', join(qs, 'grpo', 'predictions.json'), '--db-root', dbRoot, '--timeout', '10000', '--out', out], { encoding: 'utf8', env, timeout: 120_000 });
      assert.equal(r.status, 0, r.stderr);
      return JSON.parse(readFileSync(out, 'utf8')) as EvalReport;
    };
    const plain = agroEval(join(qs, 'held_out.jsonl'), url, join(runs, 'eval', 'report.json'));
    const template = agroEval(join(tmp.dir, 'shop.jsonl'), live.server.url('agro_evals', PASSWORD, 'bird_{db_id}'), join(runs, 'eval-template', 'report.json'));
    const expected = [['match'], ['mismatch'], ['match'], ['pred_error', 'syntax'], ['pred_error', 'refused']];
    for (const report of [plain, template]) assert.deepEqual(report.questions.map((q) => (q.errorKind ? [q.outcome, q.errorKind] : [q.outcome])), expected);
    // The reports name their root without the password, the `{db_id}` root as one.
    assert.equal(plain.dbRoot, redactUrl(url));
    assert.match(template.dbRoot, /^postgres:\/\/agro_evals:\*\*\*@127\.0\.0\.1:\d+\/bird_\{db_id\}$/);

    // The reports name the server without the password: the dashboard has it from PGPASSWORD. The URL with the
    // password is given too (the SQL runner's database), so a response could leak it.
    const dash = await startDashboard(runs, ['--db', url], { ...env, PGPASSWORD: PASSWORD });
    const { get, bodies } = dash;
    let exit: number | null;
    try {
      const ov = await get<{ evals: { id: string; source: string }[] }>('api/overview');
      assert.deepEqual(ov.evals.map((e) => [e.id, e.source]).sort(), [['eval-template/report.json', 'report'], ['eval/report.json', 'report'], ['qs/grpo/predictions.json', 'predictions']]);

      // (1) The quickstart's predictions, scored on demand on the server: agro eval's outcome for every question.
      const scored = await get<EvalDetail>(`api/eval?id=${encodeURIComponent('qs/grpo/predictions.json')}`);
      assert.deepEqual(
        scored.questions.map((q) => [q.index, q.outcome, q.errorKind ?? null]),
        plain.questions.map((q) => [q.index, q.outcome, q.errorKind ?? null]),
      );
      assert.deepEqual([scored.summary.count, scored.summary.correct], [plain.summary.count, plain.summary.correct]);
      assert.equal(scored.questions[1].question, QUESTIONS[1].question);

      // (2) Side by side, for the quickstart's scoring and both reports: the rows are the server's.
      const serverGenres = Number((await live.server.admin('SELECT COUNT(*) FROM genres', DB))[0][0]);
      assert.equal(serverGenres, 13);
      for (const id of ['qs/grpo/predictions.json', 'eval/report.json', 'eval-template/report.json']) {
        const compare = (i: number) => get<CompareResult>(`api/eval/compare?${new URLSearchParams({ id, index: String(i) })}`);
        const count = await compare(0);
        assert.ok(count.pred.ok && count.gold.ok, `${id} #0: ${JSON.stringify(count)}`);
        assert.deepEqual([count.pred.rows, count.gold.rows], [[[serverGenres]], [[serverGenres]]], id);
        const names = await compare(1);
        assert.deepEqual(names.gold.rows, [['Latin'], ['Soundtrack'], [SERVER_ONLY]], id);
        assert.deepEqual(names.pred.rows, [['Latin'], ['Soundtrack']], id);
        assert.deepEqual([names.predExtra, names.goldMissing], [[false, false], [false, false, true]], id);
        // PostgreSQL's own operator runs there.
        const regex = await compare(2);
        assert.ok(regex.pred.ok, `${id} #2: ${JSON.stringify(regex.pred)}`);
        assert.deepEqual(regex.pred.rows, regex.gold.rows, id);
        assert.ok(Number(regex.gold.rows[0][0]) > 0, id);
        // The write is refused by the guard, not run: the server's genres are as they were.
        const write = await compare(4);
        assert.equal(write.pred.ok, false, id);
      }
      assert.equal(Number((await live.server.admin('SELECT COUNT(*) FROM genres', DB))[0][0]), serverGenres);
    } finally {
      exit = await dash.stop();
    }
    assert.equal(exit, 0, dash.output());
    for (const body of bodies) assert.ok(!body.includes(PASSWORD), `a response holds the password: ${body.slice(0, 300)}`);
    assert.ok(!dash.output().includes(PASSWORD), 'the dashboard printed the password');
  });
});

describe('dashboard Evaluations page on a quickstart with variant databases on PostgreSQL', { skip: PG.skip }, () => {
  const tmp = tempDir();
  const DB = 'music_store';
  const TOTAL_MS = 270351522; // SUM(milliseconds) of the original's tracks
  // A quickstart's held-out questions and predictions. #1 is right on the original only (a constant); #4 reads a
  // view, which the variants carry.
  const QUESTIONS: Question[] = [
    { question: 'How many genres are there?', gold: 'SELECT COUNT(*) FROM genres', pred: 'SELECT COUNT(*) FROM genres' },
    { question: 'How long are all tracks together, in milliseconds?', gold: 'SELECT SUM(milliseconds) FROM tracks', pred: `SELECT ${TOTAL_MS}` },
    { question: 'Genres from id 11 on?', gold: 'SELECT name FROM genres WHERE genre_id >= 11', pred: 'SELECT name FROM genres WHERE genre_id > 11' },
    { question: 'Which genre is Jazz?', gold: "SELECT genre_id FROM genres WHERE name = 'Jazz'", pred: 'SELECT nope FROM genres' },
    { question: 'How many tracks have a genre?', gold: 'SELECT SUM(tracks) FROM genre_tracks', pred: 'SELECT COUNT(*) FROM tracks t JOIN genres g ON g.genre_id = t.genre_id' },
  ];

  const live = postgresForTests(async (server) => {
    await copySqliteToPostgres(MUSIC, server.adminUrl(DB));
    await runAdminSql(server.adminUrl(DB), [
      'CREATE VIEW genre_tracks AS SELECT g.name, COUNT(*) AS tracks FROM genres g JOIN tracks t ON t.genre_id = g.genre_id GROUP BY g.name',
      ...sandboxRoleSql({ role: 'agro_qsr', password: PASSWORD, database: DB }),
      // The quickstart's role: it may create the variant schemas (the sandboxed one may not, and then a run has none).
      `CREATE ROLE agro_qsm LOGIN PASSWORD '${PASSWORD}'`,
      `GRANT CONNECT, CREATE ON DATABASE ${DB} TO agro_qsm`,
      'GRANT USAGE ON SCHEMA public TO agro_qsm',
      'GRANT SELECT ON ALL TABLES IN SCHEMA public TO agro_qsm',
    ]);
  });
  after(() => tmp.cleanup());

  test('a quickstart\'s predictions are scored on its variant databases as `agro eval --suite` scores them', { timeout: 240_000 }, async () => {
    const { url, env, runs, qs } = quickstartOnServer(live.server.url('agro_qsm', PASSWORD, DB), tmp.dir, QUESTIONS, DB, { synth: { variants: 2 } });
    // The variants as the quickstart's factory makes them: schemas of the database, named in synth/variants/<db_id>/variant-N.pg.
    const schema = await introspectDatabase(url);
    const synth = join(qs, 'synth');
    await buildServerVariants(url, schema, buildSchemaGraph(schema), { count: 2, seed: 0, dir: join(synth, 'variants', DB), maxRowsPerTable: 300, tag: variantTag(synth, DB) });

    // `agro eval --suite`, as the quickstart prints it, with the password in the root URL. The role owns the
    // variant schemas it made, so predictions (untrusted SQL) run on it only with the flag that names the risk.
    const evalOut = join(runs, 'eval-suite', 'report.json');
    const r = spawnSync(process.execPath, [BIN, 'eval', '--data', join(qs, 'held_out.jsonl'), '--pred', join(qs, 'grpo', 'predictions.json'), '--db-root', url, '--suite', join(synth, 'variants'), '--timeout', '10000', '--out', evalOut, '--allow-privileged-role'], { encoding: 'utf8', env, timeout: 120_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.ok(!r.stdout.includes(PASSWORD) && !r.stderr.includes(PASSWORD), 'agro eval printed the password');
    const reportText = readFileSync(evalOut, 'utf8');
    assert.ok(!reportText.includes(PASSWORD), 'the report holds the password');
    const report = JSON.parse(reportText) as EvalReport;
    assert.deepEqual(
      report.questions.map((q) => (q.errorKind ? [q.outcome, q.errorKind] : [q.outcome])),
      [['match'], ['mismatch'], ['mismatch'], ['pred_error', 'syntax'], ['match']],
    );
    assert.deepEqual(report.questions.map((q) => q.variantsChecked ?? null), [2, 2, null, null, 2]);
    assert.match(report.questions[1].failedVariant ?? '', /^postgres:\/\/agro_qsm:\*\*\*@127\.0\.0\.1:\d+\/music_store\?options=-c%20search_path%3Dagro_variant_[0-9a-f]+_[12]$/);

    // The role owns its variant schemas: scoring predictions on it takes the flag that names the risk.
    const dash = await startDashboard(runs, ['--allow-privileged-role'], { ...env, PGPASSWORD: PASSWORD });
    const { get, bodies } = dash;
    let exit: number | null;
    try {
      const ov = await get<{ evals: { id: string; source: string }[] }>('api/overview');
      assert.deepEqual(ov.evals.map((e) => [e.id, e.source]).sort(), [['eval-suite/report.json', 'report'], ['qs/grpo/predictions.json', 'predictions']]);
      // The quickstart's predictions, scored on demand on the original and its variants: agro eval --suite's outcome for every question.
      const key = (q: { index: number; outcome: string; errorKind?: string }) => [q.index, q.outcome, q.errorKind ?? null];
      const scored = await get<EvalDetail>(`api/eval?id=${encodeURIComponent('qs/grpo/predictions.json')}`);
      assert.deepEqual(scored.questions.map(key), report.questions.map(key));
      assert.deepEqual([scored.summary.count, scored.summary.correct], [report.summary.count, report.summary.correct]);
      assert.match(scored.questions[1].message ?? '', /search_path%3Dagro_variant_/);
      const served = await get<EvalDetail>(`api/eval?id=${encodeURIComponent('eval-suite/report.json')}`);
      assert.deepEqual(served.questions.map(key), report.questions.map(key));

      // Side by side: #1's rows are those of the variant it failed on (on the original both give TOTAL_MS), the others' the original's.
      for (const id of ['qs/grpo/predictions.json', 'eval-suite/report.json']) {
        const compare = (i: number) => get<CompareResult>(`api/eval/compare?${new URLSearchParams({ id, index: String(i) })}`);
        const failed = await compare(1);
        assert.match(failed.variant ?? '', /search_path%3Dagro_variant_[0-9a-f]+_[12]$/, id);
        const schemaName = /search_path%3D(agro_variant_\w+)$/.exec(failed.variant ?? '')![1];
        const onVariant = Number((await live.server.admin(`SELECT SUM(milliseconds) FROM ${schemaName}.tracks`, DB))[0][0]);
        assert.notEqual(onVariant, TOTAL_MS);
        assert.deepEqual([failed.pred.rows, failed.gold.rows], [[[TOTAL_MS]], [[onVariant]]], id);
        assert.deepEqual([failed.predExtra, failed.goldMissing], [[true], [true]], id);
        const wrong = await compare(2);
        assert.equal(wrong.variant, undefined, id);
        assert.deepEqual(wrong.gold.rows, [['Latin'], ['Soundtrack']], id);
        // The view, on the original.
        const view = await compare(4);
        assert.deepEqual(view.pred.rows, view.gold.rows, id);
      }
    } finally {
      exit = await dash.stop();
    }
    assert.equal(exit, 0, dash.output());
    for (const body of bodies) assert.ok(!body.includes(PASSWORD), `a response holds the password: ${body.slice(0, 300)}`);
    assert.ok(!dash.output().includes(PASSWORD), 'the dashboard printed the password');
  });
});
