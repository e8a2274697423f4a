/**
 * HTTP requests with every header under the caller's control (fetch forbids `Host` and adds `Origin` and
 * `Sec-Fetch-*` as it likes): what a hostile page or a DNS-rebinding attack sends, for the servers' guard
 * tests and the adversarial bench. And the agro servers started as a user starts them (the CLI).
 */
import { request } from 'node:http';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface RawReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  ms: number;
}

export interface RawRequest {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Leave the body unfinished (a slow or lying client): the reply must come before it does. */
  hangAfterHeaders?: boolean;
  timeoutMs?: number;
}

/** One request to 127.0.0.1:port; headers as given (Host defaults to the server's own). */
export function raw(port: number, r: RawRequest): Promise<RawReply> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request(
      { host: '127.0.0.1', port, method: r.method ?? 'GET', path: r.path, headers: { host: `127.0.0.1:${port}`, ...r.headers }, setHost: false, agent: false },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (d: Buffer) => {
          // An event stream never ends by itself: its first bytes are enough to know it was answered.
          if (size < 1 << 20) chunks.push(d);
          size += d.length;
          if (/text\/event-stream/.test(String(res.headers['content-type']))) res.destroy();
        });
        const done = (): void => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - t0 });
        res.on('end', done);
        res.on('close', done);
        res.on('error', done);
      },
    );
    req.setTimeout(r.timeoutMs ?? 20_000, () => req.destroy(new Error(`no answer to ${r.method ?? 'GET'} ${r.path} in ${r.timeoutMs ?? 20_000} ms`)));
    // A server that answers before reading the whole body (413, 503) may close while the body is still
    // being written: the answer already on its way still counts.
    req.on('error', (err) => setTimeout(() => (answered ? undefined : reject(err)), 1000));
    if (r.hangAfterHeaders) {
      req.flushHeaders();
      if (r.body) req.write(r.body);
      return;
    }
    req.end(r.body);
  });
}

const BIN = fileURLToPath(new URL('../../bin/agro.js', import.meta.url));

export interface StartedCli {
  child: ChildProcess;
  port: number;
  /** Everything printed on stdout so far. */
  out: () => string;
  /** Everything printed on stderr so far. */
  err: () => string;
  stop: () => Promise<void>;
}

/** `agro <args>` until it has printed `http://127.0.0.1:<port>` and its Ctrl-C line; stop() interrupts it and waits. */
export function startCli(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<StartedCli> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let out = '';
  let err = '';
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      // Both servers print their addresses, then one last line naming Ctrl-C.
      const m = /http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m && /Ctrl-C/.test(out))
        resolve({
          child,
          port: Number(m[1]),
          out: () => out,
          err: () => err,
          stop: async () => {
            if (child.exitCode === null) child.kill('SIGINT');
            await exited;
          },
        });
    });
    child.once('exit', (code) => reject(new Error(`agro ${args[0]} exited ${code}: ${out}${err}`)));
  });
}
