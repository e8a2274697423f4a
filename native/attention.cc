// Fused causal attention, native: the kernel source of the wasm build (src/model/kernels/attention.c)
// compiled twice for its 4-lane type, with AVX2 encodings and fused multiply-adds where the CPU has
// them and with SSE4.1 otherwise, and head blocks split over the addon's thread pool.
#include <immintrin.h>

#include <cmath>
#include <vector>

#include "kernels.h"
#include "pool.h"

namespace agro {
#pragma GCC push_options
#pragma GCC target("sse4.1")
namespace attn_sse {
#include "../src/model/kernels/attention.c"
}  // namespace attn_sse
#pragma GCC pop_options
#undef R
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace attn_avx2 {
#include "../src/model/kernels/attention.c"
}  // namespace attn_avx2
#pragma GCC pop_options
#undef R

namespace {
struct Attn {
  decltype(&attn_sse::pack) pack;
  decltype(&attn_sse::row_stride) row_stride;
  decltype(&attn_sse::attn_fwd_range) fwd;
  decltype(&attn_sse::attn_bwd_range) bwd;
  decltype(&attn_sse::unpack_grad) unpack_grad;
};
Attn pick() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {attn_avx2::pack, attn_avx2::row_stride, attn_avx2::attn_fwd_range, attn_avx2::attn_bwd_range, attn_avx2::unpack_grad};
  return {attn_sse::pack, attn_sse::row_stride, attn_sse::attn_fwd_range, attn_sse::attn_bwd_range, attn_sse::unpack_grad};
}
const Attn attn = pick();
constexpr int R = 4;  // query rows per block (attention.c)
}  // namespace

bool attention_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.1");
}

void attention_forward(const float *qkv, const int *pos, const float *cosT, const float *sinT, const int *pad, int B, int T,
                       int nh, int nkv, int hd, float *q, float *k, float *kt, float *v, float *vt, float *out, float *lse) {
  attn.pack(qkv, B, T, nh, nkv, hd, pos, cosT, sinT, q, k, kt, v, vt);
  const int g = nh / nkv, blocks = B * nkv;
  const float scale = 1.f / std::sqrt((float)hd);
  const long scratch = (long)R * attn.row_stride(T) + (long)R * hd;
  parallel_for(blocks, 1, (long)blocks * T * T * hd >= 65536, [&](long lo, long hi) {
    std::vector<float> s(scratch);
    attn.fwd(q, k, kt, v, B, T, T, 0, nkv, g, hd, scale, pad, out, lse, s.data(), (int)lo, (int)hi);
  });
}

void attention_backward(const float *q, const float *k, const float *kt, const float *v, const float *vt, const float *out,
                        const float *lse, const float *dout, const int *pos, const float *cosT, const float *sinT, const int *pad,
                        int B, int T, int nh, int nkv, int hd, float *dqkv) {
  const int g = nh / nkv, blocks = B * nkv;
  const float scale = 1.f / std::sqrt((float)hd);
  std::vector<float> dq((long)B * nh * T * hd), dk((long)B * nkv * T * hd), dv(dk.size());
  const long scratch = 2L * R * attn.row_stride(T) + 3L * R * hd;
  parallel_for(blocks, 1, (long)blocks * T * T * hd >= 65536, [&](long lo, long hi) {
    std::vector<float> s(scratch);
    attn.bwd(q, k, kt, v, vt, out, lse, dout, B, T, T, 0, nkv, g, hd, scale, pad, dq.data(), dk.data(), dv.data(),
                         s.data(), (int)lo, (int)hi);
  });
  attn.unpack_grad(dq.data(), dk.data(), dv.data(), B, T, nh, nkv, hd, pos, cosT, sinT, dqkv);
}

}  // namespace agro
