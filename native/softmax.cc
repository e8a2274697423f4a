// Fused log-softmax-and-select for the language-model loss: one pass over the [N, V] logits
// computes every row's softmax (kept for the backward pass) and the log-prob of its target, with
// an 8-lane exp; TF.js's wasm Exp is scalar and was the largest non-matmul cost of a training step.
#include <cmath>

#include "kernels.h"
#include "pool.h"

#include "simd.h"

namespace agro {
namespace {

inline long clamp_target(int t, long V) { return t < 0 ? 0 : t >= V ? V - 1 : t; }

// One row: p = softmax(x) into p; returns the row max m and log(sum exp(x - m)) apart, so that
// log p[t] = (x[t] - m) - log_s keeps float32 precision for large logits.
float row_generic(const float *x, float *p, long V, float *log_s) {
  float m = x[0];
  for (long j = 1; j < V; j++) m = x[j] > m ? x[j] : m;
  double s = 0;
  for (long j = 0; j < V; j++) s += (p[j] = std::exp(x[j] - m));
  float inv = (float)(1 / s);
  for (long j = 0; j < V; j++) p[j] *= inv;
  *log_s = (float)std::log(s);
  return m;
}

#ifdef AGRO_X86
__attribute__((target("avx2,fma"))) float row_avx2(const float *x, float *p, long V, float *log_s) {
  long V8 = V / 8 * 8, j;
  __m256 mv = _mm256_set1_ps(-INFINITY);
  for (j = 0; j < V8; j += 8) mv = _mm256_max_ps(mv, _mm256_loadu_ps(x + j));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, mv);
  float m = -INFINITY;
  for (float l : lanes) m = l > m ? l : m;
  for (; j < V; j++) m = x[j] > m ? x[j] : m;
  __m256 mm = _mm256_set1_ps(m), sv = _mm256_setzero_ps();
  for (j = 0; j < V8; j += 8) {
    __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), mm));
    _mm256_storeu_ps(p + j, e);
    sv = _mm256_add_ps(sv, e);
  }
  float s = hsum8(sv);
  for (; j < V; j++) s += (p[j] = std::exp(x[j] - m));
  __m256 inv = _mm256_set1_ps(1 / s);
  for (j = 0; j < V8; j += 8) _mm256_storeu_ps(p + j, _mm256_mul_ps(_mm256_loadu_ps(p + j), inv));
  for (; j < V; j++) p[j] /= s;
  *log_s = std::log(s);
  return m;
}
#endif

using Row = float (*)(const float *, float *, long, float *);
Row pick_row() {
#ifdef AGRO_X86
  if (has_avx2_fma()) return row_avx2;
#endif
  return row_generic;
}
const Row row = pick_row();

}  // namespace

void log_softmax_select(const float *x, const int *t, float *logp, float *p, long N, long V) {
  parallel_for(N, 1, N * V >= 65536, [&](long lo, long hi) {
    for (long n = lo; n < hi; n++) {
      float log_s, m = row(x + n * V, p + n * V, V, &log_s);
      logp[n] = (x[n * V + clamp_target(t[n], V)] - m) - log_s;
    }
  });
}

void log_softmax_select_grad(const float *p, const int *t, const float *dy, float *dx, long N, long V) {
  parallel_for(N, 1, N * V >= 65536, [&](long lo, long hi) {
    for (long n = lo; n < hi; n++) {
      const float *pr = p + n * V;
      float *dr = dx + n * V, g = -dy[n];
      for (long j = 0; j < V; j++) dr[j] = g * pr[j];
      dr[clamp_target(t[n], V)] += dy[n];
    }
  });
}

}  // namespace agro
