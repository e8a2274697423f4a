import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync, rmSync, statSync } from 'node:fs';
import { dirname, basename, join, relative, resolve } from 'node:path';
import { AgroError } from '../errors.ts';

/** Why a path cannot be used for writing, in words (errno codes a user can act on); undefined for others. */
function writeProblem(err: unknown): string | undefined {
  const code = (err as NodeJS.ErrnoException).code;
  const words: Record<string, string> = {
    ENOTDIR: 'a part of the path is a file, not a directory',
    EEXIST: 'it exists and is not a directory',
    EACCES: 'permission denied',
    EPERM: 'permission denied',
    EROFS: 'read-only file system',
    ENOENT: 'the file system does not allow creating it',
    EISDIR: 'it is a directory',
    ENAMETOOLONG: 'the name is too long',
  };
  return code ? words[code] : undefined;
}

/**
 * Create a directory and its missing parents, one level at a time; returns the directories it made. Not `mkdirSync(..., { recursive: true })`:
 * on a path such as /proc/x (mkdir says ENOENT although the parent exists) that call loops forever.
 * A path that cannot be a directory is a usage error naming it.
 */
export function ensureDir(dir: string): string[] {
  const missing: string[] = [];
  let p = resolve(dir);
  for (;;) {
    let isDir: boolean;
    try {
      isDir = statSync(p).isDirectory();
    } catch (err) {
      // ENOTDIR: a part above is a file; walk up to it and name it below.
      const code = (err as NodeJS.ErrnoException).code;
      if ((code === 'ENOENT' || code === 'ENOTDIR') && dirname(p) !== p) {
        missing.push(p);
        p = dirname(p);
        continue;
      }
      const why = writeProblem(err);
      if (why) throw new AgroError('usage', `cannot create directory ${dir}: ${why}`);
      throw err;
    }
    if (!isDir) throw new AgroError('usage', `cannot create directory ${dir}: ${relative(process.cwd(), p) || p} is a file, not a directory`);
    break;
  }
  const made: string[] = [];
  for (const m of missing.reverse()) {
    try {
      mkdirSync(m);
      made.push(m);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST' && statSync(m).isDirectory()) continue; // made meanwhile
      const why = writeProblem(err);
      if (why) throw new AgroError('usage', `cannot create directory ${dir}: ${why}`);
      throw err;
    }
  }
  return made;
}

/**
 * Write a file so that readers see either the old content or the new, never a half-written file:
 * write to a sibling temp file, fsync, then rename over the target (atomic on POSIX filesystems).
 * `durable: false` skips the fsync: the rename is still atomic for every process, but a power loss
 * may leave an empty or short file, so only for files whose reader checks them and can redo them
 * (a resumable run's checkpoints).
 */
export function writeFileAtomic(path: string, data: string | Uint8Array, opts: { durable?: boolean } = {}): void {
  const dir = dirname(path);
  ensureDir(dir);
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${Date.now()}.tmp`);
  const fd = openSync(tmp, 'w');
  try {
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    let off = 0;
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
    if (opts.durable !== false) fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
  }
  closeSync(fd);
  try {
    renameSync(tmp, path);
  } catch (err) {
    // No temp file is left behind (a directory at `path` makes the rename fail).
    rmSync(tmp, { force: true });
    const why = writeProblem(err);
    if (why) throw new AgroError('usage', `cannot write ${path}: ${why}`);
    throw err;
  }
}

/** Atomic JSON write with a trailing newline, pretty-printed for humans. */
export function writeJsonAtomic(path: string, value: unknown): void {
  writeFileAtomic(path, JSON.stringify(value, null, 2) + '\n');
}

/** Rows of a JSONL file the project wrote itself (blank lines skipped); user-facing readers validate with line numbers. */
export function readJsonl<T>(path: string): T[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);
}
