/**
 * Debian's chromium driven by playwright-core (the machine cannot download Playwright's own browsers):
 * headless, no sandbox (CI runs as root), nothing reaching the network, a fresh profile each time.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.AGRO_CHROMIUM ?? '/usr/bin/chromium';

export interface LaunchedBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<LaunchedBrowser> {
  const profile = mkdtempSync(join(tmpdir(), 'agro-chromium-'));
  // A fresh profile: Playwright takes it as the persistent context's directory (it refuses --user-data-dir in args).
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    viewport: { width: 1280, height: 900 },
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * An app served on a free loopback port and a chromium page of the given size to drive it (the screenshot
 * scripts); close() closes the browser, the server and its connections.
 */
export async function servedPage(fetch: (req: Request) => Response | Promise<Response>, viewport: { width: number; height: number }): Promise<{ page: Page; base: string; close(): Promise<void> }> {
  const server = serve({ fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((r) => server.once('listening', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const b = await launchChromium();
  const page = await b.context.newPage();
  await page.setViewportSize(viewport);
  return {
    page,
    base,
    async close() {
      await b.close();
      server.close();
      (server as unknown as { closeAllConnections(): void }).closeAllConnections();
    },
  };
}
