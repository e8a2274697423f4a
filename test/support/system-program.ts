/**
 * Tests that need a program from the system (Debian's chromium, PostgreSQL's server) ask here first.
 * Present: they run. Missing on a developer's machine: they are skipped with one line naming the Debian
 * package to install, so `npm install && npm test` passes anywhere. Missing under CI=true: the tests run
 * anyway and fail on the missing program, because CI must run every test (`.ci/run` installs them).
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

export interface SystemProgram {
  /** The executable found (absolute path), or null. */
  path: string | null;
  /** For `test(name, { skip }, fn)` / `describe(name, { skip }, fn)`: false when the tests must run. */
  skip: string | false;
}

function executable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Finds `program` (an absolute path, or a name looked up on PATH and in `extraDirs`). */
export function findProgram(program: string, extraDirs: string[] = []): string | null {
  if (program.includes('/')) return executable(program) ? program : null;
  const dirs = [...(process.env.PATH ?? '').split(delimiter), ...extraDirs].filter(Boolean);
  for (const d of dirs) if (executable(join(d, program))) return join(d, program);
  return null;
}

const said = new Set<string>();

/**
 * What a test file needs from the system: `needs('chromium', '/usr/bin/chromium', 'the dashboard browser tests')`.
 * Prints the skip line once per package and process.
 */
export function needsProgram(pkg: string, program: string, what: string, extraDirs: string[] = []): SystemProgram {
  const path = findProgram(program, extraDirs);
  if (path) return { path, skip: false };
  const line = `${what}: ${program} not found; install Debian's ${pkg} (apt-get install ${pkg}) to run them`;
  if (process.env.CI === 'true') {
    if (!said.has(pkg)) console.error(`CI=true: ${line}; running them anyway, so they fail`);
    said.add(pkg);
    return { path: null, skip: false };
  }
  if (!said.has(pkg)) console.log(`SKIP ${line}`);
  said.add(pkg);
  return { path: null, skip: `needs ${pkg} (apt-get install ${pkg})` };
}
