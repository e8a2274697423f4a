/** Which policy a user means: `--llm-url` names an endpoint; a path is an agro checkpoint folder or a GGUF file. */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { AgroError } from '../../errors.ts';
import type { EngineName } from '../../model/engine.ts';
import { resolveModelPath } from '../../model/builtin.ts';
import { listCheckpoints, resolveCheckpointDir } from '../../model/checkpoint.ts';
import { CheckpointPolicy } from './checkpoint.ts';
import { EndpointPolicy } from './endpoint.ts';
import { GgufPolicy, isGgufFile } from './gguf.ts';
import type { Policy } from './types.ts';

export interface PolicySpec {
  /** A checkpoint directory, a .gguf file, or the name of a built-in model (`base`). */
  path?: string;
  engine?: EngineName;
  /** Local engines: turns sampled together at most. */
  maxBatch?: number;
  threads?: number;
  /** An agro checkpoint holds its SQL's bare words to the episode's vocabulary (default true). */
  constrain?: boolean;
  llmUrl?: string;
  llmModel?: string;
  apiKey?: string;
  llmTimeoutMs?: number;
  toolRole?: 'tool' | 'user';
  /** Endpoint requests in flight at once. */
  concurrency?: number;
}

export async function openPolicy(spec: PolicySpec): Promise<Policy> {
  if (spec.llmUrl && spec.path) throw new AgroError('usage', 'give either --policy or --llm-url, not both');
  if (spec.llmUrl) {
    return EndpointPolicy.open({ url: spec.llmUrl, model: spec.llmModel, apiKey: spec.apiKey, timeoutMs: spec.llmTimeoutMs, toolRole: spec.toolRole, concurrency: spec.concurrency });
  }
  const path = spec.path === undefined ? undefined : resolveModelPath(spec.path);
  if (!path) throw new AgroError('usage', 'no policy: give --policy <checkpoint dir | file.gguf> or --llm-url <endpoint>');
  if (!existsSync(path)) throw new AgroError('not_found', `policy not found: ${path}`);
  if (statSync(path).isDirectory()) {
    // A run folder stands for its newest checkpoint, as with `train --init`.
    if (!existsSync(join(path, 'config.json')) && listCheckpoints(path).length === 0) throw new AgroError('invalid_input', `${path} is not a checkpoint: it has no config.json (expected an agro/Hugging Face checkpoint folder, a run folder with checkpoints/step-N, or a .gguf file)`);
    return CheckpointPolicy.open(resolveCheckpointDir(path), { engine: spec.engine, maxBatch: spec.maxBatch, threads: spec.threads, constrain: spec.constrain });
  }
  if (isGgufFile(path)) {
    if (spec.engine && spec.engine !== 'llama.cpp') throw new AgroError('usage', `${path} is a GGUF file: it runs on llama.cpp only (drop --engine ${spec.engine})`);
    return GgufPolicy.open(path, { sequences: spec.maxBatch, threads: spec.threads });
  }
  throw new AgroError('invalid_input', `${path} is neither a checkpoint folder nor a GGUF file`);
}
