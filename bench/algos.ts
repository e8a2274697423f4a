// `npm run bench -- algos [--quick] [--seeds 3] [--algos a,b,...] [--steps 2] [--prompts 2] [--group 4] [--held-out 8] ...`
// Every preset of the GRPO family (src/rl/config.ts PRESETS) on the same data, seeds and compute, in one table:
// held-out execution accuracy (mean and min..max over seeds), zero-signal groups per step, KL to the SFT start,
// entropy, wall time. Per seed: one cold start (diversity-selected trajectories, new tokenizer, tiny model, SFT),
// then every preset from that SAME checkpoint with the same steps × prompts × group size, the SFT model as the
// KL reference (presets with a KL coefficient use it; the others only measure it). The default budget is small so
// the whole table runs in minutes on a shared 2-core machine; the numbers compare algorithms, they do not show
// what RL can do with a real budget. training_free_grpo needs an LLM endpoint and is not in this table.
// EX is the mean over seeds ± its sample standard deviation, with min..max beside it. `--quick`: one seed, a few
// presets (one per kind of trainer hook), smaller cold start: shows the harness works in about a minute.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readJsonl } from '../src/util/fs.ts';
import { runFactory } from '../src/factory/pipeline.ts';
import type { DatasetRow } from '../src/factory/types.ts';
import { SqlPool } from '../src/sql/pool.ts';
import { SqlEnvironment, type SqlTask } from '../src/agent/sql-env.ts';
import { synthesizeTrajectories } from '../src/agent/trajectories.ts';
import { AGENT_SPECIAL_TOKENS } from '../src/agent/protocol.ts';
import { selectColdStart } from '../src/train/coldstart.ts';
import { runSft } from '../src/train/sft.ts';
import { runGrpo } from '../src/rl/trainer.ts';
import { PRESET_NAMES } from '../src/rl/config.ts';
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

interface Row {
  acc: number[];
  zero: number[];
  groups: number[];
  kl: number[];
  entropy: number[];
  wall: number[];
  skipped: number;
  failed?: string;
}

export async function run(args: string[]): Promise<void> {
  const db = resolve(flag(args, '--db', 'data/databases/music_store/music_store.sqlite'));
  const quick = args.includes('--quick');
  const seeds = num(args, '--seeds', quick ? 1 : 3);
  // egrpo shapes search-agent signals (entities, exact match): it is compared in `bench -- search`, not here.
  const every = PRESET_NAMES.filter((n) => n !== 'egrpo').join(',');
  const algos = flag(args, '--algos', quick ? 'grpo,remax,reinforce_pp_kl,salt,dppo,mmr1,dagrpo' : every).split(',').filter(Boolean);
  // With this budget the tiny policy almost never executes to the right result, so every group would be zero-signal
  // under the execution reward alone; partial credit (format fraction, SQL overlap F1) gives the groups spread.
  // Presets whose point is their own reward list (otc, gdpo) keep it; `--rewards preset` keeps every preset's own.
  const partial = flag(args, '--rewards', 'partial') === 'partial';
  const sharedRewards = [
    { name: 'execution', weight: 1 },
    { name: 'format', weight: 0.2, params: { partial: true } },
    { name: 'sql_overlap', weight: 0.5 },
  ];
  const ownRewards = new Set(['otc', 'gdpo']);
  const pairs = num(args, '--pairs', quick ? 24 : 40);
  const heldOutN = num(args, '--held-out', quick ? 4 : 8);
  const coldStart = num(args, '--cold-start', quick ? 12 : 24);
  const sftSteps = num(args, '--sft-steps', quick ? 20 : 40);
  const steps = num(args, '--steps', quick ? 1 : 2);
  const prompts = num(args, '--prompts', 2);
  const group = num(args, '--group', 4);
  const rlLr = num(args, '--lr', 1e-3);
  const evalOpts = { maxTurnTokens: 64, maxResponseTokens: 192 };

  const backend = await initBackend();
  const work = mkdtempSync(join(tmpdir(), 'agro-bench-algos-'));
  const pool = new SqlPool();
  const env = new SqlEnvironment(pool, { schemaChars: 500 });
  try {
    console.log(`database ${db}; ${seeds} seed(s); tiny model on ${backend}; every preset: ${steps} steps × ${prompts} prompts × ${group} rollouts, lr ${rlLr}; rewards: ${partial ? 'execution + 0.2·format(partial) + 0.5·sql_overlap (otc, gdpo: their own)' : "each preset's own"}`);
    const synthDir = join(resolve('runs/bench-rl'), `synth-${pairs}`);
    if (!existsSync(join(synthDir, 'dataset.jsonl'))) await runFactory({ db, out: synthDir, n: pairs, seed: 0, variants: 1 }, { executor: pool });
    const rows = readJsonl<DatasetRow>(join(synthDir, 'dataset.jsonl'));
    const toTask = (r: DatasetRow): SqlTask => ({
      id: String(r.question_id), dbId: r.db_id, dbPath: db, question: r.question, evidence: r.evidence, goldSql: r.SQL,
      difficulty: r.difficulty, variantPaths: suiteVariants(join(synthDir, 'variants'), r.db_id),
    });
    const order = new Rng(0x5eed).shuffle(rows.map((_, i) => i));
    const nHeld = Math.min(heldOutN, Math.floor(rows.length / 3));
    const heldOut = order.slice(0, nHeld).map((i) => toTask(rows[i]));
    const train = order.slice(nHeld).map((i) => toTask(rows[i]));
    console.log(`data: ${rows.length} verified pairs (cached in ${synthDir}); train ${train.length}, held out ${heldOut.length}`);

    const res: Record<string, Row> = {};
    for (const a of ['sft', ...algos]) res[a] = { acc: [], zero: [], groups: [], kl: [], entropy: [], wall: [], skipped: 0 };
    for (let seed = 0; seed < seeds; seed++) {
      let t0 = performance.now();
      const trajs = await synthesizeTrajectories(train, env, { verifyShare: 0.5, seed });
      const ids = new Set(selectColdStart(trajs, Math.min(coldStart, trajs.length), { seed, sqlWeight: 0.8 }));
      const chosen = trajs.filter((t) => ids.has(t.id));
      const tk = Tokenizer.train(chosen.flatMap((t) => t.messages.map((m) => m.content)), { vocabSize: 800, specialTokens: [...AGENT_SPECIAL_TOKENS] });
      const model = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: tk.vocabSize }), { seed });
      const sft = await runSft({
        outDir: join(work, `sft-${seed}`), model, tokenizer: tk, samples: chosen.map((t) => renderChat(tk, t.messages)),
        config: { steps: sftSteps, batchSize: 4, lr: 1e-2, warmupSteps: 1, evalEvery: 0, checkpointEvery: 0, maxSeqLen: model.config.maxPositions, seed },
      });
      res.sft.acc.push(episodeStats(await greedyEpisodes(env, heldOut, model, tk, evalOpts)).accuracy);
      res.sft.wall.push(secs(t0));
      model.dispose();
      console.log(`seed ${seed}: sft ${sftSteps} steps on ${chosen.length} trajectories, held-out ${pct(res.sft.acc.at(-1)!)}% (${secs(t0).toFixed(0)}s)`);
      for (const algo of algos) {
        const ck = loadCheckpoint(sft.checkpoint);
        const ref = loadCheckpoint(sft.checkpoint).model;
        const recs: StepRecord[] = [];
        t0 = performance.now();
        try {
          await runGrpo({
            outDir: join(work, `${algo}-${seed}`), env, tasks: train, model: ck.model, tokenizer: ck.tokenizer, reference: ref,
            config: { algo, ...(partial && !ownRewards.has(algo) ? { algoOverrides: { rewards: sharedRewards } } : {}), steps, promptsPerStep: prompts, groupSize: group, lr: rlLr, maxTurnTokens: evalOpts.maxTurnTokens, maxResponseTokens: evalOpts.maxResponseTokens, checkpointEvery: 0, seed },
            onStep: (r) => recs.push(r),
          });
          const r = res[algo];
          r.wall.push(secs(t0));
          r.acc.push(episodeStats(await greedyEpisodes(env, heldOut, ck.model, ck.tokenizer, evalOpts)).accuracy);
          r.zero.push(mean(recs.map((x) => x.zero_signal)));
          r.groups.push(mean(recs.map((x) => x.groups)));
          r.kl.push(mean(recs.map((x) => x.kl)));
          r.entropy.push(mean(recs.map((x) => x.entropy)));
          r.skipped += recs.filter((x) => x.skipped).length;
          console.log(`  ${algo.padEnd(22)} acc ${pct(r.acc.at(-1)!)}%  reward ${recs.map((x) => x.reward.toFixed(2)).join(' ')}  (${r.wall.at(-1)!.toFixed(1)}s)`);
        } catch (err) {
          res[algo].failed = (err as Error).message.split('\n')[0];
          console.log(`  ${algo.padEnd(22)} FAILED: ${res[algo].failed}`);
        } finally {
          ck.model.dispose();
          ref.dispose();
        }
      }
    }
    const sftMean = mean(res.sft.acc);
    console.log(`\nheld-out execution accuracy over ${seeds} seed(s), ${heldOut.length} questions; per step: share of sampled groups with no reward spread, KL to the SFT start, entropy; wall time per run`);
    table([
      ['preset', 'EX mean % ± sd', 'min..max', 'Δ vs SFT', 'zero-signal', 'KL', 'entropy', 'wall s', 'skipped'],
      ...Object.entries(res).map(([a, r]) =>
        r.failed
          ? [a, 'failed', r.failed.slice(0, 40), '', '', '', '', '', '']
          : [a, `${pct(mean(r.acc))} ± ${pct(std(r.acc, 'sample'))}`, spread(r.acc), a === 'sft' ? '-' : `${mean(r.acc) >= sftMean ? '+' : ''}${pct(mean(r.acc) - sftMean)}`,
            a === 'sft' ? '-' : `${pct(mean(r.zero))}%`, a === 'sft' ? '-' : mean(r.kl).toExponential(1),
            a === 'sft' ? '-' : mean(r.entropy).toFixed(2), mean(r.wall).toFixed(1), a === 'sft' ? '-' : String(r.skipped)],
      ),
    ]);
  } finally {
    await pool.close();
    rmSync(work, { recursive: true, force: true });
  }
}
