/**
 * What every server agro starts checks before a route sees a request (`agro serve`, `agro dashboard`,
 * the environment server): a web page the user visits must not be able to reach them.
 *
 * 1. Host allow-list (DNS rebinding): `localhost`, `127.0.0.1`, `[::1]` on the server's own port, the
 *    `--allowed-host` names (a reverse proxy), and, off loopback, the address listened on (any IP
 *    literal for a wildcard address: a rebinding attack needs a name, never an IP literal).
 * 2. Origin: a browser's `Origin` must be the server's own, an allowed host's, or a `--cors` origin.
 * 3. `Sec-Fetch-Site: cross-site | same-site` is refused on every route (GET included: an event stream
 *    starts work), except a top-level navigation to a page (the app's HTML reads no data) and a
 *    `--cors` origin.
 * 4. CORS (hono/cors) only for the `--cors` origins, with their preflights.
 * 5. Bearer token (required off loopback, optional on it), compared in constant time; a browser gets it
 *    as Jupyter does: `?token=` on a URL sets a `SameSite=Strict; HttpOnly` cookie and redirects to the
 *    clean URL. Its scope is every route, or (`tokenScope: 'writes'`, loopback's default) only the routes
 *    that write or start work, each marked by `writeRoute`: reads stay open to the machine's own users.
 * 6. A body-carrying request must be `application/json` (415): a form or `text/plain` POST is what a
 *    page can send cross-site without a preflight.
 * 7. Body limit (hono/body-limit: 413 from Content-Length before reading, or as soon as a chunked body
 *    passes it), and a budget of body bytes in flight over all requests (503 beyond): a body costs its
 *    parsed copies and what the route makes of it many times over, so the limit per request alone let
 *    16 parallel 4 MiB queries take `agro serve` past 1 GB.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { cors } from 'hono/cors';
import { getCookie, setCookie } from 'hono/cookie';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { AgroError } from '../errors.ts';

export interface GuardOptions {
  /** The address the server listens on (decides what else Host may be). */
  listenHost: string;
  /** Extra Host names accepted (`name` any port, `name:port` that port): a reverse proxy's. */
  allowedHosts?: string[];
  /** Origins (`scheme://host[:port]`) allowed to call from elsewhere, with CORS headers and preflights. */
  cors?: string[];
  /** Required on every route but `openPaths` when set (or only on `writeRoute`s: `tokenScope`). */
  token?: string;
  /** What the token guards: every route (default), or only those marked `writeRoute`. */
  tokenScope?: 'all' | 'writes';
  /** Paths answered without a token (liveness). */
  openPaths?: string[];
  /** Paths a browser may navigate to from another site (the app's HTML, which reads no data). */
  isPage?: (path: string) => boolean;
  /** Largest request body (413 beyond). */
  maxBodyBytes: number;
  /** Body bytes of all requests in flight together (503 beyond; default 8 x maxBodyBytes, at least 16 MiB). */
  maxBodyBytesInFlight?: number;
  /** The error body of this server's routes (default `{ error: message }`). */
  errorBody?: (message: string, code: string) => unknown;
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);
const LOOPBACK_ADDRS = new Set(['127.0.0.1', '::1', 'localhost']);
const WILDCARD = new Set(['0.0.0.0', '::', '[::]']);

export const isLoopback = (host: string): boolean => LOOPBACK_ADDRS.has(host);

/** A bearer token is required for any address other than loopback: the servers run SQL on your files. */
export function assertTokenForHost(host: string, token: string | undefined): void {
  if (!isLoopback(host) && !token) throw new AgroError('usage', `binding to ${host} needs a token (--token or AGRO_TOKEN): only loopback may go without`);
}

/** `name[:port]` of a Host header or an allow-list entry; IPv6 keeps its brackets; undefined when malformed. */
export function parseHost(value: string): { name: string; port?: number } | undefined {
  const m = /^(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(?::(\d{1,5}))?$/i.exec(value.trim());
  if (!m) return undefined;
  return { name: m[1].toLowerCase().replace(/\.$/, ''), ...(m[2] !== undefined ? { port: Number(m[2]) } : {}) };
}

/** The token's cookie: one per port, so two agro servers on one machine keep their own. */
export const tokenCookie = (port: number | undefined): string => `agro_token_${port ?? 0}`;

function sameSecret(given: string, token: string): boolean {
  // Digests first: timingSafeEqual needs equal lengths, and the length of the token must not leak either.
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(token).digest();
  return timingSafeEqual(a, b);
}

/**
 * Requests the guard let write: a route marked `writeRoute` answers only those. Keyed by the request's context
 * (one per request, shared by the routes mounted on a guarded app; not the Request, which the body limit
 * replaces for a body without a length), so route groups need no typed variables, and a write route with no
 * guard in front (a route group served bare) refuses every request rather than trusting it.
 */
const mayWrite = new WeakSet<Context>();
/** How the guard of a request answers a refused write (its server's error body). */
const refusals = new WeakMap<Context, (c: Context) => Response>();

const WRITE_REFUSED = 'this writes: it needs the token printed at start (send "Authorization: Bearer <token>", or open the printed link once)';

/**
 * Marks a route as one that writes or starts work (a correction stored or removed, a Playground episode): it needs
 * the token whatever the token's scope. 401 otherwise, with nothing read from the body.
 */
export const writeRoute: MiddlewareHandler = async (c, next) => {
  if (mayWrite.has(c)) return next();
  c.header('WWW-Authenticate', 'Bearer');
  return refusals.get(c)?.(c) ?? c.json({ error: WRITE_REFUSED }, 401);
};

/** Whether the guard in front let this request write (what a page shows as its Right/Wrong buttons' state). */
export const canWrite = (c: Context): boolean => mayWrite.has(c);

/** The port the request came in on (undefined under app.request() in tests: no socket). */
function localPort(c: Context): number | undefined {
  const env = c.env as { incoming?: { socket?: { localPort?: number } } } | undefined;
  return env?.incoming?.socket?.localPort;
}

/** The guard's middlewares, in order (checks, CORS when asked, token and body type, body limit). */
export function guard(o: GuardOptions): MiddlewareHandler[] {
  if (o.token && o.token.length < 8) throw new AgroError('usage', '--token: at least 8 characters');
  const extra = (o.allowedHosts ?? []).map((h) => {
    const p = parseHost(h);
    if (!p) throw new AgroError('usage', `--allowed-host: not a host name: ${h}`);
    return p;
  });
  const corsOrigins = (o.cors ?? []).map((x) => {
    let u: URL;
    try {
      u = new URL(x);
    } catch {
      throw new AgroError('usage', `--cors: not an origin (scheme://host[:port]): ${x}`);
    }
    if (!/^https?:$/.test(u.protocol) || u.origin !== x.replace(/\/$/, '')) throw new AgroError('usage', `--cors: not an origin (scheme://host[:port]): ${x}`);
    return u.origin;
  });
  const listen = o.listenHost.toLowerCase();
  const listenName = listen.includes(':') && !listen.startsWith('[') ? `[${listen}]` : listen;
  const openPaths = new Set(o.openPaths ?? []);
  const fail = (c: Context, status: ContentfulStatusCode, code: string, message: string): Response =>
    c.json((o.errorBody ?? ((m: string) => ({ error: m })))(message, code), status);

  const hostAllowed = (value: string | undefined, port: number | undefined): boolean => {
    if (!value) return false;
    const h = parseHost(value);
    if (!h) return false;
    // Named ones first: `--allowed-host localhost:9000` is how an SSH tunnel or a forwarded port gets in.
    if (extra.some((e) => e.name === h.name && (e.port === undefined || e.port === h.port))) return true;
    const samePort = port === undefined || (h.port ?? 80) === port;
    if (LOOPBACK_NAMES.has(h.name)) return samePort;
    if (isLoopback(listen)) return false;
    if (h.name === listenName) return samePort;
    // A wildcard address: any IP literal (the machine's own addresses), never a name.
    return WILDCARD.has(listen) && isIP(h.name.replace(/^\[|\]$/g, '')) !== 0 && samePort;
  };

  /** Same origin as the request, or a proxy's name (the proxy may rewrite Host). */
  const originAllowed = (origin: string, host: string): boolean => {
    let u: URL;
    try {
      u = new URL(origin);
    } catch {
      return false;
    }
    // The server itself speaks plain HTTP: its own origin is http://<Host>; a proxy in front may add TLS.
    if (u.protocol === 'http:' && u.host === host.toLowerCase()) return true;
    if (!/^https?:$/.test(u.protocol)) return false;
    const h = parseHost(u.host);
    return !!h && extra.some((e) => e.name === h.name && (e.port === undefined || e.port === h.port));
  };

  const corsMw = corsOrigins.length
    ? cors({ origin: corsOrigins, allowMethods: ['GET', 'POST', 'DELETE', 'OPTIONS'], allowHeaders: ['Content-Type', 'Authorization'], maxAge: 600 })
    : undefined;
  const limit = bodyLimit({
    maxSize: o.maxBodyBytes,
    onError: (c) => {
      // Close the connection: a client that sends on regardless is not read further.
      c.header('Connection', 'close');
      return fail(c, 413, 'request_too_large', `request body is larger than ${o.maxBodyBytes} bytes`);
    },
  });

  const checks: MiddlewareHandler = async (c, next) => {
    const port = localPort(c);
    const host = c.req.header('host');
    if (!hostAllowed(host, port)) return fail(c, 403, 'forbidden_host', `Host '${(host ?? '').slice(0, 100)}' is not allowed (start the server with --allowed-host NAME for a proxy)`);
    const origin = c.req.header('origin');
    const fromCors = origin !== undefined && corsOrigins.includes(origin);
    if (origin !== undefined && !fromCors && !originAllowed(origin, host as string)) {
      return fail(c, 403, 'forbidden_origin', `Origin '${origin.slice(0, 100)}' is not allowed (start the server with --cors ORIGIN to call it from another site)`);
    }
    const site = c.req.header('sec-fetch-site');
    if ((site === 'cross-site' || site === 'same-site') && !fromCors) {
      const navigation = (c.req.method === 'GET' || c.req.method === 'HEAD') && c.req.header('sec-fetch-mode') === 'navigate' && (o.isPage?.(c.req.path) ?? false);
      if (!navigation) return fail(c, 403, 'forbidden_site', `a ${site} request is refused (start the server with --cors ORIGIN to call it from another site)`);
    }
    await next();
  };

  const scope = o.tokenScope ?? 'all';
  const auth: MiddlewareHandler = async (c, next) => {
    if (!o.token) mayWrite.add(c);
    else {
      const name = tokenCookie(localPort(c));
      const header = c.req.header('authorization');
      const bearer = header?.startsWith('Bearer ') ? header.slice(7).trim() : undefined;
      const cookie = getCookie(c, name);
      const query = c.req.query('token');
      const ok = (bearer !== undefined && sameSecret(bearer, o.token)) || (cookie !== undefined && sameSecret(cookie, o.token));
      if (!ok && query !== undefined && (c.req.method === 'GET' || c.req.method === 'HEAD') && sameSecret(query, o.token)) {
        // The printed link: keep the token in a cookie only this origin sends itself, then drop it from the address bar.
        setCookie(c, name, o.token, { path: '/', httpOnly: true, sameSite: 'Strict' });
        const url = new URL(c.req.url);
        url.searchParams.delete('token');
        return c.redirect(`${url.pathname}${url.search}`, 302);
      }
      if (ok) mayWrite.add(c);
      else if (scope === 'writes') refusals.set(c, (cc) => fail(cc, 401, 'unauthorized', WRITE_REFUSED));
      else if (!openPaths.has(c.req.path)) {
        c.header('WWW-Authenticate', 'Bearer');
        return fail(c, 401, 'unauthorized', 'a token is required: send "Authorization: Bearer <token>", or open the URL with ?token= printed at start');
      }
    }
    if (c.req.method === 'POST' || c.req.method === 'PUT' || c.req.method === 'PATCH') {
      const type = (c.req.header('content-type') ?? '').split(';')[0].trim().toLowerCase();
      if (type !== 'application/json') return fail(c, 415, 'unsupported_media_type', `the request body must be application/json, got '${type.slice(0, 100) || 'none'}'`);
    }
    await next();
  };

  const budgetBytes = o.maxBodyBytesInFlight ?? Math.max(8 * o.maxBodyBytes, 16 * 2 ** 20);
  let bodyBytesInFlight = 0;
  const budget: MiddlewareHandler = async (c, next) => {
    if (!c.req.raw.body) return next();
    const declared = Number(c.req.header('content-length'));
    // Past the limit: the limit answers 413. A chunked body may be as large as the limit.
    if (declared > o.maxBodyBytes) return next();
    const cost = Number.isFinite(declared) && c.req.header('content-length') !== undefined ? declared : o.maxBodyBytes;
    if (bodyBytesInFlight > 0 && bodyBytesInFlight + cost > budgetBytes) {
      c.header('Retry-After', '1');
      return fail(c, 503, 'busy', `the server holds ${bodyBytesInFlight} bytes of request bodies already; retry later`);
    }
    bodyBytesInFlight += cost;
    try {
      await next();
    } finally {
      bodyBytesInFlight -= cost;
    }
  };

  return corsMw ? [checks, corsMw, auth, budget, limit] : [checks, auth, budget, limit];
}

/** Put the guard in front of every route of `app` (call before adding routes). */
export function useGuard(app: Hono, o: GuardOptions): Hono {
  app.use('*', ...guard(o));
  return app;
}

/** `routes` behind the guard, on a fresh app (for servers that are one route group). */
export function guardedApp(routes: Hono, o: GuardOptions): Hono {
  const app = useGuard(new Hono(), o);
  app.route('/', routes);
  return app;
}
