import { spawn } from 'node:child_process';

/**
 * A Python script run to its end with a bare environment (PATH, no bytecode files, and `env`): its exit code and
 * its stdout and stderr together, in the order written (what the integration tests assert on).
 */
export function runPython(python: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const p = spawn(python, args, { env: { PATH: process.env.PATH ?? '', PYTHONDONTWRITEBYTECODE: '1', ...env } });
  let out = '';
  p.stdout.on('data', (d) => (out += d));
  p.stderr.on('data', (d) => (out += d));
  return new Promise((r) => p.on('close', (code) => r({ code, out })));
}
