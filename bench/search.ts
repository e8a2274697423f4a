// `npm run bench -- search [--quick] [--seeds 3] [--first-seed 0] [--steps N] [--db school] ...`
// GRPO versus E-GRPO for the search agent, from the same SFT start with the same compute. Data: entity
// documents and multi-hop questions synthesized from a bundled database (agro synth-search), the
// synthesizer's held-out split for evaluation. Per seed: scripted cold-start trajectories through the
// real SearchEnvironment (src/search/trajectories.ts), a new tokenizer, a tiny model, SFT; then GRPO
// (exact-match reward) and E-GRPO (exact match, plus entity-match credit for wrong answers) from that
// checkpoint, same steps × prompts × group size, no KL. Evaluated greedily: exact match, tool calls per
// episode, and the entity match rate of the reasoning.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { synthesize } from '../src/search/synthesize.ts';
import { SearchCorpus } from '../src/search/corpus.ts';
import { SearchEnvironment } from '../src/search/env.ts';
import { searchTaskOf, synthesizeSearchTrajectories } from '../src/search/trajectories.ts';
import { runSft } from '../src/train/sft.ts';
import { runGrpo } from '../src/rl/trainer.ts';
import type { StepRecord } from '../src/rl/phases.ts';
import type { TrainConfigInput } from '../src/rl/train-config.ts';
import { initBackend } from '../src/model/backend.ts';
import { Tokenizer } from '../src/model/tokenizer.ts';
import { LlamaModel } from '../src/model/llama.ts';
import { resolveModelConfig } from '../src/model/config.ts';
import { renderChat } from '../src/model/chat.ts';
import { loadCheckpoint } from '../src/model/checkpoint.ts';
import { Rng } from '../src/util/rng.ts';
import { flag, num } from './_args.ts';
import { episodeStats, greedyEpisodes, mean, pct, samplePeak, secs, spread, table } from './rl.ts';
import { AGENT_SPECIAL_TOKENS } from '../src/agent/protocol.ts';

/** The two algorithms compared, as trainer configs over the registry's presets. */
const ALGOS: Record<string, { algo: string; algoOverrides: Record<string, unknown> }> = {
  grpo: { algo: 'grpo', algoOverrides: { kl: { coef: 0 }, rewards: [{ name: 'exact_match', weight: 1 }] } },
  egrpo: { algo: 'egrpo', algoOverrides: { kl: { coef: 0 } } },
};

export async function run(args: string[]): Promise<void> {
  const quick = args.includes('--quick');
  const dbName = flag(args, '--db', 'school');
  const db = resolve(dbName.includes('/') ? dbName : `data/databases/${dbName}/${dbName}.sqlite`);
  const seeds = num(args, '--seeds', quick ? 1 : 3);
  const firstSeed = num(args, '--first-seed', 0);
  const algos = flag(args, '--algos', 'grpo,egrpo').split(',').filter(Boolean);
  for (const a of algos) if (!ALGOS[a]) throw new Error(`bench search: unknown algo ${a} (have ${Object.keys(ALGOS).join(', ')})`);
  const nQuestions = num(args, '--questions', 400);
  const maxHops = num(args, '--max-hops', 2);
  const heldOutN = num(args, '--held-out', quick ? 8 : 40);
  const coldStart = num(args, '--cold-start', quick ? 24 : 160);
  const sftSteps = num(args, '--sft-steps', quick ? 6 : 50);
  const sftBatch = num(args, '--sft-batch', quick ? 4 : 8);
  const sftLr = num(args, '--sft-lr', 1e-2);
  const steps = num(args, '--steps', quick ? 2 : 8);
  const prompts = num(args, '--prompts', quick ? 2 : 4);
  const group = num(args, '--group', 4);
  const rlLr = num(args, '--lr', 1e-3);
  const vocab = num(args, '--vocab', 1000);
  // Short observations keep episodes inside the tiny model's context and the CPU budget.
  const envCfg = { topK: num(args, '--top-k', 2), snippetChars: num(args, '--snippet-chars', 80), openChars: num(args, '--open-chars', 300) };
  const maxPositions = num(args, '--max-positions', 768);
  const evalOpts = { maxTurnTokens: 64, maxResponseTokens: maxPositions - 200 };

  const backend = await initBackend();
  const work = mkdtempSync(join(tmpdir(), 'agro-bench-search-'));
  const times: Record<string, number[]> = {};
  const time = (k: string, s: number): void => void (times[k] ??= []).push(s);
  try {
    let t0 = performance.now();
    const synth = synthesize(db, { n: nQuestions, seed: 1, maxHops, heldoutFraction: 0.15 });
    const env = new SearchEnvironment(new SearchCorpus(synth.docs), envCfg);
    const trainQs = synth.questions.filter((q) => q.split === 'train');
    const heldOut = synth.questions.filter((q) => q.split === 'heldout').slice(0, heldOutN).map(searchTaskOf);
    const train = trainQs.map(searchTaskOf);
    time('synth', secs(t0));
    const hops = (qs: { difficulty: string }[]): string => Object.entries(qs.reduce<Record<string, number>>((m, q) => ((m[q.difficulty] = (m[q.difficulty] ?? 0) + 1), m), {})).sort().map(([k, v]) => `${k} ${v}`).join(', ');
    console.log(`database ${basename(db)}: ${synth.docs.length} documents, ${synth.questions.length} questions (max ${maxHops} hops); train ${train.length}, held out ${heldOut.length} (${hops(heldOut)})`);
    console.log(`${seeds} seed(s); tiny model (${maxPositions} positions) on ${backend}; RL: ${steps} steps × ${prompts} prompts × ${group} rollouts, lr ${rlLr}, no KL; env ${JSON.stringify(envCfg)}`);

    const names = ['sft', ...algos];
    const res: Record<string, { acc: number[]; calls: number[]; use: number[]; answered: number[]; entity: number[]; reward: number[][] }> = {};
    for (const nm of names) res[nm] = { acc: [], calls: [], use: [], answered: [], entity: [], reward: [] };
    const record = async (nm: string, model: LlamaModel, tk: Tokenizer): Promise<void> => {
      const t = performance.now();
      const eps = await greedyEpisodes(env, heldOut, model, tk, evalOpts);
      time('eval', secs(t));
      const s = episodeStats(eps);
      const entity = mean(await Promise.all(eps.map(async (e) => (await env.rewardContext(e.task, e.traj)).entityRate)));
      const r = res[nm];
      r.acc.push(s.accuracy);
      r.calls.push(s.toolCalls);
      r.use.push(s.toolUse);
      r.answered.push(s.answered);
      r.entity.push(entity);
      const ends: Record<string, number> = {};
      for (const e of eps) ends[e.traj.endReason] = (ends[e.traj.endReason] ?? 0) + 1;
      const firstTurn = eps[0]?.traj.messages.find((m) => m.role === 'assistant')?.content ?? '';
      console.log(`  ${nm.padEnd(6)} episode ends ${JSON.stringify(ends)}; first held-out turn: ${JSON.stringify(firstTurn.slice(0, 160))}`);
      console.log(`  ${nm.padEnd(6)} exact match ${pct(s.accuracy)}%, tool calls/episode ${s.toolCalls.toFixed(2)}, tool use ${pct(s.toolUse)}%, answered ${pct(s.answered)}%, entity rate ${entity.toFixed(2)}`);
    };

    for (let seed = firstSeed; seed < firstSeed + seeds; seed++) {
      console.log(`seed ${seed}:`);
      t0 = performance.now();
      const pick = new Rng(seed).shuffle([...trainQs]).slice(0, Math.min(coldStart, trainQs.length));
      const trajs = await synthesizeSearchTrajectories(pick, env);
      const specials = [...AGENT_SPECIAL_TOKENS];
      const tk = Tokenizer.train(trajs.flatMap((t) => t.messages.map((m) => m.content)), { vocabSize: vocab, specialTokens: specials });
      const model = new LlamaModel(resolveModelConfig({ preset: 'tiny', vocabSize: tk.vocabSize, maxPositions }), { seed });
      const samples = trajs.map((t) => renderChat(tk, t.messages));
      const sft = await runSft({
        outDir: join(work, `sft-${seed}`), model, tokenizer: tk, samples,
        config: { steps: sftSteps, batchSize: sftBatch, lr: sftLr, warmupSteps: Math.min(10, Math.floor(sftSteps / 10)), evalEvery: 0, checkpointEvery: 0, maxSeqLen: maxPositions, seed },
      });
      time('sft', secs(t0));
      samplePeak();
      console.log(`  sft: ${trajs.length} trajectories (mean ${Math.round(mean(samples.map((s) => s.ids.length)))} tokens, ${sft.skippedTooLong} too long), ${sftSteps} steps, final loss ${sft.finalLoss?.toFixed(3)} (${secs(t0).toFixed(0)}s)`);
      await record('sft', model, tk);
      model.dispose();

      for (const a of algos) {
        const ck = loadCheckpoint(sft.checkpoint);
        const t1 = performance.now();
        const rewards: number[] = [];
        const config: TrainConfigInput = {
          ...ALGOS[a], steps, promptsPerStep: prompts, groupSize: group, lr: rlLr,
          maxTurnTokens: evalOpts.maxTurnTokens, maxResponseTokens: evalOpts.maxResponseTokens, checkpointEvery: 0, seed,
        };
        await runGrpo({ outDir: join(work, `${a}-${seed}`), env, tasks: train, model: ck.model, tokenizer: ck.tokenizer, config, onStep: (r: StepRecord) => { rewards.push(r.accuracy); samplePeak(); } });
        time(a, secs(t1));
        res[a].reward.push(rewards);
        console.log(`  ${a}: training accuracy by step ${rewards.map((x) => x.toFixed(2)).join(' ')} (${secs(t1).toFixed(0)}s)`);
        await record(a, ck.model, ck.tokenizer);
        ck.model.dispose();
      }
    }

    const sftMean = mean(res.sft.acc);
    console.log(`\nheld-out exact match (%), ${heldOut.length} questions, ${seeds} seed(s); same SFT checkpoint per seed`);
    table([
      ['algo', 'mean EM', 'min..max', 'Δ vs SFT', 'tool calls', 'min..max', 'tool use %', 'answered %', 'entity rate'],
      ...names.map((nm) => {
        const r = res[nm];
        return [nm, pct(mean(r.acc)), spread(r.acc), nm === 'sft' ? '-' : `${mean(r.acc) >= sftMean ? '+' : ''}${pct(mean(r.acc) - sftMean)}`, mean(r.calls).toFixed(2), `${Math.min(...r.calls).toFixed(2)}..${Math.max(...r.calls).toFixed(2)}`, pct(mean(r.use)), pct(mean(r.answered)), mean(r.entity).toFixed(2)];
      }),
    ]);
    console.log('\nper seed (exact match %):');
    table([['algo', ...Array.from({ length: seeds }, (_, s) => `seed ${firstSeed + s}`)], ...names.map((nm) => [nm, ...res[nm].acc.map(pct)])]);
    console.log('\nwall time per stage (s, mean over runs):');
    table([['stage', 'mean s', 'runs'], ...Object.entries(times).map(([k, v]) => [k, mean(v).toFixed(1), String(v.length)])]);
    console.log(`peak RSS ${(samplePeak() / 2 ** 20).toFixed(0)} MiB`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
