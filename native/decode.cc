// One decoding step of the Llama model for a batch of rows, in one call (src/model/generate.ts).
//
// Why: a step through TF.js is ~150 small kernels, each with its dispatch, allocation and (for the
// KV cache) a concat that copies the whole cache; at decoding sizes that overhead, not arithmetic,
// set the speed. Here the step reads the weights where TF.js keeps them, appends each row's key
// and value to a preallocated cache in place, and writes the logits: the same arithmetic as
// LlamaModel.forwardHidden + logits with a cache (RMSNorm, rotary, GQA attention over the row's
// unpadded keys, SwiGLU, residuals), with the matmuls on gemm_packed over weights the caller packed once (pack_panels) for
// the whole generation.
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels.h"
#include "simd.h"

namespace agro {
namespace {

float dot_generic(const float *a, const float *b, int n) {
  float s = 0;
  for (int i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}

// acc[0..n) += p * v[0..n)
void axpy_generic(float p, const float *v, float *acc, int n) {
  for (int i = 0; i < n; i++) acc[i] += p * v[i];
}

#ifdef AGRO_X86
__attribute__((target("avx2,fma"))) float dot_avx2(const float *a, const float *b, int n) {
  __m256 s = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= n; i += 8) s = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s);
  float r = hsum8(s);
  for (; i < n; i++) r += a[i] * b[i];
  return r;
}
__attribute__((target("avx2,fma"))) void axpy_avx2(float p, const float *v, float *acc, int n) {
  __m256 pv = _mm256_set1_ps(p);
  int i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(pv, _mm256_loadu_ps(v + i), _mm256_loadu_ps(acc + i)));
  for (; i < n; i++) acc[i] += p * v[i];
}
#endif

using Dot = float (*)(const float *, const float *, int);
using Axpy = void (*)(float, const float *, float *, int);
#ifdef AGRO_X86
const bool use_avx2 = has_avx2_fma();
const Dot dot = use_avx2 ? dot_avx2 : dot_generic;
const Axpy axpy = use_avx2 ? axpy_avx2 : axpy_generic;
#else
const Dot dot = dot_generic;
const Axpy axpy = axpy_generic;
#endif

// y = x * cos[pos] + swap_halves(x) * sin[pos] over one head of hd values (llama.ts's tables).
void rotate(const float *x, const float *c, const float *s, int hd, float *y) {
  int half = hd / 2;
  for (int d = 0; d < half; d++) y[d] = x[d] * c[d] + x[d + half] * s[d];
  for (int d = half; d < hd; d++) y[d] = x[d] * c[d] + x[d - half] * s[d];
}

// c[M,N] = a[M,K] b[K,N] for b packed by pack_panels.
void linear(const float *a, const float *b, float *c, long M, long N, long K) { gemm_packed(a, K, b, c, M, N, K); }

struct Scratch {
  std::vector<float> x, h, qkv, att, o, gu, act, p;
  void size(long n, const DecodeDims &d) {
    long qkvw = (long)(d.nh + 2 * d.nkv) * d.hd;
    x.resize(n * d.H);
    h.resize(n * d.H);
    qkv.resize(n * qkvw);
    att.resize(n * d.nh * d.hd);
    o.resize(n * d.H);
    gu.resize(n * 2 * d.I);
    act.resize(n * d.I);
    p.resize(d.cap + 16);
  }
};

}  // namespace

void decode_step(const DecodeDims &d, const DecodeRows &r, const DecodeWeights &w, float *logits) {
  static thread_local Scratch s;
  const long n = r.n, H = d.H, I = d.I, hd = d.hd, nh = d.nh, nkv = d.nkv, g = nh / nkv, cap = d.cap;
  const long qkvw = (nh + 2 * nkv) * hd;
  s.size(n, d);
  std::vector<float> rstd(n);
  for (long i = 0; i < n; i++) std::memcpy(&s.x[i * H], w.embed + (long)r.ids[i] * H, H * sizeof(float));
  const float scale = 1.f / std::sqrt((float)hd);
  for (int l = 0; l < d.layers; l++) {
    const DecodeLayer &L = w.layer[l];
    rms_norm(s.x.data(), L.ln1, d.eps, s.h.data(), rstd.data(), n, H);
    linear(s.h.data(), L.wqkv, s.qkv.data(), n, qkvw, H);
    if (L.bqkv)
      for (long i = 0; i < n; i++)
        for (long j = 0; j < qkvw; j++) s.qkv[i * qkvw + j] += L.bqkv[j];
    for (long i = 0; i < n; i++) {
      float *q = &s.qkv[i * qkvw];
      const float *c = d.cos + (long)r.pos[i] * hd, *sn = d.sin + (long)r.pos[i] * hd;
      const long row = r.rows[i];
      // Rotated keys and the values go into the cache at slot t; queries are rotated in place.
      for (long j = 0; j < nkv; j++) {
        float *kc = L.kcache + ((row * nkv + j) * cap + d.t) * hd;
        float *vc = L.vcache + ((row * nkv + j) * cap + d.t) * hd;
        rotate(q + (nh + j) * hd, c, sn, (int)hd, kc);
        std::memcpy(vc, q + (nh + nkv + j) * hd, hd * sizeof(float));
      }
      float tmp[1024];
      for (long h = 0; h < nh; h++) {
        rotate(q + h * hd, c, sn, (int)hd, tmp);
        std::memcpy(q + h * hd, tmp, hd * sizeof(float));
      }
      // Attention over the row's keys [pad, t] (llama.ts hides left padding; decoding queries are never padding).
      const long lo = r.pad[i];
      const long len = d.t + 1 - lo;
      for (long h = 0; h < nh; h++) {
        const long j = h / g;
        const float *kb = L.kcache + ((row * nkv + j) * cap + lo) * hd, *vb = L.vcache + ((row * nkv + j) * cap + lo) * hd;
        const float *qh = q + h * hd;
        float m = -INFINITY;
        for (long k = 0; k < len; k++) {
          float sc = dot(qh, kb + k * hd, (int)hd) * scale;
          s.p[k] = sc;
          m = sc > m ? sc : m;
        }
        double sum = 0;
        for (long k = 0; k < len; k++) sum += (s.p[k] = std::exp(s.p[k] - m));
        const float inv = (float)(1 / sum);
        float *out = &s.att[(i * nh + h) * hd];
        std::fill(out, out + hd, 0.f);
        for (long k = 0; k < len; k++) axpy(s.p[k] * inv, vb + k * hd, out, (int)hd);
      }
    }
    linear(s.att.data(), L.wo, s.o.data(), n, H, nh * hd);
    for (long i = 0; i < n * H; i++) s.x[i] += s.o[i];
    rms_norm(s.x.data(), L.ln2, d.eps, s.h.data(), rstd.data(), n, H);
    linear(s.h.data(), L.wgu, s.gu.data(), n, 2 * I, H);
    swiglu(s.gu.data(), s.act.data(), n, I);
    linear(s.act.data(), L.wdown, s.o.data(), n, H, I);
    for (long i = 0; i < n * H; i++) s.x[i] += s.o[i];
  }
  rms_norm(s.x.data(), w.norm, d.eps, s.h.data(), rstd.data(), n, H);
  linear(s.h.data(), w.head, logits, n, d.V, H);
}

}  // namespace agro
