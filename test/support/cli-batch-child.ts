// The child of cli-batch.ts: runs the CLI's main() once for each argv of the file named first, one after another,
// and writes each run's exit code, stdout and stderr to the file named second (after each run, so a run that
// hangs still leaves the runs before it).
import { readFileSync, writeFileSync } from 'node:fs';
import { main } from '../../src/cli/main.ts';

const [input, output, bin] = process.argv.slice(2);
const runs = JSON.parse(readFileSync(input, 'utf8')) as string[][];
const results: Array<{ status: number; stdout: string; stderr: string; ms: number }> = [];
const realOut = process.stdout.write.bind(process.stdout);
const realErr = process.stderr.write.bind(process.stderr);
type Write = typeof process.stdout.write;
/** A stream's write that appends to `sink` (and calls back as the real one would). */
const capture = (sink: (s: string) => void): Write =>
  ((chunk: string | Uint8Array, enc?: unknown, cb?: unknown) => {
    sink(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    const done = typeof enc === 'function' ? enc : cb;
    if (typeof done === 'function') process.nextTick(done as () => void);
    return true;
  }) as Write;
for (const args of runs) {
  let stdout = '';
  let stderr = '';
  process.stdout.write = capture((s) => (stdout += s));
  process.stderr.write = capture((s) => (stderr += s));
  // Each run starts as a process does: no exit code set by the run before.
  process.exitCode = undefined;
  const t0 = performance.now();
  let status: number;
  try {
    status = await main([process.execPath, bin, ...args]);
  } finally {
    process.stdout.write = realOut;
    process.stderr.write = realErr;
  }
  results.push({ status, stdout, stderr, ms: performance.now() - t0 });
  writeFileSync(output, JSON.stringify(results));
}
// What a run left open (a pool, a timer) would keep the process alive; each real run ends its own process.
process.exit(0);
