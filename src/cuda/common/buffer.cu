// buffer.cu: the process-wide count of DeviceBuffer bytes (buffer.cuh) and its hooks (cuda/hooks.hpp).
#include <array>
#include <atomic>
#include <mutex>
#include <vector>

#include "cuda/common/buffer.cuh"
#include "cuda/hooks.hpp"

namespace gknn::detail::cuda {
namespace {
std::atomic<int64_t> g_live{0}, g_peak{0};
constexpr size_t kLoggedAllocations = 64;
std::mutex g_log_mutex;
std::array<int64_t, kLoggedAllocations> g_log;  // the first allocations since the last reset_device_buffer_peak()
size_t g_logged = 0;                            // (fixed storage: counting never allocates, never throws)
}  // namespace

void count_device_bytes(int64_t delta) noexcept {
  if (delta > 0) {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    if (g_logged < kLoggedAllocations) g_log[g_logged++] = delta;
  }
  const int64_t now = g_live.fetch_add(delta, std::memory_order_relaxed) + delta;
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

int64_t device_buffer_bytes() { return g_live.load(std::memory_order_relaxed); }
int64_t device_buffer_peak_bytes() { return g_peak.load(std::memory_order_relaxed); }
void reset_device_buffer_peak() {
  g_peak.store(g_live.load(std::memory_order_relaxed), std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(g_log_mutex);
  g_logged = 0;
}
std::vector<int64_t> device_allocations_since_reset() {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  return std::vector<int64_t>(g_log.begin(), g_log.begin() + static_cast<std::ptrdiff_t>(g_logged));
}

}  // namespace gknn::detail::cuda
