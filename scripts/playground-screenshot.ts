// The Playground's screenshots for docs/dashboard.md: a question and a follow-up with the answer's reading,
// confidence and bar chart (dashboard-playground.png); a wrong answer corrected (dashboard-playground-correction.png);
// the same question in other words answered with the correction, and the suggested questions
// (dashboard-playground-corrected.png). `node --import tsx scripts/playground-screenshot.ts [out dir]`. The policy is
// a scripted OpenAI-compatible endpoint (test/support/fake-openai.ts, as in the browser tests) that answers with fixed
// SQL: the pictures show the page, not a model's skill. The correction goes into a temporary folder's memory.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqlPool } from '../src/sql/pool.ts';
import { dashboardRoutes } from '../src/server/dashboard.ts';
import { formatAction } from '../src/agent/protocol.ts';
import { servedPage } from '../test/support/browser.ts';
import { startFakeOpenAI } from '../test/support/fake-openai.ts';

const [outDir = 'docs'] = process.argv.slice(2);
const QUESTION = 'How many tracks does each genre have?';
const SQL = 'SELECT g.name AS genre, COUNT(*) AS tracks FROM tracks t JOIN genres g ON g.genre_id = t.genre_id GROUP BY g.name';
const RIGHT = 'SELECT g.name AS genre FROM tracks t JOIN genres g ON g.genre_id = t.genre_id GROUP BY g.name ORDER BY SUM(t.unit_price) DESC LIMIT 1';
mkdirSync(outDir, { recursive: true });
const empty = mkdtempSync(join(tmpdir(), 'agro-shot-'));
const llm = await startFakeOpenAI((req) => {
  const user = req.body.messages?.find((m) => m.role === 'user')?.content ?? '';
  const earlier = /^Earlier in this conversation:\n(?:Q: .*\nSQL: .*\n)*Q: .*\nSQL: (.*)\n/.exec(user);
  const content = earlier ? formatAction({ kind: 'answer', think: 'the previous query, its five largest', content: `${earlier[1]} ORDER BY tracks DESC LIMIT 5` }) : formatAction({ kind: 'answer', think: 'count the tracks of each genre', content: SQL });
  return { kind: 'reply', content };
});
const pool = new SqlPool();
const routes = dashboardRoutes({ dir: empty, executor: pool, policies: { extra: [{ spec: { llmUrl: llm.baseUrl, llmModel: 'scripted' }, label: 'scripted endpoint' }] } });
const { page, base, close } = await servedPage(routes.fetch, { width: 1280, height: 1100 });
try {
  await page.goto(`${base}#/playground`);
  await page.waitForSelector('[data-testid=policy] option', { state: 'attached' });
  const music = await page.$eval('[data-testid=database]', (s) => [...(s as HTMLSelectElement).options].find((o) => o.textContent === 'music_store')?.value ?? '');
  await page.selectOption('[data-testid=database]', music);
  await page.fill('[data-testid=question]', QUESTION);
  await page.click('[data-testid=ask]');
  await page.waitForSelector('[data-testid=history] li');
  await page.fill('[data-testid=question]', 'only the five largest');
  await page.click('[data-testid=ask]');
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=history] li').length === 2 && document.querySelector('[data-testid=answer-chart] img'));
  await page.waitForSelector('[data-testid=answer-check]');
  const shot = async (name: string) => {
    await page.waitForTimeout(400);
    await page.screenshot({ path: join(outDir, name), fullPage: true });
    console.log(`wrote ${join(outDir, name)}`);
  };
  await shot('dashboard-playground.png');
  // A question the scripted policy gets wrong; the person gives the right SQL.
  await page.click('[data-testid=new-conversation]');
  await page.fill('[data-testid=question]', QUESTION);
  await page.click('[data-testid=ask]');
  await page.waitForSelector('[data-testid=mark-right]');
  await page.click('[data-testid=mark-right]');
  await page.waitForSelector('[data-testid=correction-status]');
  await page.click('[data-testid=new-conversation]');
  await page.fill('[data-testid=question]', 'Which genre has the priciest catalogue?');
  await page.click('[data-testid=ask]');
  await page.waitForSelector('[data-testid=mark-wrong]');
  await page.click('[data-testid=mark-wrong]');
  await page.fill('[data-testid=correct-sql]', RIGHT);
  await page.click('[data-testid=store-correction]');
  await page.waitForSelector('[data-testid=correction-status].stored');
  await shot('dashboard-playground-correction.png');
  await page.click('[data-testid=new-conversation]');
  await page.fill('[data-testid=question]', 'What genre has the most expensive catalogue?');
  await page.click('[data-testid=ask]');
  await page.waitForFunction(() => document.querySelector('[data-testid=answer-check] .verdict')?.textContent?.includes('expensive catalogue'));
  await shot('dashboard-playground-corrected.png');
} finally {
  await close();
  await routes.close();
  await pool.close();
  await llm.close();
  rmSync(empty, { recursive: true, force: true });
}
