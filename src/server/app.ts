/**
 * The one HTTP app of `agro serve`: route groups (each a Hono sub-app from its own file: the OpenAI API
 * in openai.ts, and whatever else is served beside it) mounted on one Hono app with what every route
 * shares: a request size limit, JSON errors in the OpenAI shape, a JSON 404.
 */
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { ContentfulStatusCode } from 'hono/utils/http-status';

/** A route group: its own Hono app, mounted at `prefix` (default '/'). */
export interface RouteGroup {
  prefix?: string;
  app: Hono;
}

export interface AppOptions {
  groups: RouteGroup[];
  /** Largest request body accepted (default 4 MiB). */
  maxBodyBytes?: number;
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
  app.use('*', bodyLimit({ maxSize: maxBytes, onError: (c) => c.json(errorBody(`request body is larger than ${maxBytes} bytes`, 'invalid_request_error', 'request_too_large'), 413) }));
  for (const g of o.groups) app.route(g.prefix ?? '/', g.app);
  app.notFound((c) => c.json(errorBody(`no route ${c.req.method} ${c.req.path}`, 'invalid_request_error', 'not_found'), 404));
  app.onError((err, c) => {
    if (err instanceof HttpError) return c.json(errorBody(err.message, err.type, err.code), err.status);
    return c.json(errorBody(`internal error: ${err.message.replace(/\s*\n\s*/g, ' ')}`, 'server_error'), 500);
  });
  return app;
}
