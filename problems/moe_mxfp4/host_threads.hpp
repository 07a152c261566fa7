// A minimal static-partition parallel loop for the host-side generator, oracle and cpu variant.
#pragma once
#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace moe_host {

inline int host_threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// Calls fn(begin, end) on disjoint chunks covering [0, n); rethrows the first exception.
template <class Fn>
void parallel_for(int64_t n, Fn&& fn) {
  const int64_t workers = std::min<int64_t>(host_threads(), n);
  if (workers <= 1) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
  std::exception_ptr error;
  std::mutex error_mutex;
  std::vector<std::thread> pool;
  for (int64_t w = 0; w < workers; ++w) {
    pool.emplace_back([&, w] {
      try {
        fn(n * w / workers, n * (w + 1) / workers);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    });
  }
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace moe_host
