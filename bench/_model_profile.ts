// `npm run bench -- model --profile`: where one training step and one sampling run spend their time,
// by kernel. Two views: TF.js's profiler (wall time per kernel, every kernel the engine runs,
// including the addon's as registered kernels) and the addon's calls timed in process CPU time
// (what a descheduled process does not accumulate on a shared machine), with the matmuls by shape.
import { createRequire } from 'node:module';
import * as tf from '@tensorflow/tfjs-core';

type AddonFn = (...args: unknown[]) => unknown;
interface Stat {
  calls: number;
  ms: number;
  flop?: number;
}

const cpuMs = (): number => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};

/** Wraps the addon's functions with CPU-time counters; returns the counters and an undo. */
function traceAddon(): { byCall: Map<string, Stat>; byShape: Map<string, Stat>; undo: () => void } {
  // The same module object native.ts loaded (require's cache), so its calls go through the wrappers.
  const addon = createRequire(import.meta.url)('../build/Release/agro_native.node') as Record<string, AddonFn>;
  const byCall = new Map<string, Stat>();
  const byShape = new Map<string, Stat>();
  const saved = new Map<string, AddonFn>();
  const add = (m: Map<string, Stat>, key: string, ms: number, flop?: number): void => {
    const s = m.get(key) ?? { calls: 0, ms: 0, flop: flop === undefined ? undefined : 0 };
    s.calls++;
    s.ms += ms;
    if (flop !== undefined) s.flop = (s.flop ?? 0) + flop;
    m.set(key, s);
  };
  for (const [name, fn] of Object.entries(addon)) {
    if (typeof fn !== 'function' || name === 'info') continue;
    saved.set(name, fn);
    addon[name] = (...args: unknown[]) => {
      const t0 = cpuMs();
      const r = fn.apply(addon, args);
      const ms = cpuMs() - t0;
      add(byCall, name, ms);
      if (name === 'gemm') {
        const [M, N, K, tA, tB, batch] = args.slice(4, 10) as number[];
        add(byShape, `${batch > 1 ? `${batch} x ` : ''}[${M} x ${K}]${tA ? 'ᵀ' : ''} · [${K} x ${N}]${tB ? 'ᵀ' : ''}`, ms, 2 * M * N * K * batch);
      }
      return r;
    };
  }
  return { byCall, byShape, undo: () => saved.forEach((fn, name) => (addon[name] = fn)) };
}

/** Runs `work` once under both views and prints the tables. */
export async function profileRun(title: string, work: () => Promise<void> | void, top = 14): Promise<void> {
  const trace = traceAddon();
  const c0 = cpuMs();
  const t0 = performance.now();
  let info: Awaited<ReturnType<typeof tf.profile>>;
  try {
    info = await tf.profile(async () => {
      await work();
    });
  } finally {
    trace.undo();
  }
  const wall = performance.now() - t0;
  const cpu = cpuMs() - c0;
  const kernels = new Map<string, Stat>();
  for (const k of info.kernels) {
    if (k.name === 'forward') continue; // customGrad's wrapper: its kernels are listed themselves
    const s = kernels.get(k.name) ?? { calls: 0, ms: 0 };
    s.calls++;
    s.ms += k.kernelTimeMs as number;
    kernels.set(k.name, s);
  }
  const sorted = (m: Map<string, Stat>): [string, Stat][] => [...m].sort((a, b) => b[1].ms - a[1].ms);
  const addonCpu = [...trace.byCall.values()].reduce((a, s) => a + s.ms, 0);
  console.log(`\nprofile: ${title}: ${wall.toFixed(0)} ms wall, ${cpu.toFixed(0)} ms CPU (profiling included)`);
  console.log(`  addon calls, CPU ms (${addonCpu.toFixed(0)} of ${cpu.toFixed(0)}; the rest is TF.js's own kernels and JS):`);
  for (const [name, s] of sorted(trace.byCall))
    console.log(`    ${name.padEnd(22)} ${s.ms.toFixed(1).padStart(8)}  ${((100 * s.ms) / cpu).toFixed(1).padStart(5)}%  ${String(s.calls).padStart(5)} calls`);
  console.log('  matmuls by shape, CPU ms:');
  for (const [shape, s] of sorted(trace.byShape).slice(0, top))
    console.log(`    ${shape.padEnd(34)} ${s.ms.toFixed(1).padStart(8)}  ${String(s.calls).padStart(5)} calls  ${((s.flop ?? 0) / s.ms / 1e6).toFixed(1).padStart(6)} GFLOP/s`);
  console.log('  TF.js kernels, wall ms:');
  for (const [name, s] of sorted(kernels).slice(0, top))
    console.log(`    ${name.padEnd(26)} ${s.ms.toFixed(1).padStart(8)}  ${String(s.calls).padStart(5)} calls`);
}
