// shard_threads.hpp: runs one task per shard group on its own host thread, exceptions brought back.
#pragma once

#include <exception>
#include <functional>
#include <thread>
#include <vector>

namespace gknn::detail {

/// Runs task(0..count-1) concurrently: task 0 on the calling thread (so progress callbacks of the first group
/// arrive on the caller's thread), the others on their own threads. Waits for all, then rethrows the
/// exception of the lowest failing task.
inline void run_concurrently(int count, const std::function<void(int)>& task) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(count));
  auto guarded = [&](int i) {
    try {
      task(i);
    } catch (...) {
      errors[size_t(i)] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (int i = 1; i < count; ++i) threads.emplace_back(guarded, i);
  if (count > 0) guarded(0);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace gknn::detail
