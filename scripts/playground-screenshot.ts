// The Playground's screenshot for docs/dashboard.md: a question, its bar chart above its table, and a follow-up in
// the conversation. `node --import tsx scripts/playground-screenshot.ts [out dir]`. The policy is a scripted
// OpenAI-compatible endpoint (test/support/fake-openai.ts, as in the browser tests) that answers these two
// questions with fixed SQL: the picture shows the page, not a model's skill.
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
  await page.waitForTimeout(400);
  await page.screenshot({ path: join(outDir, 'dashboard-playground.png') });
  console.log(`wrote ${join(outDir, 'dashboard-playground.png')}`);
} finally {
  await close();
  await routes.close();
  await pool.close();
  await llm.close();
  rmSync(empty, { recursive: true, force: true });
}
