/**
 * pass@k, the chance that one of k samples is right: what `agro predict --samples` reports and what the RL
 * stage's headroom and pool sampling (rl/evaluate.ts) measure. Pure math, so it sits where both layers reach it
 * (rl/ is upstream of eval/).
 */

/** The unbiased pass@k estimator (Chen et al. 2021) from n samples of which c are correct: 1 − C(n−c, k)/C(n, k). */
export function passAtK(n: number, c: number, k: number): number {
  if (!(Number.isInteger(n) && Number.isInteger(c) && Number.isInteger(k)) || n < 1 || c < 0 || c > n || k < 1 || k > n) {
    throw new RangeError(`passAtK needs integers 0 <= c <= n and 1 <= k <= n, got n=${n} c=${c} k=${k}`);
  }
  if (n - c < k) return 1;
  let miss = 1;
  for (let i = n - c + 1; i <= n; i++) miss *= 1 - k / i;
  return 1 - miss;
}
