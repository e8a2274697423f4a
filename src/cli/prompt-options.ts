/**
 * The flags that shape a policy's prompt, shared by ask, predict, serve, export, sft and train. None has a
 * default here: unset, a setting comes from the policy's prompt contract (what it was trained with), then
 * from the environment's defaults; set, it wins, and a contradiction is said on one line.
 */
import { existsSync, statSync } from 'node:fs';
import { Option, type Command } from 'commander';
import { AgroError } from '../errors.ts';
import { printErr } from './print.ts';
import { PROMPT_CONTRACT_FILE, readPromptContract, resolvePromptSettings, type PromptContract, type PromptSettings } from '../prompt/contract.ts';
import type { SqlEnvDeps } from '../agent/sql-env.ts';
import { readDocs } from '../prompt/docs.ts';
import type { DbDocs } from '../prompt/docs-types.ts';
import { numberArg } from './options.ts';
import { databaseId } from '../sql/db-id.ts';

export interface PromptCliOptions {
  maxTurns?: number;
  schemaChars?: number;
  schemaFormat?: 'grounded' | 'ddl';
  valueHints?: number;
  /** A documentation file or folder; false: --no-docs. */
  docs?: string | false;
  promptFrom?: string;
}

/**
 * `from`: offer --prompt-from, for commands that build prompts without running the policy (serve's environment
 * API, export). `turns`: offer --max-turns.
 */
export function addPromptOptions(cmd: Command, opts: { turns?: boolean; from?: boolean } = {}): Command {
  if (opts.from) cmd.option('--prompt-from <checkpoint>', 'build prompts as this checkpoint was trained to read them (its prompt_contract.json)');
  if (opts.turns !== false) cmd.option('--max-turns <n>', "policy turns per episode (default: the policy's prompt contract, else 4)", numberArg('--max-turns', { min: 1, max: 32 }));
  return cmd
    .addOption(new Option('--schema-format <f>', "grounded: the tables, columns, documentation and stored values the question needs first; ddl: the same schema for every question (default: the policy's prompt contract, else grounded)").choices(['grounded', 'ddl']))
    .option('--schema-chars <n>', "schema characters in the prompt (default: the policy's prompt contract, else 1800)", numberArg('--schema-chars', { min: 200 }))
    .option('--value-hints <n>', "stored values matching the question shown under the schema, 0 = none (default: the policy's prompt contract, else 5)", numberArg('--value-hints', { min: 0, max: 50 }))
    .option('--docs <path>', "the database's documentation: BIRD's database_description/ CSVs, a Spider/KaggleDBQA tables.json, or agro's JSON (default: found beside the database)")
    .option('--no-docs', 'show no documentation in the prompt');
}

/** The prompt settings the user asked for (only the flags given). */
export function askedPrompt(o: PromptCliOptions): Partial<PromptSettings> {
  const asked: Partial<PromptSettings> = {};
  if (o.maxTurns !== undefined) asked.maxTurns = o.maxTurns;
  if (o.schemaChars !== undefined) asked.schemaChars = o.schemaChars;
  if (o.schemaFormat !== undefined) asked.schemaFormat = o.schemaFormat;
  if (o.valueHints !== undefined) asked.valueHints = o.valueHints;
  if (o.docs !== undefined) asked.docs = o.docs !== false;
  return asked;
}

export function printWarning(line: string): void {
  printErr(`agro: warning: ${line}\n`);
}

/** The contract --prompt-from names; a folder without one is an error, not a silent default. */
export function contractFromFlag(dir: string): PromptContract {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new AgroError('not_found', `--prompt-from: checkpoint folder not found: ${dir}`);
  const c = readPromptContract(dir);
  if (!c) throw new AgroError('invalid_input', `--prompt-from: ${dir} has no ${PROMPT_CONTRACT_FILE} (a checkpoint trained before prompt contracts, or not by agro)`);
  return c;
}

/** Contract (--prompt-from first, else the policy's), then flags; the warning printed. */
export function promptFromCli(contract: PromptContract | null, o: PromptCliOptions): Partial<PromptSettings> {
  const base = o.promptFrom ? contractFromFlag(o.promptFrom) : contract;
  const { settings, warning } = resolvePromptSettings(base, askedPrompt(o));
  if (warning) printWarning(warning);
  return settings;
}

/**
 * --docs as the environment's documentation source: read once, checked before any work (a missing file is
 * exit 3, a malformed one exit 4). A tables.json with several databases gives each database its own entry.
 */
export function envDepsFromCli(o: PromptCliOptions, dbIdHint?: string): SqlEnvDeps {
  if (typeof o.docs !== 'string') return {};
  const path = o.docs;
  const cache = new Map<string, DbDocs>();
  const read = (dbId?: string): DbDocs => {
    const key = dbId ?? '';
    if (!cache.has(key)) cache.set(key, readDocs(path, dbId));
    return cache.get(key)!;
  };
  if (!existsSync(path)) throw new AgroError('not_found', `--docs: documentation not found: ${path}`);
  if (dbIdHint !== undefined) read(dbIdHint);
  return { docsFor: (dbPath) => read(databaseId(dbPath)) };
}
