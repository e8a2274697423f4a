// `npm run bench -- predict [--ckpt DIR] [--data FILE] [--n 16] [--schema-chars N]`: questions per
// second of `agro predict`, agent vs direct mode, on the TF.js and llama.cpp engines and through
// `agro serve` (an in-process server on TF.js, the client over HTTP), at concurrency 1 and 4, with
// each configuration's peak RSS (its own process). Default: the quickstart's policy and held-out set.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { flag, num } from './_args.ts';

export async function run(args: string[]): Promise<void> {
  const ckpt = flag(args, '--ckpt', 'runs/quickstart/grpo/checkpoints/step-60');
  const data = flag(args, '--data', 'runs/quickstart/held_out.jsonl');
  const n = num(args, '--n', 16);
  // The checkpoint's prompt contract (schema budget, tokens per turn) unless --schema-chars asks another.
  const schemaChars = flag(args, '--schema-chars', '') ? num(args, '--schema-chars', 0) : undefined;
  if (!existsSync(ckpt) || !existsSync(data)) {
    console.log(`predict: needs ${ckpt} and ${data} (run agro quickstart first, or pass --ckpt and --data)`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'agro-bench-predict-'));
  const subset = join(dir, 'dev.jsonl');
  writeFileSync(subset, readFileSync(data, 'utf8').trim().split('\n').slice(0, n).join('\n') + '\n');
  console.log(`${n} questions from ${data}, policy ${ckpt}, greedy, the tokens per turn of its contract; load ${loadavg().map((x) => x.toFixed(2)).join(' ')} (shared machine)`);
  console.log('engine      mode    conc  q/s    EX %   tools/q  peak RSS MB');
  try {
    for (const [engine, serve] of [['tfjs', false], ['llama.cpp', false], ['tfjs', true]] as const) {
      for (const mode of ['agent', 'direct'] as const) {
        for (const concurrency of [1, 4]) {
          const cfg = { ckpt, data: subset, engine, serve, mode, concurrency, schemaChars };
          const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/_predict_one.ts', JSON.stringify(cfg)], { encoding: 'utf8' });
          const name = serve ? 'serve(tfjs)' : engine;
          if (r.status !== 0) {
            console.log(`${name.padEnd(11)} ${mode.padEnd(7)} ${concurrency}     failed: ${r.stderr.trim().split('\n').slice(-1)[0]}`);
            continue;
          }
          const m = JSON.parse(r.stdout.trim().split('\n').slice(-1)[0]) as { qps: number; ex: number; toolCalls: number; peakRssMB: number };
          console.log(`${name.padEnd(11)} ${mode.padEnd(7)} ${String(concurrency).padEnd(5)} ${m.qps.toFixed(2).padEnd(6)} ${m.ex.toFixed(1).padEnd(6)} ${m.toolCalls.toFixed(2).padEnd(8)} ${m.peakRssMB.toFixed(0)}`);
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
