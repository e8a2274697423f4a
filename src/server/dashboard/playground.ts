/**
 * The Playground's seam: a backend lists policies and runs one SQL-agent episode on a database,
 * reporting each step as it happens. The default backend offers every kind of policy agro runs, through
 * the same loader and episode runner as `agro ask`, `agro predict` and `agro serve`
 * (src/agent/policies/open.ts, src/agent/episode.ts): the newest checkpoint of each run in the folder,
 * the folder's .gguf files, and what the command line adds (`--policy` path, `--llm-url` endpoint, or a
 * policy the server already has open). The episode is the agent's greedy one, as in evaluation.
 */
import { statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { AgroError, oneLine } from '../../errors.ts';
import { runEpisode, type EpisodeEvent } from '../../agent/episode.ts';
import { openPolicy, type PolicySpec } from '../../agent/policies/open.ts';
import type { Policy, PolicyKind } from '../../agent/policies/types.ts';
import { SQL_AGENT_ACTIONS, parseAction } from '../../agent/protocol.ts';
import { SqlEnvironment, type SqlTask } from '../../agent/sql-env.ts';
import type { PreviousTurn } from '../../prompt/conversation.ts';
import { readPromptContract, resolvePromptSettings, turnTokens } from '../../prompt/contract.ts';
import type { SqlExecutor } from '../../sql/types.ts';
import type { PlaygroundEvent, PolicyInfo } from './api-types.ts';
import { CHART_ROWS, toChartedTable, toResultTable } from './results.ts';
import type { FolderScan } from './scan.ts';

export interface PlaygroundBackend {
  policies(): Promise<PolicyInfo[]>;
  /** Runs one episode; every step goes to onEvent, the last one an `end` or an `error`. */
  ask(policy: string, dbPath: string, question: string, onEvent: (e: PlaygroundEvent) => void, signal?: AbortSignal, previous?: PreviousTurn[]): Promise<void>;
  /** The system prompt the policy would get on this database (its schema view). */
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
    async ask(policyId, dbPath, question, emit, signal, previous) {
      let release = (): void => {};
      try {
        const entry = find(policyId);
        const { env, maxTurnTokens } = envFor(entry);
        const task: SqlTask = { id: 'playground', dbId: basename(dbPath).replace(/\.sqlite3?$|\.db$/i, ''), dbPath, question, goldSql: '', ...(previous?.length ? { previous } : {}) };
        // A server's schema, docs and values are read (once) before the prompt is made.
        await env.prepare(dbPath);
        emit({ type: 'start', policy: policyId, db: dbPath, messages: env.openingFor(task) });
        const got = await acquire(entry);
        release = got.release;
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
          } else if (ev.type === 'end') {
            const res = ev.result;
            const reason = res.error ? `${res.endReason}: ${res.error}` : res.endReason;
            if (res.answer === undefined) emit({ type: 'end', reason, ms: res.ms });
            else emit({ type: 'end', reason, ms: res.ms, answer: res.answer, result: await answerTable(dbPath, res.answer) });
          }
        };
        await runEpisode(env, task, got.policy, { mode: 'agent', maxTurnTokens, temperature: 0, timeoutMs: o.episodeTimeoutMs ?? 120_000, ...(signal ? { signal } : {}) }, { onEvent });
        await chain;
      } catch (err) {
        emit({ type: 'error', message: oneLine(err) });
      } finally {
        release();
      }
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
