/**
 * The OpenAI-compatible route group: GET /v1/models and POST /v1/chat/completions (JSON or streamed as
 * server-sent events), served by one policy. The conversation goes to the policy as is: for an agro
 * checkpoint it is rendered with agro's chat template (a `tool` message is an observation), so a client
 * that replays an agent episode (agro predict --llm-url) gets exactly the turns the local policy gives.
 *
 * Limits: at most `concurrency` completions run at once (a local policy batches them), `maxQueue` more
 * wait; beyond that, 429. A completion that runs past `timeoutMs` answers 504. Temperature defaults to 0
 * (greedy), as everywhere in agro.
 */
import { randomUUID } from 'node:crypto';
import { Hono, type Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import { z } from 'zod';
import type { Policy, TurnReply } from '../agent/policies/types.ts';
import type { ChatMessage } from '../model/chat.ts';
import { HttpError } from './app.ts';
import { AgroError } from '../errors.ts';
import { Gate } from './gate.ts';
import { askOrHttpError, questionOfMessages, readJson, type Asker } from './ask.ts';

export interface OpenAiRoutesOptions {
  policy: Policy;
  /** Name in /v1/models and the only `model` accepted (default the policy's name). */
  modelName?: string;
  concurrency?: number;
  maxQueue?: number;
  timeoutMs?: number;
  /** Cap on max_tokens (default 1024). */
  maxTokens?: number;
  /**
   * Characters of message text a request may carry (default 131,072: about 32k tokens, more than any
   * context agro trains), checked before anything is tokenized: 400 beyond.
   */
  maxInputChars?: number;
  /**
   * Answers a completion that names a database (the `database` extension field): the agent's whole episode on
   * it, its schema in the prompt (ask.ts). Absent: such a request is 400.
   */
  ask?: Asker;
}

export const DEFAULT_MAX_INPUT_CHARS = 131_072;

const contentSchema = z.union([z.string(), z.array(z.object({ type: z.literal('text'), text: z.string() }).loose()).transform((parts) => parts.map((p) => p.text).join(''))]);

const requestSchema = z
  .object({
    model: z.string().optional(),
    messages: z.array(z.object({ role: z.enum(['system', 'user', 'assistant', 'tool']), content: contentSchema.nullable().transform((c) => c ?? '') }).loose()).min(1),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().gt(0).max(1).nullish(),
    max_tokens: z.number().int().min(1).nullish(),
    max_completion_tokens: z.number().int().min(1).nullish(),
    stream: z.boolean().nullish(),
    seed: z.number().int().nullish(),
    stop: z.union([z.string(), z.array(z.string()).max(4)]).nullish(),
    n: z.literal(1).nullish(),
    /** agro's extension: the db_id to answer on (the schema goes into the prompt, the agent runs its SQL tool). */
    database: z.string().min(1).nullish(),
  })
  .loose();
type ChatRequest = z.infer<typeof requestSchema>;

/** Cut at the first stop string (which is not returned, as OpenAI does). */
function applyStop(reply: TurnReply, stop: string[]): TurnReply {
  let at = -1;
  for (const s of stop) {
    const i = s ? reply.text.indexOf(s) : -1;
    if (i >= 0 && (at < 0 || i < at)) at = i;
  }
  return at < 0 ? reply : { ...reply, text: reply.text.slice(0, at), finish: 'stop' };
}

export function openaiRoutes(o: OpenAiRoutesOptions): Hono {
  const app = new Hono();
  const model = o.modelName ?? o.policy.name;
  const gate = new Gate(o.concurrency ?? 4, o.maxQueue ?? 64);
  const timeoutMs = o.timeoutMs ?? 300_000;
  const maxTokensCap = o.maxTokens ?? 1024;
  const maxInputChars = o.maxInputChars ?? DEFAULT_MAX_INPUT_CHARS;
  const created = Math.floor(Date.now() / 1000);

  /**
   * A completion that names a database is a question about it: the agent's episode answers it (the schema in
   * its prompt, the earlier user/assistant messages as the conversation), the message is the answer's SQL and
   * the `agro` field carries its rows, reading and confidence (docs/serving.md#asking-over-http).
   */
  const answerOnDatabase = async (c: Context, database: string, stream: boolean, messages: ChatMessage[]): Promise<Response> => {
    if (!o.ask) throw new HttpError(400, 'database: this server answers on no database (start agro serve with --policy)');
    if (stream) throw new HttpError(400, 'stream: a completion with "database" answers once the agent is done; ask without stream');
    const { question, conversation } = questionOfMessages(messages);
    const release = await gate.enter();
    if (!release) throw new HttpError(429, 'too many requests in flight; retry later', 'rate_limit_error', 'queue_full');
    try {
      const answer = await askOrHttpError(o.ask, { db_id: database, question, ...(conversation.length ? { conversation } : {}) }, c.req.raw.signal);
      const content = answer.sql ?? `(no answer: ${answer.end_reason}${answer.error ? `: ${answer.error}` : ''})`;
      return c.json({
        id: `chatcmpl-${randomUUID()}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model,
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
        agro: answer,
      });
    } finally {
      release();
    }
  };

  app.get('/v1/models', (c) => c.json({ object: 'list', data: [{ id: model, object: 'model', created, owned_by: 'agro' }] }));

  app.post('/v1/chat/completions', async (c) => {
    const req: ChatRequest = await readJson(c.req.raw, requestSchema);
    const chars = req.messages.reduce((n, m) => n + m.content.length, 0);
    if (chars > maxInputChars) throw new HttpError(400, `messages: ${chars} characters, at most ${maxInputChars} per request (the conversation would not fit the model's context)`, 'invalid_request_error', 'context_length_exceeded');
    if (req.model !== undefined && req.model !== model) throw new HttpError(404, `model "${req.model}" is not served here (this server serves "${model}")`, 'invalid_request_error', 'model_not_found');
    const messages: ChatMessage[] = req.messages.map((m) => ({ role: m.role, content: m.content }));
    if (req.database != null) return answerOnDatabase(c, req.database, req.stream === true, messages);
    const maxTokens = Math.min(req.max_completion_tokens ?? req.max_tokens ?? maxTokensCap, maxTokensCap);
    const stop = req.stop == null ? [] : Array.isArray(req.stop) ? req.stop : [req.stop];
    const id = `chatcmpl-${randomUUID()}`;
    const release = await gate.enter();
    if (!release) throw new HttpError(429, 'too many requests in flight; retry later', 'rate_limit_error', 'queue_full');
    const ctrl = new AbortController();
    const run = (onText?: (d: string) => void): Promise<TurnReply> => {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          ctrl.abort();
          reject(new HttpError(504, `the completion ran past ${timeoutMs} ms`, 'timeout_error', 'timeout'));
        }, timeoutMs);
      });
      const work = o.policy
        .complete({ messages, maxTokens, temperature: req.temperature ?? 0, ...(req.top_p != null ? { topP: req.top_p } : {}), ...(req.seed != null ? { seed: req.seed >>> 0 } : {}), onText, signal: ctrl.signal })
        .then(
          (r) => applyStop(r, stop),
          (err: unknown) => {
            // The policy's one-line errors (a conversation too long for the template...) are the client's to fix.
            if (err instanceof AgroError && err.kind !== 'internal') throw new HttpError(400, err.message);
            throw err;
          },
        );
      return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
    };
    const usage = (r: TurnReply): object => ({ prompt_tokens: r.promptTokens ?? 0, completion_tokens: r.completionTokens ?? 0, total_tokens: (r.promptTokens ?? 0) + (r.completionTokens ?? 0) });
    const chunk = (delta: object, finish: string | null, extra: object = {}): string =>
      JSON.stringify({ id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra });

    if (!req.stream) {
      try {
        const r = await run();
        return c.json({
          id,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model,
          choices: [{ index: 0, message: { role: 'assistant', content: r.text }, finish_reason: r.finish }],
          usage: usage(r),
        });
      } finally {
        release();
      }
    }
    return streamSSE(c, async (stream) => {
      stream.onAbort(() => ctrl.abort());
      try {
        await stream.writeSSE({ data: chunk({ role: 'assistant', content: '' }, null) });
        // With stop strings the text is held until the end: a stop string may span two deltas.
        let writes = Promise.resolve();
        const onText = stop.length ? undefined : (d: string): void => void (writes = writes.then(() => stream.writeSSE({ data: chunk({ content: d }, null) })));
        const r = await run(onText);
        await writes;
        if (stop.length && r.text) await stream.writeSSE({ data: chunk({ content: r.text }, null) });
        await stream.writeSSE({ data: chunk({}, r.finish, { usage: usage(r) }) });
        await stream.writeSSE({ data: '[DONE]' });
      } catch (err) {
        const e = err instanceof HttpError ? err : new HttpError(500, err instanceof Error ? err.message : String(err), 'server_error');
        await stream.writeSSE({ data: JSON.stringify({ error: { message: e.message, type: e.type, code: e.code ?? null } }) });
      } finally {
        release();
      }
    });
  });
  return app;
}
