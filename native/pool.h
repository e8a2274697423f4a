// A small persistent thread pool shared by the addon's kernels (native/*.cc).
#pragma once
#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace agro {

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

/** The process-wide pool (created by the addon's init). */
Pool &pool();

// Split [0, n) into one contiguous range per thread (multiples of `unit`), run f(lo, hi) on each.
inline void parallel_for(long n, long unit, bool parallel, const std::function<void(long, long)> &f) {
  int threads = parallel ? pool().size() : 1;
  if (threads == 1 || n <= unit) return f(0, n);
  long chunk = ((n + threads - 1) / threads + unit - 1) / unit * unit;
  pool().run([&](int t) {
    long lo = t * chunk, hi = std::min(n, lo + chunk);
    if (lo < hi) f(lo, hi);
  });
}

}  // namespace agro
