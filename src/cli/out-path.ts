/**
 * Output paths are checked before a command does any work: a run that would fail at its last write
 * (after minutes of queries or training) fails at once instead, and no command writes over its input.
 */
import { closeSync, existsSync, openSync, realpathSync, rmdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { AgroError } from '../errors.ts';
import { ensureDir } from '../util/fs.ts';

/** An input of the command: the flag that named it and its path. */
export interface NamedPath {
  flag: string;
  path: string;
}

/** Same file or directory: by device and inode when both exist (hard links, symlinks), else by resolved path. */
function samePath(a: string, b: string): boolean {
  try {
    const [x, y] = [statSync(a), statSync(b)];
    return x.dev === y.dev && x.ino === y.ino;
  } catch {
    const real = (p: string): string => (existsSync(p) ? realpathSync(p) : resolve(p));
    return real(a) === real(b);
  }
}

function refuseInputs(out: NamedPath, inputs: readonly NamedPath[]): void {
  for (const input of inputs) {
    if (samePath(out.path, input.path)) {
      throw new AgroError('usage', `${out.flag} ${out.path} is the same path as ${input.flag}: the command would write over its own input`);
    }
  }
}

/** Create and remove a probe file in `dir`. */
function probeWritable(flag: string, dir: string): void {
  const probe = join(dir, `.agro-write-check-${process.pid}`);
  try {
    closeSync(openSync(probe, 'wx'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new AgroError('usage', `${flag}: cannot write in ${dir} (${code})`);
  } finally {
    rmSync(probe, { force: true });
  }
}

function asUsage(flag: string, fn: () => void): void {
  try {
    fn();
  } catch (err) {
    if (err instanceof AgroError) throw new AgroError(err.kind, `${flag}: ${err.message}`);
    throw err;
  }
}

/**
 * Creating the directory and a file in it is the only check that holds everywhere (/proc says ENOENT
 * to mkdir; access() says yes to root). What the check created is removed again: a command that then
 * fails on its input leaves nothing behind.
 */
function checkWritableDir(flag: string, dir: string): void {
  let made: string[] = [];
  try {
    asUsage(flag, () => {
      made = ensureDir(dir);
    });
    probeWritable(flag, dir);
  } finally {
    for (const d of made.reverse()) rmdirSync(d);
  }
}

/** An output directory: it can be created (or is a directory), is writable, and is not one of the inputs. */
export function prepareOutDir(out: NamedPath, inputs: readonly NamedPath[] = []): void {
  refuseInputs(out, inputs);
  if (existsSync(out.path) && !statSync(out.path).isDirectory()) {
    throw new AgroError('usage', `${out.flag} ${out.path} is a file; give a directory`);
  }
  checkWritableDir(out.flag, out.path);
}

/** An output file: not a directory, not one of the inputs, in a directory that exists (created now) and is writable. */
export function prepareOutFile(out: NamedPath, inputs: readonly NamedPath[] = []): void {
  refuseInputs(out, inputs);
  if (existsSync(out.path) && statSync(out.path).isDirectory()) {
    throw new AgroError('usage', `${out.flag} ${out.path} is a directory; give a file name`);
  }
  checkWritableDir(out.flag, dirname(out.path));
}
