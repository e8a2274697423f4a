/**
 * The SQL agent's environment (AGRO-SQL's agentic loop): the prompt carries the schema, the question and
 * its evidence; each <sql> tool call runs read-only through the pool and comes back as a compact,
 * truncated table (or the error message); an <answer> ends the episode and is scored by execution on the
 * original database and on every variant database of the task (test-suite reward).
 *
 * A database is a SQLite file or a postgres:// URL. Its schema, documentation and value index are read
 * once (prepare(), asynchronously: a server is read over the network) and kept; the prompt is then made
 * synchronously from them. start() prepares its task's database; a SQLite file not yet prepared is read
 * synchronously where a prompt asks for it, a server's must be prepared first.
 */
import { z } from 'zod';
import { promptSettingsSchema } from '../prompt/settings.ts';
import { parseAction, SQL_AGENT_ACTIONS, formatAction, formatObservation, type ParsedAction } from './protocol.ts';
import { HINT_TIERS, scafSqlHint } from './hints.ts';
import { schemaNames } from './decoding/sql-names.ts';
import { storedText } from './decoding/stored-text.ts';
import type { ChatMessage, Environment, Episode, EpisodeContext, RewardContext, RewardDeps, SchemaNames, StepResult, TaskBase, Transcript } from './types.ts';
import { introspectSchema } from '../sql/introspect.ts';
import { introspectDatabase } from '../sql/executor.ts';
import { databaseDocs, databaseValueIndex } from '../prompt/sources.ts';
import { dialectOf } from '../sql/dialect.ts';
import { redactUrl } from '../sql/postgres.ts';
import { AgroError } from '../errors.ts';
import { renderSchema } from '../prompt/render.ts';
import { groundedSchema } from '../prompt/grounded.ts';
import { findDocs } from '../prompt/docs.ts';
import { buildValueIndex, type ValueIndex } from '../prompt/value-index.ts';
import type { DbDocs } from '../prompt/docs-types.ts';
import { Judge, judgeConfigSchema, type JudgedGold } from '../sql/judge.ts';
import type { DbSchema, ExecResult, SqlExecutor } from '../sql/types.ts';
import { linkingText, renderUserMessage, type PreviousTurn } from '../prompt/conversation.ts';
import { formatResultTable } from '../prompt/observation.ts';

export interface SqlTask extends TaskBase {
  dbId: string;
  dbPath: string;
  question: string;
  evidence?: string;
  goldSql: string;
  /** Variant databases with the same schema (from `agro synth`): the answer must match on each. */
  variantPaths?: string[];
  difficulty?: string;
  /** Earlier turns of a conversation this question follows up (conversation.ts renders them). */
  previous?: PreviousTurn[];
}

export const sqlEnvConfigSchema = z.strictObject({
  ...promptSettingsSchema.shape,
  /** Time limit of a tool call's query (the answer is judged under the judge's own limits). */
  execTimeoutMs: z.number().int().positive().default(3000),
  /** How an answer is judged (the reward, the in-training evaluation): the one judge of src/sql/judge.ts, as predict and eval. */
  judge: judgeConfigSchema.prefault({}),
});
export type SqlEnvConfig = z.infer<typeof sqlEnvConfigSchema>;


export interface SqlEnvDeps {
  /** A database's documentation; default: the one found beside a file (src/prompt/docs.ts findDocs), a server's COMMENTs. */
  docsFor?: (dbPath: string) => DbDocs | undefined | Promise<DbDocs | undefined>;
}

/** Grounded prompts differ per question: they are kept for this many questions (RL starts an episode many times). */
const OPENING_CACHE = 20_000;

export class SqlEnvironment implements Environment<SqlTask> {
  readonly name = 'sql';
  readonly config: SqlEnvConfig;
  /** The judge of answers: the same as predict's and eval's for the same settings. */
  readonly judge: Judge;
  private readonly schemaText = new Map<string, string>();
  private readonly schemas = new Map<string, DbSchema>();
  private readonly names = new Map<string, SchemaNames>();
  private readonly goldCache = new Map<string, Promise<ExecResult>>();
  private readonly golds = new Map<string, JudgedGold>();
  private readonly docs = new Map<string, DbDocs | undefined>();
  private readonly indexes = new Map<string, ValueIndex>();
  private readonly grounded = new Map<string, string>();
  private readonly preparing = new Map<string, Promise<void>>();
  private readonly docsFor: (dbPath: string) => DbDocs | undefined | Promise<DbDocs | undefined>;

  constructor(
    private readonly executor: SqlExecutor,
    config: z.input<typeof sqlEnvConfigSchema> = {},
    deps: SqlEnvDeps = {},
  ) {
    this.config = sqlEnvConfigSchema.parse(config);
    this.judge = new Judge(this.config.judge);
    this.docsFor = deps.docsFor ?? ((p) => (dialectOf(p) === 'postgres' ? databaseDocs(p) : findDocs(p)?.docs));
  }

  /**
   * Reads a database's schema, documentation and value index once (concurrent callers share the read), so
   * the prompt can be made synchronously afterwards. Needed before a prompt on a server; optional on SQLite.
   */
  prepare(dbPath: string): Promise<void> {
    let p = this.preparing.get(dbPath);
    if (!p) {
      p = (async () => {
        if (!this.schemas.has(dbPath)) this.schemas.set(dbPath, await introspectDatabase(dbPath));
        if (this.config.docs && !this.docs.has(dbPath)) this.docs.set(dbPath, await this.docsFor(dbPath));
        if (this.wantsIndex() && !this.indexes.has(dbPath)) this.indexes.set(dbPath, await databaseValueIndex(dbPath));
      })();
      this.preparing.set(dbPath, p);
      p.catch(() => this.preparing.delete(dbPath));
    }
    return p;
  }

  /** prepare() for each distinct database, before prompts are made synchronously for many tasks (sft, export). */
  async prepareAll(dbPaths: Iterable<string>): Promise<void> {
    for (const p of new Set(dbPaths)) await this.prepare(p);
  }

  private wantsIndex(): boolean {
    return this.config.schemaFormat === 'grounded' && this.config.valueHints > 0;
  }

  /** A server's schema, docs and values are read by prepare() only (asynchronously). */
  private unprepared(dbPath: string): AgroError {
    return new AgroError('internal', `the schema of ${redactUrl(dbPath)} was not read: call SqlEnvironment.prepare() before making its prompt`);
  }

  /** The documentation of a database, read once per path (undefined when it has none or docs are off). */
  docsOf(dbPath: string): DbDocs | undefined {
    if (!this.config.docs) return undefined;
    if (!this.docs.has(dbPath)) {
      const docs = this.docsFor(dbPath);
      if (docs instanceof Promise) {
        docs.catch(() => undefined);
        throw this.unprepared(dbPath);
      }
      this.docs.set(dbPath, docs);
    }
    return this.docs.get(dbPath);
  }

  /** The value index of a database, built once per path (bounded memory: src/prompt/value-index.ts). */
  private indexOf(dbPath: string): ValueIndex {
    let index = this.indexes.get(dbPath);
    if (!index) {
      if (dialectOf(dbPath) === 'postgres') throw this.unprepared(dbPath);
      this.indexes.set(dbPath, (index = buildValueIndex(dbPath)));
    }
    return index;
  }

  /** The schema as the prompt shows it for this question. */
  promptSchema(dbPath: string, question: string): string {
    if (this.config.schemaFormat === 'ddl') return this.schemaFor(dbPath);
    const key = `${dbPath}\u0000${question}`;
    let text = this.grounded.get(key);
    if (text === undefined) {
      text = groundedSchema(this.schemaOf(dbPath), question, {
        docs: this.docsOf(dbPath),
        ...(this.config.valueHints > 0 ? { index: this.indexOf(dbPath) } : {}),
        maxChars: this.config.schemaChars,
        samples: this.config.schemaSamples,
        maxValues: this.config.valueHints,
      });
      if (this.grounded.size >= OPENING_CACHE) this.grounded.clear();
      this.grounded.set(key, text);
    }
    return text;
  }

  /**
   * A database's tables and columns, and for a SQLite file the text it stores, read when constrained decoding
   * first needs it (names and string literals), once per path. A server database's text is not read: its
   * literals stay free.
   */
  namesOf(dbPath: string): SchemaNames {
    let v = this.names.get(dbPath);
    if (!v) this.names.set(dbPath, (v = schemaNames(this.schemaOf(dbPath), dialectOf(dbPath) === 'sqlite' ? () => storedText(dbPath) : undefined)));
    return v;
  }

  /** A database's schema, introspected once per path. */
  schemaOf(dbPath: string): DbSchema {
    let schema = this.schemas.get(dbPath);
    if (!schema) {
      if (dialectOf(dbPath) === 'postgres') throw this.unprepared(dbPath);
      this.schemas.set(dbPath, (schema = introspectSchema(dbPath)));
    }
    return schema;
  }

  /** The schema of a database as the prompt shows it before any question (grounded: ranked for no question). */
  schemaFor(dbPath: string): string {
    if (this.config.schemaFormat === 'grounded') return this.promptSchema(dbPath, '');
    let text = this.schemaText.get(dbPath);
    if (text === undefined) {
      text = renderSchema(this.schemaOf(dbPath), { maxChars: this.config.schemaChars, samples: this.config.schemaSamples });
      this.schemaText.set(dbPath, text);
    }
    return text;
  }

  openingFor(task: SqlTask): ChatMessage[] {
    return [
      { role: 'system', content: `${this.config.systemPrompt}\n${this.promptSchema(task.dbPath, linkingText(task.question, task.previous))}` },
      { role: 'user', content: renderUserMessage(task.question, task.evidence, task.previous) },
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
    await this.prepare(task.dbPath);
    const opening = this.openingFor(task);
    const cfg = this.config;
    const executor = this.executor;
    let turns = 0;
    return {
      opening,
      names: this.namesOf(task.dbPath),
      async step(policyText: string, parsed?: ParsedAction): Promise<StepResult> {
        turns++;
        const action = parsed ?? parseAction(policyText, SQL_AGENT_ACTIONS);
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
      async check(sql: string): Promise<string | null> {
        const r = await executor.execute(task.dbPath, sql, { timeoutMs: cfg.execTimeoutMs, maxRows: 1 });
        return r.ok ? null : r.message;
      },
    };
  }

  /** A task's gold query as the judge runs it, prepared once per query text. */
  private judgedGold(sql: string): JudgedGold {
    let g = this.golds.get(sql);
    if (!g) this.golds.set(sql, (g = this.judge.gold(sql)));
    return g;
  }

  /** The gold query's result on one database, run once however many episodes are scored against it. */
  private goldResult(dbPath: string, gold: JudgedGold): Promise<ExecResult> {
    const key = `${dbPath}\u0000${gold.sql}`;
    let p = this.goldCache.get(key);
    if (!p) {
      p = this.judge.run(this.executor, dbPath, gold.query);
      this.goldCache.set(key, p);
    }
    return p;
  }

  /** Execution of the answer and the gold query on the original and every variant database, judged by the judge. */
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
    const judged = this.judgedGold(task.goldSql);
    const gold = await Promise.all(dbs.map((db) => this.goldResult(db, judged)));
    if (t.answer === undefined) {
      const missing: ExecResult = { ok: false, error: 'runtime', message: `no answer (${t.endReason})`, elapsedMs: 0 };
      return { ...base, predSql: '', exec: { pred: dbs.map(() => missing), gold }, correct: false };
    }
    const query = this.judge.prediction(t.answer);
    const pred = await Promise.all(dbs.map((db) => this.judge.run(this.executor, db, query)));
    const correct = pred.every((p, i) => this.judge.verdict(judged, gold[i], p).outcome === 'match');
    return { ...base, predSql: t.answer, exec: { pred, gold }, correct };
  }

  rewardDeps(task: SqlTask): RewardDeps {
    const gold = this.judgedGold(task.goldSql);
    return { match: (pred, g) => this.judge.verdict(gold, g, pred).outcome === 'match' };
  }
}
