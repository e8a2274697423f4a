// `npm run bench -- model [--steps N] [--backends wasm,cpu] [--new-tokens N] [--no-ref]`
// Side by side in one run, same architecture (4 layers, 128 wide, GQA 4/2 heads, vocab 4096,
// tied embeddings; batch 8 x 128 tokens): training tokens/s (forward + backward + AdamW step) and
// sampling tokens/s (KV cache, batch 8, 16-token prompts) of the built-in engine, and of a PyTorch
// reference (bench/_model_ref.py) run by /usr/bin/python3 when torch is installed. On wasm the
// engine runs in three configurations in the same process: as shipped (native matmul + fused
// attention kernel), without the native matmul, and with neither (the engine before the kernels).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
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

export const ARCH = { vocab: 4096, hidden: 128, intermediate: 344, layers: 4, heads: 4, kvHeads: 2, batch: 8, seq: 128, promptLen: 16 };

export interface Result {
  engine: string;
  trainStepMs: number;
  trainTokensPerSec: number;
  sampleTokensPerSec: number;
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

async function runTfjs(backend: BackendName, steps: number, newTokens: number, configs: EngineConfig[]): Promise<Result[]> {
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
  // The trainers' own optimizer (src/rl/sft.ts), as the reference uses torch.optim.AdamW.
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
    step(); // warm-up: kernel setup
    const t0 = performance.now();
    for (let i = 0; i < steps; i++) step();
    const trainMs = (performance.now() - t0) / steps;

    await sampleGroups(model, prompts, 1, { maxNewTokens: 4, seed: 1 }); // warm-up
    const t1 = performance.now();
    const out = await sampleGroups(model, prompts, 1, { maxNewTokens: newTokens, seed: 1 });
    const sampleS = (performance.now() - t1) / 1000;
    const produced = out.reduce((n, g) => n + g[0].tokens.length, 0);
    // Group path: one prompt, 8 samples sharing its prefilled cache.
    const t2 = performance.now();
    const grp = await sampleGroups(model, [prompts[0]], ARCH.batch, { maxNewTokens: newTokens, seed: 2 });
    const groupS = (performance.now() - t2) / 1000;
    const grpTokens = grp[0].reduce((n, s) => n + s.tokens.length, 0);
    peak = Math.max(peak, process.memoryUsage().rss);
    const st = nativeStatus();
    results.push({
      engine: backend === 'wasm' ? c.name : `tfjs-${backend}`,
      trainStepMs: trainMs,
      trainTokensPerSec: (ARCH.batch * ARCH.seq) / (trainMs / 1000),
      sampleTokensPerSec: produced / sampleS,
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

export function runTorch(steps: number, newTokens: number, threads: number | undefined): Result | string {
  const py = '/usr/bin/python3';
  if (!existsSync(py)) return 'reference skipped: /usr/bin/python3 not found';
  const probe = spawnSync(py, ['-c', 'import torch'], { encoding: 'utf8' });
  if (probe.status !== 0) return 'reference skipped: PyTorch is not installed (apt-get install python3-torch libopenblas0-pthread)';
  const script = fileURLToPath(new URL('./_model_ref.py', import.meta.url));
  const r = spawnSync(py, [script, JSON.stringify({ ...ARCH, steps, newTokens, threads })], { encoding: 'utf8', timeout: 600_000 });
  if (r.status !== 0) return `reference failed: ${(r.stderr || r.stdout).trim().split('\n').at(-1)}`;
  const j = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as {
    torch: string; threads: number; blasInfo: string; blasLibs: string[]; trainStepMs: number;
    trainTokensPerSec: number; sampleTokensPerSec: number; peakRssMiB: number;
  };
  return {
    engine: `torch-${j.threads}t`,
    trainStepMs: j.trainStepMs,
    trainTokensPerSec: j.trainTokensPerSec,
    sampleTokensPerSec: j.sampleTokensPerSec,
    peakRssMiB: j.peakRssMiB,
    note: `torch ${j.torch}, BLAS_INFO=${j.blasInfo}, loaded: ${j.blasLibs.join(' ') || 'none'}`,
  };
}

export async function run(args: string[]): Promise<void> {
  const steps = Number(flag(args, '--steps', '3'));
  const newTokens = Number(flag(args, '--new-tokens', '128'));
  const backends = flag(args, '--backends', 'wasm,cpu').split(',') as BackendName[];
  console.log(`architecture: ${JSON.stringify(ARCH)}; ${steps} timed training steps; ${newTokens} new tokens per sample`);
  const results: Result[] = [];
  for (const b of backends) {
    // The cpu backend is far slower: one timed step keeps the run short.
    if (b === 'cpu') results.push(...(await runTfjs(b, 1, Math.min(newTokens, 32), [{ name: 'tfjs-cpu', native: false, attention: 'fused' }])));
    else results.push(...(await runTfjs(b, steps, newTokens, WASM_CONFIGS)));
  }
  const refs: Result[] = [];
  if (!args.includes('--no-ref'))
    for (const threads of [1, 2]) {
      const r = runTorch(steps, newTokens, threads);
      if (typeof r === 'string') {
        console.log(r);
        break;
      }
      if (!refs.some((x) => x.engine === r.engine)) refs.push(r);
    }
  const all = [...results, ...refs];
  // Ratios against the fastest reference configuration: on a busy 2-core machine two OpenMP
  // threads can be much slower than one.
  const ref = refs.length ? refs.reduce((a, b) => (b.trainTokensPerSec > a.trainTokensPerSec ? b : a)) : undefined;
  console.log('\nengine        train ms/step  train tok/s  sample tok/s  peak RSS MiB  vs torch (train / sample)');
  for (const r of all) {
    const ratio = ref ? `${(r.trainTokensPerSec / ref.trainTokensPerSec).toFixed(2)}x / ${(r.sampleTokensPerSec / ref.sampleTokensPerSec).toFixed(2)}x` : 'n/a';
    console.log(
      `${r.engine.padEnd(13)} ${r.trainStepMs.toFixed(0).padStart(13)} ${r.trainTokensPerSec.toFixed(0).padStart(12)} ${r.sampleTokensPerSec.toFixed(0).padStart(13)} ${r.peakRssMiB.toFixed(0).padStart(13)}  ${ratio}`,
    );
  }
  for (const r of all) if (r.note) console.log(`  ${r.engine}: ${r.note}`);
  if (ref) console.log(`ratios are against ${ref.engine}`);
}
