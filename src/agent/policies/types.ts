/**
 * A policy answers one chat turn: the conversation so far in, the assistant's next message out. Every
 * way of running a model sits behind this one interface: an agro checkpoint (TF.js or llama.cpp), any
 * GGUF file (its own chat template and tokenizer), any OpenAI-compatible endpoint. The episode runner
 * (../episode.ts) drives it; it never sees which kind it has.
 */
import type { ChatMessage } from '../../model/chat.ts';
import type { PromptContract } from '../../prompt/contract.ts';
import type { SchemaNames } from '../types.ts';

export const POLICY_KINDS = ['checkpoint', 'gguf', 'endpoint'] as const;
export type PolicyKind = (typeof POLICY_KINDS)[number];

export interface TurnRequest {
  messages: ChatMessage[];
  /** New tokens at most (the policy lowers it to what its context still holds). */
  maxTokens: number;
  /** 0 = greedy. */
  temperature: number;
  topP?: number;
  seed?: number;
  /** The episode's database names (Episode.names): a policy that can constrain its decoding keeps its SQL to them. */
  names?: SchemaNames;
  /** Text as it is produced: token chunks where the engine streams, the whole turn at once elsewhere. */
  onText?: (delta: string) => void;
  /** Asks the policy to stop early (an endpoint call is aborted; a local engine finishes its batch). */
  signal?: AbortSignal;
}

export interface TurnReply {
  text: string;
  /** stop: the model ended its turn; length: it hit maxTokens or the context. */
  finish: 'stop' | 'length';
  promptTokens?: number;
  completionTokens?: number;
}

export interface Policy {
  readonly kind: PolicyKind;
  /** A name for reports and /v1/models (the checkpoint folder, the GGUF file, the endpoint's model). */
  readonly name: string;
  /** One line for logs: what runs and on which engine. */
  readonly description: string;
  /** The prompt it was trained with (an agro checkpoint's prompt_contract.json); null when it carries none. */
  readonly promptContract: PromptContract | null;
  complete(req: TurnRequest): Promise<TurnReply>;
  close(): Promise<void>;
}
