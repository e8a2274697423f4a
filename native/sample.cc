// Drawing the next token of each decoded row from its logits, where the logits are (the wasm heap),
// so a sampling step hands JS one token and one log-prob per row instead of [rows, V] floats.
//
// The same computation as src/model/generate.ts drawToken (temperature only: no top-k or top-p) and
// logSoftmaxAt: the first maximum, weights exp((l - max) / temperature), the token where u * total
// first goes below zero. JS does it all in double precision; the AVX2 path takes the exponentials
// on 8 float lanes (relative error < 2e-7, so a token can differ only when u lands that close to a
// boundary between two tokens) and sums them in double.
#include <cmath>
#include <vector>

#include "kernels.h"
#include "simd.h"

namespace agro {
namespace {

long argmax_generic(const float *l, long V) {
  long best = 0;
  for (long j = 1; j < V; j++)
    if (l[j] > l[best]) best = j;
  return best;
}

// w[j] = exp((l[j] - maxL) * inv); returns their sum.
double weights_generic(const float *l, long V, double maxL, double inv, float *w) {
  double total = 0;
  for (long j = 0; j < V; j++) total += (w[j] = (float)std::exp((l[j] - maxL) * inv));
  return total;
}

#ifdef AGRO_X86
__attribute__((target("avx2,fma"))) double weights_avx2(const float *l, long V, double maxL, double inv, float *w) {
  const __m256 m = _mm256_set1_ps((float)maxL), s = _mm256_set1_ps((float)inv);
  __m256d t0 = _mm256_setzero_pd(), t1 = t0;
  long j = 0;
  for (; j + 8 <= V; j += 8) {
    __m256 e = exp8(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(l + j), m), s));
    _mm256_storeu_ps(w + j, e);
    t0 = _mm256_add_pd(t0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    t1 = _mm256_add_pd(t1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  alignas(32) double t[4];
  _mm256_store_pd(t, _mm256_add_pd(t0, t1));
  double total = t[0] + t[1] + t[2] + t[3];
  for (; j < V; j++) total += (w[j] = (float)std::exp((l[j] - maxL) * inv));
  return total;
}
// The first index of the maximum (as the scalar loop; NaN-free logits): the maximum on 8 lanes,
// then the first lane equal to it.
__attribute__((target("avx2,fma"))) long argmax_avx2(const float *l, long V) {
  if (V < 8) return argmax_generic(l, V);
  __m256 mv = _mm256_loadu_ps(l);
  long j = 8;
  for (; j + 8 <= V; j += 8) mv = _mm256_max_ps(mv, _mm256_loadu_ps(l + j));
  alignas(32) float t[8];
  _mm256_store_ps(t, mv);
  float m = t[0];
  for (int q = 1; q < 8; q++) m = t[q] > m ? t[q] : m;
  for (; j < V; j++) m = l[j] > m ? l[j] : m;
  const __m256 mm = _mm256_set1_ps(m);
  for (j = 0; j + 8 <= V; j += 8) {
    const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(l + j), mm, _CMP_EQ_OQ));
    if (hit) return j + __builtin_ctz(hit);
  }
  for (; j < V; j++)
    if (l[j] == m) return j;
  return argmax_generic(l, V);  // unreachable without NaNs
}
const auto weights = has_avx2_fma() ? weights_avx2 : weights_generic;
const auto argmax = has_avx2_fma() ? argmax_avx2 : argmax_generic;
#else
const auto weights = weights_generic;
const auto argmax = argmax_generic;
#endif

// The first j where r - w[0] - ... - w[j] < 0 (V - 1 if none), skipping whole blocks of 16 whose sum r covers.
long pick(const float *w, long V, double r) {
  long j = 0;
  for (; j + 16 <= V; j += 16) {
    // Four independent partial sums: the block's sum is not one long dependency chain.
    double b0 = 0, b1 = 0, b2 = 0, b3 = 0;
    for (int q = 0; q < 16; q += 4) {
      b0 += w[j + q];
      b1 += w[j + q + 1];
      b2 += w[j + q + 2];
      b3 += w[j + q + 3];
    }
    const double b = (b0 + b1) + (b2 + b3);
    if (r - b >= 0) r -= b;
    else break;
  }
  for (; j < V; j++) {
    r -= w[j];
    if (r < 0) return j;
  }
  return V - 1;
}

}  // namespace

void sample_rows(const float *logits, long n, long V, double temperature, const double *u, int *tokens, double *logp) {
  std::vector<float> w(V);
  for (long i = 0; i < n; i++) {
    const float *l = logits + i * V;
    const long best = argmax(l, V);
    const double maxL = l[best];
    long tok = best;
    double sum1 = -1;  // sum of exp(l - max): the temperature-1 normaliser of the log-prob
    if (temperature > 0) {
      const double total = weights(l, V, maxL, 1 / temperature, w.data());
      if (temperature == 1) sum1 = total;
      tok = pick(w.data(), V, u[i] * total);
    }
    if (sum1 < 0) sum1 = weights(l, V, maxL, 1, w.data());
    tokens[i] = (int)tok;
    logp[i] = l[tok] - maxL - std::log(sum1);
  }
}

}  // namespace agro
