/** The flags that name a policy, shared by predict, ask and serve. */
import { Option, type Command } from 'commander';
import { AgroError } from '../errors.ts';
import { ENGINE_NAMES, type EngineName } from '../model/engine.ts';
import { openPolicy } from '../agent/policies/open.ts';
import type { Policy } from '../agent/policies/types.ts';
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
}

export function addPolicyOptions(cmd: Command, opts: { endpoint?: boolean } = {}): Command {
  cmd
    .option('--policy <path>', 'an agro checkpoint folder or any .gguf file')
    .addOption(new Option('--engine <name>', 'engine for an agro checkpoint').choices([...ENGINE_NAMES]))
    .option('--threads <n>', 'llama.cpp CPU threads', numberArg('--threads', { min: 1 }))
    .option('--batch <n>', 'turns sampled together by a local engine (default 8; GGUF: sequences, default 4)', numberArg('--batch', { min: 1 }));
  if (opts.endpoint !== false) {
    cmd
      .option('--llm-url <url>', 'an OpenAI-compatible endpoint instead of --policy (e.g. http://127.0.0.1:8000/v1)')
      .option('--llm-model <name>', 'model name at the endpoint (default: the first it lists)')
      .option('--api-key <key>', 'bearer token for the endpoint (default env AGRO_LLM_API_KEY)')
      .option('--llm-timeout <ms>', 'per-request timeout for the endpoint', numberArg('--llm-timeout', { min: 1 }))
      .addOption(new Option('--tool-role <role>', 'role of observations sent to the endpoint').choices(['tool', 'user']).default('tool'));
  }
  return cmd;
}

export function openPolicyFromCli(o: PolicyCliOptions, concurrency?: number): Promise<Policy> {
  if (!o.policy && !o.llmUrl) throw new AgroError('usage', 'give --policy <checkpoint dir | file.gguf> or --llm-url <endpoint>');
  return openPolicy({
    path: o.policy,
    engine: o.engine,
    threads: o.threads,
    maxBatch: o.batch,
    llmUrl: o.llmUrl,
    llmModel: o.llmModel,
    apiKey: o.apiKey,
    llmTimeoutMs: o.llmTimeout,
    toolRole: o.toolRole,
    concurrency,
  });
}
