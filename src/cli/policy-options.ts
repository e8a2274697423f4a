/** The flags that name a policy, shared by predict, ask, serve and dashboard. */
import { Option, type Command } from 'commander';
import { ENGINE_NAMES, type EngineName } from '../model/engine.ts';
import { openPolicy, type PolicySpec } from '../agent/policies/open.ts';
import type { Policy } from '../agent/policies/types.ts';
import type { DashboardOptions } from '../server/dashboard.ts';
import { createExecutor, type ExecutorOptions } from '../sql/executor.ts';
import type { SqlExecutor } from '../sql/types.ts';
import { numberArg } from './options.ts';

export interface PolicyCliOptions {
  policy?: string;
  engine?: EngineName;
  llmUrl?: string;
  llmModel?: string;
  apiKey?: string;
  llmTimeout?: number;
  toolRole?: 'tool' | 'user';
  threads?: number;
  batch?: number;
  /** false with --no-constrain. */
  constrain?: boolean;
}

/** `policy` and `llmUrl` replace those flags' help where the command uses them differently. */
export function addPolicyOptions(cmd: Command, opts: { endpoint?: boolean; policy?: string; llmUrl?: string } = {}): Command {
  cmd
    .option('--policy <path>', opts.policy ?? 'an agro checkpoint folder, any .gguf file, or base (the built-in base model; the default)')
    .addOption(new Option('--engine <name>', 'engine for an agro checkpoint').choices([...ENGINE_NAMES]))
    .option('--threads <n>', 'llama.cpp CPU threads', numberArg('--threads', { min: 1 }))
    .option('--batch <n>', 'turns sampled together by a local engine (default 8; GGUF: sequences, default 4)', numberArg('--batch', { min: 1 }))
    .option('--no-constrain', "an agro checkpoint writes SQL freely (by default its SQL's bare words are held to SQL's own and the database's names)");
  if (opts.endpoint !== false) addEndpointOptions(cmd, opts.llmUrl);
  return cmd;
}

/** --llm-url and the flags that go with it; `url` says what the endpoint is for in this command. */
export function addEndpointOptions(cmd: Command, url = 'an OpenAI-compatible endpoint instead of --policy (e.g. http://127.0.0.1:8000/v1)'): Command {
  return cmd
    .option('--llm-url <url>', url)
    .option('--llm-model <name>', 'model name at the endpoint (default: the first it lists)')
    .option('--api-key <key>', 'bearer token for the endpoint (default env AGRO_LLM_API_KEY)')
    .option('--llm-timeout <ms>', 'per-request timeout for the endpoint', numberArg('--llm-timeout', { min: 1 }))
    .addOption(new Option('--tool-role <role>', 'role of observations sent to the endpoint').choices(['tool', 'user']).default('tool'));
}

/** The dashboard's Playground policies from the same flags: --policy and --llm-url are offered beside the folder's (both may be given). */
export function playgroundPolicies(o: PolicyCliOptions, served?: Policy): NonNullable<DashboardOptions['policies']> {
  const local: Pick<PolicySpec, 'engine' | 'threads' | 'maxBatch' | 'constrain'> = { engine: o.engine, threads: o.threads, maxBatch: o.batch, constrain: o.constrain };
  const extra: { spec: PolicySpec }[] = [];
  if (o.policy && !served) extra.push({ spec: { ...local, path: o.policy } });
  if (o.llmUrl) extra.push({ spec: { llmUrl: o.llmUrl, llmModel: o.llmModel, apiKey: o.apiKey, llmTimeoutMs: o.llmTimeout, toolRole: o.toolRole } });
  return { extra, open: served ? [{ policy: served, path: o.policy }] : [], local };
}

/** With neither --policy nor --llm-url, the built-in base model answers (it needs no training). */
export function openPolicyFromCli(o: PolicyCliOptions, concurrency?: number): Promise<Policy> {
  return openPolicy({
    path: o.llmUrl ? o.policy : (o.policy ?? 'base'),
    engine: o.engine,
    threads: o.threads,
    maxBatch: o.batch,
    constrain: o.constrain,
    llmUrl: o.llmUrl,
    llmModel: o.llmModel,
    apiKey: o.apiKey,
    llmTimeoutMs: o.llmTimeout,
    toolRole: o.toolRole,
    concurrency,
  });
}

/** The policy the flags name and a SQL executor, open while `fn` runs and closed after it, also when it throws. */
export async function withPolicyAndExecutor<T>(o: PolicyCliOptions, concurrency: number, exec: ExecutorOptions, fn: (policy: Policy, pool: SqlExecutor) => Promise<T>): Promise<T> {
  const policy = await openPolicyFromCli(o, concurrency);
  const pool = createExecutor(exec);
  try {
    return await fn(policy, pool);
  } finally {
    await policy.close();
    await pool.close();
  }
}
