#include "testing/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace gknn::testing {

std::string first_failure(int64_t count, const std::function<std::string(int64_t)>& check, int threads) {
  if (threads <= 0) threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
  threads = static_cast<int>(std::min<int64_t>(threads, std::max<int64_t>(count, 1)));
  std::atomic<int64_t> next{0};
  std::mutex mutex;
  int64_t failed_at = count;  // the smallest failing item so far
  std::string message;
  auto work = [&] {
    for (int64_t i = next++; i < count; i = next++) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (i > failed_at) return;  // a smaller item already failed: later ones cannot be reported
      }
      std::string m;
      try {
        m = check(i);
      } catch (const std::exception& e) {
        m = std::string("exception: ") + e.what();
      }
      if (m.empty()) continue;
      std::lock_guard<std::mutex> lock(mutex);
      if (i < failed_at) {
        failed_at = i;
        message = std::move(m);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  return message;
}

}  // namespace gknn::testing
