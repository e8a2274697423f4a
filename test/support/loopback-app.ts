import type { Hono } from 'hono';
import { MAX_API_BODY } from '../../src/server/dashboard.ts';
import { guardedApp } from '../../src/server/guard.ts';

/**
 * A route group behind the guard as `--no-token` on loopback puts it, called as a local client would (Host
 * 127.0.0.1), for tests that call routes with `request()`: a write route (guard.ts `writeRoute`) served bare
 * refuses every request.
 */
export function onLoopback(app: Hono): { request: (path: string, init?: { method?: string; headers?: Record<string, string>; body?: string }) => Promise<Response> } {
  const guarded = guardedApp(app, { listenHost: '127.0.0.1', maxBodyBytes: MAX_API_BODY });
  return { request: async (path, init = {}) => guarded.request(path, { ...init, headers: { host: '127.0.0.1', ...init.headers } }) };
}
