import { closeSync, constants, fstatSync, fsyncSync, mkdirSync, openSync, readFileSync, readSync, renameSync, writeSync, rmSync, statSync } from 'node:fs';
import { dirname, basename, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { AgroError } from '../errors.ts';

/**
 * A path as printed for the user: relative to the working directory when it lies inside it (short, and a printed
 * command runs from there), else absolute ("../../tmp/run" says less than "/tmp/run").
 */
export function displayPath(p: string): string {
  const r = relative(process.cwd(), p);
  if (r === '') return '.';
  // Outside: `..` or `../…` (a folder named `..x` inside the working directory is inside), or another drive.
  return r === '..' || r.startsWith(`..${sep}`) || isAbsolute(r) ? resolve(p) : r;
}

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

/**
 * The most bytes an input file (a dataset, predictions, a config) may hold: 256 MiB, far above BIRD's
 * train set (~30 MB) and below V8's longest string (~512 MiB), so a file that passes can be decoded.
 */
export const MAX_INPUT_BYTES = 256 * 2 ** 20;

/**
 * Reads a user's input file as UTF-8 with its size bounded: only a regular file is read (a FIFO, a
 * device such as /dev/zero or a directory would never end or never make sense), and never more than
 * `maxBytes`, also for a file that grows while read or says it is empty (/proc). The file is opened
 * non-blocking so that a FIFO without a writer cannot hang the open; its type is checked on the open
 * descriptor, so nothing can swap the file between the check and the read. Errors are one-line AgroErrors:
 * a missing file is not_found, anything else that cannot be read as text invalid_input.
 */
export function readInputText(path: string, what: string, maxBytes = MAX_INPUT_BYTES): string {
  return readInputBytes(path, what, maxBytes).toString('utf8');
}

/**
 * A JSON file read as readInputText reads a file (a checkpoint's config, a tokenizer, a prompt contract): a
 * missing one is not_found, one that does not parse an invalid_input line naming the file. `strictUtf8`: bytes
 * that are not UTF-8 are refused too (invalid_input) rather than read as U+FFFD, for files whose text agro keeps.
 */
export function readJsonFile(path: string, what: string, o: { strictUtf8?: boolean } = {}): unknown {
  let text: string;
  if (o.strictUtf8) {
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(readInputBytes(path, what));
    } catch (err) {
      if (err instanceof AgroError) throw err;
      throw new AgroError('invalid_input', `${what} file ${path} is not valid UTF-8`);
    }
  } else text = readInputText(path, what);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new AgroError('invalid_input', `${what} file ${path} is not valid JSON: ${(err as Error).message}`);
  }
}

/** readInputText's bytes, undecoded (for files that may not be UTF-8: BIRD's description CSVs). */
export function readInputBytes(path: string, what: string, maxBytes = MAX_INPUT_BYTES): Buffer {
  const chunks: Buffer[] = [];
  let total = 0;
  readInputChunks(path, what, (chunk) => { chunks.push(chunk); total += chunk.length; }, maxBytes);
  return Buffer.concat(chunks, total);
}

/**
 * readInputBytes's file, handed over a MiB at a time with the same checks and bounds, for readers that keep
 * less than the whole file (a streaming parse). A chunk is the reader's to keep: it is never reused.
 */
export function readInputChunks(path: string, what: string, onChunk: (chunk: Buffer) => void, maxBytes = MAX_INPUT_BYTES): void {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new AgroError('not_found', `${what} file not found: ${path}`);
    if (code === 'ENOTDIR') throw new AgroError('not_found', `${what} file not found: ${path} (a part of the path is a file)`);
    throw new AgroError('not_found', `cannot read ${what} file ${path}: ${code ?? (err as Error).message}`);
  }
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) throw new AgroError('invalid_input', `${what} path is a directory, not a file: ${path}`);
    if (!st.isFile()) throw new AgroError('invalid_input', `${what} path is not a regular file (a device, FIFO or socket): ${path}`);
    const tooBig = (): AgroError => new AgroError('invalid_input', `${what} file ${path} is larger than ${maxBytes / 2 ** 20} MiB, the most agro reads`);
    if (st.size > maxBytes) throw tooBig();
    let total = 0;
    for (;;) {
      const buf = Buffer.allocUnsafe(Math.min(1 << 20, maxBytes + 1 - total));
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      total += n;
      if (total > maxBytes) throw tooBig();
      onChunk(n === buf.length ? buf : buf.subarray(0, n));
    }
  } catch (err) {
    // The reader's own errors pass through; only the file system's become a one-line message.
    if (err instanceof AgroError || (err as NodeJS.ErrnoException).syscall === undefined) throw err;
    throw new AgroError('invalid_input', `cannot read ${what} file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  } finally {
    closeSync(fd);
  }
}
