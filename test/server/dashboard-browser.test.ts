/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The dashboard in a real browser (Debian's chromium through playwright-core) on a real folder made with
 * agro's own trainers, factory and evaluator (test/support/dashboard-fixture.ts), served by the real
 * route group over HTTP. The app is built from web/ into a temp folder first, so the current sources are tested.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { Page } from 'playwright-core';
import { SqlPool } from '../../src/sql/pool.ts';
import { dashboardRoutes, MAX_API_BODY } from '../../src/server/dashboard.ts';
import { guardedApp } from '../../src/server/guard.ts';
import { CHROMIUM, launchChromium, type LaunchedBrowser } from '../support/browser.ts';
import { needsProgram } from '../support/system-program.ts';
import { buildDashboardFixture, MUSIC_STORE as MUSIC, PLAYGROUND_QUESTION, PLAYGROUND_SQL, type DashboardFixture } from '../support/dashboard-fixture.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { formatAction } from '../../src/agent/protocol.ts';
import { LOW_CONFIDENCE } from '../../src/answer/rank.ts';
import { SEARCH_SAMPLES } from '../../src/answer/answer.ts';
import { readMemory } from '../../src/memory/legacy.ts';

const browser = needsProgram('chromium', CHROMIUM, 'the dashboard browser tests');
const tmp = mkdtempSync(join(tmpdir(), 'agro-dash-e2e-'));
const webDir = join(tmp, 'web');
const pool = new SqlPool();
let fixture: DashboardFixture;
let server: ServerType;
let base = '';
let chrome: LaunchedBrowser;
let page: Page;
let llm: FakeOpenAI;

const metricLines = (run: string) =>
  readFileSync(join(fixture.dir, run, 'metrics.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, number>);

/** The uPlot chart under a figure title: its data arrays ([x, ...series]). */
const chartData = (title: string) =>
  page.evaluate((t) => {
    const fig = [...document.querySelectorAll('figure.chart')].find((f) => f.getAttribute('data-title') === t);
    const host = fig?.querySelector('.plot') as (HTMLElement & { _uplot?: { data: (number | null)[][] } }) | null;
    return host?._uplot?.data ?? null;
  }, title);

/**
 * Waits until the chart titled `title` is drawn with series labelled as `labels` say, then returns its data.
 * A canvas alone is not enough: moving between runs changes only the hash, so the previous route's chart
 * is still on the page for a moment before it is rebuilt with the new runs.
 */
async function drawnChart(title: string, want: { labels?: string[]; rows?: number }) {
  await page.waitForFunction(([t, labels, rows]) => {
    const fig = [...document.querySelectorAll('figure.chart')].find((f) => f.getAttribute('data-title') === t);
    const host = fig?.querySelector('.plot') as (HTMLElement & { _uplot?: { series: { label?: unknown }[] }; _full?: unknown[][] }) | null;
    if (!host?._uplot) return false;
    const have = host._uplot.series.map((s) => String(s.label ?? ''));
    return labels.every((l) => have.some((h) => h.includes(l))) && (rows < 0 || host._full?.[0]?.length === rows);
  }, [title, want.labels ?? [], want.rows ?? -1] as const);
  return (await chartData(title))!;
}

const TOKEN = 'browser-token-0123';
const GENRE_QUESTION = 'How many tracks does each genre have?';
const GENRE_SQL = 'SELECT g.name, COUNT(*) AS tracks FROM tracks t JOIN genres g ON g.genre_id = t.genre_id GROUP BY g.name';

/** The Playground on the fake endpoint and music_store, after a fresh page load (an empty conversation). */
async function playgroundOnEndpoint(): Promise<void> {
  await page.goto(`${base}#/runs`);
  await page.goto(`${base}#/playground`);
  await page.waitForSelector('[data-testid=policy] option', { state: 'attached' });
  await page.selectOption('[data-testid=policy]', `${llm.baseUrl}#fake-sql`);
  const music = await page.$eval('[data-testid=database]', (s) => [...(s as HTMLSelectElement).options].find((o) => o.textContent === 'music_store')?.value ?? '');
  await page.selectOption('[data-testid=database]', music);
}

/** The chart's kind and the text of its SVG (shown as an image: the SVG is read back from its data URL). */
const answerChart = () =>
  page.evaluate(() => {
    const fig = document.querySelector('[data-testid=answer-chart]');
    const src = fig?.querySelector('img')?.getAttribute('src') ?? '';
    return fig ? { kind: fig.getAttribute('data-kind'), svg: decodeURIComponent(src.replace(/^data:image\/svg\+xml;charset=utf-8,/, '')) } : null;
  });

describe('the dashboard in Chromium', { skip: browser.skip }, () => {
  before(async () => {
    const vite = spawnSync(process.execPath, ['node_modules/vite/bin/vite.js', 'build', 'web', '--outDir', webDir, '--emptyOutDir', '--logLevel', 'error'], { encoding: 'utf8' });
    assert.equal(vite.status, 0, vite.stderr);
    fixture = await buildDashboardFixture(join(tmp, 'runs'), pool);
    // An OpenAI-compatible endpoint that looks at the genres table first, then answers.
    // Asked for tracks per genre it answers at once; asked to follow that up, it edits the SQL the prompt shows it.
    llm = await startFakeOpenAI((req) => {
      const user = req.body.messages?.find((m) => m.role === 'user')?.content ?? '';
      const earlier = /^Earlier in this conversation:\nQ: (.*)\nSQL: (.*)\n/.exec(user);
      if (earlier) return { kind: 'reply', content: formatAction({ kind: 'answer', think: 'the same, top three', content: `${earlier[2]} ORDER BY 2 DESC LIMIT 3` }) };
      if (user === GENRE_QUESTION) return { kind: 'reply', content: formatAction({ kind: 'answer', think: 'group by genre', content: GENRE_SQL }) };
      return {
        kind: 'reply',
        content: req.body.messages?.some((m) => m.role === 'tool')
          ? formatAction({ kind: 'answer', think: '12 rows: count them', content: PLAYGROUND_SQL })
          : formatAction({ kind: 'sql', think: 'look at the genres', content: 'SELECT name FROM genres ORDER BY name' }),
      };
    });
    const policies = { extra: [{ spec: { llmUrl: llm.baseUrl, llmModel: 'fake-sql' } }] };
    // Behind the guard `agro dashboard` puts in front on loopback (Host, Origin, cross-site, JSON bodies, and the
    // token it makes at start, which guards the writes).
    const app = guardedApp(dashboardRoutes({ dir: fixture.dir, executor: pool, webDir, pollMs: 200, policies }), {
      listenHost: '127.0.0.1',
      token: TOKEN,
      tokenScope: 'writes',
      maxBodyBytes: MAX_API_BODY,
      isPage: (path) => !path.startsWith('/api/'),
    });
    server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    chrome = await launchChromium();
    page = await chrome.context.newPage();
    page.setDefaultTimeout(60_000);
    // The link agro prints: the token becomes a cookie and leaves the address bar; every later page and API call carries it.
    await page.goto(`${base}?token=${TOKEN}`);
    assert.equal(page.url(), base);
  });

  after(async () => {
    await chrome?.close();
    await llm?.close();
    server?.close();
    (server as unknown as { closeAllConnections?: () => void })?.closeAllConnections?.();
    await pool.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  test('Runs: the reward chart holds the GRPO run points, and rows the run appends arrive live', async () => {
    await page.goto(`${base}#/runs?run=grpo`);
    const rows = metricLines('grpo');
    assert.equal(rows.length, fixture.grpoSteps);
    const data = await drawnChart('Reward (total and per component)', { rows: rows.length });
    assert.deepEqual(data[0], rows.map((r) => r.step));
    assert.deepEqual(data[1], rows.map((r) => r.reward));
    // The trainer's next line, as it appends it.
    const next = { ...rows[rows.length - 1], step: rows.length + 1, reward: 0.75 };
    appendFileSync(join(fixture.dir, 'grpo', 'metrics.jsonl'), JSON.stringify(next) + '\n');
    await page.waitForFunction(() => {
      const fig = document.querySelector('figure.chart[data-title="Reward (total and per component)"] .plot') as HTMLElement & { _uplot?: { data: number[][] } };
      return fig?._uplot?.data[0].length === 3;
    });
    const after = (await chartData('Reward (total and per component)'))!;
    assert.deepEqual(after[0], [...rows.map((r) => r.step), 3]);
    assert.equal(after[1][2], 0.75);
    assert.match((await page.textContent('aside'))!, /3 steps/);
  });

  test('Runs: two runs overlaid; the SFT loss curve has every step', async () => {
    await page.goto(`${base}#/runs?run=grpo,sft`);
    const loss = await drawnChart('Loss', { labels: ['sft · loss', 'grpo · loss'] });
    const sft = metricLines('sft');
    assert.equal(sft.length, fixture.sftSteps);
    // Joined x: the union of both runs' steps.
    assert.deepEqual(loss[0], sft.map((r) => r.step));
    const labels = await page.$$eval('figure.chart[data-title="Loss"] .u-legend th', (ths) => ths.map((t) => t.textContent ?? ''));
    assert.ok(labels.some((l) => l.includes('sft · loss')) && labels.some((l) => l.includes('grpo · loss')), labels.join('|'));
    await page.click('details.card summary');
    assert.match((await page.textContent('details.card pre'))!, /"algo": "grpo"/);
  });

  test('Runs: a 5,000-step run is drawn decimated to the chart width, keeps every peak, and zooming in draws every row exactly', async () => {
    const n = 5000;
    // A sawtooth with one spike: decimation must keep the spike and the troughs.
    const reward = (step: number) => (step === 1234 ? 5 : (step % 50) / 50);
    mkdirSync(join(fixture.dir, 'long'), { recursive: true });
    writeFileSync(join(fixture.dir, 'long', 'metrics.jsonl'), Array.from({ length: n }, (_, i) => JSON.stringify({ step: i + 1, reward: reward(i + 1) })).join('\n') + '\n');
    try {
      await page.goto(`${base}#/runs?run=long`);
      const drawn = await drawnChart('Reward (total and per component)', { rows: n });
      assert.ok(drawn[0].length < n / 2, `drew ${drawn[0].length} of ${n} rows`);
      assert.equal(Math.max(...(drawn[1] as number[])), 5);
      assert.equal(Math.min(...(drawn[1] as number[])), 0);
      assert.deepEqual([drawn[0][0], drawn[0][drawn[0].length - 1]], [1, n]);
      // Every drawn point is a real row, with its exact value.
      for (let i = 0; i < drawn[0].length; i++) assert.equal(drawn[1][i], reward(drawn[0][i]!));
      // Zoom to steps 1200–1300 (as a drag does): every row there is drawn.
      type Host = HTMLElement & { _uplot: { setScale(k: string, r: { min: number; max: number }): void; data: number[][] } };
      const sel = 'figure.chart[data-title="Reward (total and per component)"] .plot';
      await page.evaluate((q) => (document.querySelector(q) as Host)._uplot.setScale('x', { min: 1200, max: 1300 }), sel);
      // uPlot applies a scale change on its next commit.
      await page.waitForFunction((q) => (document.querySelector(q) as Host)._uplot.data[0].includes(1201), sel);
      const zoomed = await page.evaluate((q) => (document.querySelector(q) as Host)._uplot.data, sel);
      const inRange = zoomed[0].filter((x) => x >= 1200 && x <= 1300);
      assert.deepEqual(inRange, Array.from({ length: 101 }, (_, i) => 1200 + i));
      assert.equal(zoomed[1][zoomed[0].indexOf(1234)], 5);
    } finally {
      rmSync(join(fixture.dir, 'long'), { recursive: true, force: true });
    }
  });

  test('Runs: the SFT run shows step / total and a full progress bar; curves smooth; the GRPO internals are folded away', async () => {
    await page.goto(`${base}#/runs?run=sft`);
    await page.waitForSelector('[data-testid=run-progress][data-run=sft]');
    const text = (await page.textContent('[data-testid=run-progress][data-run=sft]'))!;
    assert.match(text, new RegExp(`step ${fixture.sftSteps} / ${fixture.sftSteps}`));
    assert.match(text, /done/);
    assert.equal(await page.$eval('[data-testid=run-progress][data-run=sft] progress', (p) => (p as HTMLProgressElement).position), 1);
    const raw = await drawnChart('Loss', { rows: fixture.sftSteps });
    await page.fill('[data-testid=smoothing]', '0.9');
    await page.waitForFunction((first) => {
      const host = document.querySelector('figure.chart[data-title="Loss"] .plot') as HTMLElement & { _full?: (number | null)[][] };
      return host?._full && host._full[1].length > 1 && host._full[1][1] !== first;
    }, raw[1][1]);
    await page.goto(`${base}#/runs?run=grpo`);
    await page.waitForSelector('[data-testid=internals]');
    // Folded: the internals' charts are not among the page's open charts.
    const open = await page.$$eval('section.content > .charts > figure.chart', (fs) => fs.map((f) => f.getAttribute('data-title')));
    assert.ok(open.includes('Reward (total and per component)'));
    const folded = await page.$$eval('[data-testid=internals] figure.chart', (fs) => fs.map((f) => f.getAttribute('data-title')));
    assert.ok(folded.length > 0 && folded.every((t) => !open.includes(t)), `${folded.join(', ')}`);
    assert.equal(await page.$eval('[data-testid=internals]', (d) => (d as HTMLDetailsElement).open), false);
  });

  test('Data: charts of the manifest, and filtering the pairs changes the table', async () => {
    await page.goto(`${base}#/data`);
    await page.waitForSelector('[data-testid=pairs] tbody tr');
    const manifest = JSON.parse(readFileSync(join(fixture.dir, 'synth', 'manifest.json'), 'utf8')) as { rows: number; difficulty: Record<string, number> };
    const count = () => page.$$eval('[data-testid=pairs] tbody tr', (trs) => trs.length);
    assert.equal(await count(), manifest.rows);
    const dif = await drawnChart('Difficulty', {});
    assert.deepEqual(dif[1], ['simple', 'moderate', 'challenging'].filter((d) => d in manifest.difficulty).map((d) => manifest.difficulty[d]));
    await page.selectOption('select[data-filter=difficulty]', 'simple');
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid=pairs] tbody tr').length === n, manifest.difficulty.simple);
    const shown = await page.$$eval('[data-testid=pairs] tbody tr td:nth-child(3)', (tds) => tds.map((t) => t.textContent));
    assert.ok(shown.length > 0 && shown.length < manifest.rows && shown.every((d) => d === 'simple'), shown.join(','));
    assert.match((await page.textContent('[data-testid=pairs] .table-bar'))!, new RegExp(`${manifest.difficulty.simple} of ${manifest.rows} pairs`));
    await page.click('[data-testid=pairs] tbody tr');
    await page.waitForSelector('[data-testid=pair-result] tbody tr');
    assert.match((await page.textContent('[data-testid=coverage]'))!, /genres/);
  });

  test('Evaluations: EX as in the report, and a wrong question shows both results with differing rows marked', async () => {
    const report = JSON.parse(readFileSync(join(fixture.dir, 'eval', 'report.json'), 'utf8')) as { summary: { accuracy: number; count: number; correct: number } };
    await page.goto(`${base}#/evals`);
    await page.waitForSelector('[data-testid=questions] tbody tr');
    assert.match((await page.textContent('[data-testid=ex]'))!, new RegExp(`${report.summary.accuracy.toFixed(2)}% \\(${report.summary.correct} of ${report.summary.count}`));
    await page.click('[data-testid=questions] tbody tr.diff');
    await page.waitForSelector('[data-testid=gold-result] tbody tr');
    await page.waitForSelector('[data-testid=pred-result] tbody tr');
    // The wrong prediction lists the 12 genre names: none of them is a gold row.
    const marked = await page.$$eval('[data-testid=pred-result] tbody tr.diff', (trs) => trs.length);
    assert.equal(marked, 12);
  });

  test('Playground: a question on the bundled database streams the turns and shows a result table', async () => {
    await page.goto(`${base}#/playground`);
    await page.waitForSelector('[data-testid=policy] option', { state: 'attached' });
    await page.selectOption('[data-testid=policy]', `sft/checkpoints/step-${fixture.sftSteps}`);
    const music = await page.$eval('[data-testid=database]', (s) => [...(s as HTMLSelectElement).options].find((o) => o.textContent === 'music_store')?.value ?? '');
    await page.selectOption('[data-testid=database]', music);
    // The system prompt the policy gets (the schema within the budget it was trained with).
    await page.waitForFunction(() => /^You answer questions about a SQLite database/.test(document.querySelector('[data-testid=prompt]')?.textContent ?? ''));
    await page.fill('[data-testid=question]', PLAYGROUND_QUESTION);
    await page.click('[data-testid=ask]');
    await page.waitForSelector('[data-testid=final-result] tbody tr', { timeout: 120_000 });
    assert.match((await page.textContent('[data-testid=turns]'))!, /SELECT COUNT\(\*\) FROM genres/);
    assert.equal((await page.textContent('[data-testid=final-result] tbody td'))!.trim(), '12');
    // Edit the final SQL and run it.
    await page.fill('[data-testid=final-sql]', 'SELECT name FROM genres ORDER BY name LIMIT 2');
    await page.click('[data-testid=run-sql]');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=final-result] tbody tr').length === 2);
  });

  test('Playground: an OpenAI-compatible endpoint (--llm-url) calls the SQL tool, the observation and the final result show as tables', async () => {
    // Away and back: a new conversation (the previous test's question is not followed up).
    await page.goto(`${base}#/runs`);
    await page.goto(`${base}#/playground`);
    await page.waitForSelector('[data-testid=policy] option', { state: 'attached' });
    const groups = await page.$$eval('[data-testid=policy] optgroup', (gs) => gs.map((g) => g.getAttribute('label')));
    assert.deepEqual(groups, ['OpenAI-compatible endpoints', 'agro checkpoints']);
    await page.selectOption('[data-testid=policy]', `${llm.baseUrl}#fake-sql`);
    const music = await page.$eval('[data-testid=database]', (s) => [...(s as HTMLSelectElement).options].find((o) => o.textContent === 'music_store')?.value ?? '');
    await page.selectOption('[data-testid=database]', music);
    const before = llm.requests.length;
    await page.fill('[data-testid=question]', PLAYGROUND_QUESTION);
    await page.click('[data-testid=ask]');
    await page.waitForSelector('[data-testid=final-result] tbody tr', { timeout: 20_000 }).catch(async (e: Error) => {
      throw new Error(`${e.message}\n${await page.evaluate(() => document.querySelector('.content')?.textContent ?? '')}`);
    });
    // Turn 1's observation: the 12 genre names as a table; then the answer and its result.
    const observed = await page.$$eval('.turn.tool tbody tr', (trs) => trs.length);
    assert.equal(observed, 12);
    assert.equal((await page.textContent('[data-testid=final-result] tbody td'))!.trim(), '12');
    assert.match((await page.textContent('[data-testid=turns]'))!, /episode ended: answer/);
    assert.equal(await page.inputValue('[data-testid=final-sql]'), PLAYGROUND_SQL);
    // What the endpoint got: the agent's system prompt with the schema, and the observation as a tool turn.
    const calls = llm.requests.slice(before).filter((r) => r.path.endsWith('/chat/completions'));
    // The greedy episode's two turns first, then the answer path's samples (each the same two turns).
    assert.equal(calls.length, 2 * (1 + SEARCH_SAMPLES));
    assert.equal(calls[0].body.model, 'fake-sql');
    assert.match(calls[0].body.messages![0].content, /CREATE TABLE|genres/);
    assert.equal(calls[1].body.messages![3].role, 'tool');
    assert.match(calls[1].body.messages![3].content, /Blues/);
  });

  test('Playground: a category/count answer is drawn as bars above its table, a single value in large type, a wide table not at all', async () => {
    await playgroundOnEndpoint();
    await page.fill('[data-testid=question]', GENRE_QUESTION);
    await page.click('[data-testid=ask]');
    await page.waitForSelector('[data-testid=answer-chart]');
    const bars = (await answerChart())!;
    assert.equal(bars.kind, 'bar');
    const genres = await page.$$eval('[data-testid=final-result] tbody tr td:first-child', (tds) => tds.map((t) => t.textContent ?? ''));
    assert.equal(genres.length, 12);
    for (const g of genres) assert.ok(bars.svg.includes(`>${g}<`), `the bars name ${g}`);
    // The answer path's reading of it and its confidence, a low one marked.
    assert.match((await page.textContent('[data-testid=reading]'))!, /^I read this as: .*genre/i);
    const confidence = Number(await page.getAttribute('[data-testid=confidence]', 'data-value'));
    assert.ok(confidence > 0 && confidence <= 1, String(confidence));
    assert.equal(await page.$eval('[data-testid=answer-check]', (el) => el.classList.contains('low')), confidence < LOW_CONFIDENCE);
    // Above the table, which stays.
    const order = await page.evaluate(() => {
      const chart = document.querySelector('[data-testid=answer-chart]')!;
      const table = document.querySelector('[data-testid=final-result]')!;
      return chart.compareDocumentPosition(table) & Node.DOCUMENT_POSITION_FOLLOWING;
    });
    assert.ok(order, 'the chart comes before the table');
    // A single value: the value in large type, no bars.
    await page.fill('[data-testid=final-sql]', PLAYGROUND_SQL);
    await page.click('[data-testid=run-sql]');
    await page.waitForFunction(() => document.querySelector('[data-testid=answer-chart]')?.getAttribute('data-kind') === 'value');
    assert.match((await answerChart())!.svg, />12</);
    // Three columns of names: a table only.
    await page.fill('[data-testid=final-sql]', 'SELECT track_id, name, composer FROM tracks LIMIT 5');
    await page.click('[data-testid=run-sql]');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=final-result] tbody tr').length === 5 && !document.querySelector('[data-testid=answer-chart]'));
  });

  test('Playground: a 1,000-row result is run, drawn as a chart and shown as a table; the page renders it within 300 ms', async (t) => {
    await playgroundOnEndpoint();
    // The page's own measures (performance marks in Playground.tsx), to the chart decoded with its table painted in
    // the same frame: from the result's arrival (the page's rendering), and from the click on Run SQL (the whole
    // wait: the query and the chart drawn on the server too). Seven runs: the machine this runs on is shared.
    const pageMs: number[] = [];
    const totalMs: number[] = [];
    for (let i = 0; i < 7; i++) {
      await page.fill('[data-testid=final-sql]', `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) SELECT i AS x, (i * ${37 + i}) % 101 AS y FROM n`);
      await page.evaluate(() => performance.clearMeasures());
      await page.click('[data-testid=run-sql]');
      await page.waitForFunction(() => performance.getEntriesByName('agro:run-sql-to-chart', 'measure').length === 1);
      const [p, w] = await page.evaluate(() => ['agro:result-to-chart', 'agro:run-sql-to-chart'].map((n) => performance.getEntriesByName(n, 'measure')[0].duration));
      pageMs.push(p);
      totalMs.push(w);
      assert.ok((await page.$$eval('[data-testid=final-result] tbody tr', (trs) => trs.length)) > 0, 'the table is painted with it');
    }
    assert.equal(await page.getAttribute('[data-testid=answer-chart]', 'data-kind'), 'point');
    const best = (xs: number[]) => Math.min(...xs);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
    const show = (xs: number[]) => `${xs.map((m) => m.toFixed(0)).join(', ')} ms (best ${best(xs).toFixed(0)}, median ${median(xs).toFixed(0)})`;
    t.diagnostic(`1,000-row chart: result to chart drawn ${show(pageMs)}; Run SQL to chart drawn ${show(totalMs)}`);
    // The page's rendering holds the 300 ms budget on its best run; the whole wait is bounded loosely, as it measures
    // the server's CPU, which other test files share when they run beside this one (docs/benchmarks.md#dashboard).
    assert.ok(best(pageMs) < 300, show(pageMs));
    assert.ok(best(totalMs) < 1500, show(totalMs));
  });

  test('Playground: a follow-up is answered with the previous question and its SQL in the prompt, and the conversation is shown', async () => {
    await playgroundOnEndpoint();
    await page.fill('[data-testid=question]', GENRE_QUESTION);
    await page.click('[data-testid=ask]');
    await page.waitForSelector('[data-testid=history] li');
    const before = llm.requests.length;
    await page.fill('[data-testid=question]', 'only the top three');
    await page.click('[data-testid=ask]');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=history] li').length === 2);
    // What the endpoint read: the first question and its SQL, then the follow-up.
    const call = llm.requests.slice(before).find((r) => r.path.endsWith('/chat/completions'))!;
    const user = call.body.messages!.find((m) => m.role === 'user')!.content;
    assert.ok(user.includes(`Q: ${GENRE_QUESTION}\nSQL: ${GENRE_SQL}`), user);
    assert.ok(user.endsWith('only the top three'), user);
    // The answer edits the previous SQL; three rows, biggest first.
    assert.equal(await page.inputValue('[data-testid=final-sql]'), `${GENRE_SQL} ORDER BY 2 DESC LIMIT 3`);
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=final-result] tbody tr').length === 3);
    const history = await page.$$eval('[data-testid=history] li .question', (qs) => qs.map((q) => q.textContent));
    assert.deepEqual(history, [GENRE_QUESTION, 'only the top three']);
    // A new conversation forgets it: the next question goes alone.
    await page.click('[data-testid=new-conversation]');
    assert.equal(await page.$('[data-testid=history]'), null);
  });

  test('Playground: copy the SQL, download the whole result as CSV', async () => {
    await playgroundOnEndpoint();
    await chrome.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base.replace(/\/$/, '') });
    await page.fill('[data-testid=final-sql]', 'SELECT track_id, name FROM tracks ORDER BY track_id');
    await page.click('[data-testid=run-sql]');
    await page.waitForSelector('[data-testid=final-result] tbody tr');
    await page.click('[data-testid=copy-sql]');
    await page.waitForFunction(() => document.querySelector('[data-testid=copy-sql]')?.textContent === 'Copied');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), 'SELECT track_id, name FROM tracks ORDER BY track_id');
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=download-csv]')]);
    const csv = readFileSync((await dl.path())!, 'utf8').trimEnd().split('\r\n');
    const all = await pool.execute(MUSIC, 'SELECT COUNT(*) FROM tracks', { timeoutMs: 5000, maxRows: 1 });
    assert.ok(all.ok);
    // Every track, more than the 200 rows the table shows.
    assert.equal(csv.length - 1, Number(all.rows[0][0]));
    assert.ok(csv.length - 1 > 200);
    assert.equal(csv[0], 'track_id,name');
  });

  // Last: it starts a memory for music_store in the folder, which later questions on it would consult.
  test('Playground: a correction is stored (a refused one is not) and the next question in other words is answered with it; suggestions ask', async () => {
    const memory = join(fixture.dir, 'memory', 'music_store.db');
    const RIGHT = 'SELECT g.name FROM tracks t JOIN genres g ON g.genre_id = t.genre_id GROUP BY g.name ORDER BY COUNT(*) DESC LIMIT 1';
    const answered = async (question: string) => {
      await page.fill('[data-testid=question]', question);
      await page.click('[data-testid=ask]');
      await page.waitForFunction((q) => document.querySelector('[data-testid=answer-check] .verdict')?.textContent?.includes(q), question);
    };
    await playgroundOnEndpoint();
    // The policy's answer to the genre question is right: the person says so, and the pair is stored as theirs.
    await answered(GENRE_QUESTION);
    await page.click('[data-testid=mark-right]');
    await page.waitForSelector('[data-testid=correction-status].stored');
    assert.match((await page.textContent('[data-testid=correction-status]'))!, /stored in memory\/music_store\.db \(12 rows\)/);
    // A question in the person's own words, which neither the policy (it counts the genres) nor the factory's
    // readings can place, asked on its own.
    await page.click('[data-testid=new-conversation]');
    await answered('What is our flagship genre?');
    assert.notEqual(await page.inputValue('[data-testid=final-sql]'), RIGHT);
    await page.click('[data-testid=mark-wrong]');
    // A write is refused by the sandbox: one line, nothing written.
    const before = readFileSync(memory);
    await page.fill('[data-testid=correct-sql]', 'DELETE FROM genres');
    await page.click('[data-testid=store-correction]');
    await page.waitForSelector('[data-testid=correction-status].error');
    const refused = (await page.textContent('[data-testid=correction-status]'))!;
    assert.match(refused, /refused.*nothing written/);
    assert.ok(!refused.includes('\n'));
    assert.ok(readFileSync(memory).equals(before));
    await page.fill('[data-testid=correct-sql]', RIGHT);
    await page.click('[data-testid=store-correction]');
    await page.waitForSelector('[data-testid=correction-status].stored');
    const stored = readMemory(memory);
    assert.deepEqual(stored.entries.map((e) => [e.source, e.questions[0], e.sql]), [
      ['person', 'What is our flagship genre?', RIGHT],
      ['person', GENRE_QUESTION, GENRE_SQL],
    ]);
    // Asked again in other words, with no restart: the person's pair is found and chosen over the policy's count.
    await page.click('[data-testid=new-conversation]');
    await answered('Which genre is our flagship?');
    assert.equal(await page.inputValue('[data-testid=final-sql]'), RIGHT);
    assert.match((await page.textContent('[data-testid=answer-check] .confidence-line'))!, /from .*person/);
    const top = await pool.execute(MUSIC, RIGHT, { timeoutMs: 5000, maxRows: 1 });
    assert.ok(top.ok);
    assert.equal((await page.textContent('[data-testid=final-result] tbody td'))!.trim(), String(top.rows[0][0]));
    // Suggested: the other question the memory holds about genres and tracks; clicking it asks it.
    const suggested = await page.$$eval('[data-testid=suggestions] button', (bs) => bs.map((b) => b.textContent));
    assert.deepEqual(suggested, [GENRE_QUESTION]);
    await page.click('[data-testid=suggestions] button');
    await page.waitForFunction((q) => document.querySelector('[data-testid=answer-check] .verdict')?.textContent?.includes(q), GENRE_QUESTION);
    assert.equal(await page.inputValue('[data-testid=final-sql]'), GENRE_SQL);
    // What was taught, listed; one removed: gone from the list and from the memory's live pairs, kept as removed.
    const listed = await page.$$eval('[data-testid=correction]', (li) => li.map((l) => l.textContent ?? ''));
    assert.equal(listed.length, 2, listed.join(' | '));
    assert.ok(listed.some((l) => l.includes('What is our flagship genre?') && l.includes(RIGHT)), listed.join(' | '));
    await page.click(`[data-testid=correction]:has-text("What is our flagship genre?") [data-testid=remove-correction]`);
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=correction]').length === 1);
    assert.deepEqual(readMemory(memory).entries.filter((e) => e.source === 'person').map((e) => e.sql), [GENRE_SQL]);
    // Opened without the printed link: the page reads, says why it cannot ask, and offers no remove button.
    await chrome.context.clearCookies();
    await page.goto(`${base}#/playground`);
    await page.reload();
    await page.waitForSelector('[data-testid=read-only]');
    assert.equal(await page.isDisabled('[data-testid=ask]'), true);
    await page.waitForSelector('[data-testid=correction]');
    assert.equal(await page.$('[data-testid=remove-correction]'), null);
    // Later tests of this page (if any are added) start with the link again.
    await page.goto(`${base}?token=${TOKEN}`);
  });
});
