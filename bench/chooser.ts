// `npm run bench -- chooser [--dbs music_store,retail,school] [--pairs 2400] [--rl 120] [--held 80] [--sft 40] [--steps 20] [--group 4] [--prompts 4] [--lr 1e-4] [--order shuffled|ranker] [--entropy 0.01] [--kl 0.01] [--seed 0] [--out runs/bench-chooser]`
// The RL chooser of issue #56 beside the answer path's ranker and the learned judge, on the same candidate lists:
//   1. each bundled database's factory pairs (`agro synth`'s recipe) split as the quickstart splits them (by SQL
//      skeleton: SFT, RL, held out); the answer path's memory is the SFT pairs only, so no question asked is in it;
//   2. each RL and held-out question (first phrasing; --rl / --held at most per database, seeded) through the answer
//      path with no policy (memory neighbours, edits, question-time synthesis); its best result groups, one candidate
//      each (src/rl/chooser/tasks.ts), labelled by execution against the pair's gold;
//   3. the built-in base model answers SQL, never a number: a format cold start (--sft SFT steps on the RL lists, each
//      answered with a random candidate's number, no label read), then GRPO (runGrpo, the grpo preset: execution +
//      0.1 format, KL to the cold-started policy) on the RL lists that are informative (some shown candidate right,
//      some wrong), --steps steps; the training lists are shown in a seeded random order per list (--order shuffled,
//      the default; --order ranker keeps the ranker's, where "always 1" pays and GRPO's groups collapsed to it), with
//      an entropy bonus (--entropy) and KL to the cold start (--kl) against the collapse;
//   4. on the held-out lists: the oracle (some candidate right: of those shown, of the whole list), the ranker's choice
//      (the first shown), the built-in judge's, and the chooser's greedy choice (base model, cold start, after GRPO); also on the
//      informative held-out lists alone, where a choice can matter. Writes summary.json.
// Every figure is this machine's; nothing of the open human sets is read.
import { mkdirSync, existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { runFactory } from '../src/factory/pipeline.ts';
import { quickstartConfigSchema, quickstartSplit } from '../src/pipeline/quickstart.ts';
import { MEMORY_RECIPE } from '../src/factory/memory-recipe.ts';
import { buildMemory } from '../src/memory/build.ts';
import { MEMORY_STORE, pairsOfDataset } from '../src/memory/entry.ts';
import { writeMemory } from '../src/memory/store.ts';
import { Answerer } from '../src/answer/resources.ts';
import { loadJudge } from '../src/judge/load.ts';
import { createExecutor, introspectDatabase } from '../src/sql/executor.ts';
import { ChooserEnvironment } from '../src/rl/chooser/env.ts';
import { formatColdStart, informative, labelledTask, shuffledTask, type LabelledTask } from '../src/rl/chooser/tasks.ts';
import { anchorSamples } from '../src/rl/anchor.ts';
import { runSft } from '../src/train/sft.ts';
import { greedyEpisodes } from '../src/rl/evaluate.ts';
import { runGrpo } from '../src/rl/trainer.ts';
import { initBackend } from '../src/model/backend.ts';
import { loadCheckpoint } from '../src/model/checkpoint.ts';
import { builtinModelDir } from '../src/model/builtin.ts';
import type { LlamaModel } from '../src/model/llama.ts';
import type { Tokenizer } from '../src/model/tokenizer.ts';
import { Rng } from '../src/util/rng.ts';
import { writeJsonAtomic } from '../src/util/fs.ts';
import { flag, num } from './_args.ts';
import { table } from './rl.ts';

/** The chooser answers in one short turn: a number after a think block. */
const TURN_TOKENS = 48;

const pct = (k: number, n: number): string => (n ? `${((100 * k) / n).toFixed(1)}%` : '-');

interface ChoiceEval {
  correct: number;
  malformed: number;
  /** How often it chose each shown position (1-based). */
  positions: Record<string, number>;
  byTask: Map<string, boolean>;
}

async function greedyChoices(env: ChooserEnvironment, lists: readonly LabelledTask[], model: LlamaModel, tokenizer: Tokenizer, seed: number): Promise<ChoiceEval> {
  const eps = await greedyEpisodes(env, lists.map((l) => l.task), model, tokenizer, { maxTurnTokens: TURN_TOKENS, maxResponseTokens: TURN_TOKENS, seed });
  const out: ChoiceEval = { correct: 0, malformed: 0, positions: {}, byTask: new Map() };
  for (const e of eps) {
    const k = env.choiceOf(e.task, e.traj);
    if (k === null) out.malformed++;
    else out.positions[k + 1] = (out.positions[k + 1] ?? 0) + 1;
    if (e.ctx.correct) out.correct++;
    out.byTask.set(e.task.id, e.ctx.correct);
  }
  return out;
}

export async function run(args: string[]): Promise<void> {
  const dbs = flag(args, '--dbs', 'music_store,retail,school').split(',').filter(Boolean);
  const pairs = num(args, '--pairs', MEMORY_RECIPE.pairs);
  const rlMax = num(args, '--rl', 120);
  const heldMax = num(args, '--held', 80);
  const steps = num(args, '--steps', 20);
  const seed = num(args, '--seed', 0);
  const order = flag(args, '--order', 'shuffled');
  const entropyCoef = num(args, '--entropy', 0.01);
  const klCoef = num(args, '--kl', 0.01);
  if (order !== 'shuffled' && order !== 'ranker') throw new Error(`--order is shuffled or ranker, not ${order}`);
  const out = resolve(flag(args, '--out', 'runs/bench-chooser'));
  mkdirSync(out, { recursive: true });
  const qs = quickstartConfigSchema.parse({ seed });
  const executor = createExecutor({ size: 2 });
  const env = new ChooserEnvironment(executor);
  const judge = loadJudge(undefined, (line) => console.log(line));
  const t0 = performance.now();
  const rl: LabelledTask[] = [];
  const held: LabelledTask[] = [];
  const perDb: string[][] = [['database', 'pairs', 'RL asked', 'RL informative', 'held out asked', 'held-out informative', 'seconds']];
  try {
    for (const dbId of dbs) {
      const d0 = performance.now();
      const db = resolve('data/databases', dbId, `${dbId}.sqlite`);
      const work = join(out, dbId);
      const factory = await runFactory({ db, out: join(work, 'synth'), n: pairs, seed, variants: MEMORY_RECIPE.variants, phrasings: MEMORY_RECIPE.phrasings }, { executor });
      const rows = factory.rows.filter((r) => !r.previous?.length);
      const split = quickstartSplit(rows, qs);
      const memoryPath = join(work, MEMORY_STORE);
      if (!existsSync(memoryPath)) writeMemory(memoryPath, await buildMemory(dbId, await introspectDatabase(db), pairsOfDataset(split.sft.map((i) => rows[i]))));
      const answerer = new Answerer(executor, { memory: [memoryPath] });
      const rng = new Rng(seed ^ 0xc4005e);
      const ask = async (idx: number[], max: number, tag: string): Promise<LabelledTask[]> => {
        const lists: LabelledTask[] = [];
        for (const i of rng.shuffle([...idx]).slice(0, max)) {
          const r = rows[i];
          const a = await answerer.answer(db, dbId, r.question, []);
          const l = await labelledTask(env, { id: `${dbId}/${tag}/${i}`, dbId, dbPath: db, question: r.question, goldSql: r.SQL, ...(r.difficulty ? { difficulty: r.difficulty } : {}) }, a, { ...(judge ? { judge } : {}) });
          if (l) lists.push(l);
        }
        return lists;
      };
      const r = await ask(split.rl, rlMax, 'rl');
      const h = await ask(split.heldOut, heldMax, 'held');
      rl.push(...r);
      held.push(...h);
      perDb.push([dbId, String(rows.length), String(r.length), String(informative(r).length), String(h.length), String(informative(h).length), ((performance.now() - d0) / 1000).toFixed(0)]);
    }
    table(perDb);
    // Training only: held-out lists stay in the ranker's order, the order the answer path would show them in, so the
    // ranker's figure is "choose 1" there. Shuffled, a position in training carries no label.
    const orderRng = new Rng(seed ^ 0x5f1e);
    const shown = (l: LabelledTask): LabelledTask => (order === 'shuffled' ? shuffledTask(l, orderRng) : l);
    const rlShown = rl.map(shown);
    const train = informative(rlShown);
    console.log(`\nRL lists: ${rl.length} answered, ${train.length} informative (some shown candidate right, some wrong) train; held out: ${held.length} (${informative(held).length} informative); ${((performance.now() - t0) / 1000).toFixed(0)} s to build`);
    if (train.length === 0) throw new Error('no informative RL list: nothing for GRPO to learn from');

    await initBackend();
    const base = loadCheckpoint(builtinModelDir('base'));
    const before = await greedyChoices(env, held, base.model, base.tokenizer, seed);
    // The base model answers SQL, never a number: a short cold start on the answer's form (random numbers, no labels).
    const s0 = performance.now();
    const cold = anchorSamples(await formatColdStart(env, rlShown.map((l) => l.task), new Rng(seed ^ 0xf0)), base.tokenizer, base.model.config.maxPositions, 'chooser cold start');
    const longest = Math.max(...cold.map((c) => c.ids.length));
    const sft = await runSft({ outDir: join(out, 'sft'), model: base.model, tokenizer: base.tokenizer, samples: cold, config: { steps: num(args, '--sft', 40), batchSize: 8, maxBatchTokens: 4096, lr: 1e-3, checkpointEvery: 0, evalEvery: 0, seed } });
    const sftSeconds = (performance.now() - s0) / 1000;
    const formatted = await greedyChoices(env, held, base.model, base.tokenizer, seed);
    // GRPO's KL reference is where it starts: the cold-started policy.
    const reference = loadCheckpoint(sft.checkpoint).model;
    const r0 = performance.now();
    const res = await runGrpo({
      outDir: join(out, 'grpo'),
      env,
      tasks: train.map((l) => l.task),
      model: base.model,
      tokenizer: base.tokenizer,
      reference,
      config: { algo: 'grpo', steps, promptsPerStep: num(args, '--prompts', 4), groupSize: num(args, '--group', 4), lr: num(args, '--lr', 1e-4), algoOverrides: { entropyCoef, kl: { coef: klCoef } }, maxTurnTokens: TURN_TOKENS, maxResponseTokens: TURN_TOKENS, maxBatchTokens: 4096, checkpointEvery: 0, seed },
      onStep: (s) => console.log(`grpo step ${s.step}: reward ${s.reward.toFixed(3)} (execution ${(s.rewards.execution ?? 0).toFixed(2)}, format ${(s.rewards.format ?? 0).toFixed(2)}), zero-signal groups ${(s.zero_signal * 100).toFixed(0)}%, ${s.response_tokens.toFixed(0)} tokens`),
    });
    const rlSeconds = (performance.now() - r0) / 1000;
    const after = await greedyChoices(env, held, base.model, base.tokenizer, seed);

    const rows = (subset: readonly LabelledTask[], label: string): string[][] => {
      const n = subset.length;
      const count = (f: (l: LabelledTask) => boolean): number => subset.filter(f).length;
      return [
        [label, 'oracle (shown)', pct(count((l) => l.right.some(Boolean)), n)],
        [label, 'oracle (whole list)', pct(count((l) => l.anyRight), n)],
        [label, 'ranker (first shown)', pct(count((l) => l.right[0]), n)],
        [label, 'judge (built-in)', judge ? pct(count((l) => l.right[l.judge ?? 0]), n) : '-'],
        [label, 'chooser, base model', pct(count((l) => before.byTask.get(l.task.id) === true), n)],
        [label, 'chooser, format cold start', pct(count((l) => formatted.byTask.get(l.task.id) === true), n)],
        [label, `RL chooser, after ${res.steps} GRPO steps`, pct(count((l) => after.byTask.get(l.task.id) === true), n)],
      ];
    };
    console.log(`\nheld-out lists (${held.length}; ${informative(held).length} informative), chosen EX:`);
    table([['lists', 'chooser', 'chosen EX'], ...rows(held, `all ${held.length}`), ...rows(informative(held), `informative ${informative(held).length}`)]);
    const shownPositions = (e: ChoiceEval): string => Object.entries(e.positions).map(([k, v]) => `${k}: ${v}`).join(', ') || 'none';
    console.log(`chooser's choices by position: base ${shownPositions(before)}, malformed ${before.malformed}; cold start ${shownPositions(formatted)}, malformed ${formatted.malformed}; after GRPO ${shownPositions(after)}, malformed ${after.malformed}`);
    console.log(`cold start: ${cold.length} samples (longest ${longest} tokens), ${sft.steps} steps in ${sftSeconds.toFixed(0)} s; GRPO: ${res.steps} steps in ${rlSeconds.toFixed(0)} s; load ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    writeJsonAtomic(join(out, 'summary.json'), {
      dbs,
      pairs,
      order,
      entropy: entropyCoef,
      kl: klCoef,
      seed,
      steps: res.steps,
      rl: { answered: rl.length, informative: train.length },
      held: { answered: held.length, informative: informative(held).length },
      before: { correct: before.correct, malformed: before.malformed, positions: before.positions },
      coldStart: { samples: cold.length, steps: sft.steps, seconds: sftSeconds, correct: formatted.correct, malformed: formatted.malformed, positions: formatted.positions },
      after: { correct: after.correct, malformed: after.malformed, positions: after.positions },
      oracleShown: held.filter((l) => l.right.some(Boolean)).length,
      oracleAll: held.filter((l) => l.anyRight).length,
      ranker: held.filter((l) => l.right[0]).length,
      judge: judge ? held.filter((l) => l.right[l.judge ?? 0]).length : null,
      rlSeconds,
    });
    base.model.dispose();
    reference.dispose();
  } finally {
    await executor.close();
  }
}
