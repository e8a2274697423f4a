/**
 * The Playground's seam: a backend lists policies and runs one SQL-agent episode on a database,
 * reporting each step as it happens. The default backend offers every kind of policy agro runs, through
 * the same loader and episode runner as `agro ask`, `agro predict` and `agro serve`
 * (src/agent/policies/open.ts, src/agent/episode.ts): the newest checkpoint of each run in the folder,
 * the folder's .gguf files, and what the command line adds (`--policy` path, `--llm-url` endpoint, or a
 * policy the server already has open). The episode is the agent's greedy one, as in evaluation; the answer
 * is the answer path's (src/answer/ask.ts, as `agro ask` and `POST /v1/ask` give it: the policy's samples, the
 * database's memory, their edits and question-time synthesis, run and ranked), with its reading, confidence and
 * suggested questions. A correction goes into the database's memory through the same Answerer.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { AgroError, oneLine } from '../../errors.ts';
import { EPISODE_TIMEOUT_MS, type EpisodeEvent } from '../../agent/episode.ts';
import { openPolicy, type PolicySpec } from '../../agent/policies/open.ts';
import type { Policy, PolicyKind } from '../../agent/policies/types.ts';
import { SQL_AGENT_ACTIONS, parseAction } from '../../agent/protocol.ts';
import { SqlEnvironment, type SqlTask } from '../../agent/sql-env.ts';
import type { PreviousTurn } from '../../prompt/conversation.ts';
import { readPromptContract, resolvePromptSettings, turnTokens } from '../../prompt/contract.ts';
import type { SqlExecutor } from '../../sql/types.ts';
import { SEARCH_SAMPLES, type CandidateJudge } from '../../answer/answer.ts';
import { askWithAnswerPath } from '../../answer/ask.ts';
import { MEMORY_STORE } from '../../memory/entry.ts';
import { Answerer } from '../../answer/resources.ts';
import type { CheckedAnswer, PersonCorrection, PlaygroundEvent, PolicyInfo, StoredCorrection } from './api-types.ts';
import { CHART_ROWS, toChartedTable, toResultTable } from './results.ts';
import type { FolderScan } from './scan.ts';
import { databaseId } from '../../sql/db-id.ts';

export interface PlaygroundBackend {
  policies(): Promise<PolicyInfo[]>;
  /** Runs one episode; every step goes to onEvent, the last one an `end` or an `error`. */
  ask(policy: string, dbPath: string, question: string, onEvent: (e: PlaygroundEvent) => void, signal?: AbortSignal, previous?: PreviousTurn[], opts?: { search?: boolean }): Promise<void>;
  /** A person's right SQL for a question, stored in the database's memory once it runs (nothing written otherwise). */
  correct?(policy: string, dbPath: string, question: string, sql: string): Promise<StoredCorrection>;
  /** The people's corrections in the memory the policy answers the database with, oldest first. */
  corrections?(policy: string, dbPath: string): PersonCorrection[];
  /** One of them undone (kept in the store as removed); false when there is no live correction of that id. */
  removeCorrection?(policy: string, dbPath: string, id: number): boolean;
  /** The system prompt the policy sees for this question (grounded prompts depend on it; '' ranks for none). */
  prompt?(policy: string, dbPath: string, question?: string): Promise<string>;
  close?(): Promise<void>;
}

/** Rows of a table shown in the page (the model itself sees the environment's compact observation). */
const TABLE_ROWS = 200;

/** A policy named on the command line, offered beside the folder's. */
export interface ExtraPolicy {
  /** A path (checkpoint folder or .gguf file) or an endpoint (llmUrl); engine and batch settings as for ask. */
  spec: PolicySpec;
  label?: string;
}

export interface PolicyBackendOptions {
  executor: SqlExecutor;
  /** The current contents of the dashboard folder (checkpoints appear as runs train). */
  scan: () => FolderScan;
  /** Command-line policies: `--policy PATH`, `--llm-url URL [--llm-model M]`. */
  extra?: ExtraPolicy[];
  /** Policies the caller has open already (agro serve's --policy), with the path they came from: offered as they are, never closed here. */
  open?: { policy: Policy; path?: string }[];
  /** Engine, threads and batch for the folder's checkpoints and GGUF files (as --engine/--threads/--batch). */
  local?: Pick<PolicySpec, 'engine' | 'threads' | 'maxBatch'>;
  maxTurns?: number;
  /** The learned judge that gives the answer path's confidence (else the transparent ranker's). */
  judge?: CandidateJudge | undefined;
  /**
   * The dashboard folder: its factory outputs' memories serve their databases, and a correction of a database
   * with no memory starts one in its `memory/` folder.
   */
  dir?: string;
  /** Sampled episodes beside the greedy one for the answer path (default SEARCH_SAMPLES, as ask and serve). */
  samples?: number;
  /** New tokens per turn; default: each policy's contract (predict's rule, src/prompt/contract.ts turnTokens). */
  maxTurnTokens?: number;
  episodeTimeoutMs?: number;
}

interface Entry {
  info: PolicyInfo;
  /** How to open it; absent for a policy the caller holds open. */
  spec?: PolicySpec;
  held?: Policy;
}

/** A checkpoint's time: when its config.json was written (the last file a save renames into place is the folder). */
function modified(dir: string): { modifiedMs?: number } {
  try {
    return { modifiedMs: statSync(join(dir, 'config.json')).mtimeMs };
  } catch {
    return {};
  }
}

/**
 * The policy the Playground starts with: one the person named on the command line, else the newest
 * checkpoint, else the first listed.
 */
export function defaultPolicy(policies: readonly PolicyInfo[]): string | undefined {
  const given = policies.find((p) => p.given);
  if (given) return given.id;
  let newest: PolicyInfo | undefined;
  for (const p of policies) if (p.modifiedMs !== undefined && (newest?.modifiedMs === undefined || p.modifiedMs > newest.modifiedMs)) newest = p;
  return (newest ?? policies[0])?.id;
}

/** The id a database's memory names it by (its file name without the extension, as the factory's db_id). */

/** Where the Playground starts a memory for a database that has none (inside the dashboard folder). */
export const CORRECTIONS_DIR = 'memory';

const endpointId = (url: string, model: string | undefined): string => `${url}${model ? `#${model}` : ''}`;

/** The policy list: command-line ones first (what the user asked for), then the folder's. */
function entries(o: PolicyBackendOptions): Entry[] {
  const out: Entry[] = [];
  for (const { policy: p } of o.open ?? []) out.push({ info: { id: `open:${p.name}`, label: `${p.name} (served)`, kind: p.kind, given: true }, held: p });
  for (const x of o.extra ?? []) {
    if (x.spec.llmUrl) {
      const label = x.label ?? `${x.spec.llmModel ?? 'first model'} at ${x.spec.llmUrl}`;
      out.push({ info: { id: endpointId(x.spec.llmUrl, x.spec.llmModel), label, kind: 'endpoint', given: true }, spec: x.spec });
    } else if (x.spec.path) {
      const kind: PolicyKind = /\.gguf$/i.test(x.spec.path) ? 'gguf' : 'checkpoint';
      out.push({ info: { id: `path:${x.spec.path}`, label: x.label ?? basename(x.spec.path), kind, given: true }, spec: { ...o.local, ...x.spec } });
    }
  }
  const s = o.scan();
  for (const c of s.checkpoints) out.push({ info: { id: c.id, label: `${c.run} (step ${c.step})`, kind: 'checkpoint', ...modified(c.dir) }, spec: { ...o.local, path: c.dir } });
  // A GGUF runs on llama.cpp whatever --engine says for checkpoints.
  for (const g of s.ggufs) out.push({ info: { id: g.id, label: g.id, kind: 'gguf' }, spec: { threads: o.local?.threads, maxBatch: o.local?.maxBatch, path: g.file } });
  return out;
}

export function policyBackend(o: PolicyBackendOptions): PlaygroundBackend {
  const envs = new Map<string, SqlEnvironment>();
  // A policy runs as predict runs it: its checkpoint's contract (prompt and tokens per turn) under what the
  // command line asked; anything without a contract gets the defaults.
  const envFor = (e: Entry): { env: SqlEnvironment; maxTurnTokens: number } => {
    const path = e.held ? undefined : e.spec?.path;
    const contract = e.held ? e.held.promptContract : path && e.info.kind === 'checkpoint' ? readPromptContract(path) : null;
    const { settings } = resolvePromptSettings(contract, o.maxTurns ? { maxTurns: o.maxTurns } : {});
    const key = JSON.stringify(settings);
    let env = envs.get(key);
    if (!env) envs.set(key, (env = new SqlEnvironment(o.executor, settings)));
    return { env, maxTurnTokens: turnTokens(contract, o.maxTurnTokens).maxTurnTokens };
  };
  // The memories a policy answers with in the Playground: those the folder holds (corrections started here, then
  // every factory output's), then its own contract's, which win for a database both name (the Answerer keys by db).
  const memoriesOf = (e: Entry): string[] => {
    const out: string[] = [];
    if (o.dir) {
      const own = join(o.dir, CORRECTIONS_DIR);
      // A store, or a memory.json of an earlier agro not yet converted to one (openMemory converts it on first use).
      if (existsSync(own)) for (const f of readdirSync(own).sort()) if (f.endsWith('.db') || (f.endsWith('.json') && !existsSync(join(own, `${f.slice(0, -5)}.db`)))) out.push(join(own, f));
    }
    for (const d of o.scan().datasets) if (existsSync(join(d.dir, MEMORY_STORE))) out.push(join(d.dir, MEMORY_STORE));
    const contract = e.held ? e.held.promptContract : e.spec?.path && e.info.kind === 'checkpoint' ? readPromptContract(e.spec.path) : null;
    for (const m of contract?.memory ?? []) if (existsSync(m)) out.push(m);
    return out;
  };
  // One Answerer per set of memories: its databases' value indexes and readers are built once and kept.
  const answerers = new Map<string, Answerer>();
  const answererFor = (e: Entry): Answerer => {
    const memory = memoriesOf(e);
    const key = JSON.stringify(memory);
    let a = answerers.get(key);
    if (!a) answerers.set(key, (a = new Answerer(o.executor, { memory, judge: o.judge })));
    return a;
  };
  const find = (id: string): Entry => {
    const e = entries(o).find((x) => x.info.id === id);
    if (!e) throw new AgroError('not_found', `no policy '${id}' in the dashboard folder or on the command line`);
    return e;
  };

  // Endpoints stay open (a client each); a local model holds memory, so one at a time: asking another
  // waits for the episodes on the current one, then closes it.
  const remote = new Map<string, Promise<Policy>>();
  let local: { id: string; policy: Promise<Policy>; users: number; idle: Promise<void>; wake: () => void } | null = null;
  let switching: Promise<void> = Promise.resolve();

  const acquire = async (e: Entry): Promise<{ policy: Policy; release: () => void }> => {
    if (e.held) return { policy: e.held, release: () => {} };
    const spec = e.spec!;
    if (spec.llmUrl) {
      let p = remote.get(e.info.id);
      if (!p) {
        p = openPolicy({ ...spec, concurrency: spec.concurrency ?? 4 });
        remote.set(e.info.id, p);
        p.catch(() => remote.delete(e.info.id));
      }
      return { policy: await p, release: () => {} };
    }
    // Serialize switches so that two requests for different models do not load both.
    const turn = switching.then(async () => {
      if (local && local.id !== e.info.id) {
        const old = local;
        local = null;
        if (old.users > 0) await old.idle;
        await (await old.policy.catch(() => null))?.close();
      }
      if (!local) {
        let wake = (): void => {};
        const idle = new Promise<void>((r) => (wake = r));
        local = { id: e.info.id, policy: openPolicy(spec), users: 0, idle, wake };
        local.policy.catch(() => {
          if (local?.id === e.info.id) local = null;
        });
      }
      const mine = local;
      mine.users++;
      return mine;
    });
    switching = turn.then(
      () => {},
      () => {},
    );
    const mine = await turn;
    const done = (): void => {
      if (--mine.users === 0) mine.wake();
    };
    try {
      return { policy: await mine.policy, release: done };
    } catch (err) {
      done();
      throw err;
    }
  };

  const table = async (dbPath: string, sql: string) => toResultTable(await o.executor.execute(dbPath, sql, { timeoutMs: 10_000, maxRows: TABLE_ROWS + 1 }), TABLE_ROWS);
  // The answer's result is read far enough for its chart (one more row tells a cut result).
  const answerTable = async (dbPath: string, sql: string) => toChartedTable(await o.executor.execute(dbPath, sql, { timeoutMs: 10_000, maxRows: CHART_ROWS + 1 }), TABLE_ROWS);

  return {
    async policies() {
      return entries(o).map((e) => e.info);
    },
    async ask(policyId, dbPath, question, emit, signal, previous, opts) {
      let release = (): void => {};
      try {
        const entry = find(policyId);
        const { env, maxTurnTokens } = envFor(entry);
        const dbId = databaseId(dbPath);
        const task: SqlTask = { id: 'playground', dbId, dbPath, question, goldSql: '', ...(previous?.length ? { previous } : {}) };
        // A server's schema, docs and values are read (once) before the prompt is made.
        await env.prepare(dbPath);
        emit({ type: 'start', policy: policyId, db: dbPath, messages: env.openingFor(task) });
        const answerer = opts?.search === false ? undefined : answererFor(entry);
        const got = await acquire(entry);
        release = got.release;
        const samples = answerer ? (o.samples ?? SEARCH_SAMPLES) : 0;
        // Steps are emitted in order: a turn's table is looked up before the next event goes out.
        let chain: Promise<void> = Promise.resolve();
        const onEvent = (ev: EpisodeEvent): void => {
          chain = chain.then(() => forward(ev));
        };
        const forward = async (ev: EpisodeEvent): Promise<void> => {
          if (ev.type === 'text') emit({ type: 'text', turn: ev.turn, delta: ev.delta });
          else if (ev.type === 'turn') {
            const r = ev.record;
            const action = parseAction(r.text, SQL_AGENT_ACTIONS);
            emit({ type: 'assistant', turn: r.turn, text: r.text, ...(action.kind !== 'invalid' ? { think: action.think, action: { kind: action.kind, content: action.content } } : {}) });
            if (r.observation !== undefined) emit({ type: 'observation', turn: r.turn, text: r.observation, ...(r.sql ? { table: await table(dbPath, r.sql) } : {}) });
          } else if (ev.type === 'end' && answerer) emit({ type: 'checking', samples });
        };
        const t0 = performance.now();
        const asked = await askWithAnswerPath(env, task, got.policy, answerer, { mode: 'agent', maxTurnTokens, temperature: 0, samples, timeoutMs: o.episodeTimeoutMs ?? EPISODE_TIMEOUT_MS, ...(signal ? { signal } : {}), onEvent });
        await chain;
        const res = asked.episode;
        const reason = res.error ? `${res.endReason}: ${res.error}` : res.endReason;
        const { chosen, sql } = asked;
        let checked: CheckedAnswer | undefined;
        if (answerer && chosen?.sql) {
          const suggestions = await answerer.suggestions(dbPath, dbId, { sql: chosen.sql, question });
          checked = { reading: chosen.reading, confidence: chosen.confidence, low: chosen.low, sources: chosen.candidates[0]?.sources ?? [], ...(asked.policySql !== undefined && asked.policySql !== chosen.sql ? { policyAnswer: asked.policySql } : {}), suggestions };
        }
        // The time to the answer: the episode and, with the answer path, its samples and checks.
        const ms = Math.round(performance.now() - t0);
        if (sql === undefined) emit({ type: 'end', reason, ms });
        else emit({ type: 'end', reason, ms, answer: sql, result: await answerTable(dbPath, sql), ...(checked ? { checked } : {}) });
      } catch (err) {
        emit({ type: 'error', message: oneLine(err) });
      } finally {
        release();
      }
    },
    async correct(policyId, dbPath, question, sql) {
      const answerer = answererFor(find(policyId));
      const dbId = databaseId(dbPath);
      const start = o.dir ? join(o.dir, CORRECTIONS_DIR, `${dbId}.db`) : undefined;
      const stored = await answerer.correct(dbPath, dbId, question, sql, start);
      const rel = o.dir ? relative(o.dir, stored.path) : '';
      return { memory: rel && !rel.startsWith('..') ? rel : stored.path, result: await answerTable(dbPath, sql) };
    },
    corrections(policyId, dbPath) {
      return answererFor(find(policyId))
        .corrections(databaseId(dbPath))
        .map((e) => ({ id: e.id, questions: e.questions, sql: e.sql, at: e.at ?? null, rows: e.rows ?? null }));
    },
    removeCorrection(policyId, dbPath, id) {
      return answererFor(find(policyId)).removeCorrection(databaseId(dbPath), id);
    },
    async prompt(policyId, dbPath, question = '') {
      const { env } = envFor(find(policyId));
      await env.prepare(dbPath);
      return env.openingFor({ id: 'schema', dbId: '', dbPath, question, goldSql: '' })[0].content;
    },
    async close() {
      const l = local;
      local = null;
      if (l) {
        if (l.users > 0) await l.idle;
        await (await l.policy.catch(() => null))?.close();
      }
      for (const p of remote.values()) await (await p.catch(() => null))?.close();
      remote.clear();
    },
  };
}
