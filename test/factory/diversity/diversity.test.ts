import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  dedup,
  jaccard,
  shingles,
  quotasFor,
  kCenterGreedy,
  clusterBalanced,
  kMeans,
  randomIndices,
  coverage,
  selfCoverage,
  embedHybrid,
  fitTextEmbedder,
  sqDist,
  resultFingerprint,
} from '../../../src/factory/diversity/index.ts';
import { sqlFeatures, structureKey, sqlSkeleton } from '../../../src/sql/features.ts';
import { skewedPool } from './pool.ts';
import { Rng } from '../../../src/util/rng.ts';

test('jaccard and shingles by hand', () => {
  const a = shingles('How many singers are older than 30', 2); // stop words dropped: singers older than 30
  assert.deepEqual([...a], ['singers older', 'older than', 'than 30']);
  const b = shingles('singers older than 40', 2);
  assert.equal(jaccard(a, b), 2 / 4); // {singers older, older than} of {.., than 30, than 40}
  assert.equal(jaccard(new Set(), new Set()), 1);
});

test('dedup: exact SQL after normalization, skeleton + same result, near-duplicate questions', () => {
  const items = [
    { id: 'a', dbId: 'd', sql: 'SELECT name FROM singer WHERE age > 30', question: 'Which singers are older than thirty?', resultFingerprint: 'R1' },
    { id: 'b', dbId: 'd', sql: 'select  NAME from SINGER where AGE > 30;', question: 'Name the singers above age 30.', resultFingerprint: 'R1' },
    { id: 'c', dbId: 'd', sql: 'SELECT name FROM singer WHERE age > 31', question: 'List singers whose age exceeds 31 years.', resultFingerprint: 'R1' },
    { id: 'd', dbId: 'd', sql: 'SELECT name FROM singer WHERE age > 60', question: 'Give singers aged over sixty.', resultFingerprint: 'R2' },
    { id: 'e', dbId: 'd', sql: 'SELECT count(*) FROM singer', question: 'Which singers are older than thirty?', resultFingerprint: 'R3' },
    { id: 'f', dbId: 'other', sql: 'SELECT name FROM singer WHERE age > 30', question: 'Which singers are older than thirty?', resultFingerprint: 'R1' },
  ];
  const r = dedup(items);
  assert.deepEqual(r.kept.map((x) => x.id), ['a', 'd', 'f']);
  assert.deepEqual(
    r.dropped.map((d) => [d.item.id, d.reason, d.duplicateOf]),
    [
      ['b', 'exact_sql', 'a'],
      ['c', 'skeleton_result', 'a'],
      ['e', 'near_question', 'a'],
    ],
  );
});

test('dedup: near-duplicate threshold is honored', () => {
  const items = [
    { id: '1', sql: 'SELECT 1', question: 'list the names of all singers from france sorted by age' },
    { id: '2', sql: 'SELECT 2', question: 'list the names of all singers from france sorted by year' },
  ];
  // words (stop words out): list names all singers france sorted age|year → 6 shingles each,
  // 5 shared, 7 in the union: Jaccard 5/7 ≈ 0.714.
  assert.equal(dedup(items, { questionThreshold: 0.7 }).kept.length, 1);
  assert.equal(dedup(items, { questionThreshold: 0.75 }).kept.length, 2);
});

test('resultFingerprint ignores row order, not values', () => {
  assert.equal(resultFingerprint([[1, 'a'], [2, 'b']]), resultFingerprint([[2, 'b'], [1, 'a']]));
  assert.notEqual(resultFingerprint([[1, 'a']]), resultFingerprint([[1, 'b']]));
  assert.notEqual(resultFingerprint([['1']]), resultFingerprint([[1]]));
});

test('quotasFor: largest remainder, capped by availability, shortfall redistributed', () => {
  assert.deepEqual(quotasFor(10, { a: 0.5, b: 0.3, c: 0.2 }, { a: 100, b: 100, c: 100 }), { a: 5, b: 3, c: 2 });
  assert.deepEqual(quotasFor(10, { a: 0.5, b: 0.3, c: 0.2 }, { a: 100, b: 100, c: 1 }), { a: 6, b: 3, c: 1 });
  assert.deepEqual(quotasFor(7, { a: 1, b: 1 }, { a: 2, b: 3 }), { a: 2, b: 3 });
});

test('k-center greedy takes the farthest point next', () => {
  const pts = [[0], [5], [6], [100]];
  for (let seed = 0; seed < 8; seed++) {
    const sel = kCenterGreedy(pts, 2, { seed });
    const other = sel[0] === 3 ? 0 : 3;
    assert.equal(sel[1], other, `seed ${seed}: ${sel}`);
    assert.deepEqual(kCenterGreedy(pts, 2, { seed }), sel); // deterministic
  }
  assert.equal(kCenterGreedy(pts, 10, { seed: 1 }).length, 4);
  assert.deepEqual(kCenterGreedy([], 3), []);
});

test('k-center picks what comparing every point with every new center by the dense distance picks (its shortcuts skip only what would not move)', () => {
  // The plain algorithm: nearest-center distances by sqDist over every coordinate, quotas by group.
  const plain = (vecs: number[][], k: number, seed: number, groups: string[], quota: Record<string, number>): number[] => {
    const n = vecs.length;
    const near = new Array<number>(n).fill(Infinity);
    const taken: Record<string, number> = {};
    const chosen: number[] = [];
    const ok = (j: number) => !chosen.includes(j) && (taken[groups[j]] ?? 0) < quota[groups[j]];
    const take = (i: number) => {
      chosen.push(i);
      taken[groups[i]] = (taken[groups[i]] ?? 0) + 1;
      for (let j = 0; j < n; j++) near[j] = Math.min(near[j], sqDist(vecs[i], vecs[j]));
    };
    const first = vecs.map((_, j) => j).filter(ok);
    take(first[new Rng(seed).int(first.length)]);
    while (chosen.length < k) {
      let best = -1;
      for (let j = 0; j < n; j++) if (ok(j) && (best < 0 || near[j] > near[best])) best = j;
      if (best < 0) break;
      take(best);
    }
    return chosen;
  };
  const rng = new Rng(7);
  // Sparse, nearly equidistant unit vectors (as the hybrid embedding's), some repeated exactly, some near copies.
  const vecs: number[][] = [];
  for (let i = 0; i < 300; i++) {
    if (i % 17 === 5) {
      vecs.push([...vecs[i - 3]]);
      continue;
    }
    const v = new Array<number>(64).fill(0);
    for (let t = 0; t < 6; t++) v[rng.int(64)] = rng.next();
    if (i % 11 === 3) for (let t = 0; t < 64; t++) v[t] = vecs[i - 1][t] + (t === i % 64 ? 1e-7 : 0);
    const norm = Math.hypot(...v) || 1;
    vecs.push(v.map((x) => x / norm));
  }
  const groups = vecs.map((_, i) => ['a', 'b', 'c'][i % 3]);
  const mix = { a: 0.6, b: 0.3, c: 0.1 };
  for (const k of [1, 40, 200, 300]) {
    const quota = quotasFor(k, mix, { a: 100, b: 100, c: 100 });
    assert.deepEqual(kCenterGreedy(vecs, k, { seed: k, groups, mix }), plain(vecs, k, k, groups, quota), `k ${k}`);
  }
});

test('k-center honors per-difficulty quotas', () => {
  const pool = skewedPool(200, 3);
  const vecs = embedHybrid(pool.map((p) => ({ sqls: [p.sql], text: p.question })));
  const sel = kCenterGreedy(vecs, 20, { seed: 1, groups: pool.map((p) => p.difficulty), mix: { simple: 0.5, moderate: 0.25, challenging: 0.25 } });
  const count = (d: string): number => sel.filter((i) => pool[i].difficulty === d).length;
  assert.equal(sel.length, 20);
  assert.equal(count('simple'), 10);
  assert.equal(count('moderate'), 5);
  assert.equal(count('challenging'), 5);
});

test('k-means separates two blobs; cluster-balanced takes from both despite 9:1 sizes', () => {
  const pts: number[][] = [];
  for (let i = 0; i < 90; i++) pts.push([i % 10 / 100, Math.floor(i / 10) / 100]);
  for (let i = 0; i < 10; i++) pts.push([5 + i / 100, 5]);
  const { assign } = kMeans(pts, 2, { seed: 4 });
  assert.equal(new Set(assign.slice(0, 90)).size, 1);
  assert.equal(new Set(assign.slice(90)).size, 1);
  assert.notEqual(assign[0], assign[95]);
  const sel = clusterBalanced(pts, 4, { seed: 4, clusters: 2 });
  assert.equal(sel.filter((i) => i >= 90).length, 2);
  assert.equal(sel.filter((i) => i < 90).length, 2);
});

test('coverage metrics by hand', () => {
  const c = coverage([[0], [1], [3]], [0], { skeletons: ['x', 'y', 'y'], structures: ['s', 's', 't'] });
  assert.equal(c.meanNearest, 4 / 3);
  assert.equal(c.maxNearest, 3);
  assert.equal(c.distinctSkeletons, 1);
  assert.equal(c.distinctStructures, 1);
  assert.equal(c.structureCoverage, 0.5);
});

test('selfCoverage is coverage with every item selected, without the distances', () => {
  const keys = { skeletons: ['x', 'y', 'y'], structures: ['s', 's', 't'] };
  const all = coverage([[0], [1], [3]], [0, 1, 2], keys);
  assert.deepEqual(selfCoverage(3, keys), all);
  assert.equal(all.meanNearest, 0);
  assert.equal(selfCoverage(3, keys).distinctSkeletons, 2);
});

test('text embedding: deterministic, unit norm, related questions closer', () => {
  const docs = ['how many singers are from france', 'count the singers from france', 'average capacity of stadiums'];
  const e1 = fitTextEmbedder(docs);
  const e2 = fitTextEmbedder(docs);
  const [a, b, c] = docs.map((d) => e1.embed(d));
  assert.deepEqual(Array.from(a), Array.from(e2.embed(docs[0])));
  assert.ok(Math.abs(sqDist(a, new Float64Array(a.length)) - 1) < 1e-9);
  assert.ok(sqDist(a, b) < sqDist(a, c));
});

test('k-center covers more distinct SQL structures than a random subset, for every seed', () => {
  const pool = skewedPool(300, 11);
  const keys = pool.map((p) => structureKey(sqlFeatures(p.sql)));
  const skel = pool.map((p) => sqlSkeleton(p.sql, { maskIdentifiers: true }));
  const vecs = embedHybrid(pool.map((p) => ({ sqls: [p.sql], text: p.question })), { sqlWeight: 0.6 });
  const k = 25;
  for (const seed of [1, 2, 3, 4, 5]) {
    const kc = coverage(vecs, kCenterGreedy(vecs, k, { seed }), { structures: keys, skeletons: skel });
    const cl = coverage(vecs, clusterBalanced(vecs, k, { seed }), { structures: keys, skeletons: skel });
    const rnd = coverage(vecs, randomIndices(pool.length, k, seed), { structures: keys, skeletons: skel });
    assert.ok(kc.distinctStructures > rnd.distinctStructures, `seed ${seed}: kcenter ${kc.distinctStructures} vs random ${rnd.distinctStructures}`);
    assert.ok(cl.distinctStructures > rnd.distinctStructures, `seed ${seed}: cluster ${cl.distinctStructures} vs random ${rnd.distinctStructures}`);
    assert.ok(kc.maxNearest < rnd.maxNearest, `seed ${seed}: max nearest ${kc.maxNearest} vs ${rnd.maxNearest}`);
  }
});

test('kCenterGreedy over the nonzero entries picks exactly what the dense farthest-point loop picks', () => {
  // The dense loop as it was: every coordinate of every distance.
  const dense = (vs: Float64Array[], k: number, seed: number): number[] => {
    const n = vs.length;
    const rng = new Rng(seed);
    const minDist = new Float64Array(n).fill(Infinity);
    const picked = new Uint8Array(n);
    const chosen: number[] = [];
    const pick = (i: number) => {
      chosen.push(i);
      picked[i] = 1;
      for (let j = 0; j < n; j++) {
        if (picked[j]) continue;
        let d = 0;
        for (let t = 0; t < vs[i].length; t++) d += (vs[i][t] - vs[j][t]) ** 2;
        if (d < minDist[j]) minDist[j] = d;
      }
    };
    pick(rng.int(n));
    while (chosen.length < k) {
      let best = -1;
      let bestD = -1;
      for (let j = 0; j < n; j++) if (!picked[j] && minDist[j] > bestD) [best, bestD] = [j, minDist[j]];
      if (best < 0) break;
      pick(best);
    }
    return chosen;
  };
  const rng = new Rng(7);
  const vs: Float64Array[] = [];
  for (let i = 0; i < 300; i++) {
    const v = new Float64Array(64);
    // Sparse, with negative entries, and exact duplicates (ties at distance 0 go to the lowest index).
    if (i % 10 === 9) v.set(vs[i - 3]);
    else for (let t = 0; t < 6; t++) v[rng.int(64)] = rng.next() * 2 - 1;
    vs.push(v);
  }
  for (const k of [1, 50, 200, 300]) assert.deepEqual(kCenterGreedy(vs, k, { seed: 3 }), dense(vs, k, 3));
});
