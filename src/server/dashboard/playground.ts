/**
 * The Playground's seam: a backend lists policies and runs one SQL-agent episode on a database,
 * reporting each step as it happens. The dashboard takes any backend; the default one here runs agro
 * checkpoints found in the dashboard folder with the built-in model, turn by turn as src/rl/rollout.ts does
 * (greedy, the same prompt, chat template and environment as training and evaluation).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { AgroError, oneLine } from '../../errors.ts';
import { SqlEnvironment } from '../../agent/sql-env.ts';
import { parseAction, SQL_AGENT_ACTIONS } from '../../agent/protocol.ts';
import { initBackend } from '../../model/backend.ts';
import { CHAT_TOKENS, renderPrompt } from '../../model/chat.ts';
import { loadCheckpoint, type Checkpoint } from '../../model/checkpoint.ts';
import { sampleGroups } from '../../model/generate.ts';
import type { SqlExecutor } from '../../sql/types.ts';
import type { PlaygroundEvent, PolicyInfo } from './api-types.ts';
import { toResultTable } from './results.ts';
import type { FolderScan } from './scan.ts';

export interface PlaygroundBackend {
  policies(): Promise<PolicyInfo[]>;
  /** Runs one episode; every step goes to onEvent, the last one an `end` or an `error`. */
  ask(policy: string, dbPath: string, question: string, onEvent: (e: PlaygroundEvent) => void): Promise<void>;
  /** The system prompt the policy would get on this database (its schema view). */
  prompt?(policy: string, dbPath: string): Promise<string>;
  close?(): Promise<void>;
}

/** Rows of a table shown in the page (the model itself sees the environment's compact observation). */
const TABLE_ROWS = 200;

export interface CheckpointBackendOptions {
  executor: SqlExecutor;
  /** The current contents of the dashboard folder (checkpoints appear as runs train). */
  scan: () => FolderScan;
  maxTurnTokens?: number;
  maxTurns?: number;
}

interface Loaded {
  id: string;
  ck: Checkpoint;
  env: SqlEnvironment;
}

/**
 * The schema budget a policy was trained with: a quickstart records it in report.json (a policy sees the
 * prompt it learned on); anything else gets the environment's default.
 */
function schemaCharsFor(runDir: string): number | undefined {
  for (const dir of [runDir, dirname(runDir)]) {
    const p = join(dir, 'report.json');
    if (!existsSync(p)) continue;
    try {
      const n = (JSON.parse(readFileSync(p, 'utf8')) as { config?: { schemaChars?: unknown } }).config?.schemaChars;
      if (typeof n === 'number') return n;
    } catch {
      // Not a quickstart report.
    }
  }
  return undefined;
}

export function checkpointBackend(opts: CheckpointBackendOptions): PlaygroundBackend {
  const maxTurnTokens = opts.maxTurnTokens ?? 96;
  let loaded: Loaded | null = null;
  // One episode at a time: the model and its backend are shared.
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const p = queue.then(fn, fn);
    queue = p.catch(() => {});
    return p;
  };

  const load = async (policy: string): Promise<Loaded> => {
    if (loaded?.id === policy) return loaded;
    const found = opts.scan().checkpoints.find((c) => c.id === policy);
    if (!found) throw new AgroError('not_found', `no checkpoint '${policy}' in the dashboard folder`);
    await initBackend();
    loaded?.ck.model.dispose();
    loaded = null;
    const ck = loadCheckpoint(found.dir);
    const schemaChars = schemaCharsFor(dirname(dirname(found.dir)));
    const env = new SqlEnvironment(opts.executor, { ...(schemaChars ? { schemaChars } : {}), ...(opts.maxTurns ? { maxTurns: opts.maxTurns } : {}) });
    loaded = { id: policy, ck, env };
    return loaded;
  };

  const episode = async (policy: string, dbPath: string, question: string, emit: (e: PlaygroundEvent) => void): Promise<void> => {
    const { ck, env } = await load(policy);
    const { model, tokenizer } = ck;
    const ep = await env.start({ id: 'playground', dbId: '', dbPath, question, goldSql: '' });
    emit({ type: 'start', policy, db: dbPath, messages: ep.opening });
    const stops = [tokenizer.tokenId(CHAT_TOKENS.end), tokenizer.tokenId(CHAT_TOKENS.eos)];
    const ids = renderPrompt(tokenizer, ep.opening);
    for (let turn = 0; ; turn++) {
      if (ids.length + maxTurnTokens > model.config.maxPositions) {
        emit({ type: 'end', reason: `token_budget: ${ids.length} tokens so far, the model has ${model.config.maxPositions} positions` });
        return;
      }
      const [[s]] = await sampleGroups(model, [ids], 1, { maxNewTokens: maxTurnTokens, temperature: 0, stopTokenIds: stops, seed: 0 });
      ids.push(...s.tokens);
      const stopped = s.finish === 'stop';
      const text = tokenizer.decode(stopped ? s.tokens.slice(0, -1) : s.tokens);
      const action = parseAction(text, SQL_AGENT_ACTIONS);
      emit({ type: 'assistant', turn, text, ...(action.kind !== 'invalid' ? { think: action.think, action: { kind: action.kind, content: action.content } } : {}) });
      if (!stopped) {
        emit({ type: 'end', reason: `token_budget: the turn passed ${maxTurnTokens} tokens` });
        return;
      }
      const r = await ep.step(text);
      if (r.done) {
        if (r.answer === undefined) {
          emit({ type: 'end', reason: r.observation ? `${r.reason}: ${r.observation}` : r.reason });
          return;
        }
        const res = await opts.executor.execute(dbPath, r.answer, { timeoutMs: 10_000, maxRows: TABLE_ROWS + 1 });
        emit({ type: 'end', reason: r.reason, answer: r.answer, result: toResultTable(res, TABLE_ROWS) });
        return;
      }
      const sql = action.kind === 'sql' ? action.content : '';
      const table = sql ? toResultTable(await opts.executor.execute(dbPath, sql, { timeoutMs: 10_000, maxRows: TABLE_ROWS + 1 }), TABLE_ROWS) : undefined;
      emit({ type: 'observation', turn, text: r.observation, ...(table ? { table } : {}) });
      ids.push(tokenizer.tokenId(CHAT_TOKENS.tool), ...tokenizer.encode(r.observation), stops[0], tokenizer.tokenId(CHAT_TOKENS.assistant));
    }
  };

  return {
    async policies() {
      return opts.scan().checkpoints.map((c) => ({ id: c.id, label: `${c.run} (step ${c.step})`, kind: 'checkpoint' }));
    },
    ask(policy, dbPath, question, onEvent) {
      return serial(async () => {
        try {
          await episode(policy, dbPath, question, onEvent);
        } catch (err) {
          onEvent({ type: 'error', message: oneLine(err) });
        }
      });
    },
    prompt(policy, dbPath) {
      return serial(async () => (await load(policy)).env.openingFor({ id: 'schema', dbId: '', dbPath, question: '', goldSql: '' })[0].content);
    },
    async close() {
      await queue;
      loaded?.ck.model.dispose();
      loaded = null;
    },
  };
}
