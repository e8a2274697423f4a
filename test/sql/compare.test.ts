import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cellKey, hasOrderBy, resultsMatch } from '../../src/sql/compare.ts';
import type { Row } from '../../src/sql/types.ts';

const bird = (pred: Row[], gold: Row[], floatTol = 0) => resultsMatch(pred, gold, { mode: 'bird', floatTol });
const spider = (pred: Row[], gold: Row[], ordered = false, floatTol = 0) => resultsMatch(pred, gold, { mode: 'spider', ordered, floatTol });

test('bird ignores duplicates and row order; spider counts duplicates', () => {
  assert.equal(bird([[1], [1], [2]], [[2], [1]]), true);
  assert.equal(spider([[1], [1], [2]], [[2], [1]]), false, 'different lengths');
  assert.equal(spider([[1], [1], [2]], [[1], [2], [2]]), false, 'same set, different bags');
  assert.equal(bird([[1], [1], [2]], [[1], [2], [2]]), true);
  assert.equal(spider([[2], [1], [1]], [[1], [2], [1]]), true, 'same bag, other order');
});

test('spider allows a column permutation; bird compares tuples position by position', () => {
  const pred: Row[] = [[1, 'a'], [2, 'b']];
  const gold: Row[] = [['a', 1], ['b', 2]];
  assert.equal(spider(pred, gold), true);
  assert.equal(bird(pred, gold), false);
  assert.equal(spider([[4, 3, 2, 1]], [[1, 2, 3, 4]]), true, 'four columns reversed');
  // Each column holds {1, 2} on both sides, but no column permutation maps the rows onto each other.
  assert.equal(spider([[1, 1], [2, 2]], [[1, 2], [2, 1]]), false);
  assert.equal(spider([[1, 2]], [[1, 2, 3]]), false, 'column counts differ');
});

test('spider respects row order only when asked (gold has ORDER BY)', () => {
  assert.equal(spider([[1], [2]], [[2], [1]], true), false);
  assert.equal(spider([[1], [2]], [[2], [1]], false), true);
  assert.equal(spider([[1, 'a'], [2, 'b']], [['a', 1], ['b', 2]], true), true, 'columns permuted, rows in order');
  assert.equal(spider([[1, 'a'], [2, 'b']], [['b', 2], ['a', 1]], true), false);
  assert.equal(bird([[1], [2]], [[2], [1]]), true, 'bird never orders');
});

test('empty results: equal to each other, not to a row of NULL', () => {
  assert.equal(bird([], []), true);
  assert.equal(spider([], []), true);
  assert.equal(bird([], [[null]]), false);
  assert.equal(spider([[null]], []), false);
});

test('NULLs equal each other and nothing else', () => {
  assert.equal(bird([[null, 1]], [[null, 1]]), true);
  assert.equal(spider([[null, 1]], [[1, null]]), true);
  assert.equal(bird([[null]], [[0]]), false);
  assert.equal(bird([[null]], [['']]), false);
});

test('numbers compare by value like Python: 1 == 1.0, exact across bigint and float', () => {
  assert.equal(bird([[1]], [[1n]]), true, 'int from bigint equals the same number');
  assert.equal(bird([[0]], [[-0]]), true, '0 == -0.0');
  assert.equal(cellKey(1), cellKey(1.0));
  assert.equal(bird([[2 ** 53]], [[2n ** 53n + 1n]]), false, 'exact: 2**53 + 1 != 2.0**53');
  assert.equal(bird([[0.5]], [[0.5]]), true);
  assert.equal(bird([[1 / 3]], [[0.3333]]), false);
  assert.equal(bird([['1']], [[1]]), false, "'1' != 1");
  assert.equal(bird([['a']], [['A']]), false, 'strings are exact');
});

test('blobs compare as bytes and never equal a string', () => {
  assert.equal(bird([[new Uint8Array([1, 2])]], [[Buffer.from([1, 2])]]), true);
  assert.equal(bird([[new Uint8Array([1, 2])]], [[new Uint8Array([1, 3])]]), false);
  assert.equal(bird([[new Uint8Array([97])]], [['a']]), false);
  // A view into a larger buffer compares by its own bytes only.
  const backing = new Uint8Array([9, 1, 2, 9]);
  assert.equal(bird([[backing.subarray(1, 3)]], [[new Uint8Array([1, 2])]]), true);
  assert.equal(bird([[backing.subarray(0, 2)]], [[new Uint8Array([1, 2])]]), false);
});

test('a 10 MB blob compares in seconds, not minutes (byte-by-byte hex took ~10 s and 0.7 GB on an idle machine)', () => {
  const a = new Uint8Array(10_000_000).fill(7);
  const b = new Uint8Array(10_000_000).fill(7);
  const t0 = performance.now();
  assert.equal(bird([[a]], [[b]]), true);
  assert.equal(resultsMatch([[b, 1]], [[a, 1]], { mode: 'spider' }), true);
  const c = new Uint8Array(10_000_000).fill(7);
  c[9_999_999] = 8;
  assert.equal(bird([[a]], [[c]]), false, 'the last byte counts');
  // Generous for a shared, loaded machine; the old encoding needed ~30 s for these three on an idle one.
  assert.ok(performance.now() - t0 < 8000, `took ${performance.now() - t0} ms`);
});

test('float tolerance: 0 is exact; > 0 is absolute up to 1, relative above', () => {
  assert.equal(bird([[0.1 + 0.2]], [[0.3]]), false, 'exact by default, like the official scripts');
  assert.equal(bird([[0.1 + 0.2]], [[0.3]], 1e-9), true);
  assert.equal(bird([[1e9 + 1]], [[1e9]], 1e-6), true, 'relative: 1 <= 1e-6 * 1e9');
  assert.equal(bird([[1e9 + 1]], [[1e9]], 1e-12), false, 'relative: 1 > 1e-12 * 1e9');
  assert.equal(bird([[1e-9]], [[2e-9]], 1e-6), true, 'absolute near zero');
  assert.equal(bird([[1.0]], [[1.1]], 1e-6), false);
  assert.equal(bird([['0.3']], [[0.3]], 1e-3), false, 'strings are never tolerant');
  assert.equal(spider([[0.3], [0.3]], [[0.1 + 0.2], [0.3]], false, 1e-9), true);
  assert.equal(spider([[0.3], [0.3]], [[0.3], [0.4]], false, 1e-9), false);
  assert.equal(spider([[0.1 + 0.2, 'x']], [['x', 0.3]], true, 1e-9), true, 'tolerance with a column permutation');
});

test('hasOrderBy looks at the top level only; substring mode is upstream Spider', () => {
  assert.equal(hasOrderBy('SELECT a FROM t ORDER BY a'), true);
  assert.equal(hasOrderBy('select a from t order\n  by a desc'), true);
  assert.equal(hasOrderBy('SELECT * FROM (SELECT a FROM t ORDER BY a LIMIT 3)'), false);
  assert.equal(hasOrderBy('SELECT * FROM (SELECT a FROM t ORDER BY a LIMIT 3)', { substring: true }), true);
  assert.equal(hasOrderBy("SELECT 'order by' FROM t"), false);
  assert.equal(hasOrderBy('SELECT rank() OVER (ORDER BY x) FROM t'), false);
  assert.equal(hasOrderBy('-- order by\nSELECT 1'), false);
  assert.equal(hasOrderBy('SELECT a FROM t'), false);
});
