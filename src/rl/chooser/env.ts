/**
 * The chooser's environment (issue #56, "an agent that RL teaches to choose"): the answer path has gathered and run
 * a question's candidates; the policy reads them (each one's SQL, the factory's reading of it and the first rows of
 * its result) in the agent's own prompt format (system prompt with the question's grounded schema, then the user
 * turn; src/prompt) and answers in the agent's protocol with the number of the candidate it chooses:
 *
 *   <think>…</think><answer>2</answer>
 *
 * One turn. The reward is the SQL agent's own: the chosen candidate's SQL is judged by execution against the gold
 * by the SQL environment's judge (src/agent/sql-env.ts rewardContext, the same comparison its RL and eval use),
 * scored by the reward registry (execution, format). A turn off the protocol, or an answer that is not the number
 * of a candidate shown, has no chosen query: execution 0 and the format reward's 0 (answerWellFormed).
 */
import { z } from 'zod';
import { parseAction, type ActionKind } from '../../agent/protocol.ts';
import { SqlEnvironment, sqlEnvConfigSchema, type SqlTask } from '../../agent/sql-env.ts';
import type { Environment, Episode, EpisodeContext, RewardDeps, StepResult, TaskBase, Transcript } from '../../agent/types.ts';
import { formatResultTable } from '../../prompt/observation.ts';
import type { SqlExecutor } from '../../sql/types.ts';

/** The chooser answers only: it has no tool (the candidates already ran). */
export const CHOOSER_ACTIONS: readonly ActionKind[] = ['answer'];

export const CHOOSER_SYSTEM_PROMPT =
  'You choose which candidate query answers a question about a SQLite database. Each candidate shows its SQL, how it ' +
  'reads, and the first rows of its result. Answer: <think>reasoning</think> then <answer>the number of the candidate</answer>.';

/** One candidate as the answer path offered it. */
export interface ChooserCandidate {
  sql: string;
  /** The factory's reading of it closest to the question (answer.ts RankedCandidate.reading). */
  reading: string | null;
}

export interface ChooserTask extends TaskBase {
  dbId: string;
  dbPath: string;
  question: string;
  goldSql: string;
  /** In the answer path's order (its ranker's best first): candidate k is shown as [k+1]. */
  candidates: ChooserCandidate[];
  difficulty?: string;
}

export const chooserConfigSchema = z.strictObject({
  /** The schema shown, and how the chosen query is judged: the SQL agent's settings. */
  sql: sqlEnvConfigSchema.omit({ systemPrompt: true }).partial().default({ schemaChars: 400, valueHints: 0 }),
  systemPrompt: z.string().min(1).default(CHOOSER_SYSTEM_PROMPT),
  /** Result rows and characters shown per candidate. */
  resultRows: z.number().int().min(1).default(3),
  resultChars: z.number().int().min(40).default(160),
  /** Characters of a candidate's SQL and reading shown. */
  sqlChars: z.number().int().min(40).default(240),
});
export type ChooserConfig = z.output<typeof chooserConfigSchema>;

/** The candidate an answer names (0-based), or why it names none. */
export function parseChoice(answer: string, candidates: number): { index: number } | { invalid: string } {
  const m = /^\[?\s*(\d{1,3})\s*\]?\.?$/.exec(answer.trim());
  if (!m) return { invalid: `the answer must be the number of a candidate (1-${candidates}), not "${answer.slice(0, 40)}"` };
  const k = Number(m[1]);
  if (k < 1 || k > candidates) return { invalid: `there is no candidate ${k} (1-${candidates})` };
  return { index: k - 1 };
}

const clip = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n - 3)}...` : s);

export class ChooserEnvironment implements Environment<ChooserTask> {
  readonly name = 'chooser';
  readonly config: ChooserConfig;
  /** The SQL agent's environment: the grounded schema of the prompt and the execution judgement of the choice. */
  readonly sql: SqlEnvironment;
  private readonly summaries = new Map<string, Promise<string[]>>();

  constructor(
    private readonly executor: SqlExecutor,
    config: z.input<typeof chooserConfigSchema> = {},
  ) {
    this.config = chooserConfigSchema.parse(config);
    this.sql = new SqlEnvironment(executor, this.config.sql);
  }

  /** Each candidate's first rows, run once per task (a group's episodes share them). */
  private resultsOf(task: ChooserTask): Promise<string[]> {
    let p = this.summaries.get(task.id);
    if (!p) {
      const { resultRows, resultChars } = this.config;
      const timeoutMs = this.sql.config.execTimeoutMs;
      p = Promise.all(task.candidates.map(async (c) => formatResultTable(await this.executor.execute(task.dbPath, c.sql, { timeoutMs, maxRows: resultRows + 1 }), resultRows, resultChars)));
      this.summaries.set(task.id, p);
      p.catch(() => this.summaries.delete(task.id));
    }
    return p;
  }

  /** The opening the policy reads: the instructions and the question's schema, then the question and every candidate. */
  async opening(task: ChooserTask): Promise<Episode['opening']> {
    await this.sql.prepare(task.dbPath);
    const results = await this.resultsOf(task);
    const { sqlChars } = this.config;
    const shown = task.candidates.map((c, i) =>
      [`[${i + 1}] ${clip(c.sql, sqlChars)}`, `reads: ${c.reading ? clip(c.reading, sqlChars) : '(no reading)'}`, `result: ${results[i]}`].join('\n'),
    );
    return [
      { role: 'system', content: `${this.config.systemPrompt}\n${this.sql.promptSchema(task.dbPath, task.question)}` },
      { role: 'user', content: `${task.question.trim()}\nCandidates:\n${shown.join('\n')}` },
    ];
  }

  async start(task: ChooserTask): Promise<Episode> {
    const opening = await this.opening(task);
    return {
      opening,
      async step(policyText: string): Promise<StepResult> {
        const action = parseAction(policyText, CHOOSER_ACTIONS);
        if (action.kind === 'invalid') return { done: true, reason: 'invalid_action', observation: action.reason };
        const choice = parseChoice(action.content, task.candidates.length);
        if ('invalid' in choice) return { done: true, reason: 'invalid_action', observation: choice.invalid };
        return { done: true, reason: 'answer', answer: String(choice.index + 1) };
      },
    };
  }

  /** The task as the SQL environment judges it: the chooser's gold on the chooser's database. */
  private sqlTask(task: ChooserTask): SqlTask {
    return { id: task.id, dbId: task.dbId, dbPath: task.dbPath, question: task.question, goldSql: task.goldSql };
  }

  /** The chosen candidate (0-based) of a finished episode, or null when it chose none. */
  choiceOf(task: ChooserTask, t: Transcript): number | null {
    if (t.answer === undefined) return null;
    const c = parseChoice(t.answer, task.candidates.length);
    return 'index' in c ? c.index : null;
  }

  /** Whether candidate `index` answers the task: its result judged against the gold's as the reward judges a choice. */
  async isRight(task: ChooserTask, index: number): Promise<boolean> {
    const t: Transcript = { messages: [], toolCalls: 0, endReason: 'answer', answer: task.candidates[index].sql, policyTokens: 0, truncated: false };
    return (await this.sql.rewardContext(this.sqlTask(task), t)).correct;
  }

  async rewardContext(task: ChooserTask, t: Transcript): Promise<EpisodeContext> {
    const turns = t.messages.filter((m) => m.role === 'assistant').map((m) => m.content);
    const chosen = this.choiceOf(task, t);
    // The chosen candidate's SQL is the answer the SQL agent's judgement runs; no choice is its "no answer".
    const judged = await this.sql.rewardContext(this.sqlTask(task), { ...t, answer: chosen === null ? undefined : task.candidates[chosen].sql });
    const last = turns.length ? parseAction(turns[turns.length - 1], CHOOSER_ACTIONS) : null;
    // A turn in the protocol whose answer names no candidate is malformed all the same.
    const wellFormed = last !== null && last.kind === 'answer' && 'index' in parseChoice(last.content, task.candidates.length);
    return { ...judged, turns, allowedActions: CHOOSER_ACTIONS, answerWellFormed: wellFormed, formatOk: wellFormed };
  }

  rewardDeps(task: ChooserTask): RewardDeps {
    return this.sql.rewardDeps(this.sqlTask(task));
  }
}
