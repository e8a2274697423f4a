// `npm run bench -- rl [--quick] [--seeds 3] [--steps N] [--lr X] [--min-lr-ratio R] [--algos grpo,dr_grpo,dapo,egrpo_sql] [--pool active|filtered|all] [--no-filter] [--dbs music_store,spider:chinook_1,kaggle:GeoNuclearData] ...` (defaults: the quickstart's)
// Does RL beat its SFT starting point on questions it has not seen? Per database: one data factory run,
// split by SQL skeleton into disjoint SFT, RL and held-out sets (no held-out skeleton is ever trained on).
// Per seed: one cold start (diversity-selected trajectories, new tokenizer, tiny model, SFT) on the SFT set;
// headroom (pass@k of the SFT policy); the RL questions the SFT policy sometimes gets right (0 < pass rate
// < 1); then every algorithm from that SAME checkpoint with the same steps × prompts × group size and
// dynamic sampling, and an SFT-only baseline that spends the same wall time on more SFT steps. Each policy
// is evaluated greedily on the held-out set (and, for a KaggleDBQA database, on its human questions).
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runFactory } from '../src/factory/pipeline.ts';
import { SqlPool } from '../src/sql/pool.ts';
import { SqlEnvironment } from '../src/agent/sql-env.ts';
import { TURN_TOKENS } from '../src/prompt/contract.ts';
import { RESPONSE_TOKENS } from '../src/rl/train-config.ts';
import { synthesizeTrajectories } from '../src/agent/cold-start/trajectories.ts';
import { AGENT_SPECIAL_TOKENS } from '../src/agent/protocol.ts';
import type { Environment, TaskBase } from '../src/agent/types.ts';
import { loadSqlTasks, sqlTaskOf } from '../src/agent/tasks.ts';
import { selectColdStart } from '../src/train/coldstart.ts';
import { runSft } from '../src/train/sft.ts';
import { runGrpo } from '../src/rl/trainer.ts';
import { evaluatePolicy, greedyEpisodes as greedyRollouts, samplePassRates, type PolicyEval } from '../src/rl/evaluate.ts';
import type { StepRecord } from '../src/rl/phases.ts';
import type { TrainConfigInput } from '../src/rl/train-config.ts';
import type { Trajectory } from '../src/rl/rollout.ts';
import { initBackend } from '../src/model/backend.ts';
import { Tokenizer } from '../src/model/tokenizer.ts';
import { LlamaModel } from '../src/model/llama.ts';
import { resolveModelConfig } from '../src/model/config.ts';
import { renderChat } from '../src/model/chat.ts';
import { loadCheckpoint } from '../src/model/checkpoint.ts';
import { suiteVariants } from '../src/data/databases.ts';
import { readDataset } from '../src/data/read-dataset.ts';
import { splitBySkeleton } from '../src/data/splits.ts';
import { quickstartConfigSchema, rlAlgoOverrides, rlPoolPlan, startOf } from '../src/pipeline/quickstart.ts';
import { flag, num } from './_args.ts';

// ---------- helpers shared with bench/search.ts ----------

export const mean = (xs: readonly number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
export const pct = (x: number): string => `${(100 * x).toFixed(1)}`;
export const secs = (t0: number): number => (performance.now() - t0) / 1000;

let peakRss = 0;
export function samplePeak(): number {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
  return peakRss;
}

/** Prints rows as an aligned table (first row = header). */
export function table(rows: string[][]): void {
  const w = rows[0].map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  const line = (r: string[]): string => r.map((x, c) => (c === 0 ? x.padEnd(w[c]) : x.padStart(w[c]))).join('  ');
  console.log(line(rows[0]));
  console.log(w.map((n) => '-'.repeat(n)).join('  '));
  for (const r of rows.slice(1)) console.log(line(r));
}

export interface EpisodeStats {
  accuracy: number;
  n: number;
  toolCalls: number;
  toolUse: number;
  /** Episodes ending with an answer (not truncated, not invalid). */
  answered: number;
}

/** Greedy episodes (temperature 0, one per task), rl/evaluate.ts's, kept for inspection; memory sampled after each rollout. */
export async function greedyEpisodes<T extends TaskBase>(
  env: Environment<T>,
  tasks: readonly T[],
  model: LlamaModel,
  tokenizer: Tokenizer,
  opts: { maxTurnTokens: number; maxResponseTokens: number; batch?: number },
): Promise<{ task: T; traj: Trajectory; correct: boolean }[]> {
  return (await greedyRollouts(env, tasks, model, tokenizer, opts, samplePeak)).map((e) => ({ task: e.task, traj: e.traj, correct: e.ctx.correct }));
}

export function episodeStats(eps: readonly { traj: Trajectory; correct: boolean }[]): EpisodeStats {
  const n = eps.length;
  return {
    n,
    accuracy: mean(eps.map((e) => (e.correct ? 1 : 0))),
    toolCalls: mean(eps.map((e) => e.traj.toolCalls)),
    toolUse: mean(eps.map((e) => (e.traj.toolCalls > 0 ? 1 : 0))),
    answered: mean(eps.map((e) => (e.traj.endReason === 'answer' ? 1 : 0))),
  };
}

/** "min..max" of percentages. */
export function spread(xs: readonly number[]): string {
  return `${pct(Math.min(...xs))}..${pct(Math.max(...xs))}`;
}

// ---------- the SQL benchmark ----------

/** `music_store` (bundled), `spider:<db_id>` (../shared/data/spider-train), `kaggle:<db_id>` (../shared/data/kaggledbqa). */
function databaseOf(name: string): { path: string; human?: string } {
  const [kind, id] = name.includes(':') ? name.split(':') : ['bundled', name];
  if (kind === 'spider') return { path: resolve(`../shared/data/spider-train/database/${id}/${id}.sqlite`) };
  if (kind === 'kaggle') return { path: resolve(`../shared/data/kaggledbqa/database/${id}/${id}.sqlite`), human: resolve('../shared/data/kaggledbqa/questions.json') };
  return { path: resolve(name.includes('/') ? name : `data/databases/${id}/${id}.sqlite`) };
}

export async function run(args: string[]): Promise<void> {
  const quick = args.includes('--quick');
  const dbs = flag(args, '--dbs', 'music_store').split(',').filter(Boolean);
  const seeds = num(args, '--seeds', quick ? 1 : 3);
  const firstSeed = num(args, '--first-seed', 0);
  const algos = flag(args, '--algos', quick ? 'grpo' : 'grpo,dr_grpo,dapo,egrpo_sql').split(',').filter(Boolean);
  // Every default is the quickstart's (one home): the benchmark measures the recipe users run.
  const q = quickstartConfigSchema.parse({});
  // This benchmark trains from scratch (a tiny model per run): the quickstart's settings for that start.
  const scratch = startOf({ ...q, from: 'scratch' });
  const pairs = num(args, '--pairs', quick ? 60 : q.pairs);
  const heldOutShare = num(args, '--held-out-share', q.heldOutShare);
  const rlShare = num(args, '--rl-share', q.rlShare);
  const passK = num(args, '--pass-k', q.passSamples);
  const sftSteps = num(args, '--sft-steps', quick ? 20 : scratch.sftSteps);
  const sftBatch = num(args, '--sft-batch', q.sftBatch);
  const sftLr = num(args, '--sft-lr', scratch.sftLr);
  const steps = num(args, '--steps', quick ? 2 : scratch.rlSteps);
  const prompts = num(args, '--prompts', q.promptsPerStep);
  const group = num(args, '--group', q.groupSize);
  const rlLr = num(args, '--lr', scratch.rlLr);
  const minLrRatio = num(args, '--min-lr-ratio', q.rlMinLrRatio);
  const verifyShare = num(args, '--verify-share', q.verifyShare);
  const schemaChars = num(args, '--schema-chars', scratch.prompt.schemaChars!);
  const vocab = num(args, '--vocab', q.vocabSize);
  const poolArg = quickstartConfigSchema.shape.rlPool.safeParse(args.includes('--no-filter') ? 'all' : flag(args, '--pool', q.rlPool));
  if (!poolArg.success) throw new Error(`--pool: active, filtered or all, got ${flag(args, '--pool', '')}`);
  const rlPool = poolArg.data;
  const evalOpts = { maxTurnTokens: TURN_TOKENS, maxResponseTokens: RESPONSE_TOKENS };

  const backend = await initBackend();
  const work = mkdtempSync(join(tmpdir(), 'agro-bench-rl-'));
  const pool = new SqlPool();
  const env = new SqlEnvironment(pool, { schemaChars });
  const times: Record<string, number[]> = {};
  const time = (k: string, s: number): void => void (times[k] ??= []).push(s);
  const rows: string[][] = [['database', 'policy', 'held-out EX mean', 'min..max', 'Δ vs SFT', 'Δ per seed', 'pass@1', `pass@${passK}`, 'human EX', 'zero-signal', 'fixed/broke', 'runs']];
  try {
    console.log(`${dbs.join(', ')}; ${seeds} seed(s); tiny model on ${backend}; SFT ${sftSteps} steps; RL ${steps} steps × ${prompts} prompts × ${group} rollouts, lr ${rlLr}${minLrRatio < 1 ? ` (cosine to ×${minLrRatio})` : ''}, dynamic sampling, no KL`);
    for (const dbName of dbs) {
      const { path: db, human } = databaseOf(dbName);
      let t0 = performance.now();
      const synthDir = join(resolve('runs/bench-rl'), `${dbName.replace(/[:/]/g, '_')}-${pairs}`);
      if (!existsSync(join(synthDir, 'dataset.jsonl'))) await runFactory({ db, out: synthDir, n: pairs, seed: 0, variants: q.variants }, { executor: pool });
      time('synth', secs(t0));
      const items = readDataset(join(synthDir, 'dataset.jsonl')).items;
      const tasks = items.map((it) => sqlTaskOf(it, db, suiteVariants(join(synthDir, 'variants'), it.dbId, db)));
      const split = splitBySkeleton(tasks, (t) => t.goldSql, { sft: 1 - heldOutShare - rlShare, rl: rlShare, heldOut: heldOutShare }, 0x5eed);
      const humanTasks = human ? loadSqlTasks(human, resolve('../shared/data/kaggledbqa/database')).filter((t) => t.dbPath === db) : [];
      console.log(`\n${dbName}: ${tasks.length} verified pairs (${secs(t0).toFixed(0)}s, cached in ${synthDir}); SFT ${split.sft.length}, RL ${split.rl.length}, held out ${split.heldOut.length}${humanTasks.length ? `; ${humanTasks.length} human questions` : ''}`);

      const results: Record<string, { acc: number[]; pass1: number[]; passK: number[]; human: number[]; zero: number[]; fixed: number; broke: number }> = {};
      const names = ['sft', 'sft+', ...algos];
      for (const nm of names) results[nm] = { acc: [], pass1: [], passK: [], human: [], zero: [], fixed: 0, broke: 0 };
      const record = async (nm: string, model: LlamaModel, tk: Tokenizer): Promise<PolicyEval> => {
        const t = performance.now();
        const ev = await evaluatePolicy(env, split.heldOut, model, tk, evalOpts);
        const pr = await samplePassRates(env, split.heldOut, model, tk, { ...evalOpts, samples: passK, ks: [1, passK] });
        const hu = humanTasks.length ? (await evaluatePolicy(env, humanTasks, model, tk, evalOpts)).accuracy : NaN;
        time('eval', secs(t));
        samplePeak();
        const r = results[nm];
        r.acc.push(ev.accuracy);
        r.pass1.push(pr.passAt[1]);
        r.passK.push(pr.passAt[passK]);
        if (!Number.isNaN(hu)) r.human.push(hu);
        r.fixed += ev.toolEffect.fixed;
        r.broke += ev.toolEffect.broke;
        console.log(`  ${nm.padEnd(8)} held-out EX ${pct(ev.accuracy)}%, pass@1 ${pct(pr.passAt[1])}%, pass@${passK} ${pct(pr.passAt[passK])}%${Number.isNaN(hu) ? '' : `, human questions ${pct(hu)}%`}, tool calls ${ev.toolCalls.toFixed(2)}, ends ${JSON.stringify(ev.endReasons)}`);
        return ev;
      };

      for (let seed = firstSeed; seed < firstSeed + seeds; seed++) {
        console.log(` seed ${seed}:`);
        t0 = performance.now();
        const trajs = await synthesizeTrajectories(split.sft, env, { verifyShare, seed });
        const ids = new Set(selectColdStart(trajs, trajs.length, { seed, sqlWeight: 0.8 }));
        const chosen = trajs.filter((t) => ids.has(t.id));
        const tk = Tokenizer.train(chosen.flatMap((t) => t.messages.map((m) => m.content)), { vocabSize: vocab, specialTokens: [...AGENT_SPECIAL_TOKENS] });
        const model = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: tk.vocabSize }), { seed });
        const samples = chosen.map((t) => renderChat(tk, t.messages));
        const sftCfg = { steps: sftSteps, batchSize: sftBatch, lr: sftLr, warmupSteps: Math.min(20, Math.floor(sftSteps / 10)), evalEvery: 0, checkpointEvery: 0, maxSeqLen: model.config.maxPositions, seed };
        const sft = await runSft({ outDir: join(work, `${dbName}-sft-${seed}`), model, tokenizer: tk, samples, config: sftCfg });
        const sftSec = secs(t0);
        time('sft', sftSec);
        console.log(`  sft: ${chosen.length} trajectories, ${sftSteps} steps, final loss ${sft.finalLoss?.toFixed(3)} (${sftSec.toFixed(0)}s)`);
        await record('sft', model, tk);
        model.dispose();

        // The RL questions with a signal for this SFT policy.
        let ck = loadCheckpoint(sft.checkpoint);
        const rates = await samplePassRates(env, split.rl, ck.model, ck.tokenizer, { ...evalOpts, samples: passK, seed: seed + 1 });
        ck.model.dispose();
        console.log(`  RL questions by correct samples 0..${passK}: ${Array.from({ length: passK + 1 }, (_, c) => rates.correct.filter((x) => x === c).length).join(' / ')}`);

        let rlSec = 0;
        for (const algo of algos) {
          // The quickstart's choice of RL questions (and of the active pool's starting counts), per algorithm.
          const { tasks: rlTasks, kept, passRates } = rlPoolPlan(rlPool, split.rl, rates.correct, { passSamples: passK, promptsPerStep: prompts }, algo);
          console.log(`  ${algo}: training on ${rlTasks.length}${passRates ? ` (active pool, ${kept.length} in between first)` : ''}`);
          ck = loadCheckpoint(sft.checkpoint);
          const t1 = performance.now();
          const zero: number[] = [];
          const config: TrainConfigInput = {
            algo, algoOverrides: rlAlgoOverrides(passRates, q.rlRecheck), steps, promptsPerStep: prompts, groupSize: group, lr: rlLr, minLrRatio,
            maxTurnTokens: evalOpts.maxTurnTokens, maxResponseTokens: evalOpts.maxResponseTokens, checkpointEvery: 0, seed,
          };
          await runGrpo({ outDir: join(work, `${dbName}-${algo}-${seed}`), env, tasks: rlTasks, model: ck.model, tokenizer: ck.tokenizer, config, passRates, onStep: (r: StepRecord) => { zero.push(r.zero_signal); samplePeak(); } });
          const sec = secs(t1);
          rlSec = Math.max(rlSec, sec);
          time(algo, sec);
          results[algo].zero.push(mean(zero));
          console.log(`  ${algo}: ${steps} steps in ${sec.toFixed(0)}s, zero-signal groups ${pct(mean(zero))}%`);
          await record(algo, ck.model, ck.tokenizer);
          ck.model.dispose();
        }
        // SFT-only at equal compute: the same checkpoint trained on for as long as the slowest RL run took.
        ck = loadCheckpoint(sft.checkpoint);
        const extra = Math.max(1, Math.round((sftSteps * rlSec) / Math.max(1e-9, sftSec)));
        const t2 = performance.now();
        await runSft({ outDir: join(work, `${dbName}-sftplus-${seed}`), model: ck.model, tokenizer: ck.tokenizer, samples, config: { ...sftCfg, steps: extra, warmupSteps: 0, minLrRatio: 0.1 } });
        time('sft+', secs(t2));
        console.log(`  sft+: ${extra} more SFT steps in ${secs(t2).toFixed(0)}s (the RL budget)`);
        await record('sft+', ck.model, ck.tokenizer);
        ck.model.dispose();
      }
      const sftMean = mean(results.sft.acc);
      for (const nm of names) {
        const r = results[nm];
        rows.push([dbName, nm, pct(mean(r.acc)), spread(r.acc), nm === 'sft' ? '-' : `${mean(r.acc) >= sftMean ? '+' : ''}${pct(mean(r.acc) - sftMean)}`, nm === 'sft' ? '-' : r.acc.map((a, i) => `${a >= results.sft.acc[i] ? '+' : ''}${pct(a - results.sft.acc[i])}`).join(' / '), pct(mean(r.pass1)), pct(mean(r.passK)), r.human.length ? pct(mean(r.human)) : '-', r.zero.length ? pct(mean(r.zero)) : '-', nm.startsWith('sft') ? '-' : `${r.fixed}/${r.broke}`, String(r.acc.length)]);
      }
    }
    console.log(`\nheld-out execution accuracy (%), ${seeds} seed(s); sft+ = SFT-only at the RL run's wall time; fixed/broke = answers whose tool call fixed a wrong first query / broke a right one (summed over seeds)`);
    table(rows);
    console.log('\nwall time per stage (s, mean over runs):');
    table([['stage', 'mean s', 'runs'], ...Object.entries(times).map(([k, v]) => [k, mean(v).toFixed(1), String(v.length)])]);
    console.log(`peak RSS ${(samplePeak() / 2 ** 20).toFixed(0)} MiB`);
  } finally {
    await pool.close();
    rmSync(work, { recursive: true, force: true });
  }
}
