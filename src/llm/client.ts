/**
 * One OpenAI-compatible chat client for every place that can use a served model: retries with
 * exponential backoff and jitter on 429/5xx/network errors (Retry-After honored), a per-request
 * timeout, a concurrency limit, and JSON replies validated by a zod schema with one repair turn.
 */
import { z } from 'zod';
import { AgroError, parseWith } from '../errors.ts';
import type { ErrorKind } from '../errors.ts';
import { Semaphore } from '../util/concurrency.ts';
import { parseJsonReply } from './json.ts';

export interface ChatMessage {
  /** `tool`: an environment's reply (the SQL agent's observations), for servers whose chat template has that role. */
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
}

export const LlmConfigSchema = z.object({
  /** e.g. http://127.0.0.1:8000/v1 — the client appends /chat/completions. */
  baseUrl: z.string().url(),
  model: z.string().min(1),
  /** Falls back to env AGRO_LLM_API_KEY; omitted header when neither is set. */
  apiKey: z.string().optional(),
  timeoutMs: z.number().int().positive().default(60_000),
  maxRetries: z.number().int().min(0).default(3),
  concurrency: z.number().int().positive().default(4),
  backoffBaseMs: z.number().nonnegative().default(500),
  backoffMaxMs: z.number().nonnegative().default(20_000),
  /** Longest Retry-After the client will wait; longer hints are clipped to this. */
  maxRetryAfterMs: z.number().nonnegative().default(60_000),
  temperature: z.number().min(0).max(2).default(0.7),
  maxTokens: z.number().int().positive().default(1024),
});
export type LlmConfigInput = z.input<typeof LlmConfigSchema>;
export type LlmConfig = z.output<typeof LlmConfigSchema>;

export interface ChatOptions {
  temperature?: number;
  maxTokens?: number;
  /** Ask the server for a JSON object (response_format: json_object). */
  json?: boolean;
  seed?: number;
  topP?: number;
}

/** One completion with what the server says about it. */
export interface Completion {
  content: string;
  finishReason?: string;
  promptTokens?: number;
  completionTokens?: number;
}

/** Why a call failed, for counting (the pipeline tallies these instead of crashing). */
export type LlmFailure = 'timeout' | 'network' | 'http' | 'bad_reply' | 'invalid_json';

export class LlmError extends AgroError {
  readonly failure: LlmFailure;
  readonly status?: number;
  constructor(failure: LlmFailure, message: string, opts: { status?: number; cause?: unknown } = {}) {
    super(KIND[failure], message, { cause: opts.cause });
    this.name = 'LlmError';
    this.failure = failure;
    this.status = opts.status;
  }
}

const KIND: Record<LlmFailure, ErrorKind> = {
  timeout: 'timeout',
  network: 'not_found',
  http: 'invalid_input',
  bad_reply: 'invalid_input',
  invalid_json: 'invalid_input',
};

const CompletionSchema = z.object({
  choices: z
    .array(z.object({ message: z.object({ content: z.string().nullable().optional() }), finish_reason: z.string().nullish() }))
    .min(1),
  usage: z.object({ prompt_tokens: z.number().optional(), completion_tokens: z.number().optional() }).nullish(),
});

/** Sleep that a test can shorten; real code uses setTimeout. */
export type Sleeper = (ms: number) => Promise<void>;
const realSleep: Sleeper = (ms) => new Promise((r) => setTimeout(r, ms));

export class LlmClient {
  readonly config: LlmConfig;
  private readonly sem: Semaphore;
  private readonly apiKey: string | undefined;
  private readonly random: () => number;
  private readonly sleep: Sleeper;
  /** Counts for reports: requests sent, retries made. */
  readonly stats = { requests: 0, retries: 0, repairs: 0 };

  constructor(config: LlmConfigInput, deps: { random?: () => number; sleep?: Sleeper } = {}) {
    this.config = parseWith(LlmConfigSchema, config, 'LLM config');
    this.apiKey = this.config.apiKey ?? process.env.AGRO_LLM_API_KEY ?? undefined;
    this.sem = new Semaphore(this.config.concurrency);
    this.random = deps.random ?? Math.random;
    this.sleep = deps.sleep ?? realSleep;
  }

  /** One chat completion; returns the assistant's text. Retries transient failures. */
  async chat(messages: ChatMessage[], opts: ChatOptions = {}): Promise<string> {
    return (await this.complete(messages, opts)).content;
  }

  /** One chat completion with its finish reason and token usage. */
  async complete(messages: ChatMessage[], opts: ChatOptions = {}): Promise<Completion> {
    return this.sem.run(() => this.chatWithRetries(messages, opts));
  }

  /**
   * A chat whose reply must be JSON matching `schema`. Fenced ```json blocks and prose around the
   * object are tolerated; on a parse or validation failure the model is asked once to fix its reply.
   */
  async chatJson<S extends z.ZodType>(
    messages: ChatMessage[],
    schema: S,
    opts: ChatOptions = {},
  ): Promise<z.output<S>> {
    const first = await this.chat(messages, { ...opts, json: opts.json ?? true });
    const r1 = parseJsonReply(first, schema);
    if (r1.ok) return r1.value;
    this.stats.repairs++;
    const repair: ChatMessage[] = [
      ...messages,
      { role: 'assistant', content: first },
      {
        role: 'user',
        content: `Your reply was not valid: ${r1.error}. Reply again with only one JSON object that fixes this, no prose.`,
      },
    ];
    const second = await this.chat(repair, { ...opts, json: opts.json ?? true, temperature: 0 });
    const r2 = parseJsonReply(second, schema);
    if (r2.ok) return r2.value;
    throw new LlmError('invalid_json', `LLM reply was not valid JSON for the expected shape after one repair: ${r2.error}`);
  }

  private async chatWithRetries(messages: ChatMessage[], opts: ChatOptions): Promise<Completion> {
    let attempt = 0;
    for (;;) {
      try {
        return await this.once(messages, opts);
      } catch (err) {
        const retry = err instanceof RetryableError ? err : null;
        if (!retry || attempt >= this.config.maxRetries) {
          throw retry ? retry.final : err;
        }
        const wait = retry.retryAfterMs ?? this.backoff(attempt);
        attempt++;
        this.stats.retries++;
        await this.sleep(wait);
      }
    }
  }

  /** Full jitter: uniform in [0, min(max, base·2^attempt)] (AWS architecture blog's recommendation). */
  backoff(attempt: number): number {
    const cap = Math.min(this.config.backoffMaxMs, this.config.backoffBaseMs * 2 ** attempt);
    return Math.round(this.random() * cap);
  }

  private async once(messages: ChatMessage[], opts: ChatOptions): Promise<Completion> {
    const url = this.config.baseUrl.replace(/\/+$/, '') + '/chat/completions';
    const body: Record<string, unknown> = {
      model: this.config.model,
      messages,
      temperature: opts.temperature ?? this.config.temperature,
      max_tokens: opts.maxTokens ?? this.config.maxTokens,
    };
    if (opts.json) body.response_format = { type: 'json_object' };
    if (opts.seed !== undefined) body.seed = opts.seed;
    if (opts.topP !== undefined) body.top_p = opts.topP;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;

    const ctrl = new AbortController();
    const timer = setTimeout(() => ctrl.abort(), this.config.timeoutMs);
    this.stats.requests++;
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body), signal: ctrl.signal });
      text = await res.text();
    } catch (err) {
      if (ctrl.signal.aborted) {
        throw new RetryableError(
          new LlmError('timeout', `LLM request to ${url} timed out after ${this.config.timeoutMs} ms`, { cause: err }),
        );
      }
      const detail = errorCode(err);
      throw new RetryableError(new LlmError('network', `LLM endpoint ${url} unreachable (${detail})`, { cause: err }));
    } finally {
      clearTimeout(timer);
    }

    if (!res.ok) {
      const snippet = text.slice(0, 200).replace(/\s+/g, ' ');
      const final = new LlmError('http', `LLM endpoint ${url} answered HTTP ${res.status}: ${snippet}`, {
        status: res.status,
      });
      if (res.status === 429 || res.status >= 500) {
        throw new RetryableError(final, parseRetryAfter(res.headers.get('retry-after'), this.config.maxRetryAfterMs));
      }
      throw final;
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new LlmError('bad_reply', `LLM endpoint ${url} returned a body that is not JSON: ${text.slice(0, 120)}`);
    }
    const parsed = CompletionSchema.safeParse(json);
    if (!parsed.success) {
      throw new LlmError('bad_reply', `LLM endpoint ${url} returned no choices[0].message in its reply`);
    }
    const choice = parsed.data.choices[0];
    const usage = parsed.data.usage;
    return {
      content: choice.message.content ?? '',
      ...(choice.finish_reason ? { finishReason: choice.finish_reason } : {}),
      ...(usage?.prompt_tokens !== undefined ? { promptTokens: usage.prompt_tokens } : {}),
      ...(usage?.completion_tokens !== undefined ? { completionTokens: usage.completion_tokens } : {}),
    };
  }
}

class RetryableError extends Error {
  constructor(
    readonly final: LlmError,
    readonly retryAfterMs?: number,
  ) {
    super(final.message);
  }
}

/** Retry-After is either delta-seconds or an HTTP date. */
export function parseRetryAfter(header: string | null, maxMs: number, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const secs = Number(header.trim());
  if (Number.isFinite(secs) && secs >= 0) return Math.min(maxMs, Math.round(secs * 1000));
  const at = Date.parse(header);
  if (Number.isFinite(at)) return Math.min(maxMs, Math.max(0, at - now));
  return undefined;
}

function errorCode(err: unknown): string {
  const cause = err instanceof Error ? (err.cause as { code?: string; message?: string } | undefined) : undefined;
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}

/** Build a client from env (AGRO_LLM_BASE_URL, AGRO_LLM_MODEL), or undefined when not configured. */
export function llmFromEnv(env: NodeJS.ProcessEnv = process.env): LlmClient | undefined {
  const baseUrl = env.AGRO_LLM_BASE_URL;
  if (!baseUrl) return undefined;
  return new LlmClient({ baseUrl, model: env.AGRO_LLM_MODEL ?? 'default', apiKey: env.AGRO_LLM_API_KEY });
}
