// Fused row-wise ops of the transformer block (SwiGLU, RMSNorm) with their gradients: each is one
// pass over its rows instead of 5-10 TF.js kernels with a [N, width] temporary apiece.
#include <cmath>
#include <vector>

#include "kernels.h"
#include "pool.h"
#include "simd.h"

namespace agro {
namespace {
inline float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }
inline bool big(long n) { return n >= 32768; }
}  // namespace

#ifdef AGRO_X86
// sigmoid on 8 lanes through exp8 (relative error ~2e-7, like the scalar path's expf).
__attribute__((target("avx2,fma"))) static inline __m256 sigmoid8(__m256 x) {
  __m256 one = _mm256_set1_ps(1.f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

__attribute__((target("avx2,fma"))) static void swiglu_row_avx2(const float *g, const float *u, float *o, long I) {
  long i = 0;
  for (; i + 8 <= I; i += 8) {
    __m256 gv = _mm256_loadu_ps(g + i);
    _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_mul_ps(gv, sigmoid8(gv)), _mm256_loadu_ps(u + i)));
  }
  for (; i < I; i++) o[i] = g[i] * sigmoid(g[i]) * u[i];
}

__attribute__((target("avx2,fma"))) static void swiglu_grad_row_avx2(const float *g, const float *u, const float *d, float *dg, float *du, long I) {
  long i = 0;
  __m256 one = _mm256_set1_ps(1.f);
  for (; i + 8 <= I; i += 8) {
    __m256 gv = _mm256_loadu_ps(g + i), s = sigmoid8(gv), dv = _mm256_loadu_ps(d + i);
    _mm256_storeu_ps(du + i, _mm256_mul_ps(dv, _mm256_mul_ps(gv, s)));
    __m256 inner = _mm256_fmadd_ps(gv, _mm256_sub_ps(one, s), one);  // 1 + g (1 - s)
    _mm256_storeu_ps(dg + i, _mm256_mul_ps(_mm256_mul_ps(dv, _mm256_loadu_ps(u + i)), _mm256_mul_ps(s, inner)));
  }
  for (; i < I; i++) {
    float s = sigmoid(g[i]);
    du[i] = d[i] * g[i] * s;
    dg[i] = d[i] * u[i] * s * (1.f + g[i] * (1.f - s));
  }
}
#endif

void swiglu(const float *gu, float *out, long N, long I) {
#ifdef AGRO_X86
  const bool avx = has_avx2_fma();
#endif
  parallel_for(N, 1, big(N * I), [&](long lo, long hi) {
    for (long n = lo; n < hi; n++) {
      const float *g = gu + n * 2 * I, *u = g + I;
      float *o = out + n * I;
#ifdef AGRO_X86
      if (avx) {
        swiglu_row_avx2(g, u, o, I);
        continue;
      }
#endif
      for (long i = 0; i < I; i++) o[i] = g[i] * sigmoid(g[i]) * u[i];
    }
  });
}

void swiglu_grad(const float *gu, const float *dy, float *dgu, long N, long I) {
#ifdef AGRO_X86
  const bool avx = has_avx2_fma();
#endif
  parallel_for(N, 1, big(N * I), [&](long lo, long hi) {
    for (long n = lo; n < hi; n++) {
      const float *g = gu + n * 2 * I, *u = g + I, *d = dy + n * I;
      float *dg = dgu + n * 2 * I, *du = dg + I;
#ifdef AGRO_X86
      if (avx) {
        swiglu_grad_row_avx2(g, u, d, dg, du, I);
        continue;
      }
#endif
      for (long i = 0; i < I; i++) {
        float s = sigmoid(g[i]), silu = g[i] * s;
        du[i] = d[i] * silu;
        dg[i] = d[i] * u[i] * s * (1.f + g[i] * (1.f - s));
      }
    }
  });
}

void rms_norm(const float *x, const float *w, float eps, float *y, float *rstd, long N, long H) {
  parallel_for(N, 1, big(N * H), [&](long lo, long hi) {
    for (long n = lo; n < hi; n++) {
      const float *xr = x + n * H;
      double ss = 0;
      for (long j = 0; j < H; j++) ss += (double)xr[j] * xr[j];
      float r = 1.f / std::sqrt((float)(ss / H) + eps);
      rstd[n] = r;
      float *yr = y + n * H;
      for (long j = 0; j < H; j++) yr[j] = xr[j] * r * w[j];
    }
  });
}

void rms_norm_grad(const float *x, const float *w, const float *rstd, const float *dy, float *dx, float *dw, long N, long H) {
  // dw sums over rows: each thread sums its rows into its own buffer, added up at the end.
  int parts = big(N * H) ? pool().size() : 1;
  std::vector<std::vector<double>> partial(parts, std::vector<double>(H, 0.0));
  long chunk = (N + parts - 1) / parts;
  auto body = [&](int t) {
    long lo = t * chunk, hi = std::min(N, lo + chunk);
    std::vector<double> &acc = partial[t];
    for (long n = lo; n < hi; n++) {
      const float *xr = x + n * H, *d = dy + n * H;
      float r = rstd[n];
      // n = x r; dn = dy w; dx = r (dn - n mean(dn n)); dw += dy n.
      double dot = 0;
      for (long j = 0; j < H; j++) dot += (double)d[j] * w[j] * xr[j] * r;
      float mean = (float)(dot / H);
      float *o = dx + n * H;
      for (long j = 0; j < H; j++) {
        float nj = xr[j] * r;
        o[j] = r * (d[j] * w[j] - nj * mean);
        acc[j] += (double)d[j] * nj;
      }
    }
  };
  if (parts == 1) body(0);
  else pool().run(body);
  for (long j = 0; j < H; j++) {
    double s = 0;
    for (int t = 0; t < parts; t++) s += partial[t][j];
    dw[j] = (float)s;
  }
}

}  // namespace agro

namespace agro {

void adamw(const float *p, const float *g, const float *m, const float *v, float *po, float *mo, float *vo, long n,
           double lr, double beta1, double beta2, double eps, double decay, double bc1, double bc2) {
  // Coefficients rounded to float32 from double, as TF.js rounds its scalars (1 - beta2 in float
  // arithmetic would differ from float32(1 - beta2) in the fourth digit).
  const float b1 = (float)beta1, c1 = (float)(1 - beta1), b2 = (float)beta2, c2 = (float)(1 - beta2);
  const float flr = (float)lr, feps = (float)eps, fdecay = (float)decay, fbc1 = (float)bc1, fbc2 = (float)bc2;
  parallel_for(n, 1024, n >= 65536, [&](long lo, long hi) {
    for (long i = lo; i < hi; i++) {
      float mi = b1 * m[i] + c1 * g[i];
      float vi = b2 * v[i] + c2 * (g[i] * g[i]);
      mo[i] = mi;
      vo[i] = vi;
      po[i] = p[i] * fdecay - (mi / fbc1) / (std::sqrt(vi / fbc2) + feps) * flr;
    }
  });
}

}  // namespace agro
