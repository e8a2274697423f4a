// The agro CLI run as a user runs it, in its own process, for the benchmarks that measure end to end.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../bin/agro.js', import.meta.url));

/**
 * Runs `agro ARGS`; its stdout and wall seconds back. With `log`, the command and all it printed are appended
 * there. A failing command stops the benchmark with its last lines of stderr.
 */
export function agroCli(args: string[], opts: { log?: string } = {}): { stdout: string; seconds: number } {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (opts.log) writeFileSync(opts.log, `$ agro ${args.join(' ')}\n${r.stdout}${r.stderr}\n`, { flag: 'a' });
  if (r.status !== 0) throw new Error(`agro ${args[0]} failed (exit ${r.status})${opts.log ? `; see ${opts.log}` : ''}\n${r.stderr.trim().split('\n').slice(-3).join('\n')}`);
  return { stdout: r.stdout, seconds: (performance.now() - t0) / 1000 };
}
