// Screenshots of each dashboard page for the README: `node --import tsx scripts/dashboard-screenshots.ts <runs folder> [out dir]
// [question] [--no-playground]`. Serves the folder in-process, drives Debian's chromium, and writes docs/dashboard-*.png
// (--no-playground: Runs, Data and Evaluations only; scripts/playground-screenshot.ts takes the Playground's).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SqlPool } from '../src/sql/pool.ts';
import { dashboardRoutes } from '../src/server/dashboard.ts';
import { servedPage } from '../test/support/browser.ts';

const args = process.argv.slice(2).filter((a) => a !== '--no-playground');
const playground = !process.argv.includes('--no-playground');
const [dir = 'runs', outDir = 'docs', question = 'How many genres are there?'] = args;
mkdirSync(outDir, { recursive: true });
const pool = new SqlPool();
const { page, base, close } = await servedPage(dashboardRoutes({ dir, executor: pool }).fetch, { width: 1280, height: 860 });
try {
  const shot = async (name: string, fullPage = false) => {
    await page.waitForTimeout(400);
    await page.screenshot({ path: join(outDir, `dashboard-${name}.png`), fullPage });
    console.log(`wrote ${join(outDir, `dashboard-${name}.png`)}`);
  };
  await page.goto(`${base}#/runs`);
  await page.waitForSelector('.plot canvas');
  await shot('runs');
  await page.goto(`${base}#/data`);
  await page.waitForSelector('[data-testid=pairs] tbody tr');
  await shot('data');
  await page.click('[data-testid=pairs] tbody tr');
  await page.waitForSelector('[data-testid=pair-result]');
  await page.evaluate(() => document.querySelector('[data-testid=pair-detail]')?.scrollIntoView());
  await shot('data-pair');
  await page.goto(`${base}#/evals`);
  await page.waitForSelector('[data-testid=questions] tbody tr', { timeout: 60_000 });
  await page.click('[data-testid=questions] tbody tr.diff');
  await page.waitForSelector('[data-testid=compare] [data-testid=gold-result]');
  await shot('evals', true);
  if (playground) {
    await page.goto(`${base}#/playground`);
    await page.waitForSelector('[data-testid=prompt]');
    await page.fill('[data-testid=question]', question);
    await page.click('[data-testid=ask]');
    await page.waitForSelector('.turns .muted, .turns .error', { timeout: 120_000 });
    await shot('playground');
  }
} finally {
  await close();
  await pool.close();
}
