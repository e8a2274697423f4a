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

// packPanels(heap, srcOff, dstOff, K, N, transposed): B [K, N] (or stored as [N, K] when transposed) -> panels.
napi_value PackPanels(napi_env env, napi_callback_info info) {
  Heap h;
  double v[5];
  if (!read_args(env, info, 5, h, v)) return nullptr;
  long src = (long)v[0], dst = (long)v[1], K = (long)v[2], N = (long)v[3];
  bool tr = v[4] != 0;
  if (K < 1 || N < 1 || !h.fits(src, K * N) || !h.fits(dst, packed_size(K, N))) return out_of_heap(env);
  pack_panels(h.at<const float>(src), tr ? 1 : N, tr ? K : 1, K, N, h.at<float>(dst));
  return nullptr;
}

// decodeStep(heap, desc): desc is a Float64Array [layers, H, I, V, nh, nkv, hd, cap, t, eps, cacheRows,
// ropeRows, n, ctl, cos, sin, embed, norm, head, logits, then per layer ln1, wqkv, bqkv (-1: none), wo,
// ln2, wgu, wdown, kcache, vcache] (byte offsets; head and the layers' matrices packed by packPanels); ctl is int32 [4, n]: ids, cache rows, positions, pads.
napi_value DecodeStep(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  Heap h;
  void *data;
  size_t len;
  napi_typedarray_type type;
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc != 2 ||
      napi_get_typedarray_info(env, argv[0], &type, &h.bytes, &data, nullptr, nullptr) != napi_ok || type != napi_uint8_array) {
    napi_throw_type_error(env, nullptr, "agro native: decodeStep(heap, desc)");
    return nullptr;
  }
  h.base = static_cast<char *>(data);
  void *dd;
  if (napi_get_typedarray_info(env, argv[1], &type, &len, &dd, nullptr, nullptr) != napi_ok || type != napi_float64_array || len < 20) {
    napi_throw_type_error(env, nullptr, "agro native: decodeStep's descriptor must be a Float64Array");
    return nullptr;
  }
  const double *a = static_cast<const double *>(dd);
  DecodeDims d{(int)a[0], (int)a[1], (int)a[2], (int)a[3], (int)a[4], (int)a[5], (int)a[6], (long)a[7], (long)a[8], (float)a[9], nullptr, nullptr};
  const long cacheRows = (long)a[10], ropeRows = (long)a[11], n = (long)a[12];
  if (d.layers < 1 || d.H < 1 || d.I < 1 || d.V < 1 || d.nkv < 1 || d.nh % d.nkv != 0 || d.hd < 2 || d.hd % 2 || d.hd > 1024 ||
      d.cap < 1 || d.t < 0 || d.t >= d.cap || cacheRows < 1 || n < 1 || n > cacheRows || len != 20 + 9 * (size_t)d.layers) {
    napi_throw_range_error(env, nullptr, "agro native decodeStep: bad dimensions");
    return nullptr;
  }
  const long qkvw = (long)(d.nh + 2 * d.nkv) * d.hd, cachen = cacheRows * d.nkv * d.cap * d.hd;
  if (!h.fits((long)a[13], 4 * n) || !h.fits((long)a[14], ropeRows * d.hd) || !h.fits((long)a[15], ropeRows * d.hd) ||
      !h.fits((long)a[16], (long)d.V * d.H) || !h.fits((long)a[17], d.H) || !h.fits((long)a[18], packed_size(d.H, d.V)) ||
      !h.fits((long)a[19], n * d.V))
    return out_of_heap(env);
  const int *ctl = h.at<const int>((long)a[13]);
  DecodeRows r{n, ctl, ctl + n, ctl + 2 * n, ctl + 3 * n};
  for (long i = 0; i < n; i++)
    if (r.ids[i] < 0 || r.ids[i] >= d.V || r.rows[i] < 0 || r.rows[i] >= cacheRows || r.pos[i] < 0 || r.pos[i] >= ropeRows ||
        r.pad[i] < 0 || r.pad[i] > d.t) {
      napi_throw_range_error(env, nullptr, "agro native decodeStep: a token, row, position or padding is out of range");
      return nullptr;
    }
  d.cos = h.at<const float>((long)a[14]);
  d.sin = h.at<const float>((long)a[15]);
  DecodeWeights w{h.at<const float>((long)a[16]), h.at<const float>((long)a[17]), h.at<const float>((long)a[18]), {}};
  for (int l = 0; l < d.layers; l++) {
    const double *o = a + 20 + 9 * l;
    const bool bias = o[2] >= 0;
    if (!h.fits((long)o[0], d.H) || !h.fits((long)o[1], packed_size(d.H, qkvw)) || (bias && !h.fits((long)o[2], qkvw)) ||
        !h.fits((long)o[3], packed_size((long)d.nh * d.hd, d.H)) || !h.fits((long)o[4], d.H) ||
        !h.fits((long)o[5], packed_size(d.H, 2L * d.I)) || !h.fits((long)o[6], packed_size(d.I, d.H)) || !h.fits((long)o[7], cachen) || !h.fits((long)o[8], cachen))
      return out_of_heap(env);
    w.layer.push_back({h.at<const float>((long)o[0]), h.at<const float>((long)o[1]), bias ? h.at<const float>((long)o[2]) : nullptr,
                       h.at<const float>((long)o[3]), h.at<const float>((long)o[4]), h.at<const float>((long)o[5]),
                       h.at<const float>((long)o[6]), h.at<float>((long)o[7]), h.at<float>((long)o[8])});
  }
  decode_step(d, r, w, h.at<float>((long)a[19]));
  return nullptr;
}

// sampleRows(heap, logitsOff, n, V, temperature, u: Float64Array[n], tokens: Int32Array[n], logp: Float64Array[n])
napi_value SampleRows(napi_env env, napi_callback_info info) {
  size_t argc = 8;
  napi_value argv[8];
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc != 8) {
    napi_throw_type_error(env, nullptr, "agro native: wrong number of arguments");
    return nullptr;
  }
  Heap h;
  napi_typedarray_type type;
  void *data;
  size_t len[3];
  void *arr[3];
  const napi_typedarray_type want[3] = {napi_float64_array, napi_int32_array, napi_float64_array};
  double v[4];
  if (napi_get_typedarray_info(env, argv[0], &type, &h.bytes, &data, nullptr, nullptr) != napi_ok || type != napi_uint8_array) {
    napi_throw_type_error(env, nullptr, "agro native: the heap must be a Uint8Array");
    return nullptr;
  }
  h.base = static_cast<char *>(data);
  for (int i = 0; i < 4; i++)
    if (napi_get_value_double(env, argv[i + 1], &v[i]) != napi_ok) {
      napi_throw_type_error(env, nullptr, "agro native: sampleRows takes numbers after the heap");
      return nullptr;
    }
  for (int i = 0; i < 3; i++)
    if (napi_get_typedarray_info(env, argv[5 + i], &type, &len[i], &arr[i], nullptr, nullptr) != napi_ok || type != want[i]) {
      napi_throw_type_error(env, nullptr, "agro native: sampleRows takes u (Float64Array), tokens (Int32Array), logp (Float64Array)");
      return nullptr;
    }
  long off = (long)v[0], n = (long)v[1], V = (long)v[2];
  double temperature = v[3];
  if (n < 0 || V < 1 || !(temperature >= 0) || !h.fits(off, n * V) || (long)len[0] < n || (long)len[1] < n || (long)len[2] < n)
    return out_of_heap(env);
  sample_rows(h.at<const float>(off), n, V, temperature, static_cast<const double *>(arr[0]), static_cast<int *>(arr[1]),
              static_cast<double *>(arr[2]));
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
      {"attentionBackward", AttentionBackward}, {"decodeStep", DecodeStep}, {"packPanels", PackPanels}, {"sampleRows", SampleRows}, {"info", Info}};
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
