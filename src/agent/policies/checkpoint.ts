/**
 * An agro checkpoint as a policy: the conversation is rendered with agro's chat template (the ids the
 * model was trained on), sampled on the TF.js engine or on llama.cpp (a GGUF export of the same weights),
 * and decoded back to text. Concurrent turns are batched into one sampling call.
 */
import { basename, resolve } from 'node:path';
import { AgroError } from '../../errors.ts';
import { initBackend } from '../../model/backend.ts';
import { chatStopTokens, renderPrompt } from '../../model/chat.ts';
import { loadCheckpoint } from '../../model/checkpoint.ts';
import type { EngineName, RolloutEngine } from '../../model/engine.ts';
import { createEngine } from '../../model/engines.ts';
import type { Tokenizer } from '../../model/tokenizer.ts';
import type { TokenFilter } from '../../model/generate.ts';
import { sqlNameFilter } from '../decoding/sql-names.ts';
import { Batcher } from './batcher.ts';
import type { Policy, TurnReply, TurnRequest } from './types.ts';
import { readPromptContract, type PromptContract } from '../../prompt/contract.ts';

export interface CheckpointPolicyOptions {
  engine?: EngineName;
  /** Prompts sampled together at most (default 8). */
  maxBatch?: number;
  /** llama.cpp CPU threads (default 1). */
  threads?: number;
  /**
   * Keep the bare words of its SQL to the episode's vocabulary (SQL's words, the database's tables and
   * columns; src/agent/decoding/sql-names.ts). Default true.
   */
  constrain?: boolean;
}

interface Job {
  prompt: number[];
  maxNew: number;
  temperature: number;
  topP: number;
  seed: number;
  filter?: () => TokenFilter;
}

export class CheckpointPolicy implements Policy {
  readonly kind = 'checkpoint';
  readonly name: string;
  readonly description: string;
  readonly promptContract: PromptContract | null;
  private readonly batcher: Batcher<Job, { tokens: number[]; finish: 'stop' | 'length' }>;

  private constructor(
    dir: string,
    private readonly engine: RolloutEngine,
    private readonly tokenizer: Tokenizer,
    private readonly maxPositions: number,
    maxBatch: number,
    private readonly release: () => void,
    contract: PromptContract | null,
    private readonly constrain: boolean,
  ) {
    this.promptContract = contract;
    this.name = basename(resolve(dir));
    this.description = `agro checkpoint ${dir} on ${engine.name}`;
    const stops = chatStopTokens(tokenizer);
    this.batcher = new Batcher(
      async (jobs) => {
        const j = jobs[0];
        const filter = jobs.some((x) => x.filter) ? (p: number) => jobs[p].filter?.() : undefined;
        // Each prompt keeps its own seed: what a turn draws does not depend on the turns batched with it.
        const promptSeeds = jobs.map((x) => x.seed);
        const out = await engine.sampleGroups(jobs.map((x) => x.prompt), 1, { maxNewTokens: j.maxNew, temperature: j.temperature, topP: j.topP, promptSeeds, stopTokenIds: stops, ...(filter ? { filter } : {}) });
        return out.map(([s]) => ({ tokens: s.finish === 'stop' ? s.tokens.slice(0, -1) : s.tokens, finish: s.finish }));
      },
      (j) => `${j.maxNew}|${j.temperature}|${j.topP}`,
      maxBatch,
    );
  }

  static async open(dir: string, opts: CheckpointPolicyOptions = {}): Promise<CheckpointPolicy> {
    const engineName = opts.engine ?? 'tfjs';
    // Read first: a broken contract file fails before the weights load.
    const contract = readPromptContract(dir);
    await initBackend();
    const ck = loadCheckpoint(dir);
    const maxBatch = opts.maxBatch ?? 8;
    if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new AgroError('usage', `policy: maxBatch must be a positive integer, got ${maxBatch}`);
    let engine: RolloutEngine;
    try {
      engine = await createEngine(engineName, ck.model, { tokenizer: ck.tokenizer, threads: opts.threads, maxSequences: maxBatch });
    } catch (err) {
      ck.model.dispose();
      throw err;
    }
    // llama.cpp holds its own copy of the weights: the TF.js one is no longer needed.
    if (engineName !== 'tfjs') ck.model.dispose();
    const release = engineName === 'tfjs' ? () => ck.model.dispose() : () => {};
    return new CheckpointPolicy(dir, engine, ck.tokenizer, ck.model.config.maxPositions, maxBatch, release, contract, opts.constrain ?? true);
  }

  async complete(req: TurnRequest): Promise<TurnReply> {
    const prompt = renderPrompt(this.tokenizer, req.messages);
    const maxNew = Math.min(req.maxTokens, this.maxPositions - prompt.length);
    if (maxNew <= 0) return { text: '', finish: 'length', promptTokens: prompt.length, completionTokens: 0 };
    const factory = this.constrain && req.names ? sqlNameFilter(this.tokenizer, req.names) : undefined;
    // String literals may be copied from anything the conversation holds so far.
    const filter = factory ? () => factory(req.messages) : undefined;
    const r = await this.batcher.submit({ prompt, maxNew, temperature: req.temperature, topP: req.topP ?? 1, seed: req.seed ?? 0, ...(filter ? { filter } : {}) });
    const text = this.tokenizer.decode(r.tokens);
    req.onText?.(text);
    return { text, finish: r.finish, promptTokens: prompt.length, completionTokens: r.tokens.length + (r.finish === 'stop' ? 1 : 0) };
  }

  async close(): Promise<void> {
    await this.engine.dispose();
    this.release();
  }
}
