/** How well a selected subset covers its candidate pool. */
import { sqDist } from './embed.ts';

export interface Coverage {
  selected: number;
  distinctSkeletons: number;
  distinctStructures: number;
  /** Share of the pool's distinct structures present in the selection. */
  structureCoverage: number;
  /** Mean / max over candidates of the Euclidean distance to the nearest selected item. */
  meanNearest: number;
  maxNearest: number;
}

export function coverage(
  vectors: readonly ArrayLike<number>[],
  selected: readonly number[],
  keys: { skeletons?: readonly string[]; structures?: readonly string[] } = {},
): Coverage {
  let sum = 0;
  let max = 0;
  for (let i = 0; i < vectors.length; i++) {
    let best = Infinity;
    for (const s of selected) best = Math.min(best, sqDist(vectors[i], vectors[s]));
    const d = selected.length > 0 ? Math.sqrt(best) : 0;
    sum += d;
    max = Math.max(max, d);
  }
  return { ...keyCoverage(selected, keys), meanNearest: vectors.length > 0 ? sum / vectors.length : 0, maxNearest: max };
}

/**
 * The coverage of a set that is its own selection (the factory's final output): every item is
 * selected, so every nearest distance is 0 and no embedding is needed.
 */
export function selfCoverage(n: number, keys: { skeletons?: readonly string[]; structures?: readonly string[] } = {}): Coverage {
  return { ...keyCoverage(Array.from({ length: n }, (_, i) => i), keys), meanNearest: 0, maxNearest: 0 };
}

/** The key counts of a selection: distinct skeletons and structures, and the share of the pool's structures it has. */
function keyCoverage(selected: readonly number[], keys: { skeletons?: readonly string[]; structures?: readonly string[] }): Omit<Coverage, 'meanNearest' | 'maxNearest'> {
  const distinct = (k: readonly string[] | undefined): number => (k ? new Set(selected.map((i) => k[i])).size : 0);
  const poolStructures = keys.structures ? new Set(keys.structures).size : 0;
  return {
    selected: selected.length,
    distinctSkeletons: distinct(keys.skeletons),
    distinctStructures: distinct(keys.structures),
    structureCoverage: poolStructures > 0 ? distinct(keys.structures) / poolStructures : 0,
  };
}
