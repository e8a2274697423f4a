/**
 * What people ask, as query shapes (see realism.ts queryShape): the share, in percent, of each
 * shape among the 8,475 human-written gold queries of Spider's TRAIN split (shapes under 0.15%
 * left out). The factory's final selection follows this mix by default (`shapes` in the factory
 * config replaces it): one pair of each available shape first, most asked first, then the rest
 * in proportion. Measured over ../shared/data/spider-train/gold.jsonl by scripts/human-shapes.ts
 * (test/factory/human-mix.test.ts checks it still says so); never tuned on the Spider dev split.
 */
export const HUMAN_SHAPES: Readonly<Record<string, number>> = {
  plain: 17.3,
  join: 13.5,
  agg: 8.7,
  'join+distinct': 6.2,
  'group+agg': 4.6,
  'join+group+top+agg': 4.1,
  'nested+agg': 3.9,
  'group+top+agg': 3.3,
  top: 3.3,
  'join+agg': 3.3,
  'join+group+agg': 2.8,
  'join+setop': 2.6,
  'join+distinct+agg': 2.4,
  'distinct+agg': 2.4,
  distinct: 2.4,
  setop: 2.3,
  'join+group+having+agg': 2.2,
  'group+having+agg': 2.1,
  'nested+notin': 1.7,
  'join+top': 1.4,
  'join+group+distinct+agg': 1.2,
  'join+nested+agg': 1.1,
  like: 1.1,
  'nested+notin+agg': 0.6,
  nested: 0.6,
  'join+like': 0.4,
  'nested+distinct+agg': 0.3,
  'join+group+having+distinct+agg': 0.3,
  'join+group+having+setop+agg': 0.2,
  'join+group+top+distinct+agg': 0.2,
  'join+setop+distinct': 0.2,
  'join+nested': 0.2,
  'group+distinct+agg': 0.2,
  'join+group+distinct': 0.2,
  'like+agg': 0.2,
  'group+top+nested+agg': 0.2,
};

/**
 * The mix of some query shapes: each shape's share in percent (one decimal), most common first, shapes
 * under 0.15% left out. HUMAN_SHAPES is this of Spider's train gold (scripts/human-shapes.ts prints it).
 */
export function humanShapeMix(shapes: readonly string[]): Record<string, number> {
  const counts = new Map<string, number>();
  for (const s of shapes) counts.set(s, (counts.get(s) ?? 0) + 1);
  const out: Record<string, number> = {};
  for (const [s, n] of [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))) {
    const pct = (100 * n) / shapes.length;
    if (pct >= 0.15) out[s] = Math.round(pct * 10) / 10;
  }
  return out;
}

/** Share given to a shape the mix does not name (people rarely write it, so it comes last). */
export const UNLISTED_SHARE = 0.05;

export const shareOf = (mix: Readonly<Record<string, number>>, shape: string): number => mix[shape] ?? UNLISTED_SHARE;
