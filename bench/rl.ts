// `npm run bench -- rl [--quick] [--seeds 3] [--steps N] [--algos grpo,dr_grpo,dapo] [--pairs N] ...`
// Does RL beat its SFT starting point on held-out synthetic questions, and does the agent learn to use
// the tool? One data factory run on a bundled database, one train/held-out split; per seed one cold
// start (diversity-selected trajectories, new tokenizer, tiny model, SFT), then every algorithm from
// that SAME checkpoint with the same steps × prompts × group size. Each policy is evaluated greedily
// (temperature 0, one episode per held-out question, as evaluatePolicy does) and we also read the
// episodes: among those with a tool call, how often the final answer differs from the first SQL the
// agent ran, and whether that change fixed or broke the answer.
import { readJsonl } from '../src/util/fs.ts';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runFactory } from '../src/factory/pipeline.ts';
import type { DatasetRow } from '../src/factory/types.ts';
import { SqlPool } from '../src/sql/pool.ts';
import { SqlEnvironment, type SqlTask } from '../src/agent/sql-env.ts';
import { synthesizeTrajectories } from '../src/agent/trajectories.ts';
import { parseAction, SQL_AGENT_ACTIONS, AGENT_SPECIAL_TOKENS } from '../src/agent/protocol.ts';
import type { ChatMessage, Environment, TaskBase } from '../src/agent/types.ts';
import { selectColdStart } from '../src/train/coldstart.ts';
import { runSft } from '../src/train/sft.ts';
import { runGrpo } from '../src/rl/trainer.ts';
import type { StepRecord } from '../src/rl/phases.ts';
import type { TrainConfigInput } from '../src/rl/train-config.ts';
import { rollout, type Trajectory } from '../src/rl/rollout.ts';
import { initBackend } from '../src/model/backend.ts';
import { Tokenizer } from '../src/model/tokenizer.ts';
import { LlamaModel } from '../src/model/llama.ts';
import { resolveModelConfig } from '../src/model/config.ts';
import { renderChat } from '../src/model/chat.ts';
import { loadCheckpoint } from '../src/model/checkpoint.ts';
import { suiteVariants } from '../src/data/databases.ts';
import { Rng } from '../src/util/rng.ts';
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

/** Greedy episodes (temperature 0, one per task), as evaluatePolicy runs them, kept for inspection. */
export async function greedyEpisodes<T extends TaskBase>(
  env: Environment<T>,
  tasks: readonly T[],
  model: LlamaModel,
  tokenizer: Tokenizer,
  opts: { maxTurnTokens: number; maxResponseTokens: number; batch?: number },
): Promise<{ task: T; traj: Trajectory; correct: boolean }[]> {
  const out: { task: T; traj: Trajectory; correct: boolean }[] = [];
  const batch = opts.batch ?? 8;
  for (let i = 0; i < tasks.length; i += batch) {
    const chunk = tasks.slice(i, i + batch);
    const trajs = await rollout(env, chunk, model, tokenizer, { groupSize: 1, maxTurnTokens: opts.maxTurnTokens, maxResponseTokens: opts.maxResponseTokens, temperature: 0, topP: 1, seed: 0 });
    for (const t of trajs) {
      const task = chunk[t.group];
      out.push({ task, traj: t, correct: (await env.rewardContext(task, t)).correct });
    }
    samplePeak();
  }
  return out;
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

interface ToolEffect {
  withTool: number;
  changed: number;
  fixed: number;
  broke: number;
}

const normSql = (s: string): string => s.replace(/\s+/g, ' ').replace(/;\s*$/, '').trim().toLowerCase();

/** Among episodes with ≥1 tool call: the final answer vs the first SQL run as a tool call. */
async function toolEffect(env: SqlEnvironment, eps: readonly { task: SqlTask; traj: Trajectory; correct: boolean }[]): Promise<ToolEffect> {
  const r: ToolEffect = { withTool: 0, changed: 0, fixed: 0, broke: 0 };
  for (const e of eps) {
    if (e.traj.toolCalls === 0 || e.traj.endReason !== 'answer' || e.traj.answer === undefined) continue;
    const first = e.traj.messages.find((m: ChatMessage) => m.role === 'assistant');
    const a = first ? parseAction(first.content, SQL_AGENT_ACTIONS) : undefined;
    if (!a || a.kind !== 'sql') continue;
    r.withTool++;
    if (normSql(a.content) === normSql(e.traj.answer)) continue;
    r.changed++;
    // Would the first query have been right as the answer? Scored by the same environment.
    const firstRight = (await env.rewardContext(e.task, { ...e.traj, answer: a.content })).correct;
    if (!firstRight && e.correct) r.fixed++;
    if (firstRight && !e.correct) r.broke++;
  }
  return r;
}

export async function run(args: string[]): Promise<void> {
  const quick = args.includes('--quick');
  const db = resolve(flag(args, '--db', 'data/databases/music_store/music_store.sqlite'));
  const seeds = num(args, '--seeds', quick ? 1 : 3);
  const algos = flag(args, '--algos', quick ? 'grpo,dr_grpo' : 'grpo,dr_grpo,dapo').split(',').filter(Boolean);
  const pairs = num(args, '--pairs', quick ? 40 : 300);
  const heldOutN = num(args, '--held-out', quick ? 8 : 40);
  const coldStart = num(args, '--cold-start', quick ? 24 : 120);
  const sftSteps = num(args, '--sft-steps', quick ? 10 : 90);
  const sftBatch = num(args, '--sft-batch', quick ? 4 : 8);
  const sftLr = num(args, '--sft-lr', 1e-2);
  const steps = num(args, '--steps', quick ? 2 : 8);
  const prompts = num(args, '--prompts', quick ? 2 : 4);
  const group = num(args, '--group', 4);
  const rlLr = num(args, '--lr', 1e-3);
  const verifyShare = num(args, '--verify-share', 0.5);
  const schemaChars = num(args, '--schema-chars', 500);
  const vocab = num(args, '--vocab', 800);
  const difficulty = flag(args, '--difficulty', quick ? 'all' : 'simple');
  const evalOpts = { maxTurnTokens: 96, maxResponseTokens: 320 };

  const backend = await initBackend();
  const work = mkdtempSync(join(tmpdir(), 'agro-bench-rl-'));
  const pool = new SqlPool();
  const env = new SqlEnvironment(pool, { schemaChars });
  const times: Record<string, number[]> = {};
  const time = (k: string, s: number): void => void (times[k] ??= []).push(s);
  try {
    console.log(`database ${db}; ${seeds} seed(s); tiny model on ${backend}; RL: ${steps} steps × ${prompts} prompts × ${group} rollouts, lr ${rlLr}, no KL`);
    // ---- data: one factory run, cached across bench runs by its arguments ----
    let t0 = performance.now();
    const synthDir = join(resolve('runs/bench-rl'), `synth-${pairs}`);
    if (!existsSync(join(synthDir, 'dataset.jsonl'))) await runFactory({ db, out: synthDir, n: pairs, seed: 0, variants: 1 }, { executor: pool });
    time('synth', secs(t0));
    // --difficulty simple keeps the questions a tiny model can learn to write in a few minutes of SFT.
    const rows = readJsonl<DatasetRow>(join(synthDir, 'dataset.jsonl')).filter((r) => difficulty === 'all' || r.difficulty === difficulty);
    const toTask = (r: DatasetRow): SqlTask => ({
      id: String(r.question_id), dbId: r.db_id, dbPath: db, question: r.question, evidence: r.evidence, goldSql: r.SQL,
      difficulty: r.difficulty, variantPaths: suiteVariants(join(synthDir, 'variants'), r.db_id),
    });
    const order = new Rng(0x5eed).shuffle(rows.map((_, i) => i));
    const nHeld = Math.min(heldOutN, Math.floor(rows.length / 3));
    const heldOut = order.slice(0, nHeld).map((i) => toTask(rows[i]));
    const train = order.slice(nHeld).map((i) => toTask(rows[i]));
    console.log(`data: ${rows.length} verified pairs${difficulty === 'all' ? '' : ` (${difficulty} only)`} (${secs(t0).toFixed(0)}s, cached in ${synthDir}); train ${train.length}, held out ${heldOut.length}`);

    const results: Record<string, { acc: number[]; calls: number[]; use: number[]; answered: number[]; effect: ToolEffect[]; reward: number[][] }> = {};
    const names = ['sft', ...algos];
    for (const nm of names) results[nm] = { acc: [], calls: [], use: [], answered: [], effect: [], reward: [] };
    const record = async (nm: string, model: LlamaModel, tk: Tokenizer): Promise<void> => {
      const t = performance.now();
      const eps = await greedyEpisodes(env, heldOut, model, tk, evalOpts);
      time('eval', secs(t));
      const s = episodeStats(eps);
      const r = results[nm];
      r.acc.push(s.accuracy);
      r.calls.push(s.toolCalls);
      r.use.push(s.toolUse);
      r.answered.push(s.answered);
      r.effect.push(await toolEffect(env, eps));
      const ends: Record<string, number> = {};
      for (const e of eps) ends[e.traj.endReason] = (ends[e.traj.endReason] ?? 0) + 1;
      const firstTurn = eps[0]?.traj.messages.find((m) => m.role === 'assistant')?.content ?? '';
      console.log(`  ${nm.padEnd(8)} episode ends ${JSON.stringify(ends)}; first held-out turn: ${JSON.stringify(firstTurn.slice(0, 160))}`);
      console.log(`  ${nm.padEnd(8)} held-out accuracy ${pct(s.accuracy)}%, tool calls/episode ${s.toolCalls.toFixed(2)}, tool use ${pct(s.toolUse)}%, answered ${pct(s.answered)}%`);
    };

    for (let seed = 0; seed < seeds; seed++) {
      console.log(`seed ${seed}:`);
      // ---- cold start: trajectories → diversity subset → tokenizer → tiny model → SFT ----
      t0 = performance.now();
      const trajs = await synthesizeTrajectories(train, env, { verifyShare, seed });
      const ids = new Set(selectColdStart(trajs, Math.min(coldStart, trajs.length), { seed, sqlWeight: 0.8 }));
      const chosen = trajs.filter((t) => ids.has(t.id));
      const specials = [...AGENT_SPECIAL_TOKENS];
      const tk = Tokenizer.train(chosen.flatMap((t) => t.messages.map((m) => m.content)), { vocabSize: vocab, specialTokens: specials });
      const model = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: tk.vocabSize }), { seed });
      const samples = chosen.map((t) => renderChat(tk, t.messages));
      const sft = await runSft({
        outDir: join(work, `sft-${seed}`), model, tokenizer: tk, samples,
        config: { steps: sftSteps, batchSize: sftBatch, lr: sftLr, warmupSteps: Math.min(10, Math.floor(sftSteps / 10)), evalEvery: 0, checkpointEvery: 0, maxSeqLen: model.config.maxPositions, seed },
      });
      time('sft', secs(t0));
      samplePeak();
      console.log(`  sft: ${chosen.length} trajectories (${chosen.filter((t) => t.kind === 'verify').length} with a tool call), mean ${Math.round(mean(samples.map((s) => s.ids.length)))} tokens, ${sftSteps} steps, final loss ${sft.finalLoss?.toFixed(3)} (${secs(t0).toFixed(0)}s)`);
      await record('sft', model, tk);
      model.dispose();

      // ---- each algorithm from the same checkpoint, same budget ----
      for (const algo of algos) {
        const ck = loadCheckpoint(sft.checkpoint);
        const t1 = performance.now();
        const rewards: number[] = [];
        const config: TrainConfigInput = {
          algo, algoOverrides: { kl: { coef: 0 } }, steps, promptsPerStep: prompts, groupSize: group, lr: rlLr,
          maxTurnTokens: evalOpts.maxTurnTokens, maxResponseTokens: evalOpts.maxResponseTokens, checkpointEvery: 0, seed,
        };
        await runGrpo({ outDir: join(work, `${algo}-${seed}`), env, tasks: train, model: ck.model, tokenizer: ck.tokenizer, config, onStep: (r: StepRecord) => { rewards.push(r.reward); samplePeak(); } });
        time(algo, secs(t1));
        results[algo].reward.push(rewards);
        process.stdout.write(`  ${algo}: reward by step ${rewards.map((x) => x.toFixed(2)).join(' ')} (${secs(t1).toFixed(0)}s)\n`);
        await record(algo, ck.model, ck.tokenizer);
        ck.model.dispose();
      }
    }

    // ---- summary ----
    const sftMean = mean(results.sft.acc);
    console.log(`\nheld-out execution accuracy (%), ${heldOut.length} questions, ${seeds} seed(s); same SFT checkpoint per seed`);
    table([
      ['algo', 'mean acc', 'min..max', 'Δ vs SFT', 'tool calls', 'tool use %', 'answered %', 'changed/with tool', 'fixed', 'broke'],
      ...names.map((nm) => {
        const r = results[nm];
        const e = r.effect.reduce((a, b) => ({ withTool: a.withTool + b.withTool, changed: a.changed + b.changed, fixed: a.fixed + b.fixed, broke: a.broke + b.broke }), { withTool: 0, changed: 0, fixed: 0, broke: 0 });
        return [nm, pct(mean(r.acc)), spread(r.acc), nm === 'sft' ? '-' : `${mean(r.acc) >= sftMean ? '+' : ''}${pct(mean(r.acc) - sftMean)}`, mean(r.calls).toFixed(2), pct(mean(r.use)), pct(mean(r.answered)), `${e.changed}/${e.withTool}`, String(e.fixed), String(e.broke)];
      }),
    ]);
    console.log('changed = final answer differs from the first SQL run as a tool call; fixed/broke = the first query was wrong/right and the final answer right/wrong (summed over seeds)');
    console.log('\nper seed (accuracy %):');
    table([['algo', ...Array.from({ length: seeds }, (_, s) => `seed ${s}`)], ...names.map((nm) => [nm, ...results[nm].acc.map(pct)])]);
    console.log('\nwall time per stage (s, mean over runs):');
    table([['stage', 'mean s', 'runs'], ...Object.entries(times).map(([k, v]) => [k, mean(v).toFixed(1), String(v.length)])]);
    console.log(`peak RSS ${(samplePeak() / 2 ** 20).toFixed(0)} MiB`);
  } finally {
    await pool.close();
    rmSync(work, { recursive: true, force: true });
  }
}
