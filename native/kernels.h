// The addon's kernels (native/*.cc); N-API bindings are in native/addon.cc.
#pragma once

namespace agro {

// C[M,N] = A B with A(i,k) = ap[i*ars + k*acs], B(k,j) = bp[k*brs + j*bcs]; C row-major, overwritten.
void gemm_strided(const float *ap, long ars, long acs, const float *bp, long brs, long bcs, float *c, long M, long N, long K);
const char *gemm_kernel_name();

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
