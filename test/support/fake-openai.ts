/**
 * A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions protocol, with
 * scriptable behaviors for tests: fixed replies, garbage, HTTP errors (with Retry-After), slow
 * replies, and a URL whose port is closed.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FakeBehavior =
  /** 200 with a well-formed completion whose message content is `content`. */
  | { kind: 'reply'; content: string }
  /** 200 whose body is not JSON at all. */
  | { kind: 'garbage'; body?: string }
  /** An error status (500, 429, 400...) with optional Retry-After header. */
  | { kind: 'status'; status: number; retryAfter?: string; body?: string }
  /** Waits `delayMs` before replying with `content` (to hit client timeouts). */
  | { kind: 'slow'; delayMs: number; content: string }
  /** Destroys the socket without answering (a network error on the client). */
  | { kind: 'hangup' };

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: {
    model?: string;
    messages?: Array<{ role: string; content: string }>;
    temperature?: number;
    max_tokens?: number;
    response_format?: { type: string };
  };
  at: number;
}

export type Responder = (req: RecordedRequest, index: number) => FakeBehavior;

export interface FakeOpenAI {
  /** Base URL to give the client, e.g. http://127.0.0.1:41234/v1 */
  baseUrl: string;
  requests: RecordedRequest[];
  /** Behaviors used in order for the next requests, before falling back to the responder. */
  enqueue(...behaviors: FakeBehavior[]): void;
  setResponder(r: Responder): void;
  /** Highest number of requests in flight at once. */
  maxInFlight: number;
  close(): Promise<void>;
}

export function completion(content: string, model = 'fake'): unknown {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  };
}

export async function startFakeOpenAI(responder?: Responder): Promise<FakeOpenAI> {
  const queue: FakeBehavior[] = [];
  let respond: Responder = responder ?? (() => ({ kind: 'reply', content: '{}' }));
  const requests: RecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let inFlight = 0;
  const state = { maxInFlight: 0 };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: RecordedRequest['body'] = {};
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as RecordedRequest['body'];
    } catch {
      body = {};
    }
    const rec: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, at: Date.now() };
    const index = requests.length;
    requests.push(rec);
    if (rec.method !== 'POST' || !rec.path.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    const b = queue.length > 0 ? queue.shift()! : respond(rec, index);
    inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, inFlight);
    const done = (): void => {
      inFlight--;
    };
    switch (b.kind) {
      case 'reply':
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(completion(b.content, body.model)));
        return done();
      case 'garbage':
        res.writeHead(200, { 'content-type': 'text/plain' }).end(b.body ?? '<<<not json>>>');
        return done();
      case 'status': {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (b.retryAfter !== undefined) headers['retry-after'] = b.retryAfter;
        res.writeHead(b.status, headers).end(b.body ?? JSON.stringify({ error: { message: `fake ${b.status}` } }));
        return done();
      }
      case 'slow': {
        const t = setTimeout(() => {
          timers.delete(t);
          if (!res.destroyed) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(completion(b.content)));
          done();
        }, b.delayMs);
        timers.add(t);
        res.on('close', () => {
          if (timers.delete(t)) {
            clearTimeout(t);
            done();
          }
        });
        return;
      }
      case 'hangup':
        req.socket.destroy();
        return done();
    }
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    enqueue: (...bs) => void queue.push(...bs),
    setResponder: (r) => {
      respond = r;
    },
    get maxInFlight() {
      return state.maxInFlight;
    },
    close: async () => {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** A base URL on 127.0.0.1 whose port was just bound and released: connections are refused. */
export async function closedPortUrl(): Promise<string> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return `http://127.0.0.1:${port}/v1`;
}

/** The last user message of a recorded request (what the prompt asked). */
export function lastUser(req: RecordedRequest): string {
  const msgs = req.body.messages ?? [];
  for (let i = msgs.length - 1; i >= 0; i--) if (msgs[i].role === 'user') return msgs[i].content;
  return '';
}
