// parallel.hpp: the OpenMP conventions of the CPU backend (thread count, exceptions, progress).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>

#include "gknn/types.hpp"

namespace gknn::detail::cpu {

/// SearchParams::threads semantics: 0 = host_team() (every hardware thread OpenMP may use, within the CPU quota).
int resolve_threads(int requested);

/// Runs body(item) for item in [0, count) on `threads` OpenMP threads (dynamic schedule: items may differ in
/// cost). An exception in any item stops the remaining items and is rethrown on the calling thread, because
/// an exception escaping an OpenMP region terminates the program.
template <class Body>
void parallel_for(int threads, int64_t count, Body&& body) {
  std::exception_ptr error;
  std::mutex error_mutex;
  std::atomic<bool> failed{false};
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int64_t item = 0; item < count; ++item) {
    if (failed.load(std::memory_order_relaxed)) continue;
    try {
      body(item);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      failed = true;
    }
  }
  if (error) std::rethrow_exception(error);
}

/// Counts finished work units and reports the fraction to the user's callback from OpenMP thread 0 only
/// (the caller's thread), so the callback is never entered concurrently and the fractions never decrease.
class Progress {
 public:
  Progress(const ProgressCallback& callback, int64_t total_units) : callback_(callback), total_(total_units) {}
  void unit_done();
  /// Reports 1.0 from the calling thread once the work is complete.
  void finish() const;

 private:
  const ProgressCallback& callback_;
  int64_t total_;
  std::atomic<int64_t> done_{0};
};

}  // namespace gknn::detail::cpu
