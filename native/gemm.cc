// Native single-precision GEMM for agro's TF.js wasm backend (src/model/native.ts).
//
// Why: XNNPACK in TF.js's wasm build is single-threaded in Node and limited to 128-bit SIMD
// without FMA (~15-19 GFLOP/s here), so the matmuls of a training step run at a fraction of what
// the CPU does natively. This addon computes C = op(A) op(B) straight in the wasm heap (the
// tensors' memory, no copies) with an AVX2/FMA micro-kernel when the CPU has one, a portable loop
// otherwise, and splits large products over a small persistent thread pool.
//
// Structure follows the BLIS/GotoBLAS layering: pack a KC x NC block of B into 16-wide column
// panels, pack an MC x KC block of A into 6-high row panels (transposes are absorbed by the packing),
// then a 6 x 16 register-tile micro-kernel accumulates over KC.
#include <node_api.h>

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

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define AGRO_X86 1
#endif

namespace {

constexpr int MR = 6, NR = 16, KC = 256, MC = 96, NC = 1024;

struct View {  // element (r, c) of a logical matrix at p[r * rs + c * cs]
  const float *p;
  long rs, cs;
  float at(long r, long c) const { return p[r * rs + c * cs]; }
};

// Ap: ceil(mc / MR) panels of [kc][MR], zero-padded past mc.
void pack_a(const View &a, long i0, long k0, int mc, int kc, float *ap) {
  for (int ip = 0; ip < mc; ip += MR)
    for (int k = 0; k < kc; k++)
      for (int r = 0; r < MR; r++) *ap++ = ip + r < mc ? a.at(i0 + ip + r, k0 + k) : 0.f;
}

// Bp: ceil(nc / NR) panels of [kc][NR], zero-padded past nc.
void pack_b(const View &b, long k0, long j0, int kc, int nc, float *bp) {
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

// Portable micro-kernel: acc[MR][NR] = sum_k a[k][r] * b[k][c].
void kernel_generic(int kc, const float *a, const float *b, float *acc) {
  for (int i = 0; i < MR * NR; i++) acc[i] = 0.f;
  for (int k = 0; k < kc; k++, a += MR, b += NR)
    for (int r = 0; r < MR; r++)
      for (int c = 0; c < NR; c++) acc[r * NR + c] += a[r] * b[c];
}

#ifdef AGRO_X86
__attribute__((target("avx2,fma"))) void kernel_avx2(int kc, const float *a, const float *b, float *acc) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int k = 0; k < kc; k++, a += MR, b += NR) {
    __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8), x;
    x = _mm256_broadcast_ss(a + 0); c00 = _mm256_fmadd_ps(x, b0, c00); c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a + 1); c10 = _mm256_fmadd_ps(x, b0, c10); c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a + 2); c20 = _mm256_fmadd_ps(x, b0, c20); c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a + 3); c30 = _mm256_fmadd_ps(x, b0, c30); c31 = _mm256_fmadd_ps(x, b1, c31);
    x = _mm256_broadcast_ss(a + 4); c40 = _mm256_fmadd_ps(x, b0, c40); c41 = _mm256_fmadd_ps(x, b1, c41);
    x = _mm256_broadcast_ss(a + 5); c50 = _mm256_fmadd_ps(x, b0, c50); c51 = _mm256_fmadd_ps(x, b1, c51);
  }
  _mm256_storeu_ps(acc + 0, c00); _mm256_storeu_ps(acc + 8, c01);
  _mm256_storeu_ps(acc + 16, c10); _mm256_storeu_ps(acc + 24, c11);
  _mm256_storeu_ps(acc + 32, c20); _mm256_storeu_ps(acc + 40, c21);
  _mm256_storeu_ps(acc + 48, c30); _mm256_storeu_ps(acc + 56, c31);
  _mm256_storeu_ps(acc + 64, c40); _mm256_storeu_ps(acc + 72, c41);
  _mm256_storeu_ps(acc + 80, c50); _mm256_storeu_ps(acc + 88, c51);
}
#endif

using Kernel = void (*)(int, const float *, const float *, float *);

Kernel pick_kernel() {
#ifdef AGRO_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return kernel_avx2;
#endif
  return kernel_generic;
}
const Kernel kernel = pick_kernel();
const char *kernel_name() { return kernel == kernel_generic ? "generic" : "avx2+fma"; }

struct Scratch {
  std::vector<float> ap, bp;
  Scratch() : ap(MC * KC + 64), bp((long)KC * NC + 64) {}
};

// C rows [m0, m1) x columns [n0, n1) of C = A B (C overwritten), using this thread's scratch.
void gemm_range(const View &a, const View &b, float *c, long ldc, long K, long m0, long m1, long n0, long n1) {
  thread_local Scratch s;
  alignas(32) float acc[MR * NR];
  for (long jc = n0; jc < n1; jc += NC) {
    int nc = (int)std::min<long>(NC, n1 - jc);
    for (long pc = 0; pc < K; pc += KC) {
      int kc = (int)std::min<long>(KC, K - pc);
      pack_b(b, pc, jc, kc, nc, s.bp.data());
      for (long ic = m0; ic < m1; ic += MC) {
        int mc = (int)std::min<long>(MC, m1 - ic);
        pack_a(a, ic, pc, mc, kc, s.ap.data());
        for (int jr = 0; jr < nc; jr += NR) {
          int nr = std::min(NR, nc - jr);
          for (int ir = 0; ir < mc; ir += MR) {
            int mr = std::min(MR, mc - ir);
            kernel(kc, s.ap.data() + (long)ir * kc, s.bp.data() + (long)jr * kc, acc);
            float *ct = c + (ic + ir) * ldc + jc + jr;
            for (int r = 0; r < mr; r++) {
              float *row = ct + r * ldc;
              const float *src = acc + r * NR;
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

// A persistent pool: run(job) calls job(t) for t in [0, n) with t = 0 on the calling thread.
class Pool {
 public:
  explicit Pool(int n) : n_(std::max(1, n)) {
    for (int t = 1; t < n_; t++) workers_.emplace_back([this, t] { loop(t); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> g(m_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto &w : workers_) w.join();
  }
  int size() const { return n_; }
  void run(const std::function<void(int)> &job) {
    if (n_ == 1) return job(0);
    {
      std::lock_guard<std::mutex> g(m_);
      job_ = &job;
      pending_ = n_ - 1;
      gen_++;
    }
    cv_.notify_all();
    job(0);
    std::unique_lock<std::mutex> l(m_);
    done_.wait(l, [this] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void loop(int t) {
    long seen = 0;
    for (;;) {
      const std::function<void(int)> *job;
      {
        std::unique_lock<std::mutex> l(m_);
        cv_.wait(l, [&] { return stop_ || gen_ != seen; });
        if (stop_) return;
        seen = gen_;
        job = job_;
      }
      (*job)(t);
      {
        std::lock_guard<std::mutex> g(m_);
        if (--pending_ == 0) done_.notify_one();
      }
    }
  }
  int n_;
  std::vector<std::thread> workers_;
  std::mutex m_;
  std::condition_variable cv_, done_;
  const std::function<void(int)> *job_ = nullptr;
  long gen_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

Pool *pool = nullptr;

int default_threads() {
  const char *env = std::getenv("AGRO_NATIVE_THREADS");
  if (env && std::atoi(env) > 0) return std::atoi(env);
  unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : (int)std::min(hc, 8u);
}

void gemm(const View &a, const View &b, float *c, long M, long N, long K) {
  // Below ~0.25 MFLOP a thread handoff costs more than it saves.
  int threads = (double)M * N * K < 131072.0 ? 1 : pool->size();
  if (threads == 1) return gemm_range(a, b, c, N, K, 0, M, 0, N);
  // Split the larger output dimension into aligned chunks, one per thread.
  bool byRows = M >= N;
  long extent = byRows ? M : N, unit = byRows ? MR : NR;
  long chunk = ((extent + threads - 1) / threads + unit - 1) / unit * unit;
  pool->run([&](int t) {
    long lo = t * chunk, hi = std::min(extent, lo + chunk);
    if (lo >= hi) return;
    if (byRows) gemm_range(a, b, c, N, K, lo, hi, 0, N);
    else gemm_range(a, b, c, N, K, 0, M, lo, hi);
  });
}

// ---- N-API ----

#define CHECK(call)                                                   \
  do {                                                                \
    if ((call) != napi_ok) {                                          \
      napi_throw_error(env, nullptr, "agro native gemm: " #call);     \
      return nullptr;                                                 \
    }                                                                 \
  } while (0)

// gemm(heap, aOff, bOff, cOff, M, N, K, transA, transB, batch, aBatchStride, bBatchStride)
// Offsets in bytes into `heap` (a Uint8Array over the wasm memory); batch strides in floats (0 = broadcast).
// A is [M,K] (or [K,M] when transA), B is [K,N] (or [N,K] when transB), C is [M,N] per batch entry.
napi_value Gemm(napi_env env, napi_callback_info info) {
  size_t argc = 12;
  napi_value argv[12];
  CHECK(napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  if (argc != 12) {
    napi_throw_type_error(env, nullptr, "agro native gemm: expected 12 arguments");
    return nullptr;
  }
  // The heap is a Uint8Array over the wasm memory, which TF.js allocates as a SharedArrayBuffer:
  // N-API in Node 20 reads typed arrays over shared buffers but not the shared buffers themselves.
  void *data;
  size_t bytes;
  napi_typedarray_type type;
  CHECK(napi_get_typedarray_info(env, argv[0], &type, &bytes, &data, nullptr, nullptr));
  if (type != napi_uint8_array) {
    napi_throw_type_error(env, nullptr, "agro native gemm: the heap must be a Uint8Array");
    return nullptr;
  }
  double v[11];
  for (int i = 0; i < 11; i++) CHECK(napi_get_value_double(env, argv[i + 1], &v[i]));
  long aOff = (long)v[0], bOff = (long)v[1], cOff = (long)v[2], M = (long)v[3], N = (long)v[4], K = (long)v[5];
  bool tA = v[6] != 0, tB = v[7] != 0;
  long batch = (long)v[8], sA = (long)v[9], sB = (long)v[10];
  auto fits = [&](long off, long floats) { return off >= 0 && off % 4 == 0 && (size_t)(off + floats * 4) <= bytes; };
  if (M < 0 || N < 0 || K < 0 || batch < 1 || !fits(aOff, (batch - 1) * sA + M * K) ||
      !fits(bOff, (batch - 1) * sB + K * N) || !fits(cOff, batch * M * N)) {
    napi_throw_range_error(env, nullptr, "agro native gemm: operands outside the buffer");
    return nullptr;
  }
  char *base = static_cast<char *>(data);
  for (long i = 0; i < batch; i++) {
    const float *ap = reinterpret_cast<const float *>(base + aOff) + i * sA;
    const float *bp = reinterpret_cast<const float *>(base + bOff) + i * sB;
    float *cp = reinterpret_cast<float *>(base + cOff) + i * M * N;
    View a = tA ? View{ap, 1, M} : View{ap, K, 1};
    View b = tB ? View{bp, 1, K} : View{bp, N, 1};
    gemm(a, b, cp, M, N, K);
  }
  return nullptr;
}

napi_value Info(napi_env env, napi_callback_info) {
  napi_value obj, kname, threads;
  CHECK(napi_create_object(env, &obj));
  CHECK(napi_create_string_utf8(env, kernel_name(), NAPI_AUTO_LENGTH, &kname));
  CHECK(napi_create_int32(env, pool->size(), &threads));
  CHECK(napi_set_named_property(env, obj, "kernel", kname));
  CHECK(napi_set_named_property(env, obj, "threads", threads));
  return obj;
}

napi_value Init(napi_env env, napi_value exports) {
  // One pool per process, left to the OS at exit: joining threads during addon teardown can hang Node.
  if (!pool) pool = new Pool(default_threads());
  napi_value fn;
  CHECK(napi_create_function(env, "gemm", NAPI_AUTO_LENGTH, Gemm, nullptr, &fn));
  CHECK(napi_set_named_property(env, exports, "gemm", fn));
  CHECK(napi_create_function(env, "info", NAPI_AUTO_LENGTH, Info, nullptr, &fn));
  CHECK(napi_set_named_property(env, exports, "info", fn));
  return exports;
}

}  // namespace

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
