/**
 * The one HTTP app of `agro serve`: route groups (each a Hono sub-app from its own file: the OpenAI API
 * in openai.ts, and whatever else is served beside it) mounted on one Hono app with what every route
 * shares: the guard (guard.ts: Host, Origin, cross-site requests, token, JSON bodies, a request size
 * limit), JSON errors in the OpenAI shape, a JSON 404.
 */
import { Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { useGuard, type GuardOptions } from './guard.ts';

/** A route group: its own Hono app, mounted at `prefix` (default '/'). */
export interface RouteGroup {
  prefix?: string;
  app: Hono;
}

export interface AppOptions {
  groups: RouteGroup[];
  /** Largest request body accepted (default 4 MiB). */
  maxBodyBytes?: number;
  /** Who may call (default: loopback names only, no token, no CORS). */
  guard?: Omit<GuardOptions, 'maxBodyBytes' | 'errorBody'>;
}

/** The error body every route answers with: OpenAI's `{ error: { message, type, code } }`. */
export function errorBody(message: string, type: string, code?: string): { error: { message: string; type: string; code: string | null } } {
  return { error: { message, type, code: code ?? null } };
}

/** An error a handler throws to answer with `status` and a JSON error body. */
export class HttpError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    message: string,
    readonly type = 'invalid_request_error',
    readonly code?: string,
  ) {
    super(message);
  }
}

export function createApp(o: AppOptions): Hono {
  const app = new Hono();
  const maxBytes = o.maxBodyBytes ?? 4 * 1024 * 1024;
  useGuard(app, { listenHost: '127.0.0.1', ...o.guard, maxBodyBytes: maxBytes, errorBody: (message, code) => errorBody(message, 'invalid_request_error', code) });
  for (const g of o.groups) app.route(g.prefix ?? '/', g.app);
  // Liveness whatever is served (a group may answer it with more, as the environment API does).
  app.get('/health', (c) => c.json({ ok: true }));
  app.notFound((c) => c.json(errorBody(`no route ${c.req.method} ${c.req.path}`, 'invalid_request_error', 'not_found'), 404));
  app.onError((err, c) => {
    if (err instanceof HttpError) return c.json(errorBody(err.message, err.type, err.code), err.status);
    return c.json(errorBody(`internal error: ${err.message.replace(/\s*\n\s*/g, ' ')}`, 'server_error'), 500);
  });
  return app;
}
