/**
 * Training-Free GRPO (Tencent youtu-agent, "Training-Free Group Relative Policy Optimization", arXiv 2510.08191):
 * the group-relative loop without a weight update. Each step rolls out G episodes per task with the current
 * experience library in the prompt, scores them with the reward registry, and for every group whose rewards differ
 * asks an LLM (any OpenAI-compatible endpoint) to compare its successes and failures and edit the library
 * (add / modify / delete short natural-language experiences). The library is the "semantic advantage" that later
 * prompts carry. The paper's three LLM stages (summarize each rollout, extract the group's lesson, merge into the
 * library) are one call per group here, followed by a deterministic merge; its Q&A-free variant is left out.
 *
 * Outputs (atomic, resumable): <out>/experiences.json (the library), <out>/state.json (step, task position),
 * <out>/metrics.jsonl (one line per step), <out>/eval.json (held-out, with the final library).
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { AgroError } from '../errors.ts';
import type { ChatMessage, Environment, Episode, TaskBase } from '../agent/types.ts';
import type { ChatMessage as LlmMessage, LlmClient } from '../llm/client.ts';
import type { LlamaModel } from '../model/llama.ts';
import type { Tokenizer } from '../model/tokenizer.ts';
import type { RolloutEngine } from '../model/engine.ts';
import { writeJsonAtomic } from '../util/fs.ts';
import { Rng } from '../util/rng.ts';
import { collect, score, type Scored } from './phases.ts';
import { prepareRewards, type RewardSpec } from './rewards.ts';
import { evaluatePolicy, type PolicyEval } from './evaluate.ts';
import type { TrainConfig } from './train-config.ts';

export interface Experience {
  id: number;
  text: string;
}

export const experienceOpSchema = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('add'), text: z.string().min(1) }),
  z.strictObject({ op: z.literal('modify'), id: z.number().int(), text: z.string().min(1) }),
  z.strictObject({ op: z.literal('delete'), id: z.number().int() }),
]);
export const experienceReplySchema = z.object({ operations: z.array(experienceOpSchema).max(8) });
export type ExperienceOp = z.infer<typeof experienceOpSchema>;

/** Longest experience kept (characters): the library rides in every prompt of a small-context model. */
export const MAX_EXPERIENCE_CHARS = 240;

/**
 * Apply the LLM's edits in order: add (new id = max + 1), modify and delete by id (unknown ids ignored and
 * counted), texts trimmed to one line of at most MAX_EXPERIENCE_CHARS, duplicates of an existing text dropped;
 * the library then keeps its `max` newest entries.
 */
export function applyExperienceOps(lib: readonly Experience[], ops: readonly ExperienceOp[], max = 12): { library: Experience[]; ignored: number } {
  const out = lib.map((e) => ({ ...e }));
  let next = Math.max(0, ...out.map((e) => e.id)) + 1;
  let ignored = 0;
  const clean = (t: string): string => t.replace(/\s+/g, ' ').trim().slice(0, MAX_EXPERIENCE_CHARS);
  for (const op of ops) {
    if (op.op === 'add') {
      const text = clean(op.text);
      if (out.some((e) => e.text === text)) ignored++;
      else out.push({ id: next++, text });
      continue;
    }
    const k = out.findIndex((e) => e.id === op.id);
    if (k < 0) {
      ignored++;
      continue;
    }
    if (op.op === 'modify') out[k] = { id: op.id, text: clean(op.text) };
    else out.splice(k, 1);
  }
  return { library: out.slice(Math.max(0, out.length - max)), ignored };
}

/** The library as a prompt block (empty string when there is nothing yet). */
export function renderExperiences(lib: readonly Experience[]): string {
  if (lib.length === 0) return '';
  return `Experiences from earlier attempts:\n${lib.map((e) => `[${e.id}] ${e.text}`).join('\n')}`;
}

/** The environment with a text block added to the system message of every episode (a system turn first if none). */
export function withPromptPrefix<T extends TaskBase>(env: Environment<T>, block: () => string): Environment<T> {
  const inject = (opening: ChatMessage[]): ChatMessage[] => {
    const text = block();
    if (!text) return opening;
    if (opening[0]?.role === 'system') return [{ ...opening[0], content: `${opening[0].content}\n\n${text}` }, ...opening.slice(1)];
    return [{ role: 'system', content: text }, ...opening];
  };
  return {
    name: env.name,
    start: async (task: T): Promise<Episode> => {
      const ep = await env.start(task);
      return { opening: inject(ep.opening), step: (t) => ep.step(t) };
    },
    rewardContext: (task, t) => env.rewardContext(task, t),
    ...(env.rewardDeps ? { rewardDeps: (task: T) => env.rewardDeps!(task) } : {}),
  };
}

/** The distillation request for one group: the task, each rollout's final turn and reward, the current library. */
export function distillMessages(taskText: string, group: readonly Scored[], lib: readonly Experience[]): LlmMessage[] {
  const rollouts = group
    .map((s, i) => {
      const last = [...s.traj.messages].reverse().find((m) => m.role === 'assistant')?.content ?? '';
      return `Attempt ${i + 1} (reward ${s.score.total.toFixed(2)}, ${s.ctx.correct ? 'correct' : 'wrong'}, ${s.traj.toolCalls} tool calls, ended by ${s.traj.endReason}):\n${last.slice(0, 600)}`;
    })
    .join('\n\n');
  return [
    {
      role: 'system',
      content:
        'You improve an agent by editing its list of experiences: short, general, reusable lessons (one sentence each) that are added to its prompt. ' +
        'Compare the better and worse attempts at the same task, find what made the difference, and edit the list. ' +
        'Reply with one JSON object {"operations": [...]} where each operation is {"op":"add","text":...}, {"op":"modify","id":N,"text":...} or {"op":"delete","id":N}. ' +
        'Do not mention this specific task\'s answer; at most 3 operations.',
    },
    {
      role: 'user',
      content: `Task:\n${taskText.slice(0, 1200)}\n\n${rollouts}\n\nCurrent experiences:\n${lib.length ? lib.map((e) => `[${e.id}] ${e.text}`).join('\n') : '(none)'}`,
    },
  ];
}

export interface TrainingFreeOptions<T extends TaskBase> {
  env: Environment<T>;
  tasks: readonly T[];
  heldOut?: readonly T[];
  model: LlamaModel;
  tokenizer: Tokenizer;
  engine?: RolloutEngine;
  llm: LlmClient;
  cfg: TrainConfig;
  rewards: readonly RewardSpec[];
  outDir: string;
  /** Continue from <outDir>/state.json and experiences.json. */
  resume?: boolean;
  /** How the task reads in the distillation prompt (default: the opening user turn of an episode). */
  describe?: (task: T) => Promise<string>;
  maxExperiences?: number;
  /** Called after each step with its metrics line and its scored groups (trajectories include the prompts used). */
  onStep?: (rec: TrainingFreeStep, groups: readonly Scored[][]) => void;
  signal?: AbortSignal;
}

export interface TrainingFreeStep {
  step: number;
  reward: number;
  accuracy: number;
  groups: number;
  /** Groups with differing rewards, sent to the LLM. */
  distilled: number;
  /** LLM calls that failed (the step goes on without their edits). */
  llm_failures: number;
  ops_applied: number;
  ops_ignored: number;
  library_size: number;
  time_s: number;
}

const stateSchema = z.object({ step: z.number().int().min(0), pos: z.number().int().min(0), rngState: z.number().int() });

/** The Training-Free GRPO loop: no gradient, the experience library is what learns. */
export async function runTrainingFreeGrpo<T extends TaskBase>(o: TrainingFreeOptions<T>): Promise<{ steps: number; library: Experience[]; finalEval?: PolicyEval; interrupted: boolean }> {
  if (o.tasks.length === 0) throw new AgroError('invalid_input', 'train: no training tasks');
  mkdirSync(o.outDir, { recursive: true });
  const libPath = join(o.outDir, 'experiences.json');
  const statePath = join(o.outDir, 'state.json');
  const metricsPath = join(o.outDir, 'metrics.jsonl');
  let library: Experience[] = [];
  let state = { step: 0, pos: 0, rngState: new Rng(o.cfg.seed).state };
  if (o.resume && existsSync(statePath)) {
    state = stateSchema.parse(JSON.parse(readFileSync(statePath, 'utf8')));
    library = z.array(z.object({ id: z.number().int(), text: z.string() })).parse(JSON.parse(readFileSync(libPath, 'utf8')));
    const kept = existsSync(metricsPath) ? readFileSync(metricsPath, 'utf8').split('\n').filter(Boolean).slice(0, state.step) : [];
    writeFileSync(metricsPath, kept.map((l) => l + '\n').join(''));
  } else if (existsSync(metricsPath)) writeFileSync(metricsPath, '');
  const rng = Rng.fromState(state.rngState);
  const order = rng.shuffle(o.tasks.map((_, i) => i));
  const env = withPromptPrefix(o.env, () => renderExperiences(library));
  const rewards = prepareRewards(o.rewards);
  const describe = o.describe ?? (async (task: T) => (await o.env.start(task)).opening.filter((m) => m.role === 'user').map((m) => m.content).join('\n'));
  let interrupted = false;

  while (state.step < o.cfg.steps) {
    if (o.signal?.aborted) {
      interrupted = true;
      break;
    }
    const t0 = performance.now();
    const tasks = Array.from({ length: o.cfg.promptsPerStep }, () => o.tasks[order[state.pos++ % order.length]]);
    const trajs = await collect({ env, model: o.model, tokenizer: o.tokenizer, cfg: o.cfg, engine: o.engine }, tasks, (o.cfg.seed * 7919 + state.step * 104729) >>> 0);
    const groups = await score({ env, rewards }, tasks, trajs);
    const mixed = groups.map((g, i) => ({ g, i })).filter(({ g }) => g.some((s) => s.score.total !== g[0].score.total));
    let failures = 0;
    let applied = 0;
    let ignored = 0;
    // One LLM call per group, all against the library as it was at the start of the step; edits merge in group order.
    const replies = await Promise.all(
      mixed.map(async ({ g, i }) => {
        try {
          return await o.llm.chatJson(distillMessages(await describe(tasks[i]), g, library), experienceReplySchema, { temperature: 0.3 });
        } catch (err) {
          if (!(err instanceof AgroError)) throw err;
          failures++;
          return { operations: [] };
        }
      }),
    );
    for (const r of replies) {
      const res = applyExperienceOps(library, r.operations, o.maxExperiences ?? 12);
      applied += r.operations.length - res.ignored;
      ignored += res.ignored;
      library = res.library;
    }
    state.step++;
    const flat = groups.flat();
    const rec: TrainingFreeStep = {
      step: state.step,
      reward: flat.reduce((a, s) => a + s.score.total, 0) / flat.length,
      accuracy: flat.filter((s) => s.ctx.correct).length / flat.length,
      groups: groups.length,
      distilled: mixed.length,
      llm_failures: failures,
      ops_applied: applied,
      ops_ignored: ignored,
      library_size: library.length,
      time_s: Math.round((performance.now() - t0) / 10) / 100,
    };
    writeJsonAtomic(libPath, library);
    writeJsonAtomic(statePath, state);
    appendFileSync(metricsPath, JSON.stringify(rec) + '\n');
    o.onStep?.(rec, groups);
  }
  let finalEval: PolicyEval | undefined;
  if (!interrupted && o.heldOut?.length) {
    finalEval = await evaluatePolicy(env, o.heldOut, o.model, o.tokenizer, { maxTurnTokens: o.cfg.maxTurnTokens, maxResponseTokens: o.cfg.maxResponseTokens, seed: o.cfg.seed, engine: o.engine });
    writeJsonAtomic(join(o.outDir, 'eval.json'), { ...finalEval, experiences: library });
  }
  return { steps: state.step, library, finalEval, interrupted };
}
