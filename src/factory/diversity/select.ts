/**
 * Subset selection that covers the embedding space: k-center greedy (farthest point first, a
 * 2-approximation of the minimax cover) with per-group quotas, and a cluster-balanced
 * alternative (k-means, then round-robin over clusters, nearest-to-centroid first). Pure and
 * deterministic for a seed.
 */
import { Rng } from '../../util/rng.ts';
import { sqDist } from './embed.ts';

export type SelectionMethod = 'kcenter' | 'cluster';

export interface SelectOptions {
  seed?: number;
  /** Group label per vector (e.g. difficulty); needed when `mix` is given. */
  groups?: readonly string[];
  /** Wanted share of each group, e.g. { simple: 0.3, moderate: 0.5, challenging: 0.2 }. */
  mix?: Readonly<Record<string, number>>;
}

/**
 * Turn shares into whole quotas summing to n (largest remainder), capped by what each group has;
 * the shortfall of a small group goes to the others in proportion to their shares.
 */
export function quotasFor(n: number, mix: Readonly<Record<string, number>>, available: Readonly<Record<string, number>>): Record<string, number> {
  const names = Object.keys(mix).filter((g) => mix[g] > 0 && (available[g] ?? 0) > 0).sort();
  const quota: Record<string, number> = Object.fromEntries(names.map((g) => [g, 0]));
  let left = Math.min(n, names.reduce((s, g) => s + available[g], 0));
  let open = names.slice();
  while (left > 0 && open.length > 0) {
    const total = open.reduce((s, g) => s + mix[g], 0);
    const raw = open.map((g) => ({ g, x: (left * mix[g]) / total }));
    const give = raw.map((r) => ({ g: r.g, n: Math.floor(r.x), rem: r.x - Math.floor(r.x) }));
    let rest = left - give.reduce((s, r) => s + r.n, 0);
    for (const r of [...give].sort((a, b) => b.rem - a.rem || (a.g < b.g ? -1 : 1))) {
      if (rest <= 0) break;
      r.n++;
      rest--;
    }
    let placed = 0;
    for (const r of give) {
      const room = available[r.g] - quota[r.g];
      const take = Math.min(room, r.n);
      quota[r.g] += take;
      placed += take;
    }
    left -= placed;
    open = open.filter((g) => quota[g] < available[g]);
    if (placed === 0) break;
  }
  return quota;
}

/** Farthest-point selection of `k` indices, honoring quotas per group when a mix is given. */
export function kCenterGreedy(vectors: readonly ArrayLike<number>[], k: number, opts: SelectOptions = {}): number[] {
  const n = vectors.length;
  k = Math.min(k, n);
  if (k <= 0) return [];
  const rng = new Rng(opts.seed ?? 0);
  const quota = groupQuotas(n, k, opts);
  // Groups as small integers: the pick loop asks whether a point's group is full n times per pick.
  const groupOf = new Int32Array(n);
  const room: number[] = [];
  if (quota) {
    const ids = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      const g = opts.groups![i];
      let id = ids.get(g);
      if (id === undefined) {
        id = ids.size;
        ids.set(g, id);
        room.push(quota[g] ?? 0);
      }
      groupOf[i] = id;
    }
  } else room.push(Infinity);
  const minDist = new Float64Array(n).fill(Infinity);
  const chosen: number[] = [];
  const picked = new Uint8Array(n);
  // The n·k distances are the whole cost. The vectors are mostly zeros (hashed words, structure
  // features), so each is kept as its nonzero entries in index order (one flat typed array for all), and
  // a distance is summed over the union of two vectors' entries, in index order: the terms it skips are
  // 0 - 0, and adding +0 changes no float, so every distance is the dense sum's to the last bit. A sum
  // already at the point's nearest-center distance stops early (its terms are never negative).
  let dim = 0;
  const start = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) {
    const v = vectors[i];
    let nz = 0;
    for (let t = 0; t < v.length; t++) if (v[t] !== 0) nz++;
    start[i + 1] = start[i] + nz;
    if (v.length > dim) dim = v.length;
  }
  const at = new Int32Array(start[n]);
  const val = new Float64Array(start[n]);
  const norm = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const v = vectors[i];
    let e = start[i];
    for (let t = 0; t < v.length; t++) {
      if (v[t] === 0) continue;
      at[e] = t;
      val[e++] = v[t];
      norm[i] += v[t] * v[t];
    }
  }
  // Most comparisons move nothing: the new center is farther than the point's nearest one. That is known
  // first from |x|² + |c|² - 2·x·c, a dot product over the point's entries alone against the center laid out
  // densely; only where it comes within a margin far wider than the rounding of either sum is the exact
  // distance summed as above, so the kept distances, and the picks, are the same to the last bit.
  const dense = new Float64Array(dim);
  const pick = (i: number): void => {
    chosen.push(i);
    picked[i] = 1;
    room[groupOf[i]]--;
    const a0 = start[i];
    const a1 = start[i + 1];
    for (let p = a0; p < a1; p++) dense[at[p]] = val[p];
    const ni = norm[i];
    for (let j = 0; j < n; j++) {
      if (picked[j]) continue;
      const b0 = start[j];
      const b1 = start[j + 1];
      const best = minDist[j];
      if (best !== Infinity) {
        let dot = 0;
        for (let q = b0; q < b1; q++) dot += val[q] * dense[at[q]];
        const nj = norm[j];
        if (ni + nj - 2 * dot > best + 1e-9 * (ni + nj)) continue;
      }
      let p = a0;
      let q = b0;
      let d = 0;
      while (d < best) {
        let x: number;
        if (p < a1 && q < b1) {
          const ta = at[p];
          const tb = at[q];
          if (ta === tb) x = val[p++] - val[q++];
          else if (ta < tb) x = val[p++];
          else x = -val[q++];
        } else if (p < a1) x = val[p++];
        else if (q < b1) x = -val[q++];
        else break;
        d += x * x;
      }
      if (d < best) minDist[j] = d;
    }
    for (let p = a0; p < a1; p++) dense[at[p]] = 0;
  };
  const firstPool = [...Array(n).keys()].filter((j) => room[groupOf[j]] > 0);
  pick(firstPool[rng.int(firstPool.length)]);
  while (chosen.length < k) {
    let best = -1;
    let bestD = -1;
    for (let j = 0; j < n; j++) {
      if (picked[j] || room[groupOf[j]] <= 0) continue;
      // Ties (e.g. exact duplicates of chosen points at distance 0) go to the lowest index.
      if (minDist[j] > bestD) {
        bestD = minDist[j];
        best = j;
      }
    }
    if (best < 0) break;
    pick(best);
  }
  return chosen;
}

function groupQuotas(n: number, k: number, opts: SelectOptions): Record<string, number> | null {
  if (!opts.mix) return null;
  if (!opts.groups || opts.groups.length !== n) throw new RangeError('a mix needs one group label per vector');
  const available: Record<string, number> = {};
  for (const g of opts.groups) available[g] = (available[g] ?? 0) + 1;
  return quotasFor(k, opts.mix, available);
}

/** Lloyd's k-means with k-means++ seeding; returns the cluster of each vector and the centroids. */
export function kMeans(vectors: readonly ArrayLike<number>[], k: number, opts: { seed?: number; iterations?: number } = {}): { assign: number[]; centroids: Float64Array[] } {
  const n = vectors.length;
  k = Math.max(1, Math.min(k, n));
  const dim = n > 0 ? vectors[0].length : 0;
  const rng = new Rng(opts.seed ?? 0);
  const centroids: Float64Array[] = [Float64Array.from(vectors[rng.int(n)])];
  const d2 = new Float64Array(n).fill(Infinity);
  while (centroids.length < k) {
    const last = centroids[centroids.length - 1];
    let total = 0;
    for (let i = 0; i < n; i++) {
      d2[i] = Math.min(d2[i], sqDist(vectors[i], last));
      total += d2[i];
    }
    if (total === 0) break; // fewer distinct points than k
    let r = rng.next() * total;
    let idx = n - 1;
    for (let i = 0; i < n; i++) {
      r -= d2[i];
      if (r <= 0) {
        idx = i;
        break;
      }
    }
    centroids.push(Float64Array.from(vectors[idx]));
  }
  const assign = new Array<number>(n).fill(-1);
  for (let it = 0; it < (opts.iterations ?? 25); it++) {
    let moved = false;
    for (let i = 0; i < n; i++) {
      let best = 0;
      let bd = Infinity;
      for (let c = 0; c < centroids.length; c++) {
        const d = sqDist(vectors[i], centroids[c]);
        if (d < bd) {
          bd = d;
          best = c;
        }
      }
      if (assign[i] !== best) moved = true;
      assign[i] = best;
    }
    const sums = centroids.map(() => new Float64Array(dim));
    const counts = new Array<number>(centroids.length).fill(0);
    for (let i = 0; i < n; i++) {
      counts[assign[i]]++;
      const s = sums[assign[i]];
      const v = vectors[i];
      for (let j = 0; j < dim; j++) s[j] += v[j];
    }
    for (let c = 0; c < centroids.length; c++) if (counts[c] > 0) for (let j = 0; j < dim; j++) centroids[c][j] = sums[c][j] / counts[c];
    if (!moved) break;
  }
  return { assign, centroids };
}

/**
 * k-means into `clusters` groups (default: k), then take from each cluster in turn,
 * so small clusters are represented as well as big ones. Within a cluster the pick is the member
 * farthest from everything chosen so far (its most central member while nothing is chosen).
 * Quotas per group are honored the same way as in kCenterGreedy.
 */
export function clusterBalanced(vectors: readonly ArrayLike<number>[], k: number, opts: SelectOptions & { clusters?: number } = {}): number[] {
  const n = vectors.length;
  k = Math.min(k, n);
  if (k <= 0) return [];
  // Default one cluster per pick. k-means costs n·clusters·dim per iteration: pass fewer clusters
  // (strata with several picks each) for large k.
  const clusters = opts.clusters ?? k;
  const { assign, centroids } = kMeans(vectors, clusters, { seed: opts.seed });
  const members: number[][] = centroids.map(() => []);
  for (let i = 0; i < n; i++) members[assign[i]].push(i);
  for (let c = 0; c < members.length; c++) {
    const dist = (i: number): number => sqDist(vectors[i], centroids[c]);
    members[c].sort((a, b) => dist(a) - dist(b) || a - b);
  }
  // Bigger clusters go first in each round, so when k is not a multiple they get the extra.
  const order = [...members.keys()].sort((a, b) => members[b].length - members[a].length || a - b);
  const quota = groupQuotas(n, k, opts);
  const taken = new Map<string, number>();
  const chosen: number[] = [];
  const picked = new Uint8Array(n);
  // Farthest-from-chosen within a cluster: its later picks add variety rather than near-copies.
  const minDist = new Float64Array(n).fill(Infinity);
  const allowed = (i: number): boolean => !picked[i] && (!quota || (taken.get(opts.groups![i]) ?? 0) < (quota[opts.groups![i]] ?? 0));
  while (chosen.length < k) {
    let progressed = false;
    for (const c of order) {
      if (chosen.length >= k) break;
      let best = -1;
      for (const i of members[c]) if (allowed(i) && (best < 0 || minDist[i] > minDist[best])) best = i;
      if (best < 0) continue;
      chosen.push(best);
      picked[best] = 1;
      if (quota) taken.set(opts.groups![best], (taken.get(opts.groups![best]) ?? 0) + 1);
      for (let j = 0; j < n; j++) if (!picked[j]) minDist[j] = Math.min(minDist[j], sqDist(vectors[best], vectors[j]));
      progressed = true;
    }
    if (!progressed) break;
  }
  return chosen;
}

export function selectIndices(vectors: readonly ArrayLike<number>[], k: number, method: SelectionMethod, opts: SelectOptions = {}): number[] {
  return method === 'cluster' ? clusterBalanced(vectors, k, opts) : kCenterGreedy(vectors, k, opts);
}

/** A seeded uniform random subset: the baseline the diversity methods should beat. */
export function randomIndices(n: number, k: number, seed: number): number[] {
  return new Rng(seed).shuffle([...Array(n).keys()]).slice(0, Math.min(k, n));
}
