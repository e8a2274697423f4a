/**
 * Asking over HTTP in one call: `POST /v1/ask {db_id, question, conversation?}` runs the agent's whole
 * episode on the server (the schema in its prompt, its SQL tool, the answer) and answers with the SQL, its
 * rows (bounded), and the answer's reading and confidence. The same asker serves a chat completion that
 * names a database (openai.ts, the `database` extension field), so a plain OpenAI client gets an answer
 * from the schema, not a completion without one.
 *
 * The answer is the answer path's (src/answer: the policy's answer and samples, the memory the policy's contract
 * names, their edits and question-time synthesis, run and ranked), with its reading and confidence; with
 * `search: false` it is the policy's greedy answer alone, and `reading` and `confidence` are null.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import { EPISODE_TIMEOUT_MS, type EndReason } from '../agent/episode.ts';
import { previousTurnSchema, type PreviousTurn } from '../prompt/conversation.ts';
import type { Policy } from '../agent/policies/types.ts';
import { SqlEnvironment, type SqlEnvConfig, type SqlEnvDeps, type SqlTask } from '../agent/sql-env.ts';
import type { DatabaseCatalog } from '../data/catalog.ts';
import { chartFor } from '../chart/chart.ts';
import { chartSpec } from '../chart/chart-svg.ts';
import type { ExecResult, SqlExecutor, SqlValue } from '../sql/types.ts';
import { HttpError } from './app.ts';
import { SEARCH_SAMPLES, type CandidateJudge } from '../answer/answer.ts';
import { answerMemories, askWithAnswerPath, RESULT_TIMEOUT_MS } from '../answer/ask.ts';
import { Answerer } from '../answer/resources.ts';
import { UNTRAINED_TURN_TOKENS } from '../prompt/contract.ts';
import { Gate } from './gate.ts';
import { writeRoute } from './guard.ts';
import { sinceTime, untypedReason } from '../memory/entry.ts';

/**
 * Text a person typed, as the CLI takes it (memory/entry.ts checkTypedText): no control characters, no U+FFFD (bytes
 * that were not UTF-8), a question within its cap; a 400 naming the field otherwise.
 */
export const typedText = (what: 'question' | 'SQL') =>
  z
    .string()
    .trim()
    .min(1)
    .superRefine((v, ctx) => {
      const why = untypedReason(v, what);
      if (why) ctx.addIssue({ code: 'custom', message: why });
    });

/** Rows an answer returns unless the request asks for fewer (`max_rows`), and the most it may ask for. */
export const ASK_ROWS = 100;
export const ASK_MAX_ROWS = 10_000;

export const askRequestSchema = z.strictObject({
  db_id: z.string().min(1),
  question: typedText('question'),
  /** BIRD-style evidence (a hint). */
  evidence: z.string().optional(),
  /** The conversation so far, oldest first: each earlier question and the SQL that answered it. */
  conversation: z.array(previousTurnSchema).max(64).optional(),
  max_rows: z.number().int().min(1).max(ASK_MAX_ROWS).optional(),
  /** Also return the result's chart as a Vega-Lite spec when one fits (src/chart/chart.ts's rule). */
  chart: z.boolean().optional(),
});
export type AskRequest = z.infer<typeof askRequestSchema>;

export interface AskAnswer {
  db_id: string;
  question: string;
  /** The answer's SQL; null when the episode ended without one (`end_reason` says why). */
  sql: string | null;
  columns: string[];
  /** At most max_rows rows; JSON cells (integers past 2^53 as strings, blobs as hex). */
  rows: (string | number | null)[][];
  /** True when the result has more rows (or bytes) than returned. */
  truncated: boolean;
  /** The SQL's error when it ran and failed. */
  error: string | null;
  end_reason: EndReason;
  /** What the answer path reads the SQL as ("I read this as: ..."): null until it provides one. */
  reading: string | null;
  /** The answer path's confidence in [0, 1] (the judge's probability of the chosen result, else its share beside a "none of these"); null without it. */
  confidence: number | null;
  /** Below the answer path's low mark (src/answer/rank.ts; the judge's when it gives the confidence): an answer to check before trusting; false without a confidence. */
  low_confidence: boolean;
  /** Where the chosen SQL came from (greedy, sample, memory, person, edit, synth); empty without the answer path. */
  sources: string[];
  /** Up to three other questions the database's memory holds about the same tables (src/answer/suggest.ts). */
  suggestions: string[];
  /** The result as a chart (kind and Vega-Lite spec) when asked with `chart: true` and one fits; else null. */
  chart: { kind: string; vega_lite: unknown } | null;
  turns: number;
  ms: number;
}

export interface AskerOptions {
  policy: Policy;
  catalog: DatabaseCatalog;
  executor: SqlExecutor;
  /** The prompt the policy was trained on (its contract's settings). */
  env?: Partial<SqlEnvConfig>;
  envDeps?: SqlEnvDeps;
  maxTurnTokens?: number;
  /** Wall-clock limit of one episode. */
  episodeTimeoutMs?: number;
  /** The answer path (default on); its memories are those the policy's prompt contract names, and these. */
  search?: boolean;
  memory?: readonly string[];
  /** The learned judge that gives the answer path's confidence (else the transparent ranker's). */
  judge?: CandidateJudge | undefined;
}

/** A person's right SQL for a question (`POST /v1/corrections`). */
export const correctionRequestSchema = z.strictObject({
  db_id: z.string().min(1),
  question: typedText('question'),
  sql: typedText('SQL'),
});
export type CorrectionRequest = z.infer<typeof correctionRequestSchema>;

export interface StoredPair {
  /** The store's id of the pair (what `agro memory remove` names): a client can check or undo what it taught. */
  id: number;
  db_id: string;
  question: string;
  sql: string;
  stored: true;
  /** Its result's size on the database when it ran. */
  columns: string[];
  rows: number;
}

/** A person's correction as `GET /v1/corrections` lists it: who taught what, when, and whether it was undone. */
export interface CorrectionRecord {
  id: number;
  /** Every question it was taught for (a correction of the same SQL adds its question to the pair). */
  questions: string[];
  sql: string;
  at: string | null;
  rows: number | null;
  /** Undone (`DELETE /v1/corrections/ID`, `agro memory remove`), or replaced by a later correction of the same SQL (listed with `removed=1`). */
  removed?: true;
  replaced_by?: number;
}

/** What `GET /v1/corrections` reads: a database, corrections stored at or after `since` (ISO time), removed ones too. */
export const correctionsQuerySchema = z.strictObject({
  db_id: z.string().min(1),
  since: z.string().transform((v, ctx) => sinceTime(v) ?? (ctx.addIssue({ code: 'custom', message: 'an ISO date or time such as 2026-12-01 or 2026-12-01T09:30:00Z' }), z.NEVER)).optional(),
  removed: z.enum(['0', '1']).optional(),
});

/**
 * Answers a question; where the answer path has a memory to write, `correct` stores a person's pair in it,
 * `corrections` lists those pairs and `removeCorrection` undoes one (false: no live correction of that id).
 */
export type Asker = ((req: AskRequest, signal?: AbortSignal) => Promise<AskAnswer>) & {
  correct?: (req: CorrectionRequest) => Promise<StoredPair>;
  corrections?: (dbId: string, o: { since?: string; removed?: boolean }) => CorrectionRecord[];
  removeCorrection?: (dbId: string, id: number) => boolean;
};

function jsonCell(v: SqlValue): string | number | null {
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (v instanceof Uint8Array) return Buffer.from(v).toString('hex');
  return v;
}

/** One question (with its conversation) answered on a catalog's database by a policy's greedy agent episode. */
export function createAsker(o: AskerOptions): Asker {
  const env = new SqlEnvironment(o.executor, o.env ?? {}, o.envDeps);
  const answerer = o.search === false ? undefined : new Answerer(o.executor, { memory: answerMemories(o.policy.promptContract, o.memory), judge: o.judge });
  const ask = async (req: AskRequest, signal?: AbortSignal): Promise<AskAnswer> => {
    const db = o.catalog.resolve(req.db_id);
    const previous: PreviousTurn[] = req.conversation ?? [];
    const task: SqlTask = { id: 'ask', dbId: req.db_id, dbPath: db.path, question: req.question, goldSql: '', ...(req.evidence ? { evidence: req.evidence } : {}), ...(previous.length ? { previous } : {}) };
    const { episode: res, chosen, sql: answer } = await askWithAnswerPath(env, task, o.policy, answerer, { mode: 'agent', maxTurnTokens: o.maxTurnTokens ?? UNTRAINED_TURN_TOKENS, temperature: 0, samples: SEARCH_SAMPLES, timeoutMs: o.episodeTimeoutMs ?? EPISODE_TIMEOUT_MS, ...(signal ? { signal } : {}) });
    const maxRows = req.max_rows ?? ASK_ROWS;
    let r: ExecResult | undefined;
    if (answer !== undefined) r = await o.executor.execute(db.path, answer, { timeoutMs: RESULT_TIMEOUT_MS, maxRows });
    const choice = req.chart && r?.ok && !r.truncated ? chartFor(r) : null;
    const confidence = chosen?.sql ? chosen.confidence : null;
    const suggestions = answerer && chosen?.sql ? await answerer.suggestions(db.path, req.db_id, { sql: chosen.sql, question: req.question }) : [];
    return {
      db_id: req.db_id,
      question: req.question,
      sql: answer ?? null,
      columns: r?.ok ? r.columns : [],
      rows: r?.ok ? r.rows.map((row) => row.map(jsonCell)) : [],
      truncated: r?.ok ? r.truncated : false,
      error: r && !r.ok ? `${r.error}: ${r.message}` : res.error ?? null,
      end_reason: res.endReason,
      reading: chosen?.reading ?? null,
      confidence,
      low_confidence: chosen?.sql ? chosen.low : false,
      sources: chosen?.candidates[0]?.sources ?? [],
      suggestions,
      chart: choice && r?.ok ? { kind: choice.kind, vega_lite: chartSpec(choice, r) } : null,
      turns: res.turns.length,
      ms: Math.round(res.ms),
    };
  };
  // A correction goes into the memory this asker answers with (the policy's contract names it, or --memory), so the
  // next question like it finds it; the same code path as `agro ask --correct`.
  const correct = async (req: CorrectionRequest): Promise<StoredPair> => {
    if (!answerer) throw new AgroError('usage', 'the answer path is off on this server: no memory to store a correction in');
    const db = o.catalog.resolve(req.db_id);
    const r = await answerer.correct(db.path, req.db_id, req.question, req.sql);
    return { id: r.id, db_id: req.db_id, question: req.question, sql: req.sql, stored: true, columns: r.columns, rows: r.rows };
  };
  const corrections = (dbId: string, q: { since?: string; removed?: boolean }): CorrectionRecord[] => {
    o.catalog.resolve(dbId);
    return (answerer?.corrections(dbId, q) ?? []).map((e) => ({
      id: e.id,
      questions: e.questions,
      sql: e.sql,
      at: e.at ?? null,
      rows: e.rows ?? null,
      ...(e.removedAt !== undefined && e.replacedBy === undefined ? { removed: true as const } : {}),
      ...(e.replacedBy !== undefined ? { replaced_by: e.replacedBy } : {}),
    }));
  };
  const removeCorrection = (dbId: string, id: number): boolean => {
    o.catalog.resolve(dbId);
    return answerer?.removeCorrection(dbId, id) ?? false;
  };
  return Object.assign(ask, { correct, corrections, removeCorrection });
}

const FENCED = /```(?:sql)?\s*([\s\S]*?)```/i;
const ANSWER_TAG = /<answer>([\s\S]*?)<\/answer>/i;

/** The SQL an assistant message gave: an agro answer tag, a fenced block, else the message itself. */
export function sqlOfMessage(content: string): string {
  return (ANSWER_TAG.exec(content)?.[1] ?? FENCED.exec(content)?.[1] ?? content).trim();
}

/**
 * An OpenAI conversation as a question and its earlier turns: the last user message is the question; each
 * earlier user message is a turn, answered by the assistant message after it (its SQL). System and tool
 * messages are the client's own and are left out: the schema prompt is agro's.
 */
export function questionOfMessages(messages: readonly { role: string; content: string }[]): { question: string; conversation: PreviousTurn[] } {
  const lastUser = messages.map((m) => m.role).lastIndexOf('user');
  if (lastUser < 0 || !messages[lastUser].content.trim()) throw new HttpError(400, 'messages: a chat completion with "database" needs a user message (the question)');
  const conversation: PreviousTurn[] = [];
  for (let i = 0; i < lastUser; i++) {
    if (messages[i].role !== 'user' || !messages[i].content.trim()) continue;
    const reply = messages.slice(i + 1, lastUser).find((m) => m.role === 'assistant' || m.role === 'user');
    conversation.push({ question: messages[i].content.trim(), sql: reply?.role === 'assistant' ? sqlOfMessage(reply.content) : '' });
  }
  return { question: messages[lastUser].content.trim(), conversation };
}

/** Reads a JSON body against a schema: one 400 line naming the field. */
export async function readJson<S extends z.ZodType>(req: Request, schema: S): Promise<z.infer<S>> {
  let raw: unknown;
  try {
    raw = await req.json();
  } catch {
    throw new HttpError(400, 'the request body is not JSON');
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw new HttpError(400, `${i.path.join('.') || 'body'}: ${i.message}`);
  }
  return parsed.data;
}

/** An asker's errors as HTTP: an unknown database is 404, a bad one (or SQL that is refused or fails) 400. */
async function asHttp<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof AgroError && err.kind === 'not_found') throw new HttpError(404, err.message, 'invalid_request_error', 'database_not_found');
    if (err instanceof AgroError && err.kind !== 'internal') throw new HttpError(400, err.message);
    throw err;
  }
}

export function askOrHttpError(ask: Asker, req: AskRequest, signal?: AbortSignal): Promise<AskAnswer> {
  return asHttp(() => ask(req, signal));
}

export interface AskRoutesOptions {
  ask: Asker;
  concurrency?: number;
  maxQueue?: number;
}

/**
 * `POST /v1/ask`: one call, one answer. At most `concurrency` episodes run (the policy batches), `maxQueue` wait, then 429.
 * `POST /v1/corrections {db_id, question, sql}`: a person's right SQL, run in the sandbox and stored in the database's
 * memory (refused or failing SQL: one 400 line, nothing written). `GET /v1/corrections?db_id=` lists the people's
 * corrections in it, `DELETE /v1/corrections/ID?db_id=` undoes one. Storing and undoing need the write token.
 */
export function askRoutes(o: AskRoutesOptions): Hono {
  const app = new Hono();
  const gate = new Gate(o.concurrency ?? 4, o.maxQueue ?? 64);
  app.post('/v1/ask', async (c) => {
    const req = await readJson(c.req.raw, askRequestSchema);
    const release = await gate.enter();
    if (!release) throw new HttpError(429, 'too many requests in flight; retry later', 'rate_limit_error', 'queue_full');
    try {
      return c.json(await askOrHttpError(o.ask, req, c.req.raw.signal));
    } finally {
      release();
    }
  });
  // Storing and undoing write the memory: they need the token (guard.ts writeRoute); listing is a read.
  app.post('/v1/corrections', writeRoute, async (c) => {
    const req = await readJson(c.req.raw, correctionRequestSchema);
    const correct = o.ask.correct;
    if (!correct) throw new HttpError(400, 'this server stores no corrections');
    return c.json(await asHttp(() => correct(req)));
  });
  app.get('/v1/corrections', async (c) => {
    const parsed = correctionsQuerySchema.safeParse(c.req.query());
    if (!parsed.success) {
      const i = parsed.error.issues[0];
      throw new HttpError(400, `${i.path.join('.') || 'query'}: ${i.message} (expected ?db_id=ID[&since=ISO-TIME][&removed=1])`);
    }
    const { db_id, since, removed } = parsed.data;
    const list = o.ask.corrections;
    if (!list) throw new HttpError(400, 'this server stores no corrections');
    return c.json({ db_id, corrections: await asHttp(async () => list(db_id, { ...(since ? { since } : {}), removed: removed === '1' })) });
  });
  app.delete('/v1/corrections/:id', writeRoute, async (c) => {
    const id = c.req.param('id');
    const dbId = c.req.query('db_id');
    if (!/^[1-9]\d{0,15}$/.test(id)) throw new HttpError(400, `the id is a correction's number (GET /v1/corrections lists them), not ${JSON.stringify(id.slice(0, 40))}`);
    if (!dbId) throw new HttpError(400, 'db_id: the database whose memory holds the correction (?db_id=ID)');
    const remove = o.ask.removeCorrection;
    if (!remove) throw new HttpError(400, 'this server stores no corrections');
    if (!(await asHttp(async () => remove(dbId, Number(id))))) throw new HttpError(404, `no correction ${id} in the memory of ${dbId}`, 'invalid_request_error', 'not_found');
    return c.json({ db_id: dbId, id: Number(id), removed: true });
  });
  return app;
}
