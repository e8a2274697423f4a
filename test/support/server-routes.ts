/**
 * Every route of agro's two servers, as requests: the one list the security tests and `bench
 * adversarial-server` send their hostile headers to, so a new route is attacked by both once it is added here.
 */
import type { RawRequest } from './raw-http.ts';

export const jsonBody = (body: unknown): Pick<RawRequest, 'body' | 'headers'> => ({ body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

/** Every route of `agro dashboard` (its API and pages); `db` is a database id its overview lists. */
export function dashboardRoutes(db: string): RawRequest[] {
  return [
    { path: '/' },
    { path: '/favicon.svg' },
    { path: '/api/overview' },
    { path: '/api/run?id=a/sft' },
    { path: '/api/events?run=a/sft' },
    { path: '/api/dataset?id=x' },
    { path: '/api/eval?id=x' },
    { path: '/api/eval/compare?id=x&index=0' },
    { method: 'POST', path: '/api/sql', ...jsonBody({ db, sql: 'SELECT COUNT(*) FROM genres' }) },
    { path: `/api/playground/prompt?${new URLSearchParams({ policy: 'nope', db })}` },
    { path: `/api/playground/ask?${new URLSearchParams({ policy: 'nope', db, question: 'How many?' })}` },
    { method: 'POST', path: '/api/playground/correct', ...jsonBody({ policy: 'nope', db, question: 'How many?', sql: 'SELECT 1' }) },
    { path: `/api/playground/corrections?${new URLSearchParams({ policy: 'nope', db })}` },
    { method: 'DELETE', path: `/api/playground/corrections/1?${new URLSearchParams({ policy: 'nope', db })}` },
  ];
}

/**
 * Every route of `agro serve --db-root … --dashboard …`: the environment API on `dbId`, then the dashboard's
 * under /dashboard (the OpenAI group sits behind the same guard: test/server/openai.test.ts).
 */
export function serveRoutes(dbId: string, dashboardDb: string): RawRequest[] {
  return [
    { path: '/health' },
    { path: `/v1/schema?db_id=${dbId}` },
    { method: 'POST', path: '/v1/sql', ...jsonBody({ db_id: dbId, sql: 'SELECT 1' }) },
    { method: 'POST', path: '/v1/reward', ...jsonBody({ items: [{ db_id: dbId, gold_sql: 'SELECT 1', sql: 'SELECT 1' }] }) },
    { method: 'POST', path: '/v1/env/sessions', ...jsonBody({ db_id: dbId, question: 'How many rows are there?' }) },
    { method: 'POST', path: '/v1/env/sessions/x/step', ...jsonBody({ text: 'x' }) },
    { method: 'DELETE', path: '/v1/env/sessions/x' },
    ...dashboardRoutes(dashboardDb).map((r) => ({ ...r, path: `/dashboard${r.path}` })),
  ];
}

/** What a hostile page or a DNS-rebinding attack sends to a server on `port`: each is refused with 403 on every route. */
export function hostileHeaders(port: number): Array<[string, Record<string, string>]> {
  return [
    ...['evil.example', `evil.example:${port}`, `127.0.0.1.nip.io:${port}`, `localhost:${port + 1}`, `[::2]:${port}`, ''].map((h): [string, Record<string, string>] => ['host', { host: h }]),
    ...['http://evil.example', 'null', `http://localhost:${port}`, `https://127.0.0.1:${port}`, 'file://'].map((o): [string, Record<string, string>] => ['origin', { origin: o }]),
    ['site', { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' }],
    ['site', { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' }],
    ['site', { 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'cors' }],
  ];
}
