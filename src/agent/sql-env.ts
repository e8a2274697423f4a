/**
 * The SQL agent's environment (AGRO-SQL's agentic loop): the prompt carries the schema, the question and
 * its evidence; each <sql> tool call runs read-only through the pool and comes back as a compact,
 * truncated table (or the error message); an <answer> ends the episode and is scored by execution on the
 * original database and on every variant database of the task (test-suite reward).
 */
import { z } from 'zod';
import { parseAction, SQL_AGENT_ACTIONS, formatAction, formatObservation } from './protocol.ts';
import { HINT_TIERS, scafSqlHint } from './hints.ts';
import type { ChatMessage, Environment, Episode, EpisodeContext, RewardContext, RewardDeps, StepResult, TaskBase, Transcript } from './types.ts';
import { introspectSchema } from '../sql/introspect.ts';
import { renderSchema } from '../sql/render.ts';
import { hasOrderBy, resultsMatch } from '../sql/compare.ts';
import type { CompareMode, ExecResult, SqlExecutor, SqlValue } from '../sql/types.ts';

export interface SqlTask extends TaskBase {
  dbId: string;
  dbPath: string;
  question: string;
  evidence?: string;
  goldSql: string;
  /** Variant databases with the same schema (from `agro synth`): the answer must match on each. */
  variantPaths?: string[];
  difficulty?: string;
}

export const sqlEnvConfigSchema = z.strictObject({
  /** Policy turns per episode, the answer turn included. */
  maxTurns: z.number().int().min(1).default(4),
  execTimeoutMs: z.number().int().positive().default(3000),
  /** Rows and characters of a result shown to the agent. */
  observationRows: z.number().int().min(1).default(5),
  observationChars: z.number().int().min(40).default(400),
  /** Character budget of the schema in the system prompt. */
  schemaChars: z.number().int().min(200).default(1800),
  schemaSamples: z.number().int().min(0).default(2),
  compareMode: z.enum(['bird', 'spider']).default('bird'),
});
export type SqlEnvConfig = z.infer<typeof sqlEnvConfigSchema>;

export const SQL_AGENT_SYSTEM_PROMPT =
  'You answer questions about a SQLite database. Each turn: <think>reasoning</think> then either ' +
  '<sql>one read-only query</sql> to look at the data, or <answer>the final SQL query</answer>.';

function cell(v: SqlValue): string {
  if (v === null) return 'NULL';
  if (v instanceof Uint8Array) return `<blob ${v.byteLength}B>`;
  const s = String(v);
  return s.length > 40 ? `${s.slice(0, 37)}...` : s;
}

/** A result as the agent sees it: header, a few rows, the row count; always under `maxChars`. */
export function formatResultTable(r: ExecResult, maxRows: number, maxChars: number): string {
  if (!r.ok) return `error (${r.error}): ${r.message}`.slice(0, maxChars);
  const lines = [r.columns.join(' | ')];
  for (const row of r.rows.slice(0, maxRows)) lines.push(row.map(cell).join(' | '));
  const more = r.rows.length > maxRows || r.truncated ? `${r.truncated ? 'over ' : ''}${r.rows.length} rows, first ${maxRows} shown` : `${r.rows.length} rows`;
  let text = lines.join('\n');
  const tail = `\n(${more})`;
  if (text.length + tail.length > maxChars) text = text.slice(0, Math.max(0, maxChars - tail.length - 4)) + ' ...';
  return text + tail;
}

export class SqlEnvironment implements Environment<SqlTask> {
  readonly name = 'sql';
  readonly config: SqlEnvConfig;
  private readonly schemaText = new Map<string, string>();
  private readonly goldCache = new Map<string, Promise<ExecResult>>();

  constructor(
    private readonly executor: SqlExecutor,
    config: Partial<SqlEnvConfig> = {},
  ) {
    this.config = sqlEnvConfigSchema.parse(config);
  }

  /** The rendered schema of a database, introspected once per path. */
  schemaFor(dbPath: string): string {
    let text = this.schemaText.get(dbPath);
    if (text === undefined) {
      text = renderSchema(introspectSchema(dbPath), { maxChars: this.config.schemaChars, samples: this.config.schemaSamples });
      this.schemaText.set(dbPath, text);
    }
    return text;
  }

  openingFor(task: SqlTask): ChatMessage[] {
    const evidence = task.evidence?.trim() ? `\nEvidence: ${task.evidence.trim()}` : '';
    return [
      { role: 'system', content: `${SQL_AGENT_SYSTEM_PROMPT}\n${this.schemaFor(task.dbPath)}` },
      { role: 'user', content: `${task.question.trim()}${evidence}` },
    ];
  }

  /** One answer turn with the gold query. */
  demonstration(task: SqlTask): string[] {
    return [formatAction({ kind: 'answer', content: task.goldSql.trim(), think: '' })];
  }

  /** The task with a hint from its gold query added to the evidence (tables, then skeleton, then the first half). */
  withHint(task: SqlTask, level: number): SqlTask | null {
    const tier = HINT_TIERS[level];
    if (!tier) return null;
    const hint = scafSqlHint(tier, task.goldSql);
    return { ...task, evidence: task.evidence?.trim() ? `${task.evidence.trim()} ${hint}` : hint };
  }

  async start(task: SqlTask): Promise<Episode> {
    const opening = this.openingFor(task);
    const cfg = this.config;
    const executor = this.executor;
    let turns = 0;
    return {
      opening,
      async step(policyText: string): Promise<StepResult> {
        turns++;
        const action = parseAction(policyText, SQL_AGENT_ACTIONS);
        if (action.kind === 'invalid') return { done: true, reason: 'invalid_action', observation: action.reason };
        if (action.kind === 'answer') return { done: true, reason: 'answer', answer: action.content };
        // A tool call on the last allowed turn cannot be followed by an answer.
        if (turns >= cfg.maxTurns) return { done: true, reason: 'turn_limit' };
        const r = await executor.execute(task.dbPath, action.content, {
          timeoutMs: cfg.execTimeoutMs,
          maxRows: cfg.observationRows + 1,
        });
        return { done: false, observation: formatObservation(formatResultTable(r, cfg.observationRows, cfg.observationChars)) };
      },
    };
  }

  private gold(dbPath: string, sql: string): Promise<ExecResult> {
    const key = `${dbPath}\u0000${sql}`;
    let p = this.goldCache.get(key);
    if (!p) {
      p = this.executor.execute(dbPath, sql, { timeoutMs: this.config.execTimeoutMs * 4 });
      this.goldCache.set(key, p);
    }
    return p;
  }

  /** Execution of the answer and the gold query on the original and every variant database. */
  async rewardContext(task: SqlTask, t: Transcript): Promise<EpisodeContext> {
    const turns = t.messages.filter((m) => m.role === 'assistant').map((m) => m.content);
    const base: RewardContext = {
      turns,
      allowedActions: SQL_AGENT_ACTIONS,
      goldSql: task.goldSql,
      toolCalls: t.toolCalls,
      completionTokens: t.policyTokens,
    };
    const dbs = [task.dbPath, ...(task.variantPaths ?? [])];
    const gold = await Promise.all(dbs.map((db) => this.gold(db, task.goldSql)));
    if (t.answer === undefined) {
      const missing: ExecResult = { ok: false, error: 'runtime', message: `no answer (${t.endReason})`, elapsedMs: 0 };
      return { ...base, predSql: '', exec: { pred: dbs.map(() => missing), gold }, correct: false };
    }
    const pred = await Promise.all(dbs.map((db) => this.executor.execute(db, t.answer as string, { timeoutMs: this.config.execTimeoutMs })));
    const match = this.matcher(task.goldSql);
    const correct = pred.every((p, i) => match(p, gold[i]));
    return { ...base, predSql: t.answer, exec: { pred, gold }, correct };
  }

  rewardDeps(task: SqlTask): RewardDeps {
    return { match: this.matcher(task.goldSql) };
  }

  /** The result comparison used by the execution reward, in this environment's mode. */
  matcher(goldSql: string): (pred: ExecResult, gold: ExecResult) => boolean {
    const mode: CompareMode = this.config.compareMode;
    const ordered = mode === 'spider' && hasOrderBy(goldSql);
    return (pred, gold) => pred.ok && gold.ok && resultsMatch(pred.rows, gold.rows, { mode, ordered });
  }
}
