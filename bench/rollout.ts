// `npm run bench -- rollout [--new-tokens N] [--threads 1,2] [--long-prompt N] [--reps 3] [--no-ref]`
// Sampling throughput of the rollout engines on bench/model.ts's architecture (random weights):
// batch 8 x N new tokens from 16-token prompts, 1 prompt x G=8 (the GRPO group shape), and 1 x G=8
// from a 320-token prompt (a rollout's first turn: the prefill counts), for the
// TF.js engine (wasm), the llama.cpp engine at 1 and 2 threads (its native sampler) and at 1 thread
// drawing in JS from full logits (`-js`), and the PyTorch reference
// (bench/_model_ref.py's KV-cache sampler). Also the llama.cpp sync time (GGUF export + reload)
// and peak RSS (one process holds every engine, so the figure accumulates).
import { initBackend } from '../src/model/backend.ts';
import { resolveModelConfig } from '../src/model/config.ts';
import { LlamaModel } from '../src/model/llama.ts';
import { Tokenizer } from '../src/model/tokenizer.ts';
import { TfjsEngine, type RolloutEngine } from '../src/model/engine.ts';
import { LlamaCppEngine } from '../src/model/llamacpp-engine.ts';
import { Rng } from '../src/util/rng.ts';
import { ARCH, runTorch } from './model.ts';
import { flag } from './_args.ts';
import { AGENT_SPECIAL_TOKENS } from '../src/agent/protocol.ts';


interface Row {
  engine: string;
  batchTps: number;
  groupTps: number;
  longTps: number;
  syncMs?: string;
  peakRssMiB: number;
}

let peak = 0;
const notePeak = (): void => void (peak = Math.max(peak, process.memoryUsage().rss));

/** Best of `reps` timings of each case: the machine is shared, and the best run is the least disturbed one. */
async function measure(engine: RolloutEngine, prompts: number[][], newTokens: number, longPrompt: number[], reps: number): Promise<{ batchTps: number; groupTps: number; longTps: number }> {
  await engine.sampleGroups(prompts, 1, { maxNewTokens: 4, seed: 1 }); // warm-up
  const n = (g: { tokens: number[] }[][]): number => g.flat().reduce((a, s) => a + s.tokens.length, 0);
  const best = async (ps: number[][], G: number, seed: number): Promise<number> => {
    let top = 0;
    for (let r = 0; r < reps; r++) {
      const t = performance.now();
      const out = await engine.sampleGroups(ps, G, { maxNewTokens: newTokens, seed });
      top = Math.max(top, n(out) / ((performance.now() - t) / 1000));
      notePeak();
    }
    return top;
  };
  return {
    batchTps: await best(prompts, 1, 1),
    groupTps: await best([prompts[0]], ARCH.batch, 2),
    longTps: await best([longPrompt], ARCH.batch, 3),
  };
}

export async function run(args: string[]): Promise<void> {
  const newTokens = Number(flag(args, '--new-tokens', '128'));
  const threadList = flag(args, '--threads', '1,2').split(',').map(Number);
  const reps = Number(flag(args, '--reps', '3'));
  await initBackend('wasm');
  const cfg = resolveModelConfig({
    vocabSize: ARCH.vocab, hiddenSize: ARCH.hidden, intermediateSize: ARCH.intermediate, numLayers: ARCH.layers,
    numHeads: ARCH.heads, numKvHeads: ARCH.kvHeads, maxPositions: 512, tieEmbeddings: true,
  });
  const model = new LlamaModel(cfg, { seed: 0 });
  // The GGUF needs a vocabulary; ids beyond this small tokenizer's become placeholder tokens.
  const tok = Tokenizer.train(['SELECT name FROM singer WHERE age > 30', 'How many singers are there?'], { vocabSize: 300, specialTokens: AGENT_SPECIAL_TOKENS });
  const rng = new Rng(0);
  const prompts = Array.from({ length: ARCH.batch }, () => Array.from({ length: ARCH.promptLen }, () => rng.int(ARCH.vocab)));
  // The shape of a GRPO rollout's first turn: one long prompt (schema + question), G samples.
  const longLen = Number(flag(args, '--long-prompt', '320'));
  const longPrompt = Array.from({ length: longLen }, () => rng.int(ARCH.vocab));
  console.log(`architecture: ${JSON.stringify(ARCH)}; ${newTokens} new tokens per sample; temperature 1; best of ${reps} runs per case`);

  const rows: Row[] = [];
  const tf = await measure(new TfjsEngine(model), prompts, newTokens, longPrompt, reps);
  rows.push({ engine: 'tfjs-wasm', ...tf, peakRssMiB: peak / 2 ** 20 });
  console.log('  done tfjs');
  const configs = [...threadList.map((threads) => ({ threads, sampling: 'native' as const })), { threads: 1, sampling: 'js' as const }];
  for (const { threads, sampling } of configs) {
    const engine = new LlamaCppEngine({ tokenizer: tok, threads, maxSequences: ARCH.batch, sampling });
    // Best of three syncs (export + reload), as after each training update.
    let s = { exportMs: Infinity, loadMs: Infinity, bytes: 0 };
    for (let i = 0; i < 3; i++) {
      await engine.sync(model);
      const t = engine.lastSync!;
      if (t.exportMs + t.loadMs < s.exportMs + s.loadMs) s = t;
    }
    const r = await measure(engine, prompts, newTokens, longPrompt, reps);
    notePeak();
    rows.push({
      engine: `llama.cpp-${threads}t${sampling === 'js' ? '-js' : ''}`,
      ...r,
      syncMs: `${(s.exportMs + s.loadMs).toFixed(0)} (export ${s.exportMs.toFixed(0)} + load ${s.loadMs.toFixed(0)}, ${(s.bytes / 2 ** 20).toFixed(1)} MiB)`,
      peakRssMiB: peak / 2 ** 20,
    });
    await engine.dispose();
    console.log(`  done llama.cpp ${threads} thread(s), ${sampling} sampling`);
  }
  const refs: Row[] = [];
  if (!args.includes('--no-ref'))
    for (const threads of threadList) {
      // Best of two runs of the reference too (each also times a training step, which is not reported here).
      let r: ReturnType<typeof runTorch> = '';
      for (let i = 0; i < 2; i++) {
        const x = runTorch(1, newTokens, threads);
        if (typeof x === 'string' || typeof r === 'string' || x.sampleTokensPerSec > r.sampleTokensPerSec) r = x;
        if (typeof x === 'string') break;
      }
      if (typeof r === 'string') {
        console.log(r);
        break;
      }
      refs.push({ engine: r.engine, batchTps: r.sampleTokensPerSec, groupTps: NaN, longTps: NaN, peakRssMiB: r.peakRssMiB });
    }
  // Ratios against the fastest reference configuration (two threads can be slower on a busy 2-core machine).
  const ref = refs.length ? refs.reduce((a, b) => (b.batchTps > a.batchTps ? b : a)) : undefined;
  const tfRef = rows[0];
  const num = (x: number): string => (Number.isNaN(x) ? '-' : x.toFixed(0));
  const rel = (x: number, y: number): string => (Number.isNaN(x) ? '-' : `${(x / y).toFixed(2)}x`);
  console.log(`\nnew tokens/s; ratios vs tfjs in (); group = 1 prompt x G=${ARCH.batch}; long = group with a ${longLen}-token prompt (prefill included)`);
  console.log('engine           batch 8       group 1x8      long 1x8       vs torch (batch)  peak RSS MiB  sync ms');
  for (const r of [...rows, ...refs]) {
    const cell = (x: number, y: number): string => `${num(x)} (${rel(x, y)})`.padEnd(14);
    const vsTorch = ref ? rel(r.batchTps, ref.batchTps) : 'n/a';
    console.log(
      `${r.engine.padEnd(16)} ${cell(r.batchTps, tfRef.batchTps)} ${cell(r.groupTps, tfRef.groupTps)} ${cell(r.longTps, tfRef.longTps)} ${vsTorch.padStart(16)} ${r.peakRssMiB.toFixed(0).padStart(13)}  ${r.syncMs ?? '-'}`,
    );
  }
  if (ref) console.log(`torch ratios are against ${ref.engine} (its sampler has no group path: batch 8 only)`);
  model.dispose();
}
