/*
 * Fused causal attention for agro's built-in model, compiled to WebAssembly with SIMD128
 * (scripts/build-kernels.sh). TF.js's wasm backend runs batched matmuls (per-head attention) on a
 * scalar fallback at ~1.5 GFLOP/s and materialises [heads, T, T] scores, probabilities and their
 * gradients; this kernel does rotary + head layout + QK^T + causal softmax + PV in one pass,
 * skips the masked upper triangle, and keeps only O(T) per row (the log-sum-exp) for the backward
 * pass, which recomputes the probabilities the way FlashAttention does.
 *
 * Layouts (float32, row-major):
 *   qkv  [B*T][(nh + 2 nkv) hd]  fused projection output: q heads, then k heads, then v heads
 *   q    [B*nkv][g][T][hd]       rotated queries, head h = kvh*g + gi (HF repeat_kv order)
 *   k, v [B*nkv][T][hd]          rotated keys, values (also the KV cache layout of llama.ts)
 *   kt,vt[B*nkv][hd][T]          transposed copies so score rows vectorise over keys
 *   out  [B*T][nh hd]            attention output, ready for the o projection
 *   lse  [B*nkv][g][T]           log-sum-exp of each scaled score row
 * Rotary tables cos/sin are [maxPos][hd] as in llama.ts: y = x*cos + swap_halves(x)*sin.
 * Every buffer that the 4-row / 8-key micro-kernels may over-read carries 8 floats of slack
 * (the caller allocates it); over-read values only ever land in masked, discarded lanes.
 */
/*
 * The same source also builds natively into the addon (native/attention.cc includes it for the
 * 4-lane type below, once with SSE4.1 and once with AVX2 + FMA), where the native side splits the
 * head blocks over threads.
 */
typedef float f32;
#define R 4 /* query rows per block */

#ifdef __wasm__
#include <wasm_simd128.h>
typedef v128_t v4;
#define EXPORT(name) __attribute__((export_name(#name)))
static inline v4 splat(f32 x) { return wasm_f32x4_splat(x); }
static inline v4 ld(const f32 *p) { return wasm_v128_load(p); }
static inline void st(f32 *p, v4 x) { wasm_v128_store(p, x); }
static inline v4 add(v4 a, v4 b) { return wasm_f32x4_add(a, b); }
static inline v4 sub(v4 a, v4 b) { return wasm_f32x4_sub(a, b); }
static inline v4 mul(v4 a, v4 b) { return wasm_f32x4_mul(a, b); }
static inline v4 vmax(v4 a, v4 b) { return wasm_f32x4_max(a, b); }
static inline v4 vmin(v4 a, v4 b) { return wasm_f32x4_min(a, b); }
static inline v4 vround(v4 a) { return wasm_f32x4_nearest(a); }
static inline v4 pow2i(v4 n) { /* 2^n for integral n in float lanes */
  return wasm_i32x4_shl(wasm_i32x4_add(wasm_i32x4_trunc_sat_f32x4(n), wasm_i32x4_splat(127)), 23);
}
static inline f32 lane0(v4 x) { return wasm_f32x4_extract_lane(x, 0); }
static inline f32 hsum(v4 x) {
  return wasm_f32x4_extract_lane(x, 0) + wasm_f32x4_extract_lane(x, 1) + wasm_f32x4_extract_lane(x, 2) +
         wasm_f32x4_extract_lane(x, 3);
}
#else
#include <smmintrin.h>
typedef __m128 v4;
#define EXPORT(name)
static inline v4 splat(f32 x) { return _mm_set1_ps(x); }
static inline v4 ld(const f32 *p) { return _mm_loadu_ps(p); }
static inline void st(f32 *p, v4 x) { _mm_storeu_ps(p, x); }
static inline v4 add(v4 a, v4 b) { return _mm_add_ps(a, b); }
static inline v4 sub(v4 a, v4 b) { return _mm_sub_ps(a, b); }
static inline v4 mul(v4 a, v4 b) { return _mm_mul_ps(a, b); }
static inline v4 vmax(v4 a, v4 b) { return _mm_max_ps(a, b); }
static inline v4 vmin(v4 a, v4 b) { return _mm_min_ps(a, b); }
static inline v4 vround(v4 a) { return _mm_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline v4 pow2i(v4 n) {
  return _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(_mm_cvttps_epi32(n), _mm_set1_epi32(127)), 23));
}
static inline f32 lane0(v4 x) { return _mm_cvtss_f32(x); }
static inline f32 hsum(v4 x) {
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_add_ss(x, _mm_shuffle_ps(x, x, 1)));
}
#endif
#if defined(__FMA__) && !defined(__wasm__)
/* The native AVX2 build (native/attention.cc) fuses: one rounding instead of two. */
static inline v4 fma4(v4 acc, v4 a, v4 b) { return _mm_fmadd_ps(a, b, acc); }
#else
static inline v4 fma4(v4 acc, v4 a, v4 b) { return add(acc, mul(a, b)); }
#endif

/* exp on 4 lanes: 2^n * p(r), r = x - n ln2 in [-ln2/2, ln2/2], degree-6 Taylor (rel. error < 2e-7). */
static inline v4 exp4(v4 x) {
  x = vmax(vmin(x, splat(88.0f)), splat(-87.0f));
  v4 n = vround(mul(x, splat(1.44269504088896341f)));
  v4 r = sub(x, mul(n, splat(0.693359375f)));
  r = sub(r, mul(n, splat(-2.12194440e-4f)));
  v4 p = splat(1.0f / 720);
  p = fma4(splat(1.0f / 120), p, r);
  p = fma4(splat(1.0f / 24), p, r);
  p = fma4(splat(1.0f / 6), p, r);
  p = fma4(splat(0.5f), p, r);
  p = fma4(splat(1.0f), p, r);
  p = fma4(splat(1.0f), p, r);
  return mul(p, pow2i(n));
}

static f32 exp1(f32 x) { return lane0(exp4(splat(x))); }

static f32 log1(f32 x) { /* x > 0: log via frexp-style split and atanh series (rel. error ~1e-7) */
  union { f32 f; int i; } u = {x};
  int e = ((u.i >> 23) & 255) - 127;
  u.i = (u.i & 0x007fffff) | 0x3f800000; /* m in [1, 2) */
  f32 m = u.f;
  if (m > 1.41421356f) { m *= 0.5f; e += 1; }
  f32 s = (m - 1) / (m + 1), s2 = s * s;
  f32 t = s * (2 + s2 * (2.0f / 3 + s2 * (2.0f / 5 + s2 * (2.0f / 7 + s2 * (2.0f / 9)))));
  return t + (f32)e * 0.693147180559945f;
}

/* ---- layout + rotary ---- */

static inline void rotate(const f32 *x, const f32 *c, const f32 *s, f32 *y, int hd) {
  int half = hd / 2;
  for (int j = 0; j < half; j += 4) {
    v4 a = ld(x + j), b = ld(x + j + half);
    st(y + j, add(mul(a, ld(c + j)), mul(b, ld(s + j))));
    st(y + j + half, add(mul(b, ld(c + j + half)), mul(a, ld(s + j + half))));
  }
}

EXPORT(pack)
void pack(const f32 *qkv, int B, int T, int nh, int nkv, int hd, const int *pos, const f32 *cosT,
          const f32 *sinT, f32 *q, f32 *k, f32 *kt, f32 *v, f32 *vt) {
  int g = nh / nkv, W = (nh + 2 * nkv) * hd;
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      const f32 *row = qkv + (long)(b * T + t) * W;
      int p = pos[b * T + t];
      const f32 *c = cosT + (long)p * hd, *s = sinT + (long)p * hd;
      for (int h = 0; h < nh; h++) {
        int bh = b * nkv + h / g, gi = h % g;
        rotate(row + h * hd, c, s, q + (((long)bh * g + gi) * T + t) * hd, hd);
      }
      for (int h = 0; h < nkv; h++) {
        long bh = b * nkv + h;
        f32 *kr = k + (bh * T + t) * hd;
        rotate(row + (nh + h) * hd, c, s, kr, hd);
        const f32 *vs = row + (nh + nkv + h) * hd;
        f32 *vr = v + (bh * T + t) * hd;
        for (int d = 0; d < hd; d++) {
          vr[d] = vs[d];
          kt[(bh * hd + d) * T + t] = kr[d];
          vt[(bh * hd + d) * T + t] = vs[d];
        }
      }
    }
}

/* ---- micro-kernels ---- */

/*
 * S[r][j] = scale * a_r . bt[:, j] for 4 rows a (stride hd) and keys j in [j0, j1), bt = [hd][T].
 * Writes S rows of stride ls; keys go 8 at a time, so up to 7 keys past j1 are read and written.
 */
static void rows_dot_cols(const f32 *a, int hd, const f32 *bt, int T, int j0, int j1, f32 scale, f32 *S, int ls) {
  for (int j = j0; j < j1; j += 8) {
    v4 acc[R][2];
    for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = splat(0);
    for (int d = 0; d < hd; d++) {
      v4 b0 = ld(bt + (long)d * T + j), b1 = ld(bt + (long)d * T + j + 4);
      for (int r = 0; r < R; r++) {
        v4 ar = splat(a[r * hd + d]);
        acc[r][0] = fma4(acc[r][0], ar, b0);
        acc[r][1] = fma4(acc[r][1], ar, b1);
      }
    }
    for (int r = 0; r < R; r++) {
      st(S + r * ls + j, mul(acc[r][0], splat(scale)));
      st(S + r * ls + j + 4, mul(acc[r][1], splat(scale)));
    }
  }
}

/* O[r][:] = sum_j P[r][j] * m[j][:] for 4 rows (P stride ls), keys [j0, j1), m = [L][hd]; O rows of stride hd. */
static void rows_mix(const f32 *P, int ls, const f32 *m, int hd, int j0, int j1, f32 *O) {
  for (int c = 0; c < hd; c += 16) {
    int w = hd - c < 16 ? (hd - c) / 4 : 4; /* vectors in this chunk */
    v4 acc[R][4];
    for (int r = 0; r < R; r++)
      for (int u = 0; u < 4; u++) acc[r][u] = splat(0);
    for (int j = j0; j < j1; j++) {
      const f32 *mj = m + (long)j * hd + c;
      v4 p[R];
      for (int r = 0; r < R; r++) p[r] = splat(P[r * ls + j]);
      for (int u = 0; u < w; u++) {
        v4 x = ld(mj + 4 * u);
        for (int r = 0; r < R; r++) acc[r][u] = fma4(acc[r][u], p[r], x);
      }
    }
    for (int r = 0; r < R; r++)
      for (int u = 0; u < w; u++) st(O + r * hd + c + 4 * u, acc[r][u]);
  }
}

/* Scratch row stride: room for the 8-key over-run of rows_dot_cols. */
EXPORT(row_stride)
int row_stride(int L) { return ((L + 7) & ~7) + 8; }

/* Valid keys of query time t (absolute past + t): [lo, min(past + t, L - 1)]. */
static inline int last_key(int past, int t, int L) {
  int h = past + t;
  return h < L - 1 ? h : L - 1;
}

/*
 * Forward. Tq queries per head block at absolute times past..past+Tq-1 over L keys; pad[b]
 * (optional, may be 0) hides keys j < pad[b] of batch row b. Rows with no visible key get 0.
 * scratch: R * row_stride(L) + R * hd floats.
 */
/* Head blocks bh in [bh0, bh1) of attn_fwd (the native build runs ranges on several threads). */
void attn_fwd_range(const f32 *q, const f32 *k, const f32 *kt, const f32 *v, int B, int Tq, int L, int past, int nkv,
                    int g, int hd, f32 scale, const int *pad, f32 *out, f32 *lse, f32 *scratch, int bh0, int bh1) {
  (void)k;
  (void)B;
  int nh = nkv * g;
  int ls = row_stride(L);
  f32 *S = scratch, *O = scratch + R * ls;
  for (int bh = bh0; bh < bh1; bh++) {
    int b = bh / nkv, kvh = bh % nkv, lo = pad ? pad[b] : 0;
    const f32 *ktb = kt + (long)bh * hd * L, *vb = v + (long)bh * L * hd;
    for (int gi = 0; gi < g; gi++)
      for (int t0 = 0; t0 < Tq; t0 += R) {
        const f32 *qb = q + (((long)bh * g + gi) * Tq + t0) * hd;
        int hi = last_key(past, t0 + R - 1, L); /* last key any row of the block sees */
        int j0 = lo & ~3;
        if (hi >= lo) rows_dot_cols(qb, hd, ktb, L, j0, hi + 1, scale, S, ls);
        for (int r = 0; r < R; r++) {
          f32 *Sr = S + r * ls;
          int h = last_key(past, t0 + r, L);
          for (int j = j0; j < lo; j++) Sr[j] = 0;
          if (h < lo || t0 + r >= Tq) { /* no visible key (left padding) or a row past the end */
            for (int j = lo; j <= hi; j++) Sr[j] = 0;
            if (t0 + r < Tq) lse[((long)bh * g + gi) * Tq + t0 + r] = 0;
            continue;
          }
          f32 m = Sr[lo];
          for (int j = lo + 1; j <= h; j++) m = Sr[j] > m ? Sr[j] : m;
          v4 sum = splat(0);
          int j = lo;
          for (; j + 4 <= h + 1; j += 4) {
            v4 e = exp4(sub(ld(Sr + j), splat(m)));
            st(Sr + j, e);
            sum = add(sum, e);
          }
          f32 l = hsum(sum);
          for (; j <= h; j++) l += (Sr[j] = exp1(Sr[j] - m));
          f32 inv = 1 / l;
          for (j = lo; j <= h; j++) Sr[j] *= inv;
          for (j = h + 1; j <= hi; j++) Sr[j] = 0;
          lse[((long)bh * g + gi) * Tq + t0 + r] = m + log1(l);
        }
        if (hi >= lo) rows_mix(S, ls, vb, hd, j0, hi + 1, O);
        for (int r = 0; r < R && t0 + r < Tq; r++) {
          f32 *dst = out + ((long)(b * Tq + t0 + r) * nh + kvh * g + gi) * hd;
          for (int d = 0; d < hd; d += 4) st(dst + d, hi >= lo ? ld(O + r * hd + d) : splat(0));
        }
      }
  }
}

EXPORT(attn_fwd)
void attn_fwd(const f32 *q, const f32 *k, const f32 *kt, const f32 *v, int B, int Tq, int L, int past, int nkv,
              int g, int hd, f32 scale, const int *pad, f32 *out, f32 *lse, f32 *scratch) {
  attn_fwd_range(q, k, kt, v, B, Tq, L, past, nkv, g, hd, scale, pad, out, lse, scratch, 0, B * nkv);
}

/*
 * Backward, FlashAttention style: P is recomputed from q, kt and lse; D_r = dO_r . O_r;
 * dS = P (dP - D); dq = scale dS k; dk += scale dS^T q; dv += P^T dO.
 * dq is [B*nkv][g][Tq][hd]; dk, dv are [B*nkv][L][hd] and are zeroed here.
 * scratch: 2 R * row_stride(L) + 3 R * hd floats.
 */
/* Head blocks bh in [bh0, bh1) of attn_bwd; each block owns its slices of dq, dk and dv. */
void attn_bwd_range(const f32 *q, const f32 *k, const f32 *kt, const f32 *v, const f32 *vt, const f32 *out,
                    const f32 *lse, const f32 *dout, int B, int Tq, int L, int past, int nkv, int g, int hd, f32 scale,
                    const int *pad, f32 *dq, f32 *dk, f32 *dv, f32 *scratch, int bh0, int bh1) {
  (void)v;
  (void)B;
  int nh = nkv * g;
  for (long i = (long)bh0 * L * hd; i < (long)bh1 * L * hd; i++) dk[i] = dv[i] = 0;
  int ls = row_stride(L);
  f32 *P = scratch, *dS = scratch + R * ls, *dO = dS + R * ls, *Dq = dO + R * hd, *qr = Dq + R * hd;
  for (int bh = bh0; bh < bh1; bh++) {
    int b = bh / nkv, kvh = bh % nkv, lo = pad ? pad[b] : 0;
    const f32 *ktb = kt + (long)bh * hd * L, *vtb = vt + (long)bh * hd * L, *kb = k + (long)bh * L * hd;
    f32 *dkb = dk + (long)bh * L * hd, *dvb = dv + (long)bh * L * hd;
    for (int gi = 0; gi < g; gi++)
      for (int t0 = 0; t0 < Tq; t0 += R) {
        long rowq = ((long)bh * g + gi) * Tq + t0;
        int hi = last_key(past, t0 + R - 1, L);
        if (hi < lo) continue;
        int j0 = lo & ~3;
        f32 D[R];
        for (int r = 0; r < R; r++) {
          int ok = t0 + r < Tq;
          const f32 *src = dout + ((long)(b * Tq + t0 + r) * nh + kvh * g + gi) * hd;
          const f32 *o = out + ((long)(b * Tq + t0 + r) * nh + kvh * g + gi) * hd;
          v4 acc = splat(0);
          for (int d = 0; d < hd; d += 4) {
            v4 x = ok ? ld(src + d) : splat(0);
            st(dO + r * hd + d, x);
            st(qr + r * hd + d, ok ? ld(q + (rowq + r) * hd + d) : splat(0));
            if (ok) acc = fma4(acc, x, ld(o + d));
          }
          D[r] = hsum(acc);
        }
        rows_dot_cols(qr, hd, ktb, L, j0, hi + 1, scale, P, ls);
        rows_dot_cols(dO, hd, vtb, L, j0, hi + 1, 1.0f, dS, ls);
        for (int r = 0; r < R; r++) {
          f32 *Pr = P + r * ls, *dSr = dS + r * ls;
          int h = last_key(past, t0 + r, L);
          int valid = t0 + r < Tq && h >= lo;
          if (!valid) {
            for (int j = j0; j <= hi; j++) Pr[j] = dSr[j] = 0;
            continue;
          }
          f32 l = lse[rowq + r];
          for (int j = j0; j < lo; j++) Pr[j] = dSr[j] = 0;
          int j = lo;
          for (; j + 4 <= h + 1; j += 4) { /* 4 keys at a time, the same arithmetic as the scalar tail */
            v4 p = exp4(sub(ld(Pr + j), splat(l)));
            st(Pr + j, p);
            st(dSr + j, mul(mul(p, sub(ld(dSr + j), splat(D[r]))), splat(scale)));
          }
          for (; j <= h; j++) {
            Pr[j] = exp1(Pr[j] - l);
            dSr[j] = Pr[j] * (dSr[j] - D[r]) * scale;
          }
          for (j = h + 1; j <= hi; j++) Pr[j] = dSr[j] = 0;
        }
        rows_mix(dS, ls, kb, hd, j0, hi + 1, Dq);
        for (int r = 0; r < R && t0 + r < Tq; r++)
          for (int d = 0; d < hd; d += 4) st(dq + (rowq + r) * hd + d, ld(Dq + r * hd + d));
        for (int j = j0; j <= hi; j++) {
          v4 s[R], p[R];
          for (int r = 0; r < R; r++) {
            s[r] = splat(dS[r * ls + j]);
            p[r] = splat(P[r * ls + j]);
          }
          f32 *dkj = dkb + (long)j * hd, *dvj = dvb + (long)j * hd;
          for (int d = 0; d < hd; d += 4) {
            v4 a = ld(dkj + d), c = ld(dvj + d);
            for (int r = 0; r < R; r++) {
              a = fma4(a, s[r], ld(qr + r * hd + d));
              c = fma4(c, p[r], ld(dO + r * hd + d));
            }
            st(dkj + d, a);
            st(dvj + d, c);
          }
        }
      }
  }
}

EXPORT(attn_bwd)
void attn_bwd(const f32 *q, const f32 *k, const f32 *kt, const f32 *v, const f32 *vt, const f32 *out, const f32 *lse,
              const f32 *dout, int B, int Tq, int L, int past, int nkv, int g, int hd, f32 scale, const int *pad,
              f32 *dq, f32 *dk, f32 *dv, f32 *scratch) {
  attn_bwd_range(q, k, kt, v, vt, out, lse, dout, B, Tq, L, past, nkv, g, hd, scale, pad, dq, dk, dv, scratch, 0, B * nkv);
}

/*
 * Inverse of pack for gradients: un-rotates dq, dk (the adjoint of y = x cos + swap(x) sin is
 * dx = dy cos + swap(dy sin)) and writes dq, dk, dv into the fused qkv layout.
 */
EXPORT(unpack_grad)
void unpack_grad(const f32 *dq, const f32 *dk, const f32 *dv, int B, int T, int nh, int nkv, int hd, const int *pos,
                 const f32 *cosT, const f32 *sinT, f32 *dqkv) {
  int g = nh / nkv, W = (nh + 2 * nkv) * hd, half = hd / 2;
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      f32 *row = dqkv + (long)(b * T + t) * W;
      int p = pos[b * T + t];
      const f32 *c = cosT + (long)p * hd, *s = sinT + (long)p * hd;
      for (int h = 0; h < nh + nkv; h++) {
        const f32 *x = h < nh ? dq + ((((long)b * nkv + h / g) * g + h % g) * T + t) * hd
                              : dk + (((long)b * nkv + h - nh) * T + t) * hd;
        f32 *y = row + h * hd;
        for (int j = 0; j < half; j += 4) {
          v4 a = ld(x + j), bb = ld(x + j + half);
          st(y + j, add(mul(a, ld(c + j)), mul(bb, ld(s + j + half))));
          st(y + j + half, add(mul(bb, ld(c + j + half)), mul(a, ld(s + j))));
        }
      }
      for (int h = 0; h < nkv; h++) {
        const f32 *x = dv + (((long)b * nkv + h) * T + t) * hd;
        f32 *y = row + (nh + nkv + h) * hd;
        for (int d = 0; d < hd; d += 4) st(y + d, ld(x + d));
      }
    }
}
