// buffer.cu: device allocation (cudaMalloc retried after the kept blocks are freed, gknn's kept blocks), the
// process-wide count of DeviceBuffer bytes (buffer.cuh) and their hooks (cuda/hooks.hpp).
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/env_switch.hpp"
#include "cuda/common/buffer.cuh"
#include "cuda/common/device_scope.cuh"
#include "cuda/hooks.hpp"

namespace gknn::detail::cuda {
namespace {
std::atomic<int64_t> g_live{0}, g_peak{0};
std::atomic<size_t> g_allocation_limit{0};  // set_device_allocation_limit (hooks.hpp)
constexpr size_t kLoggedAllocations = 64;
std::mutex g_log_mutex;
std::array<int64_t, kLoggedAllocations> g_log;  // the first allocations since the last reset_device_buffer_peak()
size_t g_logged = 0;                            // (fixed storage: counting never allocates, never throws)

/// A block freed by a PooledDeviceBuffer, kept for the next allocation of about its size (cudaMalloc'd: the first
/// allocation of a process costs what a cudaMalloc costs; a stream-ordered pool's first 512 MB took 14.8 ms on the
/// H200 against cudaMalloc's 0.7, as rmm and flashinfer also found).
struct KeptBlock {
  void* p = nullptr;
  size_t bytes = 0;
  int device = 0;
};
constexpr size_t kKeptBlocksMax = 8;  // an Index's rows, norms and operand copy, twice over
std::mutex g_kept_mutex;
std::vector<KeptBlock>& kept_blocks() {  // under g_kept_mutex; oldest first
  static auto* kept = new std::vector<KeptBlock>;  // never destroyed: at exit the runtime may be gone
  return *kept;
}

/// Takes the smallest kept block of `device` that holds `bytes` and wastes at most a quarter of them (a growing
/// Index asks for 1.5x its last rows), or returns one with p null.
KeptBlock take_kept(int device, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_kept_mutex);
  std::vector<KeptBlock>& kept = kept_blocks();
  auto best = kept.end();
  for (auto it = kept.begin(); it != kept.end(); ++it)
    if (it->device == device && it->bytes >= bytes && it->bytes - bytes <= bytes / 4 &&
        (best == kept.end() || it->bytes < best->bytes))
      best = it;
  if (best == kept.end()) return {};
  const KeptBlock taken = *best;
  kept.erase(best);
  return taken;
}

/// `alloc()`, tried once more after trim_device_pools where it failed for want of memory.
template <class Alloc>
cudaError_t allocate_or_trim(Alloc alloc) {
  const cudaError_t err = alloc();
  if (err != cudaErrorMemoryAllocation) return err;
  cudaGetLastError();  // not sticky; cleared so that no later check reports it
  trim_device_pools();
  return alloc();
}

}  // namespace

void set_device_allocation_limit(size_t bytes) { g_allocation_limit.store(bytes); }

void* allocate_device(size_t bytes) {
  const size_t limit = g_allocation_limit.load(std::memory_order_relaxed);
  if (limit > 0 && bytes > limit) throw_device_allocation(cudaErrorMemoryAllocation, bytes);
  void* p = nullptr;
  const cudaError_t err = allocate_or_trim([&] { return cudaMalloc(&p, bytes); });
  if (err != cudaSuccess) throw_device_allocation(err, bytes);
  return p;
}

void* PooledDeviceMemory::allocate(size_t bytes) {
  if (!index_pool_enabled()) return allocate_device(bytes);
  GKNN_CUDA_TRY(cudaGetDevice(&device));
  const KeptBlock block = take_kept(device, bytes);
  this->bytes = block.p ? block.bytes : bytes;
  return block.p ? block.p : allocate_device(bytes);
}

void PooledDeviceMemory::free(void* p) noexcept {
  if (device < 0) {
    GKNN_CUDA_TRY_NOTHROW(cudaFree(p));
    return;
  }
  {
    DeviceScope scope(device, std::nothrow);
    GKNN_CUDA_TRY_NOTHROW(cudaDeviceSynchronize());  // as cudaFree: no work on any stream still reads the block
  }
  std::vector<KeptBlock> evicted;
  {
    std::lock_guard<std::mutex> lock(g_kept_mutex);
    std::vector<KeptBlock>& kept = kept_blocks();
    kept.push_back({p, bytes, device});
    while (kept.size() > kKeptBlocksMax) {
      evicted.push_back(kept.front());
      kept.erase(kept.begin());
    }
  }
  for (const KeptBlock& b : evicted) {
    DeviceScope scope(b.device, std::nothrow);
    GKNN_CUDA_TRY_NOTHROW(cudaFree(b.p));
  }
}

void trim_device_pools() noexcept {
  std::vector<KeptBlock> kept;
  {
    std::lock_guard<std::mutex> lock(g_kept_mutex);
    kept.swap(kept_blocks());
  }
  for (const KeptBlock& b : kept) {
    DeviceScope scope(b.device, std::nothrow);
    GKNN_CUDA_TRY_NOTHROW(cudaFree(b.p));
  }
}

size_t pooled_idle_bytes(int device) noexcept {
  std::lock_guard<std::mutex> lock(g_kept_mutex);
  size_t idle = 0;
  for (const KeptBlock& b : kept_blocks())
    if (b.device == device) idle += b.bytes;
  return idle;
}

bool index_pool_enabled() {
  static const bool on = !detail::env_switch_off("GKNN_INDEX_POOL");
  return on;
}

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
