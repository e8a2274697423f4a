/**
 * A checkpoint's prompt contract: the settings of the SQL environment that shape what the policy reads
 * (system prompt, how the schema is shown and how much of it, observations, turns). A policy only works
 * on the prompt it was trained with, so every trainer writes the contract into each checkpoint
 * (`prompt_contract.json`) and everything that runs a checkpoint (ask, predict, serve, the Playground,
 * export, e2e:trl) starts from it. A flag that contradicts it still wins, with a one-line warning.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import { readJsonFile } from '../util/fs.ts';
import { promptSettingsSchema, type PromptSettings } from './settings.ts';

export const PROMPT_CONTRACT_FILE = 'prompt_contract.json';

export type { PromptSettings };
/** The environment settings a policy's prompt depends on (settings.ts); the others (timeouts, scoring) do not change what it reads. */
export type PromptField = keyof PromptSettings;
export const PROMPT_FIELDS = Object.keys(promptSettingsSchema.shape) as PromptField[];

/**
 * New tokens per turn a policy trains and is evaluated with unless its run chose another: short turns keep
 * the RL trainer's rollouts and the episode budget (maxResponseTokens) cheap on a CPU. The RL trainer's
 * default (rl/train-config.ts) and the turn length SFT and pretraining write into their contracts.
 */
export const TURN_TOKENS = 96;

/**
 * New tokens per turn for a policy without a contract (an endpoint, a GGUF file, a checkpoint not made by
 * agro): it was not trained to agro's short turns, so it gets room to write a longer one.
 */
export const UNTRAINED_TURN_TOKENS = 256;

/** How the policy was sampled in training and evaluation: what predict and ask use unless told otherwise. */
export const decodingSchema = z.strictObject({
  /** New tokens per turn. */
  maxTurnTokens: z.number().int().min(1),
});
export type Decoding = z.infer<typeof decodingSchema>;

export const promptContractSchema = z.strictObject({
  kind: z.literal('agro-prompt-contract'),
  version: z.literal(1),
  ...promptSettingsSchema.shape,
  decoding: decodingSchema.optional(),
  /**
   * The memories the policy answers with (the factory's verified pairs of its databases, src/answer/memory.ts):
   * file paths relative to the checkpoint folder (absolute ones kept); readPromptContract resolves them.
   */
  memory: z.array(z.string().min(1)).optional(),
});
export type PromptContract = z.infer<typeof promptContractSchema>;

/** The contract of an environment's settings (what a trainer writes). */
export function promptContract(config: PromptSettings, decoding?: Decoding, memory?: readonly string[]): PromptContract {
  const settings = Object.fromEntries(PROMPT_FIELDS.map((f) => [f, config[f]])) as PromptSettings;
  return { kind: 'agro-prompt-contract', version: 1, ...settings, ...(decoding ? { decoding } : {}), ...(memory?.length ? { memory: [...memory] } : {}) };
}

/** The side files a trainer hands to its checkpoints: the whole contract, decoding included (memory paths as given: absolute, or relative to each checkpoint). */
export function promptContractFiles(config: PromptSettings, decoding: Decoding, memory?: readonly string[]): Record<string, unknown> {
  return { [PROMPT_CONTRACT_FILE]: promptContract(config, decoding, memory) };
}

/** New tokens per turn: asked, else the contract's, else UNTRAINED_TURN_TOKENS; an asked value that contradicts the contract is named on one line. */
export function turnTokens(contract: PromptContract | null, asked: number | undefined): { maxTurnTokens: number; warning: string | null } {
  const trained = contract?.decoding?.maxTurnTokens;
  return {
    maxTurnTokens: asked ?? trained ?? UNTRAINED_TURN_TOKENS,
    warning: asked !== undefined && trained !== undefined && asked !== trained ? `the policy was trained and evaluated with ${trained} new tokens per turn; using --max-turn-tokens ${asked}` : null,
  };
}

/** The contract a checkpoint folder carries, or null for one trained before contracts (or not by agro). */
export function readPromptContract(checkpointDir: string): PromptContract | null {
  const path = join(checkpointDir, PROMPT_CONTRACT_FILE);
  if (!existsSync(path)) return null;
  const r = promptContractSchema.safeParse(readJsonFile(path, 'prompt contract'));
  if (!r.success) {
    const i = r.error.issues[0];
    throw new AgroError('invalid_input', `${path}: ${i.path.join('.') || 'contract'}: ${i.message}`);
  }
  return r.data.memory ? { ...r.data, memory: r.data.memory.map((m) => resolve(checkpointDir, m)) } : r.data;
}

/**
 * Every prompt setting of a checkpoint folder: its contract's (the environment's defaults for one without), with
 * `asked` on top, as `agro predict` resolves them. What a bench or script that builds its own environment uses.
 */
export function checkpointPrompt(checkpointDir: string, asked: Partial<PromptSettings> = {}): PromptSettings {
  const defined = Object.fromEntries(Object.entries(asked).filter(([, v]) => v !== undefined)) as Partial<PromptSettings>;
  return promptSettingsSchema.parse(resolvePromptSettings(readPromptContract(checkpointDir), defined).settings);
}

/** How a setting is named on the command line, for the warning. */
const FLAG: Record<PromptField, string> = {
  systemPrompt: 'system prompt',
  schemaFormat: '--schema-format',
  schemaChars: '--schema-chars',
  valueHints: '--value-hints',
  docs: '--no-docs',
  schemaSamples: '--schema-samples',
  maxTurns: '--max-turns',
  observationRows: '--observation-rows',
  observationChars: '--observation-chars',
};

/**
 * The prompt settings to run a policy with: the contract's, then what the user asked for on top. Each
 * asked-for value that differs from the contract is named in one warning line (null when none differ).
 */
export function resolvePromptSettings(
  contract: PromptContract | null,
  asked: Partial<PromptSettings>,
): { settings: Partial<PromptSettings>; warning: string | null } {
  const base: Partial<PromptSettings> = contract ? Object.fromEntries(PROMPT_FIELDS.map((f) => [f, contract[f]])) : {};
  const differs: string[] = [];
  for (const f of PROMPT_FIELDS) {
    const v = asked[f];
    if (v === undefined) continue;
    if (contract && contract[f] !== v) differs.push(`${FLAG[f]} ${JSON.stringify(v)} (trained with ${JSON.stringify(contract[f])})`);
  }
  const settings = { ...base, ...Object.fromEntries(Object.entries(asked).filter(([, v]) => v !== undefined)) } as Partial<PromptSettings>;
  return {
    settings,
    warning: differs.length ? `the policy's prompt contract differs from what was asked: ${differs.join(', ')}; using what was asked` : null,
  };
}
