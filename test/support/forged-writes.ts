/**
 * Ways a request that does not hold a server's token tries to write (store or remove a correction, start a
 * Playground run): the one list `test/server/token.test.ts` and `npm run bench -- adversarial --only corrections`
 * send to every write route, so a new forgery is tried by both once it is added here.
 */
import { randomBytes } from 'node:crypto';
import type { RawReply, RawRequest } from './raw-http.ts';

const EVIL = 'http://evil.example';

/** `r` forged twelve ways against a server on `port` whose token is `token`. */
export function forgeries(r: RawRequest, token: string, port: number): Array<[string, RawRequest]> {
  const h = r.headers ?? {};
  const write = r.method !== undefined && r.method !== 'GET';
  const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
  const withQuery = (t: string) => `${r.path}${r.path.includes('?') ? '&' : '?'}token=${encodeURIComponent(t)}`;
  const form = 'db_id=music_store&question=q&sql=SELECT+1';
  // With its length: Node sends a DELETE's body without one, which the server's parser refuses before any route.
  const sized = (body: string, headers: Record<string, string>) => ({ body, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } });
  return [
    ['no token', r],
    ['a wrong token', { ...r, headers: { ...h, ...bearer(randomBytes(32).toString('base64url')) } }],
    ['the token cut short', { ...r, headers: { ...h, ...bearer(token.slice(0, -1)) } }],
    ['the token with a byte more', { ...r, headers: { ...h, ...bearer(`${token}x`) } }],
    ['a wrong cookie', { ...r, headers: { ...h, cookie: `agro_token_${port}=${randomBytes(32).toString('base64url')}` } }],
    ['the token as Basic credentials', { ...r, headers: { ...h, authorization: `Basic ${Buffer.from(`agro:${token}`).toString('base64')}` } }],
    // The printed link's form works for a page's navigation (a GET), never for a write sent with it.
    [write ? 'the token in the query string of a write' : 'a wrong token in the query string', { ...r, path: withQuery(write ? token : 'x'.repeat(43)) }],
    ['the right token from another origin', { ...r, headers: { ...h, ...bearer(token), origin: EVIL } }],
    ['the right token under a rebinding Host', { ...r, headers: { ...h, ...bearer(token), host: `evil.example:${port}` } }],
    ['a cross-site form post', { ...r, method: r.method ?? 'POST', ...sized(form, { 'content-type': 'application/x-www-form-urlencoded', origin: EVIL, 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' }) }],
    ['a text/plain post from an opaque origin', { ...r, method: r.method ?? 'POST', ...sized(String(r.body ?? '{}'), { 'content-type': 'text/plain', origin: 'null' }) }],
    ['a same-site subresource with a wrong token', { ...r, headers: { ...h, ...bearer('y'.repeat(43)), 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'cors' } }],
  ];
}

/** A forgery is refused: the guard's 401, 403 or 415, no cookie set, and the token nowhere in the reply. */
export function refusedForgery(res: RawReply, token: string): boolean {
  return [401, 403, 415].includes(res.status) && res.headers['set-cookie'] === undefined && !res.body.includes(token) && (res.status !== 401 || res.headers['www-authenticate'] === 'Bearer');
}
