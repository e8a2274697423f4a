/**
 * What a dashboard folder holds, found by walking it (TensorBoard-style: no configuration): training runs
 * (a metrics.jsonl), factory outputs (manifest.json + dataset.jsonl), evaluation reports (`agro eval --out`
 * files), a quickstart's prediction files, and checkpoints. Every id is a path relative to the folder, and
 * a request may only name an id this scan returned, so no request reaches outside the folder. The walk
 * is bounded: it visits each real folder once (symlink loops end at once), never follows a symlink, file
 * or folder, out of the folder (realpath), and stops after MAX_ENTRIES names or MAX_WALK_MS.
 * GGUF files (`agro export gguf` output, or any model copied in) are found by name; the policy loader
 * checks the file itself when one is asked.
 */
import { closeSync, lstatSync, openSync, readdirSync, readSync, realpathSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

/** Folders never worth descending into: model weights, variant databases, the factory's work files. */
const SKIP = new Set(['node_modules', 'checkpoints', 'variants', '.work', '.git']);
const MAX_DEPTH = 6;
/** Bounds of one walk: a huge or hostile folder lists what was found so far instead of blocking the server. */
export const MAX_ENTRIES = 200_000;
export const MAX_WALK_MS = 2000;

export interface FoundRun {
  id: string;
  dir: string;
  kind: 'sft' | 'grpo' | 'run';
}
export interface FoundDataset {
  id: string;
  dir: string;
}
export interface FoundEval {
  id: string;
  /** A report file, or a predictions.json with the quickstart's held_out.jsonl beside its parent. */
  file: string;
  source: 'report' | 'predictions';
}
export interface FoundCheckpoint {
  /** Relative path of the checkpoint directory. */
  id: string;
  dir: string;
  run: string;
  step: number;
}
export interface FoundGguf {
  /** Relative path of the file. */
  id: string;
  file: string;
}
export interface FolderScan {
  root: string;
  runs: FoundRun[];
  datasets: FoundDataset[];
  evals: FoundEval[];
  /** The newest checkpoint of each run. */
  checkpoints: FoundCheckpoint[];
  ggufs: FoundGguf[];
  /** True when the walk stopped at MAX_ENTRIES or MAX_WALK_MS. */
  truncated?: boolean;
}

/** Whether `real` (a real path) is `realRoot` or inside it. */
export const within = (realRoot: string, real: string): boolean => real === realRoot || real.startsWith(realRoot.endsWith(sep) ? realRoot : realRoot + sep);

/** The real path of `p` when it is inside `realRoot` (a symlink may point anywhere), else undefined. */
export function realInside(realRoot: string, p: string): string | undefined {
  try {
    const real = realpathSync(p);
    return within(realRoot, real) ? real : undefined;
  } catch {
    return undefined;
  }
}

export const relId = (root: string, p: string): string => relative(root, p).split(sep).join('/') || '.';

/** The first bytes of a file: enough to tell an eval report from other JSON without parsing it. */
function head(file: string, n = 64): string {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(n);
    return buf.subarray(0, readSync(fd, buf, 0, n, 0)).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** `agro eval --out` writes `{ "version": 1, "data": ...` first (writeJsonAtomic keeps key order). */
function isEvalReport(file: string): boolean {
  try {
    return /^\{\s*"version":\s*1,\s*"data":/.test(head(file));
  } catch {
    return false;
  }
}

function newestCheckpoint(realRoot: string, runDir: string): { dir: string; step: number } | null {
  const ck = join(runDir, 'checkpoints');
  if (!realInside(realRoot, ck)) return null;
  let best: { dir: string; step: number } | null = null;
  for (const name of readdirSync(ck)) {
    const m = /^step-(\d+)$/.exec(name);
    if (!m || !realInside(realRoot, join(ck, name, 'config.json'))) continue;
    const step = Number(m[1]);
    if (!best || step > best.step) best = { dir: join(ck, name), step };
  }
  return best;
}

export function scanFolder(root: string, limits: { maxEntries?: number; maxMs?: number } = {}): FolderScan {
  const out: FolderScan = { root, runs: [], datasets: [], evals: [], checkpoints: [], ggufs: [] };
  let realRoot: string;
  try {
    realRoot = realpathSync(root);
  } catch {
    return out;
  }
  const seen = new Set<string>();
  const maxEntries = limits.maxEntries ?? MAX_ENTRIES;
  const deadline = Date.now() + (limits.maxMs ?? MAX_WALK_MS);
  let entries = 0;
  const walk = (dir: string, depth: number): void => {
    const real = realInside(realRoot, dir);
    // A folder seen already (a symlink loop, or a second link to it) or outside the root: not again.
    if (real === undefined || seen.has(real)) return;
    seen.add(real);
    if (entries > maxEntries || Date.now() > deadline) {
      out.truncated = true;
      return;
    }
    let all: string[];
    try {
      all = readdirSync(dir).sort();
    } catch {
      return;
    }
    entries += all.length;
    // A symlink out of the folder is as if it were not there.
    const names = all.filter((name) => {
      try {
        return !lstatSync(join(dir, name)).isSymbolicLink() || realInside(realRoot, join(dir, name)) !== undefined;
      } catch {
        return false;
      }
    });
    const has = new Set(names);
    const id = relId(root, dir);
    if (has.has('metrics.jsonl')) {
      const kind = has.has('train_config.json') ? 'grpo' : has.has('sft_config.json') ? 'sft' : 'run';
      out.runs.push({ id, dir, kind });
      const ck = newestCheckpoint(realRoot, dir);
      if (ck) out.checkpoints.push({ id: relId(root, ck.dir), dir: ck.dir, run: id, step: ck.step });
    }
    if (has.has('manifest.json') && has.has('dataset.jsonl')) out.datasets.push({ id, dir });
    if (has.has('predictions.json') && dir !== root && realInside(realRoot, join(dir, '..', 'held_out.jsonl'))) {
      out.evals.push({ id: relId(root, join(dir, 'predictions.json')), file: join(dir, 'predictions.json'), source: 'predictions' });
    }
    for (const name of names) {
      const p = join(dir, name);
      if (name.endsWith('.json') && name !== 'predictions.json' && isEvalReport(p)) out.evals.push({ id: relId(root, p), file: p, source: 'report' });
      else if (/\.gguf$/i.test(name)) out.ggufs.push({ id: relId(root, p), file: p });
    }
    if (depth >= MAX_DEPTH) return;
    for (const name of names) {
      if (SKIP.has(name) || name.startsWith('.')) continue;
      const p = join(dir, name);
      try {
        if (statSync(p).isDirectory()) walk(p, depth + 1);
      } catch {
        // A file removed while walking: skip it.
      }
    }
  };
  walk(root, 0);
  return out;
}
