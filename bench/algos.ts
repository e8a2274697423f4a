// `npm run bench -- algos [--quick] [--from RUN] [--seeds 3] [--first-seed 0] [--algos a,b,...] [--steps N]
//                          [--prompts N] [--group 4] [--held-out N] [--lr X] [--ppo-epochs 1] [--rewards partial|preset] [--results FILE]`
// Every preset of the GRPO family (src/rl/algo-config.ts PRESETS) on the same data, seeds and compute, in one table:
// held-out execution accuracy (mean ± sample sd and min..max over seeds), zero-signal groups per step, KL to the
// SFT start, entropy, wall time. Every preset starts from the SAME SFT checkpoint with the same steps × prompts ×
// group size, the SFT model as the KL reference (presets with a KL coefficient use it; the others only measure it).
// Two sources for that checkpoint:
// - `--from RUN`: a finished quickstart run (report.json, sft/, rl.jsonl, held_out.jsonl). RL trains on the run's
//   RL questions (skeletons SFT never saw), EX is measured on the first --held-out of its held-out questions, and
//   every preset keeps its own rewards and settings: the table a researcher choosing a recipe wants. The seeds are
//   RL seeds over the one cold start, so the spread is RL's own.
// - otherwise, per seed, a small cold start built here (diversity-selected trajectories, new tokenizer, tiny model,
//   SFT): a budget that runs in minutes and mostly shows the harness works; the policy is too weak for the
//   execution reward, so the presets share partial-credit rewards (format fraction, SQL overlap) by default.
// `--results FILE` appends one JSON line per (preset, seed) and skips the pairs already there, so a long table
// resumes after a stop and seeds can run as separate processes (`--first-seed S --seeds 1`) into one file.
// training_free_grpo needs an LLM endpoint and egrpo search-agent signals (`bench -- search`): not in this table.
// `--quick`: one seed, a few presets (one per kind of trainer hook), a tiny cold start: about a minute.
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { runFactory } from '../src/factory/pipeline.ts';
import { SqlPool } from '../src/sql/pool.ts';
import { SqlEnvironment, type SqlTask } from '../src/agent/sql-env.ts';
import { checkpointPrompt, readPromptContract, turnTokens } from '../src/prompt/contract.ts';
import { RESPONSE_TOKENS } from '../src/rl/train-config.ts';
import { sqlTaskOf } from '../src/agent/tasks.ts';
import { readDataset } from '../src/data/read-dataset.ts';
import { synthesizeTrajectories } from '../src/agent/cold-start/trajectories.ts';
import { AGENT_SPECIAL_TOKENS } from '../src/agent/protocol.ts';
import { selectColdStart } from '../src/train/coldstart.ts';
import { runSft } from '../src/train/sft.ts';
import { runGrpo } from '../src/rl/trainer.ts';
import { PRESET_NAMES } from '../src/rl/algo-config.ts';
import { std } from '../src/rl/advantages.ts';
import type { StepRecord } from '../src/rl/phases.ts';
import { initBackend } from '../src/model/backend.ts';
import { Tokenizer } from '../src/model/tokenizer.ts';
import { LlamaModel } from '../src/model/llama.ts';
import { resolveModelConfig } from '../src/model/config.ts';
import { renderChat } from '../src/model/chat.ts';
import { loadCheckpoint } from '../src/model/checkpoint.ts';
import { suiteVariants } from '../src/data/databases.ts';
import { Rng } from '../src/util/rng.ts';
import { flag, num } from './_args.ts';
import { episodeStats, greedyEpisodes, mean, pct, secs, spread, table } from './rl.ts';

/** One preset (or the SFT start) on one seed. */
interface Result {
  algo: string;
  seed: number;
  acc: number;
  zero?: number;
  groups?: number;
  kl?: number;
  entropy?: number;
  wall: number;
  skipped?: number;
  failed?: string;
}

/** Where the presets start from, for one seed. */
interface Start {
  checkpoint: string;
  sftAcc: number;
  sftWall: number;
}

interface Setup {
  label: string;
  env: SqlEnvironment;
  train: SqlTask[];
  heldOut: SqlTask[];
  evalOpts: { maxTurnTokens: number; maxResponseTokens: number };
  start: (seed: number) => Promise<Start>;
}

export async function run(args: string[]): Promise<void> {
  const quick = args.includes('--quick');
  const from = flag(args, '--from', '');
  const seeds = num(args, '--seeds', quick ? 1 : 3);
  const firstSeed = num(args, '--first-seed', 0);
  const every = PRESET_NAMES.filter((n) => n !== 'egrpo').join(',');
  const algos = flag(args, '--algos', quick ? 'grpo,remax,reinforce_pp_kl,salt,dppo,mmr1,dagrpo' : every).split(',').filter(Boolean);
  // A weak policy almost never executes to the right result, so under the execution reward alone every group
  // would be zero-signal; partial credit (format fraction, SQL overlap F1) gives the groups spread. Presets whose
  // point is their own reward list (otc, gdpo) keep it. From a quickstart run each preset keeps its own rewards.
  const partial = flag(args, '--rewards', from ? 'preset' : 'partial') === 'partial';
  const sharedRewards = [
    { name: 'execution', weight: 1 },
    { name: 'format', weight: 0.2, params: { partial: true } },
    { name: 'sql_overlap', weight: 0.5 },
  ];
  const ownRewards = new Set(['otc', 'gdpo']);
  const steps = num(args, '--steps', quick ? 1 : from ? 30 : 2);
  const prompts = num(args, '--prompts', from ? 4 : 2);
  const group = num(args, '--group', 4);
  const rlLr = num(args, '--lr', from ? 3e-4 : 1e-3);
  // One update per batch (TRL's num_iterations 1) makes every ratio 1: the clipped and ratio-shaped losses
  // then give REINFORCE's gradient and differ only by aggregation. More epochs let the clipping act.
  const ppoEpochs = num(args, '--ppo-epochs', 1);
  const resultsFile = flag(args, '--results', '');

  const backend = await initBackend();
  const work = mkdtempSync(join(tmpdir(), 'agro-bench-algos-'));
  const pool = new SqlPool();
  try {
    const setup = from ? fromRun(resolve(from), pool, num(args, '--held-out', 120)) : await builtHere(args, quick, pool, work);
    console.log(`${setup.label}; tiny model on ${backend}; seeds ${firstSeed}..${firstSeed + seeds - 1}; every preset: ${steps} steps × ${prompts} prompts × ${group} rollouts, ${ppoEpochs} update(s) per batch, lr ${rlLr}; rewards: ${partial ? 'execution + 0.2·format(partial) + 0.5·sql_overlap (otc, gdpo: their own)' : "each preset's own"}`);
    console.log(`RL questions ${setup.train.length}, held out ${setup.heldOut.length}`);

    const done: Result[] = resultsFile && existsSync(resultsFile)
      ? readFileSync(resultsFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Result) : [];
    const have = (algo: string, seed: number): boolean => done.some((r) => r.algo === algo && r.seed === seed);
    const record = (r: Result): void => {
      done.push(r);
      if (resultsFile) {
        mkdirSync(dirname(resolve(resultsFile)), { recursive: true });
        appendFileSync(resultsFile, JSON.stringify(r) + '\n');
      }
    };
    for (let seed = firstSeed; seed < firstSeed + seeds; seed++) {
      if (algos.every((a) => have(a, seed)) && have('sft', seed)) continue;
      const start = await setup.start(seed);
      if (!have('sft', seed)) record({ algo: 'sft', seed, acc: start.sftAcc, wall: start.sftWall });
      console.log(`seed ${seed}: SFT start held-out ${pct(start.sftAcc)}%`);
      for (const algo of algos) {
        if (have(algo, seed)) continue;
        const ck = loadCheckpoint(start.checkpoint);
        const ref = loadCheckpoint(start.checkpoint).model;
        const recs: StepRecord[] = [];
        const t0 = performance.now();
        try {
          await runGrpo({
            outDir: join(work, `${algo}-${seed}`), env: setup.env, tasks: setup.train, model: ck.model, tokenizer: ck.tokenizer, reference: ref,
            config: { algo, ...(partial && !ownRewards.has(algo) ? { algoOverrides: { rewards: sharedRewards } } : {}), steps, promptsPerStep: prompts, groupSize: group, lr: rlLr, ppoEpochs, ...setup.evalOpts, checkpointEvery: 0, seed },
            onStep: (r) => recs.push(r),
          });
          const wall = secs(t0);
          const tEval = performance.now();
          const acc = episodeStats(await greedyEpisodes(setup.env, setup.heldOut, ck.model, ck.tokenizer, setup.evalOpts)).accuracy;
          record({
            algo, seed, acc, wall, zero: mean(recs.map((x) => x.zero_signal)), groups: mean(recs.map((x) => x.groups)),
            kl: mean(recs.map((x) => x.kl)), entropy: mean(recs.map((x) => x.entropy)), skipped: recs.filter((x) => x.skipped).length,
          });
          console.log(`  ${algo.padEnd(22)} acc ${pct(acc)}%  reward ${mean(recs.map((x) => x.reward)).toFixed(2)}  zero-signal ${pct(mean(recs.map((x) => x.zero_signal)))}%  (RL ${wall.toFixed(0)}s, eval ${secs(tEval).toFixed(0)}s)`);
        } catch (err) {
          const failed = (err as Error).message.split('\n')[0];
          record({ algo, seed, acc: NaN, wall: secs(t0), failed });
          console.log(`  ${algo.padEnd(22)} FAILED: ${failed}`);
        } finally {
          ck.model.dispose();
          ref.dispose();
        }
      }
    }
    printTable(done, ['sft', ...algos], setup.heldOut.length);
  } finally {
    await pool.close();
    rmSync(work, { recursive: true, force: true });
  }
}

/** The table over every seed in `results` (this process's and any earlier run's in the same results file). */
function printTable(results: readonly Result[], algos: readonly string[], heldOut: number): void {
  const by = (a: string): Result[] => results.filter((r) => r.algo === a);
  const sft = by('sft');
  const sftMean = mean(sft.map((r) => r.acc));
  const seedsSeen = new Set(results.map((r) => r.seed)).size;
  console.log(`\nheld-out execution accuracy over ${seedsSeen} seed(s), ${heldOut} questions; per step: share of sampled groups with no reward spread, KL to the SFT start, entropy; wall time of the RL run`);
  table([
    ['preset', 'seeds', 'EX mean % ± sd', 'min..max', 'Δ vs SFT', 'zero-signal', 'KL', 'entropy', 'wall s', 'skipped'],
    ...algos.filter((a) => by(a).length).map((a) => {
      const rs = by(a);
      const failed = rs.find((r) => r.failed);
      if (failed) return [a, String(rs.length), 'failed', failed.failed!.slice(0, 40), '', '', '', '', '', ''];
      const acc = rs.map((r) => r.acc);
      const m = (k: 'zero' | 'kl' | 'entropy'): number => mean(rs.map((r) => r[k] ?? 0));
      const isSft = a === 'sft';
      return [a, String(rs.length), `${pct(mean(acc))} ± ${acc.length > 1 ? pct(std(acc, 'sample')) : '-'}`, spread(acc),
        isSft ? '-' : `${mean(acc) >= sftMean ? '+' : ''}${pct(mean(acc) - sftMean)}`,
        isSft ? '-' : `${pct(m('zero'))}%`, isSft ? '-' : m('kl').toExponential(1), isSft ? '-' : m('entropy').toFixed(2),
        mean(rs.map((r) => r.wall)).toFixed(1), isSft ? '-' : String(rs.reduce((n, r) => n + (r.skipped ?? 0), 0))];
    }),
  ]);
}

/** A finished quickstart run: its SFT checkpoint, its RL questions and its held-out questions, as the quickstart set them up. */
function fromRun(run: string, pool: SqlPool, heldOutN: number): Setup {
  const reportPath = join(run, 'report.json');
  if (!existsSync(reportPath)) throw new Error(`bench: ${run} is not a quickstart run (no report.json)`);
  const report = JSON.parse(readFileSync(reportPath, 'utf8')) as {
    config: { db: string };
    synth?: { variants: number };
    sft?: { checkpoint: string; eval: { accuracy: number } };
  };
  if (!report.sft) throw new Error(`bench: ${run} has not finished its SFT stage`);
  // The report holds the absolute path of the machine that ran it; the run folder may have moved since.
  const checkpoint = existsSync(report.sft.checkpoint) ? report.sft.checkpoint : join(run, 'sft', 'checkpoints', basename(report.sft.checkpoint));
  const db = resolve(report.config.db);
  const variants = join(run, 'synth', 'variants');
  const tasks = (file: string): SqlTask[] =>
    readDataset(join(run, file)).items.map((it) => sqlTaskOf(it, db, (report.synth?.variants ?? 0) > 0 ? suiteVariants(variants, it.dbId, db) : []));
  // The prompt and tokens per turn the checkpoint was trained with (its contract), as the quickstart evaluates it.
  const env = new SqlEnvironment(pool, checkpointPrompt(checkpoint));
  const heldOut = tasks('held_out.jsonl').slice(0, heldOutN);
  const evalOpts = { maxTurnTokens: turnTokens(readPromptContract(checkpoint), undefined).maxTurnTokens, maxResponseTokens: RESPONSE_TOKENS };
  let sft: Promise<number> | undefined;
  return {
    label: `from ${run} (${basename(db)}, SFT checkpoint ${basename(checkpoint)})`,
    env,
    train: tasks('rl.jsonl'),
    heldOut,
    evalOpts,
    start: async () => {
      const t0 = performance.now();
      // Greedy decoding of one checkpoint gives the same answers every time: evaluated once, shared by the seeds.
      sft ??= (async () => {
        const ck = loadCheckpoint(checkpoint);
        try {
          return episodeStats(await greedyEpisodes(env, heldOut, ck.model, ck.tokenizer, evalOpts)).accuracy;
        } finally {
          ck.model.dispose();
        }
      })();
      return { checkpoint, sftAcc: await sft, sftWall: secs(t0) };
    },
  };
}

/** Per seed, a small cold start built here from a cached factory run. */
async function builtHere(args: string[], quick: boolean, pool: SqlPool, work: string): Promise<Setup> {
  const db = resolve(flag(args, '--db', 'data/databases/music_store/music_store.sqlite'));
  const pairs = num(args, '--pairs', quick ? 24 : 40);
  const heldOutN = num(args, '--held-out', quick ? 4 : 8);
  const coldStart = num(args, '--cold-start', quick ? 12 : 24);
  const sftSteps = num(args, '--sft-steps', quick ? 20 : 40);
  const evalOpts = { maxTurnTokens: 64, maxResponseTokens: 192 };
  const env = new SqlEnvironment(pool, { schemaChars: 500 });
  const synthDir = join(resolve('runs/bench-rl'), `synth-${pairs}`);
  if (!existsSync(join(synthDir, 'dataset.jsonl'))) await runFactory({ db, out: synthDir, n: pairs, seed: 0, variants: 1 }, { executor: pool });
  const tasks = readDataset(join(synthDir, 'dataset.jsonl')).items.map((it) => sqlTaskOf(it, db, suiteVariants(join(synthDir, 'variants'), it.dbId, db)));
  const order = new Rng(0x5eed).shuffle(tasks.map((_, i) => i));
  const nHeld = Math.min(heldOutN, Math.floor(tasks.length / 3));
  const heldOut = order.slice(0, nHeld).map((i) => tasks[i]);
  const train = order.slice(nHeld).map((i) => tasks[i]);
  return {
    label: `database ${db}, ${tasks.length} verified pairs (cached in ${synthDir}), per seed a cold start of ${coldStart} trajectories and ${sftSteps} SFT steps`,
    env,
    train,
    heldOut,
    evalOpts,
    start: async (seed) => {
      const t0 = performance.now();
      const trajs = await synthesizeTrajectories(train, env, { verifyShare: 0.5, seed });
      const ids = new Set(selectColdStart(trajs, Math.min(coldStart, trajs.length), { seed, sqlWeight: 0.8 }));
      const chosen = trajs.filter((t) => ids.has(t.id));
      const tk = Tokenizer.train(chosen.flatMap((t) => t.messages.map((m) => m.content)), { vocabSize: 800, specialTokens: [...AGENT_SPECIAL_TOKENS] });
      const model = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: tk.vocabSize }), { seed });
      try {
        const sft = await runSft({
          outDir: join(work, `sft-${seed}`), model, tokenizer: tk, samples: chosen.map((t) => renderChat(tk, t.messages)),
          config: { steps: sftSteps, batchSize: 4, lr: 1e-2, warmupSteps: 1, evalEvery: 0, checkpointEvery: 0, maxSeqLen: model.config.maxPositions, seed },
        });
        const sftAcc = episodeStats(await greedyEpisodes(env, heldOut, model, tk, evalOpts)).accuracy;
        return { checkpoint: sft.checkpoint, sftAcc, sftWall: secs(t0) };
      } finally {
        model.dispose();
      }
    },
  };
}
