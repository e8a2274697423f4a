/**
 * The seam between the trainer and any task it trains on (SQL agent, search agent, ...).
 * The trainer knows only this file: it renders `Episode.opening` with the chat template, samples the
 * policy's turn, hands the raw text to `step`, appends the observation as a tool turn, and repeats
 * until `done`. Rewards are computed once the episode is over, from the whole transcript.
 */

export type Role = 'system' | 'user' | 'assistant' | 'tool';

export interface ChatMessage {
  role: Role;
  content: string;
}

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
  /** Feed the policy's raw text for one turn. */
  step(policyText: string): Promise<StepResult>;
}

/** Reward components by name (e.g. { execution: 1, format: 1, tool_cost: 0.8 }) with reasons. */
export type RewardParts = Record<string, { value: number; reason: string }>;

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

export interface Environment<T extends TaskBase = TaskBase> {
  readonly name: string;
  start(task: T): Promise<Episode>;
  /** Reward parts for a finished episode; pure given the transcript and whatever the task carries. */
  score(task: T, transcript: Transcript): Promise<RewardParts>;
  close?(): Promise<void>;
}
