// The addon's kernels (native/*.cc); N-API bindings are in native/addon.cc.
#pragma once
#include <vector>

namespace agro {

// C[M,N] = A B with A(i,k) = ap[i*ars + k*acs], B(k,j) = bp[k*brs + j*bcs]; C row-major, overwritten.
void gemm_strided(const float *ap, long ars, long acs, const float *bp, long brs, long bcs, float *c, long M, long N, long K);
const char *gemm_kernel_name();
// B [K, N] (element (k, j) at b[k*brs + j*bcs]) as ceil(N / PANEL) contiguous panels [K][PANEL], zero-padded.
constexpr long PANEL = 8;  // one AVX2 vector
inline long packed_size(long K, long N) { return (N + PANEL - 1) / PANEL * PANEL * K; }
void pack_panels(const float *b, long brs, long bcs, long K, long N, float *out);
// C[M,N] = A B for row-major A [M, K] (rows lda apart) and B packed by pack_panels; for few rows (decoding).
void gemm_packed(const float *a, long lda, const float *bp, float *c, long M, long N, long K);

// Row-wise over x [N, V]: p = softmax(x), logp[n] = log p[n, t[n]] (as x[t] - logsumexp(x), no underflow).
void log_softmax_select(const float *x, const int *t, float *logp, float *p, long N, long V);
// dx = dy[n] * (onehot(t[n]) - p[n, :]): the gradient of log_softmax_select's logp.
void log_softmax_select_grad(const float *p, const int *t, const float *dy, float *dx, long N, long V);

}  // namespace agro

namespace agro {

// gu [N, 2I] = [gate | up] -> out [N, I] = silu(gate) * up; the gradient writes d(gu) [N, 2I].
void swiglu(const float *gu, float *out, long N, long I);
void swiglu_grad(const float *gu, const float *dy, float *dgu, long N, long I);
// y = x * rstd * w per row of x [N, H], rstd = 1 / sqrt(mean(x^2) + eps) [N]; the gradient gives dx and dw [H].
void rms_norm(const float *x, const float *w, float eps, float *y, float *rstd, long N, long H);
void rms_norm_grad(const float *x, const float *w, const float *rstd, const float *dy, float *dx, float *dw, long N, long H);

}  // namespace agro

namespace agro {

// One AdamW step for n parameters (torch.optim.AdamW): m' = b1 m + (1-b1) g, v' = b2 v + (1-b2) g^2,
// p' = p * decay - lr (m'/bc1) / (sqrt(v'/bc2) + eps), decay = 1 - lr * weight_decay (1 for no decay).
void adamw(const float *p, const float *g, const float *m, const float *v, float *po, float *mo, float *vo, long n,
           double lr, double beta1, double beta2, double eps, double decay, double bc1, double bc2);

}  // namespace agro

namespace agro {

// Fused causal attention over the fused projection qkv [B*T, (nh + 2 nkv) hd] (see
// src/model/kernels/attention.c for the layouts). pad may be null. q, kt and vt need slack past
// their ends (4 hd + 16 and 16 floats) for the micro-kernels' over-reads.
bool attention_supported();
void attention_forward(const float *qkv, const int *pos, const float *cosT, const float *sinT, const int *pad, int B, int T,
                       int nh, int nkv, int hd, float *q, float *k, float *kt, float *v, float *vt, float *out, float *lse);
void attention_backward(const float *q, const float *k, const float *kt, const float *v, const float *vt, const float *out,
                        const float *lse, const float *dout, const int *pos, const float *cosT, const float *sinT, const int *pad,
                        int B, int T, int nh, int nkv, int hd, float *dqkv);

}  // namespace agro

namespace agro {

// One decoding step (native/decode.cc): shapes, the rows decoded, and the weights, all in place.
struct DecodeDims {
  int layers, H, I, V, nh, nkv, hd;
  long cap;          // cache slots per (row, kv head)
  long t;            // the slot this step's token fills; every row attends to its slots [pad, t]
  float eps;         // RMSNorm epsilon
  const float *cos;  // rotary tables [positions, hd] as llama.ts builds them
  const float *sin;
};
struct DecodeRows {
  long n;            // rows decoded this step
  const int *ids;    // [n] token ids
  const int *rows;   // [n] each row's index in the caches
  const int *pos;    // [n] rotary positions
  const int *pad;    // [n] leading padding slots
};
// The matrices wqkv, wo, wgu, wdown and head are packed by pack_panels.
struct DecodeLayer {
  const float *ln1, *wqkv, *bqkv /* may be null */, *wo, *ln2, *wgu, *wdown;
  float *kcache, *vcache;  // [rows, nkv, cap, hd], rotated keys and values
};
struct DecodeWeights {
  const float *embed;  // [V, H]
  const float *norm;   // [H]
  const float *head;   // [H, V]
  std::vector<DecodeLayer> layer;
};
// logits [n, V]; writes slot t of the caches of the decoded rows.
void decode_step(const DecodeDims &d, const DecodeRows &r, const DecodeWeights &w, float *logits);
// Per row of logits [n, V]: the token drawn at `temperature` (0 = the first maximum) with the uniform
// u[i] in [0, 1) (unused when greedy), and its log-prob at temperature 1 (native/sample.cc).
void sample_rows(const float *logits, long n, long V, double temperature, const double *u, int *tokens, double *logp);

}  // namespace agro
