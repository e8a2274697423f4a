import type { ChatMessage } from '../model/chat.ts';
import type { ExecResult } from '../sql/types.ts';
import type { ActionKind, ParsedAction } from './protocol.ts';

export type { ChatMessage, ChatRole as Role } from '../model/chat.ts';

/**
 * The seam between the trainer and any task it trains on (SQL agent, search agent, ...).
 * The trainer knows only this file: it renders `Episode.opening` with the chat template, samples the
 * policy's turn, hands the raw text to `step`, appends the observation as a tool turn, and repeats
 * until `done`. Once the episode is over, the environment turns the transcript into a RewardContext and
 * the reward registry (src/rl/rewards.ts) scores it, so environments never hard-code reward weights.
 */

/** What every task row has; environments extend it with their own fields. */
export interface TaskBase {
  id: string;
}

export type StepResult =
  | { done: false; observation: string }
  | {
      done: true;
      /** answer: the policy gave a final answer; the others end the episode without one. */
      reason: 'answer' | 'turn_limit' | 'invalid_action' | 'token_budget';
      answer?: string;
      /** A last message to show (e.g. why the action was invalid); not trained on. */
      observation?: string;
    };

export interface Episode {
  /** The opening conversation (system prompt with the schema or tool list, then the user turn). */
  readonly opening: ChatMessage[];
  /** The database's names: a local policy can keep the SQL it writes to them (src/agent/decoding/sql-names.ts). */
  readonly names?: SchemaNames;
  /**
   * Feed the policy's raw text for one turn. `parsed`: that text as parseAction read it with the SQL agent's
   * actions, when the caller has read it already (the episode runner does), so it is parsed once; an
   * environment with other actions ignores it.
   */
  step(policyText: string, parsed?: ParsedAction): Promise<StepResult>;
  /**
   * Whether an answer's SQL runs on the episode's database, without showing the policy anything: null when it
   * runs, else the error in one line (execution-guided decoding; src/agent/episode.ts).
   */
  check?(sql: string): Promise<string | null>;
}

/** The tables and columns of an episode's database, for constrained decoding. */
export interface SchemaNames {
  readonly tables: readonly { readonly name: string; readonly columns: readonly string[] }[];
  /**
   * Every distinct text the database stores (src/agent/decoding/stored-text.ts), which a string literal may be copied
   * from: read on the first call (only constrained decoding needs it), the same array after. Absent or null
   * when not read (a server database, more text than the budget): literals are then free.
   */
  readonly storedText?: () => readonly string[] | null;
}

/** One finished episode, as the trainer and the reward functions see it. */
export interface Transcript {
  messages: ChatMessage[];
  /** Number of tool calls the policy made. */
  toolCalls: number;
  endReason: Extract<StepResult, { done: true }>['reason'];
  answer?: string;
  /** Response length in tokens (policy tokens only), for overlong shaping. */
  policyTokens: number;
  /** True when generation hit the token limit inside a turn. */
  truncated: boolean;
}

/** What an environment reports about a finished episode: the reward registry's context plus the signals E-GRPO shapes from. */
export type EpisodeContext = RewardContext & {
  /** The final answer is right (execution match, exact match...). */
  correct: boolean;
  /** Every turn followed the protocol and the episode ended with an answer (E-GRPO gives malformed episodes 0). */
  formatOk?: boolean;
  /** E-GRPO's γ: fraction of ground-truth entities the agent mentioned in its reasoning. */
  entityRate?: number;
};

export interface Environment<T extends TaskBase = TaskBase> {
  readonly name: string;
  start(task: T): Promise<Episode>;
  /**
   * What the reward registry needs to score a finished episode (execution results, answer, tool calls...).
   * `correct` must be set: group-level rewards (OTC's tool efficiency) and accuracy metrics read it.
   */
  rewardContext(task: T, transcript: Transcript): Promise<EpisodeContext>;
  /** Functions the rewards need for this task (e.g. the SQL result comparison in the task's mode). */
  rewardDeps?(task: T): RewardDeps;
  /**
   * The assistant turns of a correct episode, written from the task's ground truth (off-policy anchors of
   * DaGRPO; the gold answer whose probability IGPO tracks is the last turn).
   */
  demonstration?(task: T): string[];
  /** The task with a hint of tier `level` (0 = most abstract) in its prompt; null past the last tier (Scaf-GRPO). */
  withHint?(task: T, level: number): T | null;
  close?(): Promise<void>;
}

// ---------------------------------------------------------------- the reward contract

/** A ground-truth entity with the other names it goes by (E-GRPO's entity match rate). */
export interface Entity {
  name: string;
  aliases?: string[];
}

/**
 * Everything a finished episode tells the reward registry (src/rl/rewards.ts). Environments fill it;
 * rewards read it and never reach back into the environment.
 */
/** One reward's value for an episode, with the reason it gives. */
export interface RewardValue {
  value: number;
  reason: string;
}

export interface RewardContext {
  /** The final assistant turn (format reward when `turns` is absent). */
  response?: string;
  /** Every assistant turn of the episode. */
  turns?: readonly string[];
  /** Actions the environment allows (default: the SQL agent's). */
  allowedActions?: readonly ActionKind[];
  /** An environment's own check of the final answer's content (the chooser's: the number of a candidate shown); false fails the format reward. */
  answerWellFormed?: boolean;
  /** Execution of the predicted and gold SQL, one pair per database (several = test suite). */
  exec?: { pred: readonly ExecResult[]; gold: readonly ExecResult[] };
  predSql?: string;
  goldSql?: string;
  /** Search agent: the final answer text and the gold answers / entities. */
  answer?: string;
  goldAnswers?: readonly string[];
  /** Ground-truth entities (with aliases) for E-GRPO's entity match rate. */
  goldEntities?: readonly (string | Entity)[];
  /** The agent's reasoning text (think blocks and tool queries): where E-GRPO looks for the entities. */
  reasoning?: string;
  /** Tool calls made in the episode, and the fewest made by a correct response of the same group (OTC's n). */
  toolCalls?: number;
  optimalToolCalls?: number | null;
  /** Whether the final answer is right (gates OTC's tool reward). */
  correct?: boolean;
  /** Policy tokens generated (overlong punishment). */
  completionTokens?: number;
}

export interface RewardDeps {
  /** Result comparison (src/sql/compare.ts in production), injected to keep rewards pure. */
  match?: (pred: ExecResult, gold: ExecResult) => boolean;
}
