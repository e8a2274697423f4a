/// <reference lib="dom" />
// `npm run bench -- dashboard [--rows 10000] [--repeat 3] [--web DIR]` (--web: another build of the app, to compare two)
// The dashboard in Debian's chromium: time to the first paint of the app (cold cache, then warm), and
// time until every chart of a GRPO run with --rows metric rows is drawn (navigation start to the last
// canvas), with the API's own time for that run; and the size of the built bundle (raw and gzip).
// Goal (issue #18): first load and a 10,000-row run page under 1 s.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { SqlPool } from '../src/sql/pool.ts';
import { DEFAULT_WEB_DIR, dashboardRoutes, webBundleBuilt } from '../src/server/dashboard.ts';
import { chartPlan } from '../web/src/metrics.ts';
import { launchChromium } from '../test/support/browser.ts';
import { num } from './_args.ts';

/** A GRPO metrics line with every key the trainer writes (src/rl/trainer.ts StepRecord), plausible values. */
function stepRecord(step: number): Record<string, unknown> {
  const t = step / 1000;
  const r = (k: number) => Math.round((0.5 + 0.4 * Math.sin(t * k) + 0.05 * Math.cos(step)) * 1000) / 1000;
  return {
    step, lr: 1e-4, reward: r(1), reward_std: 0.2, rewards: { execution: r(1.1), format: r(0.7), tool_efficiency: r(0.3) },
    accuracy: r(0.9), groups: 4, dropped_groups: step % 3, response_tokens: 80 + (step % 40), turns: 1.5, tool_calls: 0.5 + r(2) / 2,
    truncated: 0.1, loss: 1 - r(1.3), pg_loss: 0.5 - r(1.2) / 2, kl: 0.01 * r(3), entropy: 2 - r(0.5), clip_frac_low: 0.01,
    clip_frac_high: 0.02, approx_kl: 0.001, ratio: 1, grad_norm: 0.5 + r(5), skipped: false, time_rollout_s: 1.2, time_reward_s: 0.1,
    time_update_s: 0.8, tokens_per_s: 900 + (step % 100), ...(step % 10 === 0 ? { eval_accuracy: r(0.8) } : {}),
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function run(args: string[]): Promise<void> {
  const rows = num(args, '--rows', 10_000);
  const repeat = num(args, '--repeat', 3);
  const webAt = args.indexOf('--web');
  const webDir = webAt >= 0 ? args[webAt + 1] : DEFAULT_WEB_DIR;
  if (!webBundleBuilt(webDir)) {
    console.log('bench dashboard: the app is not built; run `npm run build:web` first');
    return;
  }
  const assets = readdirSync(join(webDir, 'assets')).map((f) => join(webDir, 'assets', f));
  const raw = assets.reduce((a, f) => a + statSync(f).size, 0);
  const gz = assets.reduce((a, f) => a + gzipSync(readFileSync(f)).length, 0);
  console.log(`bundle: ${(raw / 1024).toFixed(1)} KiB raw, ${(gz / 1024).toFixed(1)} KiB gzip (${assets.map((f) => f.split('/').pop()).join(', ')})`);

  const dir = mkdtempSync(join(tmpdir(), 'agro-bench-dash-'));
  const runDir = join(dir, 'grpo');
  const { mkdirSync } = await import('node:fs');
  mkdirSync(runDir);
  writeFileSync(join(runDir, 'train_config.json'), JSON.stringify({ train: { algo: 'grpo', steps: rows } }));
  writeFileSync(join(runDir, 'metrics.jsonl'), Array.from({ length: rows }, (_, i) => JSON.stringify(stepRecord(i + 1))).join('\n') + '\n');
  const charts = chartPlan(Object.keys(flatKeys(stepRecord(10)))).length;
  console.log(`run: ${rows} rows, ${(statSync(join(runDir, 'metrics.jsonl')).size / 1e6).toFixed(1)} MB metrics.jsonl, ${charts} charts`);

  const pool = new SqlPool({ size: 1 });
  const server = serve({ fetch: dashboardRoutes({ dir, executor: pool, webDir }).fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((r) => server.once('listening', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const chrome = await launchChromium();
  try {
    const api: number[] = [];
    for (let i = 0; i < repeat; i++) {
      const t0 = performance.now();
      await (await fetch(`${base}api/run?id=grpo`)).arrayBuffer();
      api.push(performance.now() - t0);
    }
    const shell: number[] = [];
    const runPage: number[] = [];
    const apiInPage: number[] = [];
    const pageCpu: number[] = [];
    const serverCpu: number[] = [];
    const drawn: number[] = [];
    for (let i = 0; i < repeat; i++) {
      const page = await chrome.context.newPage();
      // First load: the app's first content (header and nav) on an empty route.
      await page.goto(`${base}#/playground-none`);
      await page.waitForSelector('header nav a');
      shell.push(await page.evaluate(() => performance.now()));
      await page.close();
      const p2 = await chrome.context.newPage();
      // CPU time, which the machine's load does not inflate: the page's main-thread tasks (CDP) and this
      // process's (the server runs here).
      const cdp = await chrome.context.newCDPSession(p2);
      await cdp.send('Performance.enable');
      const before = await cdp.send('Performance.getMetrics');
      const cpu0 = process.cpuUsage();
      await p2.goto(`${base}#/runs?run=grpo`);
      await p2.waitForFunction((n) => document.querySelectorAll('figure.chart .plot canvas').length >= n, charts, { timeout: 60_000 });
      runPage.push(await p2.evaluate(() => new Promise<number>((r) => requestAnimationFrame(() => r(performance.now())))));
      // Where the time went: the API responses as the browser saw them.
      const res = await p2.evaluate(() => performance.getEntriesByType('resource').map((e) => [e.name.replace(/^.*\//, ''), Math.round((e as PerformanceResourceTiming).responseEnd)] as [string, number]));
      apiInPage.push(res.find(([n]) => n.startsWith('run?'))?.[1] ?? NaN);
      const cpu = process.cpuUsage(cpu0);
      serverCpu.push((cpu.user + cpu.system) / 1000);
      const afterM = await cdp.send('Performance.getMetrics');
      const task = (m: typeof before) => m.metrics.find((x) => x.name === 'TaskDuration')?.value ?? NaN;
      pageCpu.push((task(afterM) - task(before)) * 1000);
      const pts = await p2.$eval('figure.chart .plot', (el) => Number(el.getAttribute('data-points')));
      if (pts < rows) throw new Error(`bench: the reward chart has ${pts} points, expected at least ${rows}`);
      // What the charts draw of those rows (decimated to their width; the full rows stay for zoom and CSV).
      drawn.push(await p2.$$eval('figure.chart .plot', (els) => els.reduce((a, el) => a + ((el as HTMLElement & { _uplot?: { data: unknown[][] } })._uplot?.data[0].length ?? 0), 0)));
      await p2.close();
    }
    const f = (xs: number[]) => `${Math.round(median(xs))} ms median (${xs.map((x) => Math.round(x)).join(', ')})`;
    console.log(`first load (navigation to first content; run 1 with a cold cache): ${f(shell)}`);
    console.log(`run page, ${rows} rows × ${charts} charts drawn: ${f(runPage)}   [goal: under 1000 ms]`);
    console.log(`  x values drawn over the ${charts} charts: ${f(drawn).replace(' ms', '')} (of ${rows} rows each)`);
    console.log(`  api/run answered (in the page, from navigation start): ${f(apiInPage)}`);
    console.log(`  api/run alone (read + columns + JSON, from Node; the first call parses the file, later ones read the cache): ${f(api)}`);
    console.log(`  CPU time for the run page: browser main thread ${f(pageCpu)}; server (Node) ${f(serverCpu)}`);
    console.log(`load average ${loadavg().map((x) => x.toFixed(1)).join(' ')} (shared machine)`);
  } finally {
    await chrome.close();
    server.close();
    (server as unknown as { closeAllConnections(): void }).closeAllConnections();
    await pool.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function flatKeys(rec: Record<string, unknown>, prefix = '', out: Record<string, true> = {}): Record<string, true> {
  for (const [k, v] of Object.entries(rec)) {
    if (v && typeof v === 'object') flatKeys(v as Record<string, unknown>, `${prefix}${k}.`, out);
    else out[prefix + k] = true;
  }
  return out;
}
