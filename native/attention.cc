// Fused causal attention, native: the kernel source of the wasm build (src/model/kernels/attention.c)
// compiled with SSE4.1 for its 4-lane type, with head blocks split over the addon's thread pool.
#pragma GCC target("sse4.1")
#include <smmintrin.h>

#include <cmath>
#include <vector>

#include "kernels.h"
#include "pool.h"

namespace agro {
namespace attn {
#include "../src/model/kernels/attention.c"
}  // namespace attn

bool attention_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.1");
}

void attention_forward(const float *qkv, const int *pos, const float *cosT, const float *sinT, const int *pad, int B, int T,
                       int nh, int nkv, int hd, float *q, float *k, float *kt, float *v, float *vt, float *out, float *lse) {
  attn::pack(qkv, B, T, nh, nkv, hd, pos, cosT, sinT, q, k, kt, v, vt);
  const int g = nh / nkv, blocks = B * nkv;
  const float scale = 1.f / std::sqrt((float)hd);
  const long scratch = (long)R * attn::row_stride(T) + (long)R * hd;
  parallel_for(blocks, 1, (long)blocks * T * T * hd >= 65536, [&](long lo, long hi) {
    std::vector<float> s(scratch);
    attn::attn_fwd_range(q, k, kt, v, B, T, T, 0, nkv, g, hd, scale, pad, out, lse, s.data(), (int)lo, (int)hi);
  });
}

void attention_backward(const float *q, const float *k, const float *kt, const float *v, const float *vt, const float *out,
                        const float *lse, const float *dout, const int *pos, const float *cosT, const float *sinT, const int *pad,
                        int B, int T, int nh, int nkv, int hd, float *dqkv) {
  const int g = nh / nkv, blocks = B * nkv;
  const float scale = 1.f / std::sqrt((float)hd);
  std::vector<float> dq((long)B * nh * T * hd), dk((long)B * nkv * T * hd), dv(dk.size());
  const long scratch = 2L * R * attn::row_stride(T) + 3L * R * hd;
  parallel_for(blocks, 1, (long)blocks * T * T * hd >= 65536, [&](long lo, long hi) {
    std::vector<float> s(scratch);
    attn::attn_bwd_range(q, k, kt, v, vt, out, lse, dout, B, T, T, 0, nkv, g, hd, scale, pad, dq.data(), dk.data(), dv.data(),
                         s.data(), (int)lo, (int)hi);
  });
  attn::unpack_grad(dq.data(), dk.data(), dv.data(), B, T, nh, nkv, hd, pos, cosT, sinT, dqkv);
}

}  // namespace agro
