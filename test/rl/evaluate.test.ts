import { test } from 'node:test';
import assert from 'node:assert/strict';
import { passAtK } from '../../src/util/pass-at-k.ts';

test('pass@k is the unbiased estimator 1 - C(n-c, k)/C(n, k), checked by hand', () => {
  assert.equal(passAtK(4, 2, 1), 0.5);
  assert.ok(Math.abs(passAtK(4, 2, 2) - (1 - 1 / 6)) < 1e-12); // C(2,2)/C(4,2) = 1/6
  assert.ok(Math.abs(passAtK(8, 1, 4) - 0.5) < 1e-12); // 1 - C(7,4)/C(8,4) = 1 - 35/70
  assert.equal(passAtK(4, 0, 4), 0);
  assert.equal(passAtK(4, 4, 1), 1);
  assert.equal(passAtK(5, 3, 3), 1); // n - c < k: every k-subset holds a correct sample
  assert.throws(() => passAtK(4, 5, 1), RangeError);
  assert.throws(() => passAtK(4, 1, 5), RangeError);
});
