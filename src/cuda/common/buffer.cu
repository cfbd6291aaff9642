// buffer.cu: the process-wide count of DeviceBuffer bytes (buffer.cuh) and its hooks (cuda/hooks.hpp).
#include <atomic>

#include "cuda/common/buffer.cuh"
#include "cuda/hooks.hpp"

namespace gknn::detail::cuda {
namespace {
std::atomic<int64_t> g_live{0}, g_peak{0};
}  // namespace

void count_device_bytes(int64_t delta) noexcept {
  const int64_t now = g_live.fetch_add(delta, std::memory_order_relaxed) + delta;
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

int64_t device_buffer_bytes() { return g_live.load(std::memory_order_relaxed); }
int64_t device_buffer_peak_bytes() { return g_peak.load(std::memory_order_relaxed); }
void reset_device_buffer_peak() { g_peak.store(g_live.load(std::memory_order_relaxed), std::memory_order_relaxed); }

}  // namespace gknn::detail::cuda
