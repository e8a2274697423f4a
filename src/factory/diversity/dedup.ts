/**
 * Three levels of duplicate: the same SQL once normalized; the same skeleton (literals masked)
 * with the same result on the database; and near-duplicate questions (word-shingle Jaccard,
 * estimated by MinHash with LSH banding, confirmed exactly). The first occurrence wins.
 */
import { normalizeSql, sqlSkeleton } from '../../sql/features.ts';
import { fnv1aSeeds } from '../../util/hash.ts';
import { words } from './text-embed.ts';

export interface DedupItem {
  id: string;
  /** Items only collide within the same database. */
  dbId?: string;
  sql: string;
  question: string;
  /** Hash of the query's result; skeleton duplicates need an equal fingerprint. */
  resultFingerprint?: string;
}

export type DuplicateReason = 'exact_sql' | 'skeleton_result' | 'near_question';

export interface DedupOptions {
  /** Jaccard at or above which two questions are duplicates. Default 0.8. */
  questionThreshold?: number;
  /** Words per shingle. Default 2 (questions are short). */
  shingle?: number;
  /** MinHash signature length = bands × rows. Defaults 16 × 4. */
  bands?: number;
  rows?: number;
}

export interface DedupResult<T> {
  kept: T[];
  dropped: Array<{ item: T; reason: DuplicateReason; duplicateOf: string }>;
}

export function shingles(text: string, k: number): Set<string> {
  const w = words(text);
  const out = new Set<string>();
  if (w.length === 0) return out;
  if (w.length < k) {
    out.add(w.join(' '));
    return out;
  }
  for (let i = 0; i + k <= w.length; i++) out.add(w.slice(i, i + k).join(' '));
  return out;
}

export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  let inter = 0;
  for (const x of a) if (b.has(x)) inter++;
  return inter / (a.size + b.size - inter);
}

export function minhash(set: ReadonlySet<string>, size: number): Uint32Array {
  const sig = new Uint32Array(size).fill(0xffffffff);
  const h = new Uint32Array(size);
  for (const s of set) {
    // h[i] = fnv1a(s, i + 1), all in one pass over s.
    fnv1aSeeds(s, h);
    for (let i = 0; i < size; i++) if (h[i] < sig[i]) sig[i] = h[i];
  }
  return sig;
}

export function dedup<T extends DedupItem>(items: readonly T[], opts: DedupOptions = {}): DedupResult<T> {
  const threshold = opts.questionThreshold ?? 0.8;
  const k = opts.shingle ?? 2;
  const bands = opts.bands ?? 16;
  const rows = opts.rows ?? 4;
  const kept: T[] = [];
  const dropped: DedupResult<T>['dropped'] = [];
  const bySql = new Map<string, string>();
  const bySkeleton = new Map<string, string>();
  const buckets = new Map<string, number[]>();
  const keptShingles: Array<Set<string>> = [];

  for (const item of items) {
    const db = item.dbId ?? '';
    const sqlKey = `${db}\u0000${normalizeSql(item.sql)}`;
    const first = bySql.get(sqlKey);
    if (first !== undefined) {
      dropped.push({ item, reason: 'exact_sql', duplicateOf: first });
      continue;
    }
    let skelKey: string | undefined;
    if (item.resultFingerprint !== undefined) {
      skelKey = `${db}\u0000${sqlSkeleton(item.sql)}\u0000${item.resultFingerprint}`;
      const f = bySkeleton.get(skelKey);
      if (f !== undefined) {
        dropped.push({ item, reason: 'skeleton_result', duplicateOf: f });
        continue;
      }
    }
    const sh = shingles(item.question, k);
    const sig = minhash(sh, bands * rows);
    const bandKeys: string[] = [];
    for (let b = 0; b < bands; b++) bandKeys.push(`${db}\u0000${b}\u0000${Array.from(sig.subarray(b * rows, (b + 1) * rows)).join(',')}`);
    let near: number | undefined;
    if (sh.size > 0) {
      const seen = new Set<number>();
      for (const key of bandKeys) {
        for (const c of buckets.get(key) ?? []) {
          if (seen.has(c)) continue;
          seen.add(c);
          if (jaccard(sh, keptShingles[c]) >= threshold) {
            near = c;
            break;
          }
        }
        if (near !== undefined) break;
      }
    }
    if (near !== undefined) {
      dropped.push({ item, reason: 'near_question', duplicateOf: kept[near].id });
      continue;
    }
    const idx = kept.length;
    kept.push(item);
    keptShingles.push(sh);
    bySql.set(sqlKey, item.id);
    if (skelKey) bySkeleton.set(skelKey, item.id);
    if (sh.size > 0) for (const key of bandKeys) buckets.set(key, [...(buckets.get(key) ?? []), idx]);
  }
  return { kept, dropped };
}
