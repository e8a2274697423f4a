// Single-precision GEMM for agro's TF.js wasm backend (src/model/native.ts, bindings in addon.cc).
//
// Why: XNNPACK in TF.js's wasm build is limited to 128-bit SIMD without FMA (~10-19 GFLOP/s
// here) and falls to a naive loop for transposed or batched operands (~0.5-1.5 GFLOP/s), so the
// matmuls of a training step ran at a fraction of what the CPU does. This computes C = op(A) op(B)
// straight in the wasm heap (the tensors' memory, no copies) with an AVX2/FMA micro-kernel when the
// CPU has one, a portable loop otherwise, and splits large products over the addon's thread pool.
//
// Structure follows the BLIS/GotoBLAS layering: pack a KC x NC block of B into 16-wide column
// panels, pack an MC x KC block of A into 6-high row panels (transposes are absorbed by the packing),
// then a 6 x 16 register-tile micro-kernel accumulates over KC.
#include "kernels.h"
#include "pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "simd.h"

namespace agro {
namespace {

#ifndef AGRO_GEMM_BLOCKS
#define AGRO_GEMM_BLOCKS 256, 72, 512  // KC, MC, NC: a KC x NC block of B (512 KiB) stays in L2 (Zen 3: 512 KiB per core)
#endif
constexpr int MR = 6, NR = 16;
constexpr int BLOCKS[3] = {AGRO_GEMM_BLOCKS};
constexpr int KC = BLOCKS[0], MC = BLOCKS[1], NC = BLOCKS[2];

struct View {  // element (r, c) of a logical matrix at p[r * rs + c * cs]
  const float *p;
  long rs, cs;
  float at(long r, long c) const { return p[r * rs + c * cs]; }
};

// Ap: ceil(mc / MR) panels of [kc][MR], zero-padded past mc.
void pack_a_generic(const View &a, long i0, long k0, int mc, int kc, float *ap) {
  for (int ip = 0; ip < mc; ip += MR)
    for (int k = 0; k < kc; k++)
      for (int r = 0; r < MR; r++) *ap++ = ip + r < mc ? a.at(i0 + ip + r, k0 + k) : 0.f;
}

// Bp: ceil(nc / NR) panels of [kc][NR], zero-padded past nc.
void pack_b_generic(const View &b, long k0, long j0, int kc, int nc, float *bp) {
  for (int jp = 0; jp < nc; jp += NR) {
    int w = std::min(NR, nc - jp);
    for (int k = 0; k < kc; k++) {
      const float *src = b.p + (k0 + k) * b.rs + (j0 + jp) * b.cs;
      if (b.cs == 1 && w == NR) {
        std::memcpy(bp, src, NR * sizeof(float));
      } else {
        for (int c = 0; c < w; c++) bp[c] = src[c * b.cs];
        for (int c = w; c < NR; c++) bp[c] = 0.f;
      }
      bp += NR;
    }
  }
}

#ifdef AGRO_X86
// r[i] <- column i of the 8 x 8 block whose rows are r[0..7].
__attribute__((target("avx2,fma"))) inline void transpose8(__m256 r[8]) {
  __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// Packing where the logical rows of the panel (A's rows, B's columns) are contiguous runs in memory
// (A row-major, B stored transposed): w <= 8 runs src[q * ld + k] (k in [0, kc)) into dst[k * stride + q],
// 8 k at a time through an 8 x 8 transpose. Runs past w are read as zeros. Each 8-float store spills
// past the w values of its k into the next k's slots (rewritten next) or the buffer's slack.
__attribute__((target("avx2,fma"))) void pack_runs(const float *src, long ld, int w, int kc, float *dst, int stride) {
  const float *run[8];
  for (int q = 0; q < 8; q++) run[q] = q < w ? src + q * ld : nullptr;
  int k = 0;
  for (; k + 8 <= kc; k += 8) {
    __m256 r[8];
    for (int q = 0; q < 8; q++) r[q] = run[q] ? _mm256_loadu_ps(run[q] + k) : _mm256_setzero_ps();
    transpose8(r);
    for (int j = 0; j < 8; j++) _mm256_storeu_ps(dst + (long)(k + j) * stride, r[j]);
  }
  for (; k < kc; k++)
    for (int q = 0; q < stride && q < 8; q++) dst[(long)k * stride + q] = q < w ? run[q][k] : 0.f;
}

// A row-major (cs == 1): 6 runs per panel. A transposed (rs == 1): each k's 6 values are adjacent.
__attribute__((target("avx2,fma"))) void pack_a_avx2(const View &a, long i0, long k0, int mc, int kc, float *ap) {
  for (int ip = 0; ip < mc; ip += MR, ap += (long)kc * MR) {
    const int w = std::min(MR, mc - ip);
    if (a.cs == 1) {
      pack_runs(a.p + (i0 + ip) * a.rs + k0, a.rs, w, kc, ap, MR);
    } else if (a.rs == 1 && w == MR) {
      const float *src = a.p + (i0 + ip) + k0 * a.cs;
      for (int k = 0; k < kc; k++, src += a.cs) {
        _mm_storeu_ps(ap + k * MR, _mm_loadu_ps(src));
        ap[k * MR + 4] = src[4];
        ap[k * MR + 5] = src[5];
      }
    } else {
      for (int k = 0; k < kc; k++)
        for (int r = 0; r < MR; r++) ap[k * MR + r] = r < w ? a.at(i0 + ip + r, k0 + k) : 0.f;
    }
  }
}

// B transposed (rs == 1): each 16-wide panel is 2 x 8 runs.
__attribute__((target("avx2,fma"))) void pack_b_avx2(const View &b, long k0, long j0, int kc, int nc, float *bp) {
  if (b.rs != 1) return pack_b_generic(b, k0, j0, kc, nc, bp);
  for (int jp = 0; jp < nc; jp += NR, bp += (long)kc * NR) {
    const int w = std::min(NR, nc - jp);
    const float *src = b.p + k0 + (j0 + jp) * b.cs;
    pack_runs(src + 8 * b.cs, b.cs, std::max(0, w - 8), kc, bp + 8, NR);
    pack_runs(src, b.cs, std::min(8, w), kc, bp, NR);
  }
}
#endif

// Micro-kernels: the MR x NR tile at c (rows ldc apart) = (acc ? c : 0) + sum_k a[k][r] * b[k][c];
// rows of b are ldb apart (NR when packed).
void kernel_generic(int kc, const float *a, const float *b, long ldb, float *c, long ldc, bool acc) {
  float t[MR * NR] = {};
  for (int k = 0; k < kc; k++, a += MR, b += ldb)
    for (int r = 0; r < MR; r++)
      for (int q = 0; q < NR; q++) t[r * NR + q] += a[r] * b[q];
  for (int r = 0; r < MR; r++)
    for (int q = 0; q < NR; q++) c[r * ldc + q] = (acc ? c[r * ldc + q] : 0.f) + t[r * NR + q];
}

#ifdef AGRO_X86
__attribute__((target("avx2,fma"))) void kernel_avx2(int kc, const float *a, const float *b, long ldb, float *c, long ldc, bool acc) {
  // The C tile is read or written only after the k loop: fetch its lines meanwhile.
  for (int r = 0; r < MR; r++) {
    _mm_prefetch(reinterpret_cast<const char *>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(c + r * ldc + NR - 1), _MM_HINT_T0);
  }
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int k = 0; k < kc; k++, a += MR, b += ldb) {
    __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8), x;
    x = _mm256_broadcast_ss(a + 0); c00 = _mm256_fmadd_ps(x, b0, c00); c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a + 1); c10 = _mm256_fmadd_ps(x, b0, c10); c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a + 2); c20 = _mm256_fmadd_ps(x, b0, c20); c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a + 3); c30 = _mm256_fmadd_ps(x, b0, c30); c31 = _mm256_fmadd_ps(x, b1, c31);
    x = _mm256_broadcast_ss(a + 4); c40 = _mm256_fmadd_ps(x, b0, c40); c41 = _mm256_fmadd_ps(x, b1, c41);
    x = _mm256_broadcast_ss(a + 5); c50 = _mm256_fmadd_ps(x, b0, c50); c51 = _mm256_fmadd_ps(x, b1, c51);
  }
  // Partial sums over K blocks are added in the same order as before (c + this block's sum).
#define AGRO_ST(r, v0, v1)                                                                            \
  if (acc) {                                                                                          \
    _mm256_storeu_ps(c + r * ldc, _mm256_add_ps(_mm256_loadu_ps(c + r * ldc), v0));                   \
    _mm256_storeu_ps(c + r * ldc + 8, _mm256_add_ps(_mm256_loadu_ps(c + r * ldc + 8), v1));           \
  } else {                                                                                            \
    _mm256_storeu_ps(c + r * ldc, v0);                                                                \
    _mm256_storeu_ps(c + r * ldc + 8, v1);                                                            \
  }
  AGRO_ST(0, c00, c01) AGRO_ST(1, c10, c11) AGRO_ST(2, c20, c21) AGRO_ST(3, c30, c31) AGRO_ST(4, c40, c41) AGRO_ST(5, c50, c51)
#undef AGRO_ST
}

// Few rows of A (decoding: one row per sequence) cannot amortise packing: C = A B with a row-major
// B read in place, all of a chunk's rows against one stretch of B at a time, so B streams through
// the core once per chunk of up to 8 rows. Register tile: M rows x NV 8-wide vectors of C.
constexpr long PREFETCH_ROWS = 12;

template <int M, int NV>
__attribute__((target("avx2,fma"))) void small_rows_avx2(const View &a, const float *b, long ldb, float *c, long ldc, long N, long K) {
  const long W = 8 * NV;
  long j = 0;
  for (; j + W <= N; j += W) {
    __m256 acc[M][NV];
    for (int i = 0; i < M; i++)
      for (int v = 0; v < NV; v++) acc[i][v] = _mm256_setzero_ps();
    const float *bp = b + j;
    for (long k = 0; k < K; k++, bp += ldb) {
      // B rows are far apart (a page each for wide B): the hardware prefetcher does not follow.
      _mm_prefetch(reinterpret_cast<const char *>(bp + PREFETCH_ROWS * ldb), _MM_HINT_T0);
      if (NV > 1) _mm_prefetch(reinterpret_cast<const char *>(bp + PREFETCH_ROWS * ldb + 8 * NV - 1), _MM_HINT_T0);
      __m256 bv[NV];
      for (int v = 0; v < NV; v++) bv[v] = _mm256_loadu_ps(bp + 8 * v);
      for (int i = 0; i < M; i++) {
        __m256 x = _mm256_broadcast_ss(a.p + i * a.rs + k * a.cs);
        for (int v = 0; v < NV; v++) acc[i][v] = _mm256_fmadd_ps(x, bv[v], acc[i][v]);
      }
    }
    for (int i = 0; i < M; i++)
      for (int v = 0; v < NV; v++) _mm256_storeu_ps(c + i * ldc + j + 8 * v, acc[i][v]);
  }
  // The ragged columns, 8 (or fewer, masked) at a time.
  for (; j < N; j += 8) {
    const int w = (int)std::min<long>(8, N - j);
    alignas(32) int lane[8];
    for (int q = 0; q < 8; q++) lane[q] = q < w ? -1 : 0;
    const __m256i mask = _mm256_load_si256(reinterpret_cast<const __m256i *>(lane));
    __m256 acc[M];
    for (int i = 0; i < M; i++) acc[i] = _mm256_setzero_ps();
    const float *bp = b + j;
    for (long k = 0; k < K; k++, bp += ldb) {
      __m256 bv = _mm256_maskload_ps(bp, mask);
      for (int i = 0; i < M; i++) acc[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(a.p + i * a.rs + k * a.cs), bv, acc[i]);
    }
    for (int i = 0; i < M; i++) _mm256_maskstore_ps(c + i * ldc + j, mask, acc[i]);
  }
}

using SmallRows = void (*)(const View &, const float *, long, float *, long, long, long);
// Per row count 1..8: enough independent accumulators to cover the FMA latency where registers allow.
const SmallRows small_rows_table[9] = {nullptr,
                                       small_rows_avx2<1, 4>,
                                       small_rows_avx2<2, 4>,
                                       small_rows_avx2<3, 3>,
                                       small_rows_avx2<4, 2>,
                                       small_rows_avx2<5, 2>,
                                       small_rows_avx2<6, 2>,
                                       small_rows_avx2<7, 1>,
                                       small_rows_avx2<8, 1>};
#endif

using Kernel = void (*)(int, const float *, const float *, long, float *, long, bool);
using PackA = void (*)(const View &, long, long, int, int, float *);
using PackB = void (*)(const View &, long, long, int, int, float *);

#ifdef AGRO_X86
const bool avx2 = has_avx2_fma();
const Kernel kernel = avx2 ? kernel_avx2 : kernel_generic;
const PackA pack_a = avx2 ? pack_a_avx2 : pack_a_generic;
const PackB pack_b = avx2 ? pack_b_avx2 : pack_b_generic;
#else
const Kernel kernel = kernel_generic;
const PackA pack_a = pack_a_generic;
const PackB pack_b = pack_b_generic;
#endif

struct Scratch {
  std::vector<float> ap, bp;
  Scratch() : ap(MC * KC + 64), bp((long)KC * NC + 64) {}
};

// Few rows of A (decoding steps) cannot amortise packing B: a row-major B is then read in place.
constexpr long DIRECT_ROWS = 2 * MR;
// Up to this many rows, a row-major B goes through small_rows_avx2 (chunks of 8 rows).
constexpr long SMALL_ROWS = 16;

// C rows [m0, m1) x columns [n0, n1) of C = A B (C overwritten), using this thread's scratch.
void gemm_range(const View &a, const View &b, float *c, long ldc, long K, long m0, long m1, long n0, long n1) {
  thread_local Scratch s;
  alignas(32) float tile[MR * NR];
  const bool direct = m1 - m0 <= DIRECT_ROWS && b.cs == 1;
  for (long jc = n0; jc < n1; jc += NC) {
    int nc = (int)std::min<long>(NC, n1 - jc);
    for (long pc = 0; pc < K; pc += KC) {
      int kc = (int)std::min<long>(KC, K - pc);
      int full = direct ? nc / NR * NR : 0;  // direct: whole panels straight from B, only the ragged tail is packed
      if (full < nc) pack_b(b, pc, jc + full, kc, nc - full, s.bp.data());
      for (long ic = m0; ic < m1; ic += MC) {
        int mc = (int)std::min<long>(MC, m1 - ic);
        pack_a(a, ic, pc, mc, kc, s.ap.data());
        for (int jr = 0; jr < nc; jr += NR) {
          int nr = std::min(NR, nc - jr);
          const float *bpanel = jr < full ? b.p + pc * b.rs + jc + jr : s.bp.data() + (long)(jr - full) * kc;
          const long ldb = jr < full ? b.rs : NR;
          for (int ir = 0; ir < mc; ir += MR) {
            int mr = std::min(MR, mc - ir);
            float *ct = c + (ic + ir) * ldc + jc + jr;
            if (mr == MR && nr == NR) {
              kernel(kc, s.ap.data() + (long)ir * kc, bpanel, ldb, ct, ldc, pc > 0);
              continue;
            }
            kernel(kc, s.ap.data() + (long)ir * kc, bpanel, ldb, tile, NR, false);
            for (int r = 0; r < mr; r++) {
              float *row = ct + r * ldc;
              const float *src = tile + r * NR;
              if (pc == 0)
                for (int q = 0; q < nr; q++) row[q] = src[q];
              else
                for (int q = 0; q < nr; q++) row[q] += src[q];
            }
          }
        }
      }
    }
  }
  if (K == 0)
    for (long i = m0; i < m1; i++) std::fill(c + i * ldc + n0, c + i * ldc + n1, 0.f);
}

}  // namespace

namespace {
// Per row count 1..8: panels per call of panel_rows_avx2 (accumulators M x P <= 12).
constexpr int PANELS_FOR[9] = {0, 8, 4, 4, 3, 2, 2, 1, 1};

#ifdef AGRO_X86
// C rows [0, M) x P consecutive 8-wide panels (each contiguous, [K][8]); w: valid columns of the last.
// M x P accumulators cover the FMA latency, and every panel is read from memory once for all M rows.
template <int M, int P>
__attribute__((target("avx2,fma"))) void panel_rows_avx2(const float *a, long lda, const float *panel, float *c, long ldc, int w, long K) {
  __m256 acc[M][P];
  for (int i = 0; i < M; i++)
    for (int p = 0; p < P; p++) acc[i][p] = _mm256_setzero_ps();
  const long pstride = K * PANEL;
  for (long k = 0; k < K; k++) {
    __m256 bv[P];
    for (int p = 0; p < P; p++) bv[p] = _mm256_loadu_ps(panel + p * pstride + k * PANEL);
    for (int i = 0; i < M; i++) {
      __m256 x = _mm256_broadcast_ss(a + i * lda + k);
      for (int p = 0; p < P; p++) acc[i][p] = _mm256_fmadd_ps(x, bv[p], acc[i][p]);
    }
  }
  for (int p = 0; p < P; p++) {
    const int wp = p == P - 1 ? w : PANEL;
    for (int i = 0; i < M; i++) {
      if (wp == PANEL) {
        _mm256_storeu_ps(c + i * ldc + p * PANEL, acc[i][p]);
      } else {
        alignas(32) float t[PANEL];
        _mm256_store_ps(t, acc[i][p]);
        for (int q = 0; q < wp; q++) c[i * ldc + p * PANEL + q] = t[q];
      }
    }
  }
}
using PanelRows = void (*)(const float *, long, const float *, float *, long, int, long);
const PanelRows panel_rows_table[9][9] = {
    {},
    {nullptr, panel_rows_avx2<1, 1>, panel_rows_avx2<1, 2>, panel_rows_avx2<1, 3>, panel_rows_avx2<1, 4>, panel_rows_avx2<1, 5>,
     panel_rows_avx2<1, 6>, panel_rows_avx2<1, 7>, panel_rows_avx2<1, 8>},
    {nullptr, panel_rows_avx2<2, 1>, panel_rows_avx2<2, 2>, panel_rows_avx2<2, 3>, panel_rows_avx2<2, 4>},
    {nullptr, panel_rows_avx2<3, 1>, panel_rows_avx2<3, 2>, panel_rows_avx2<3, 3>, panel_rows_avx2<3, 4>},
    {nullptr, panel_rows_avx2<4, 1>, panel_rows_avx2<4, 2>, panel_rows_avx2<4, 3>},
    {nullptr, panel_rows_avx2<5, 1>, panel_rows_avx2<5, 2>},
    {nullptr, panel_rows_avx2<6, 1>, panel_rows_avx2<6, 2>},
    {nullptr, panel_rows_avx2<7, 1>},
    {nullptr, panel_rows_avx2<8, 1>}};
#endif

void panel_rows_generic(const float *a, long lda, const float *panel, float *c, long ldc, int m, int w, long K) {
  for (int i = 0; i < m; i++) {
    float acc[PANEL] = {};
    for (long k = 0; k < K; k++)
      for (int q = 0; q < PANEL; q++) acc[q] += a[i * lda + k] * panel[k * PANEL + q];
    for (int q = 0; q < w; q++) c[i * ldc + q] = acc[q];
  }
}
}  // namespace

void pack_panels(const float *b, long brs, long bcs, long K, long N, float *out) {
  for (long jp = 0; jp < N; jp += PANEL) {
    const int w = (int)std::min<long>(PANEL, N - jp);
    for (long k = 0; k < K; k++, out += PANEL) {
      const float *src = b + k * brs + jp * bcs;
      for (int q = 0; q < w; q++) out[q] = src[q * bcs];
      for (int q = w; q < PANEL; q++) out[q] = 0.f;
    }
  }
}

void gemm_packed(const float *a, long lda, const float *bp, float *c, long M, long N, long K) {
  const long panels = (N + PANEL - 1) / PANEL;
  // Rows in chunks of at most 8, as even as possible; each group of panels is read once from memory
  // and again from L1 for later chunks.
  const long chunks = (M + 7) / 8, rows = (M + chunks - 1) / chunks;
  const bool par = (double)M * N * K >= 8388608.0;
  const long group = kernel == kernel_generic ? 1 : PANELS_FOR[rows];
  parallel_for(panels, group, par, [&](long lo, long hi) {
    for (long p = lo; p < hi; p += group) {
      const long np = std::min(group, hi - p);
      const int w = (int)std::min<long>(PANEL, N - (p + np - 1) * PANEL);
      const float *panel = bp + p * K * PANEL;
      for (long i = 0; i < M; i += rows) {
        const int m = (int)std::min(rows, M - i);
#ifdef AGRO_X86
        if (kernel == kernel_avx2) {
          panel_rows_table[m][np](a + i * lda, lda, panel, c + i * N + p * PANEL, N, w, K);
          continue;
        }
#endif
        panel_rows_generic(a + i * lda, lda, panel, c + i * N + p * PANEL, N, m, w, K);
      }
    }
  });
}

const char *gemm_kernel_name() { return kernel == kernel_generic ? "generic" : "avx2+fma"; }

void gemm_strided(const float *ap, long ars, long acs, const float *bp, long brs, long bcs, float *c, long M, long N, long K) {
  View a{ap, ars, acs}, b{bp, brs, bcs};
#ifdef AGRO_X86
  if (M <= SMALL_ROWS && bcs == 1 && K > 0 && kernel == kernel_avx2) {
    // Columns split over threads only when the product is large (a decoding step is many small ones).
    bool par = (double)M * N * K >= 8388608.0;
    parallel_for(N, 64, par, [&](long lo, long hi) {
      for (long i = 0; i < M; i += 8) {
        long m = std::min<long>(8, M - i);
        small_rows_table[m](View{ap + i * ars, ars, acs}, bp + lo, brs, c + i * N + lo, N, hi - lo, K);
      }
    });
    return;
  }
#endif
  // A handoff to a sleeping worker costs tens of microseconds (more on a busy machine): only
  // products of ~4 MFLOP and up (~0.1 ms on one core) are split.
  bool parallel = (double)M * N * K >= 2097152.0;
  // Split the larger output dimension into aligned chunks, one per thread.
  if (M >= N) parallel_for(M, MR, parallel, [&](long lo, long hi) { gemm_range(a, b, c, N, K, lo, hi, 0, N); });
  else parallel_for(N, NR, parallel, [&](long lo, long hi) { gemm_range(a, b, c, N, K, 0, M, lo, hi); });
}

}  // namespace agro
