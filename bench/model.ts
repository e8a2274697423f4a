// `npm run bench -- model [--size bench|base|tiny|small|50m] [--rounds N] [--steps N] [--backends wasm,cpu]
//                          [--configs all|shipped] [--new-tokens N] [--ref-threads 1,2] [--no-ref] [--profile]`
// Side by side in one run, same architecture (default `bench`: 4 layers, 128 wide, GQA 4/2 heads,
// vocab 4096, tied embeddings; `tiny` and `small` are the presets, `50m` a ~50M-parameter model; all
// batch 8 x 128 tokens): training tokens/s (forward + backward + AdamW step) and
// sampling tokens/s (KV cache, batch 8, 16-token prompts) of the built-in engine, and of a PyTorch
// reference (bench/_model_ref.py) run by /usr/bin/python3 when torch is installed. On wasm the
// engine runs in three configurations in the same process: as shipped (native matmul + fused
// attention kernel), without the native matmul, and with neither (the engine before the kernels).
// On a shared machine wall-clock figures swing with the load: every figure is the best of --rounds
// rounds (agro and the reference alternate), and tokens per CPU-second (process CPU time, which a
// descheduled process does not accumulate) are printed beside them; with 1 thread per engine
// (AGRO_NATIVE_THREADS=1) that is the fairest single-core comparison on a busy box. --profile adds,
// in the first round, the time of one training step and one sampling run by kernel (bench/_model_profile.ts).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs-core';
import { initBackend, wasmThreadCount } from '../src/model/backend.ts';
import { nativeKernelsActive, nativeStatus, setNativeKernels } from '../src/model/native.ts';
import { AdamW } from '../src/train/optim.ts';
import type { BackendName } from '../src/model/backend.ts';
import { resolveModelConfig } from '../src/model/config.ts';
import { LlamaModel } from '../src/model/llama.ts';
import { sampleGroups } from '../src/model/generate.ts';
import { Rng } from '../src/util/rng.ts';
import { flag } from './_args.ts';
import { profileRun } from './_model_profile.ts';

export const ARCH = { vocab: 4096, hidden: 128, intermediate: 344, layers: 4, heads: 4, kvHeads: 2, batch: 8, seq: 128, promptLen: 16 };
export type Arch = typeof ARCH;

const SIZES: Record<string, Arch> = {
  bench: ARCH,
  base: ARCH, // config.ts PRESETS.base, with agro pretrain's 4k vocabulary: the shape agro's base model trains at
  tiny: { ...ARCH, hidden: 64, intermediate: 172, layers: 2, heads: 4, kvHeads: 2 }, // config.ts PRESETS.tiny
  small: { ...ARCH, hidden: 256, intermediate: 688, layers: 8, heads: 8, kvHeads: 4 }, // PRESETS.small (~8M)
  '50m': { ...ARCH, hidden: 512, intermediate: 1376, layers: 16, heads: 8, kvHeads: 4 }, // ~50M parameters
};

export interface Result {
  engine: string;
  trainStepMs: number;
  trainTokensPerSec: number;
  sampleTokensPerSec: number;
  /** Tokens per second of process CPU time (all threads). */
  trainTokensPerCpuSec: number;
  sampleTokensPerCpuSec: number;
  peakRssMiB: number;
  note?: string;
}


/** One configuration of the built-in engine; all of them run in one process on the same model. */
interface EngineConfig {
  name: string;
  native: boolean;
  attention: 'fused' | 'tfjs';
}

const WASM_CONFIGS: EngineConfig[] = [
  { name: 'tfjs-wasm', native: true, attention: 'fused' },
  { name: 'wasm-stock-mm', native: false, attention: 'fused' },
  { name: 'wasm-plain', native: false, attention: 'tfjs' }, // the engine before the kernels: stock matmul, TF.js attention
];

async function runTfjs(
  backend: BackendName, steps: number, newTokens: number, configs: EngineConfig[], ARCH: Arch, profile = false,
): Promise<Result[]> {
  await initBackend(backend);
  const cfg = resolveModelConfig({
    vocabSize: ARCH.vocab, hiddenSize: ARCH.hidden, intermediateSize: ARCH.intermediate, numLayers: ARCH.layers,
    numHeads: ARCH.heads, numKvHeads: ARCH.kvHeads, maxPositions: 512, tieEmbeddings: true,
  });
  const model = new LlamaModel(cfg, { seed: 0 });
  const rng = new Rng(0);
  const seq = Array.from({ length: ARCH.batch }, () => Array.from({ length: ARCH.seq + 1 }, () => rng.int(ARCH.vocab)));
  const ids = tf.tensor2d(seq.map((s) => s.slice(0, -1)), undefined, 'int32');
  const tg = tf.tensor2d(seq.map((s) => s.slice(1)), undefined, 'int32');
  // The trainers' own optimizer (src/train/optim.ts), as the reference uses torch.optim.AdamW.
  const opt = new AdamW(model.trainableVariables(), { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01 });
  const prompts = seq.map((s) => s.slice(0, ARCH.promptLen));
  const results: Result[] = [];
  for (const c of configs) {
    setNativeKernels(c.native);
    if (c.native && !nativeKernelsActive()) {
      console.log(`  ${c.name}: skipped (${nativeStatus().reason})`);
      continue;
    }
    const attention = c.attention;
    let peak = 0;
    const step = (): void => {
      const { value, grads } = tf.variableGrads(
        () => tf.neg(tf.mean(model.tokenLogProbs(ids, tg, { attention }).logp)) as tf.Scalar,
        model.trainableVariables(),
      );
      opt.apply(model.trainableVariables().map((v) => grads[v.name]), 1e-3);
      value.dataSync();
      tf.dispose([value, ...Object.values(grads)]);
      peak = Math.max(peak, process.memoryUsage().rss);
    };
    const cpuS = (c: NodeJS.CpuUsage): number => (c.user + c.system) / 1e6;
    step(); // warm-up: kernel setup
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < steps; i++) step();
    const trainMs = (performance.now() - t0) / steps;
    const trainCpuS = cpuS(process.cpuUsage(c0)) / steps;

    await sampleGroups(model, prompts, 1, { maxNewTokens: 4, seed: 1 }); // warm-up
    const c1 = process.cpuUsage();
    const t1 = performance.now();
    const out = await sampleGroups(model, prompts, 1, { maxNewTokens: newTokens, seed: 1 });
    const sampleS = (performance.now() - t1) / 1000;
    const sampleCpuS = cpuS(process.cpuUsage(c1));
    const produced = out.reduce((n, g) => n + g[0].tokens.length, 0);
    // Group path: one prompt, 8 samples sharing its prefilled cache.
    const t2 = performance.now();
    const grp = await sampleGroups(model, [prompts[0]], ARCH.batch, { maxNewTokens: newTokens, seed: 2 });
    const groupS = (performance.now() - t2) / 1000;
    const grpTokens = grp[0].reduce((n, s) => n + s.tokens.length, 0);
    peak = Math.max(peak, process.memoryUsage().rss);
    if (profile && c.native) {
      await profileRun(`one training step (${ARCH.batch} x ${ARCH.seq} tokens)`, step);
      await profileRun(`sampling ${ARCH.batch} x ${newTokens} tokens`, async () => {
        await sampleGroups(model, prompts, 1, { maxNewTokens: newTokens, seed: 1 });
      });
    }
    const st = nativeStatus();
    results.push({
      engine: backend === 'wasm' ? c.name : `tfjs-${backend}`,
      trainStepMs: trainMs,
      trainTokensPerSec: (ARCH.batch * ARCH.seq) / (trainMs / 1000),
      sampleTokensPerSec: produced / sampleS,
      trainTokensPerCpuSec: (ARCH.batch * ARCH.seq) / trainCpuS,
      sampleTokensPerCpuSec: produced / sampleCpuS,
      peakRssMiB: peak / 2 ** 20,
      note:
        `group sampling 1x${ARCH.batch}: ${(grpTokens / groupS).toFixed(0)} tok/s; attention ${attention}; matmul ` +
        (st.active ? `native ${st.kernel}, ${st.threads} threads` : backend === 'wasm' ? `XNNPACK, ${wasmThreadCount() ?? 1} wasm threads` : 'tfjs cpu'),
    });
    console.log(`  done ${results.at(-1)!.engine}`);
  }
  setNativeKernels(true);
  tf.dispose([ids, tg]);
  opt.dispose();
  model.dispose();
  return results;
}

export function runTorch(steps: number, newTokens: number, threads: number | undefined, arch: Arch = ARCH): Result | string {
  // AGRO_BENCH_PYTHON: another interpreter with torch (a venv with pip's torch, for instance).
  const py = process.env.AGRO_BENCH_PYTHON ?? '/usr/bin/python3';
  if (!existsSync(py)) return 'reference skipped: /usr/bin/python3 not found';
  const probe = spawnSync(py, ['-c', 'import torch'], { encoding: 'utf8' });
  if (probe.status !== 0) return 'reference skipped: PyTorch is not installed (apt-get install python3-torch libopenblas0-pthread)';
  const script = fileURLToPath(new URL('./_model_ref.py', import.meta.url));
  const r = spawnSync(py, [script, JSON.stringify({ ...arch, steps, newTokens, threads })], { encoding: 'utf8', timeout: 600_000 });
  if (r.status !== 0) return `reference failed: ${(r.stderr || r.stdout).trim().split('\n').at(-1)}`;
  const j = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as {
    torch: string; threads: number; blasInfo: string; blasLibs: string[]; trainStepMs: number;
    trainTokensPerSec: number; sampleTokensPerSec: number; trainTokensPerCpuSec: number; sampleTokensPerCpuSec: number; peakRssMiB: number;
  };
  return {
    engine: `torch-${j.threads}t`,
    trainStepMs: j.trainStepMs,
    trainTokensPerSec: j.trainTokensPerSec,
    sampleTokensPerSec: j.sampleTokensPerSec,
    trainTokensPerCpuSec: j.trainTokensPerCpuSec,
    sampleTokensPerCpuSec: j.sampleTokensPerCpuSec,
    peakRssMiB: j.peakRssMiB,
    note: `torch ${j.torch}, BLAS_INFO=${j.blasInfo}, loaded: ${j.blasLibs.join(' ') || 'none'}`,
  };
}

/** Per engine, the best of each figure over the rounds (peak memory: the largest). */
function keepBest(best: Map<string, Result>, r: Result): void {
  const b = best.get(r.engine);
  if (!b) return void best.set(r.engine, { ...r });
  b.trainStepMs = Math.min(b.trainStepMs, r.trainStepMs);
  b.trainTokensPerSec = Math.max(b.trainTokensPerSec, r.trainTokensPerSec);
  b.sampleTokensPerSec = Math.max(b.sampleTokensPerSec, r.sampleTokensPerSec);
  b.trainTokensPerCpuSec = Math.max(b.trainTokensPerCpuSec, r.trainTokensPerCpuSec);
  b.sampleTokensPerCpuSec = Math.max(b.sampleTokensPerCpuSec, r.sampleTokensPerCpuSec);
  b.peakRssMiB = Math.max(b.peakRssMiB, r.peakRssMiB);
}

export async function run(args: string[]): Promise<void> {
  const steps = Number(flag(args, '--steps', '3'));
  const newTokens = Number(flag(args, '--new-tokens', '128'));
  const rounds = Number(flag(args, '--rounds', '1'));
  const size = flag(args, '--size', 'bench');
  const arch = SIZES[size];
  if (!arch) throw new Error(`bench model: unknown --size '${size}' (have: ${Object.keys(SIZES).join(', ')})`);
  const configs = flag(args, '--configs', 'all') === 'shipped' ? WASM_CONFIGS.slice(0, 1) : WASM_CONFIGS;
  const backends = flag(args, '--backends', 'wasm,cpu').split(',') as BackendName[];
  // Two OpenMP threads on a loaded 2-core machine can take minutes per step: --ref-threads 1 skips them.
  const refThreads = flag(args, '--ref-threads', '1,2').split(',').map(Number);
  console.log(`size ${size}: ${JSON.stringify(arch)}; ${steps} timed training steps; ${newTokens} new tokens per sample; best of ${rounds} rounds`);
  const best = new Map<string, Result>();
  const refNames: string[] = [];
  let refSkipped: string | undefined;
  for (let round = 0; round < rounds; round++) {
    for (const b of backends) {
      // The cpu backend is far slower: one timed step keeps the run short.
      const rs =
        b === 'cpu'
          ? await runTfjs(b, 1, Math.min(newTokens, 32), [{ name: 'tfjs-cpu', native: false, attention: 'fused' }], arch)
          : await runTfjs(b, steps, newTokens, configs, arch, args.includes('--profile') && round === 0);
      for (const r of rs) keepBest(best, r);
    }
    if (!args.includes('--no-ref') && !refSkipped)
      for (const threads of refThreads) {
        const r = runTorch(steps, newTokens, threads, arch);
        if (typeof r === 'string') {
          refSkipped = r;
          console.log(r);
          break;
        }
        if (!refNames.includes(r.engine)) refNames.push(r.engine);
        keepBest(best, r);
      }
    console.log(`\nafter round ${round + 1}/${rounds} (load ${loadavg().map((x) => x.toFixed(1)).join(' ')}):`);
    printTable(best, refNames);
  }
}


/** The table of the best figures so far (printed after every round, so a cut-off run still reports). */
function printTable(best: Map<string, Result>, refNames: string[]): void {
  const all = [...best.values()];
  const refs = all.filter((r) => refNames.includes(r.engine));
  // Ratios against the fastest reference configuration: on a busy 2-core machine two OpenMP
  // threads can be much slower than one.
  const ref = refs.length ? refs.reduce((a, b) => (b.trainTokensPerSec > a.trainTokensPerSec ? b : a)) : undefined;
  const refCpu = refs.find((r) => r.engine === 'torch-1t');
  console.log('\nengine        train ms/step  train tok/s  sample tok/s  tok/cpu-s train  sample  peak RSS MiB  vs torch wall (train / sample)  per cpu-s vs torch-1t');
  for (const r of all) {
    const ratio = ref ? `${(r.trainTokensPerSec / ref.trainTokensPerSec).toFixed(2)}x / ${(r.sampleTokensPerSec / ref.sampleTokensPerSec).toFixed(2)}x` : 'n/a';
    const cpuRatio = refCpu
      ? `${(r.trainTokensPerCpuSec / refCpu.trainTokensPerCpuSec).toFixed(2)}x / ${(r.sampleTokensPerCpuSec / refCpu.sampleTokensPerCpuSec).toFixed(2)}x`
      : 'n/a';
    console.log(
      `${r.engine.padEnd(13)} ${r.trainStepMs.toFixed(0).padStart(13)} ${r.trainTokensPerSec.toFixed(0).padStart(12)} ${r.sampleTokensPerSec.toFixed(0).padStart(13)} ` +
        `${r.trainTokensPerCpuSec.toFixed(0).padStart(15)} ${r.sampleTokensPerCpuSec.toFixed(0).padStart(7)} ${r.peakRssMiB.toFixed(0).padStart(13)}  ${ratio.padEnd(30)}  ${cpuRatio}`,
    );
  }
  for (const r of all) if (r.note) console.log(`  ${r.engine}: ${r.note}`);
  if (ref) console.log(`wall ratios are against ${ref.engine}; CPU-time ratios against torch-1t`);
}
