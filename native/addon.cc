// N-API bindings of agro's native kernels. Every kernel works in place on a Uint8Array over the
// TF.js wasm heap (byte offsets of the tensors' memory), so no tensor data is copied.
#include <node_api.h>

#include <cstdlib>
#include <thread>

#include "kernels.h"
#include "pool.h"

namespace agro {

Pool &pool() {
  // One pool per process, left to the OS at exit: joining threads during addon teardown can hang Node.
  static Pool *p = [] {
    const char *env = std::getenv("AGRO_NATIVE_THREADS");
    int n = env && std::atoi(env) > 0 ? std::atoi(env) : (int)std::min(std::max(1u, std::thread::hardware_concurrency()), 8u);
    return new Pool(n);
  }();
  return *p;
}

namespace {

#define CHECK(call)                                                   \
  do {                                                                \
    if ((call) != napi_ok) {                                          \
      napi_throw_error(env, nullptr, "agro native: " #call);          \
      return nullptr;                                                 \
    }                                                                 \
  } while (0)

struct Heap {
  char *base = nullptr;
  size_t bytes = 0;
  // An operand of `n` 4-byte elements at byte offset `off` lies inside the heap.
  bool fits(long off, long n) const { return off >= 0 && off % 4 == 0 && n >= 0 && (size_t)(off + n * 4) <= bytes; }
  template <typename T> T *at(long off) const { return reinterpret_cast<T *>(base + off); }
};

// Reads (heap, numbers...) arguments. The heap is a Uint8Array over the wasm memory, which TF.js
// allocates as a SharedArrayBuffer: N-API in Node 20 reads typed arrays over shared buffers but
// not the shared buffers themselves.
bool read_args(napi_env env, napi_callback_info info, size_t want, Heap &heap, double *v) {
  size_t argc = 32;
  napi_value argv[32];
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc != want + 1) {
    napi_throw_type_error(env, nullptr, "agro native: wrong number of arguments");
    return false;
  }
  napi_typedarray_type type;
  void *data;
  if (napi_get_typedarray_info(env, argv[0], &type, &heap.bytes, &data, nullptr, nullptr) != napi_ok || type != napi_uint8_array) {
    napi_throw_type_error(env, nullptr, "agro native: the heap must be a Uint8Array");
    return false;
  }
  heap.base = static_cast<char *>(data);
  for (size_t i = 0; i < want; i++)
    if (napi_get_value_double(env, argv[i + 1], &v[i]) != napi_ok) {
      napi_throw_type_error(env, nullptr, "agro native: arguments after the heap must be numbers");
      return false;
    }
  return true;
}

napi_value out_of_heap(napi_env env) {
  napi_throw_range_error(env, nullptr, "agro native: operands outside the heap");
  return nullptr;
}

// gemm(heap, aOff, bOff, cOff, M, N, K, transA, transB, batch, aBatchStride, bBatchStride)
// A is [M,K] (or [K,M] when transA), B is [K,N] (or [N,K] when transB), C is [M,N] per batch
// entry; batch strides in elements (0 = the operand is shared by the whole batch).
napi_value Gemm(napi_env env, napi_callback_info info) {
  Heap h;
  double v[11];
  if (!read_args(env, info, 11, h, v)) return nullptr;
  long aOff = (long)v[0], bOff = (long)v[1], cOff = (long)v[2], M = (long)v[3], N = (long)v[4], K = (long)v[5];
  bool tA = v[6] != 0, tB = v[7] != 0;
  long batch = (long)v[8], sA = (long)v[9], sB = (long)v[10];
  if (M < 0 || N < 0 || K < 0 || batch < 1 || !h.fits(aOff, (batch - 1) * sA + M * K) ||
      !h.fits(bOff, (batch - 1) * sB + K * N) || !h.fits(cOff, batch * M * N))
    return out_of_heap(env);
  for (long i = 0; i < batch; i++) {
    const float *ap = h.at<const float>(aOff) + i * sA, *bp = h.at<const float>(bOff) + i * sB;
    float *cp = h.at<float>(cOff) + i * M * N;
    gemm_strided(ap, tA ? 1 : K, tA ? M : 1, bp, tB ? 1 : N, tB ? K : 1, cp, M, N, K);
  }
  return nullptr;
}

// logSoftmaxSelect(heap, xOff, tOff, logpOff, pOff, N, V)
napi_value LogSoftmaxSelect(napi_env env, napi_callback_info info) {
  Heap h;
  double v[6];
  if (!read_args(env, info, 6, h, v)) return nullptr;
  long x = (long)v[0], t = (long)v[1], lp = (long)v[2], p = (long)v[3], N = (long)v[4], V = (long)v[5];
  if (N < 0 || V < 1 || !h.fits(x, N * V) || !h.fits(t, N) || !h.fits(lp, N) || !h.fits(p, N * V)) return out_of_heap(env);
  log_softmax_select(h.at<const float>(x), h.at<const int>(t), h.at<float>(lp), h.at<float>(p), N, V);
  return nullptr;
}

// logSoftmaxSelectGrad(heap, pOff, tOff, dyOff, dxOff, N, V)
napi_value LogSoftmaxSelectGrad(napi_env env, napi_callback_info info) {
  Heap h;
  double v[6];
  if (!read_args(env, info, 6, h, v)) return nullptr;
  long p = (long)v[0], t = (long)v[1], dy = (long)v[2], dx = (long)v[3], N = (long)v[4], V = (long)v[5];
  if (N < 0 || V < 1 || !h.fits(p, N * V) || !h.fits(t, N) || !h.fits(dy, N) || !h.fits(dx, N * V)) return out_of_heap(env);
  log_softmax_select_grad(h.at<const float>(p), h.at<const int>(t), h.at<const float>(dy), h.at<float>(dx), N, V);
  return nullptr;
}

// swiglu(heap, guOff, outOff, N, I)
napi_value SwiGlu(napi_env env, napi_callback_info info) {
  Heap h;
  double v[4];
  if (!read_args(env, info, 4, h, v)) return nullptr;
  long gu = (long)v[0], out = (long)v[1], N = (long)v[2], I = (long)v[3];
  if (N < 0 || I < 1 || !h.fits(gu, N * 2 * I) || !h.fits(out, N * I)) return out_of_heap(env);
  swiglu(h.at<const float>(gu), h.at<float>(out), N, I);
  return nullptr;
}

// swigluGrad(heap, guOff, dyOff, dguOff, N, I)
napi_value SwiGluGrad(napi_env env, napi_callback_info info) {
  Heap h;
  double v[5];
  if (!read_args(env, info, 5, h, v)) return nullptr;
  long gu = (long)v[0], dy = (long)v[1], dgu = (long)v[2], N = (long)v[3], I = (long)v[4];
  if (N < 0 || I < 1 || !h.fits(gu, N * 2 * I) || !h.fits(dy, N * I) || !h.fits(dgu, N * 2 * I)) return out_of_heap(env);
  swiglu_grad(h.at<const float>(gu), h.at<const float>(dy), h.at<float>(dgu), N, I);
  return nullptr;
}

// rmsNorm(heap, xOff, wOff, eps, yOff, rstdOff, N, H)
napi_value RmsNorm(napi_env env, napi_callback_info info) {
  Heap h;
  double v[7];
  if (!read_args(env, info, 7, h, v)) return nullptr;
  long x = (long)v[0], w = (long)v[1], y = (long)v[3], r = (long)v[4], N = (long)v[5], H = (long)v[6];
  if (N < 0 || H < 1 || !h.fits(x, N * H) || !h.fits(w, H) || !h.fits(y, N * H) || !h.fits(r, N)) return out_of_heap(env);
  rms_norm(h.at<const float>(x), h.at<const float>(w), (float)v[2], h.at<float>(y), h.at<float>(r), N, H);
  return nullptr;
}

// rmsNormGrad(heap, xOff, wOff, rstdOff, dyOff, dxOff, dwOff, N, H)
napi_value RmsNormGrad(napi_env env, napi_callback_info info) {
  Heap h;
  double v[8];
  if (!read_args(env, info, 8, h, v)) return nullptr;
  long x = (long)v[0], w = (long)v[1], r = (long)v[2], dy = (long)v[3], dx = (long)v[4], dw = (long)v[5], N = (long)v[6], H = (long)v[7];
  if (N < 0 || H < 1 || !h.fits(x, N * H) || !h.fits(w, H) || !h.fits(r, N) || !h.fits(dy, N * H) || !h.fits(dx, N * H) ||
      !h.fits(dw, H))
    return out_of_heap(env);
  rms_norm_grad(h.at<const float>(x), h.at<const float>(w), h.at<const float>(r), h.at<const float>(dy), h.at<float>(dx),
                h.at<float>(dw), N, H);
  return nullptr;
}

// adamW(heap, pOff, gOff, mOff, vOff, pOutOff, mOutOff, vOutOff, n, lr, beta1, beta2, eps, decay, bc1, bc2)
napi_value AdamW(napi_env env, napi_callback_info info) {
  Heap h;
  double v[15];
  if (!read_args(env, info, 15, h, v)) return nullptr;
  long n = (long)v[7];
  for (int i = 0; i < 7; i++)
    if (!h.fits((long)v[i], n)) return out_of_heap(env);
  adamw(h.at<const float>((long)v[0]), h.at<const float>((long)v[1]), h.at<const float>((long)v[2]), h.at<const float>((long)v[3]),
        h.at<float>((long)v[4]), h.at<float>((long)v[5]), h.at<float>((long)v[6]), n, v[8], v[9], v[10], v[11], v[12], v[13], v[14]);
  return nullptr;
}

// Checks shared by the attention bindings; false (with a JS error thrown) on a bad operand.
struct AttnDims {
  long B, T, nh, nkv, hd, rows;
  bool valid() const { return B > 0 && T > 0 && nkv > 0 && nh % nkv == 0 && hd % 8 == 0 && hd > 0 && rows > 0; }
  long qn() const { return B * nh * T * hd + 4 * hd + 16; }
  long kvn() const { return B * nkv * T * hd; }
};

bool attn_operands(napi_env env, const Heap &h, const AttnDims &d, long pos, long cosT, long sinT, long pad, long q, long k,
                   long kt, long v, long vt, long out, long lse) {
  if (!d.valid()) {
    napi_throw_range_error(env, nullptr, "agro native attention: unsupported shape");
    return false;
  }
  if (!h.fits(pos, d.B * d.T) || !h.fits(cosT, d.rows * d.hd) || !h.fits(sinT, d.rows * d.hd) || (pad >= 0 && !h.fits(pad, d.B)) ||
      !h.fits(q, d.qn()) || !h.fits(k, d.kvn()) || !h.fits(kt, d.kvn() + 16) || !h.fits(v, d.kvn()) || !h.fits(vt, d.kvn() + 16) ||
      !h.fits(out, d.B * d.T * d.nh * d.hd) || !h.fits(lse, d.B * d.nh * d.T)) {
    out_of_heap(env);
    return false;
  }
  const int *p = h.at<const int>(pos);
  for (long i = 0; i < d.B * d.T; i++)
    if (p[i] < 0 || p[i] >= d.rows) {
      napi_throw_range_error(env, nullptr, "agro native attention: a position is outside the rotary table");
      return false;
    }
  return true;
}

// attentionForward(heap, qkv, pos, cos, sin, pad (-1: none), B, T, nh, nkv, hd, rows, q, k, kt, v, vt, out, lse)
napi_value AttentionForward(napi_env env, napi_callback_info info) {
  Heap h;
  double a[18];
  if (!read_args(env, info, 18, h, a)) return nullptr;
  AttnDims d{(long)a[5], (long)a[6], (long)a[7], (long)a[8], (long)a[9], (long)a[10]};
  long qkv = (long)a[0], pos = (long)a[1], c = (long)a[2], sn = (long)a[3], pad = (long)a[4];
  long q = (long)a[11], k = (long)a[12], kt = (long)a[13], v = (long)a[14], vt = (long)a[15], out = (long)a[16], lse = (long)a[17];
  if (!attn_operands(env, h, d, pos, c, sn, pad, q, k, kt, v, vt, out, lse)) return nullptr;
  if (!h.fits(qkv, d.B * d.T * (d.nh + 2 * d.nkv) * d.hd)) return out_of_heap(env);
  attention_forward(h.at<const float>(qkv), h.at<const int>(pos), h.at<const float>(c), h.at<const float>(sn),
                    pad >= 0 ? h.at<const int>(pad) : nullptr, (int)d.B, (int)d.T, (int)d.nh, (int)d.nkv, (int)d.hd, h.at<float>(q),
                    h.at<float>(k), h.at<float>(kt), h.at<float>(v), h.at<float>(vt), h.at<float>(out), h.at<float>(lse));
  return nullptr;
}

// attentionBackward(heap, q, k, kt, v, vt, out, lse, dout, pos, cos, sin, pad (-1: none), B, T, nh, nkv, hd, rows, dqkv)
napi_value AttentionBackward(napi_env env, napi_callback_info info) {
  Heap h;
  double a[19];
  if (!read_args(env, info, 19, h, a)) return nullptr;
  long q = (long)a[0], k = (long)a[1], kt = (long)a[2], v = (long)a[3], vt = (long)a[4], out = (long)a[5], lse = (long)a[6];
  long dout = (long)a[7], pos = (long)a[8], c = (long)a[9], sn = (long)a[10], pad = (long)a[11];
  AttnDims d{(long)a[12], (long)a[13], (long)a[14], (long)a[15], (long)a[16], (long)a[17]};
  long dqkv = (long)a[18];
  if (!attn_operands(env, h, d, pos, c, sn, pad, q, k, kt, v, vt, out, lse)) return nullptr;
  if (!h.fits(dout, d.B * d.T * d.nh * d.hd) || !h.fits(dqkv, d.B * d.T * (d.nh + 2 * d.nkv) * d.hd)) return out_of_heap(env);
  attention_backward(h.at<const float>(q), h.at<const float>(k), h.at<const float>(kt), h.at<const float>(v), h.at<const float>(vt),
                     h.at<const float>(out), h.at<const float>(lse), h.at<const float>(dout), h.at<const int>(pos), h.at<const float>(c),
                     h.at<const float>(sn), pad >= 0 ? h.at<const int>(pad) : nullptr, (int)d.B, (int)d.T, (int)d.nh, (int)d.nkv,
                     (int)d.hd, h.at<float>(dqkv));
  return nullptr;
}

napi_value Info(napi_env env, napi_callback_info) {
  napi_value obj, kname, threads;
  CHECK(napi_create_object(env, &obj));
  CHECK(napi_create_string_utf8(env, gemm_kernel_name(), NAPI_AUTO_LENGTH, &kname));
  CHECK(napi_create_int32(env, pool().size(), &threads));
  CHECK(napi_set_named_property(env, obj, "kernel", kname));
  CHECK(napi_set_named_property(env, obj, "threads", threads));
  napi_value att;
  CHECK(napi_get_boolean(env, attention_supported(), &att));
  CHECK(napi_set_named_property(env, obj, "attention", att));
  return obj;
}

napi_value Init(napi_env env, napi_value exports) {
  const struct { const char *name; napi_callback fn; } fns[] = {
      {"gemm", Gemm},       {"logSoftmaxSelect", LogSoftmaxSelect}, {"logSoftmaxSelectGrad", LogSoftmaxSelectGrad},
      {"swiglu", SwiGlu},   {"swigluGrad", SwiGluGrad},             {"rmsNorm", RmsNorm},
      {"rmsNormGrad", RmsNormGrad}, {"adamW", AdamW}, {"attentionForward", AttentionForward},
      {"attentionBackward", AttentionBackward}, {"info", Info}};
  for (const auto &f : fns) {
    napi_value v;
    CHECK(napi_create_function(env, f.name, NAPI_AUTO_LENGTH, f.fn, nullptr, &v));
    CHECK(napi_set_named_property(env, exports, f.name, v));
  }
  return exports;
}

}  // namespace
}  // namespace agro

NAPI_MODULE(NODE_GYP_MODULE_NAME, agro::Init)
