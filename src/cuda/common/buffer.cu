// buffer.cu: device allocation (cudaMalloc retried after the pools are trimmed, gknn's device pools), the
// process-wide count of DeviceBuffer bytes (buffer.cuh) and their hooks (cuda/hooks.hpp).
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "core/env_switch.hpp"
#include "cuda/common/buffer.cuh"
#include "cuda/hooks.hpp"

namespace gknn::detail::cuda {
namespace {
std::atomic<int64_t> g_live{0}, g_peak{0};
constexpr size_t kLoggedAllocations = 64;
std::mutex g_log_mutex;
std::array<int64_t, kLoggedAllocations> g_log;  // the first allocations since the last reset_device_buffer_peak()
size_t g_logged = 0;                            // (fixed storage: counting never allocates, never throws)

/// gknn's pool of one device, and the stream its blocks are made and freed on: in one stream's order a freed block
/// is the next allocation's at once, with no event between them. Made once, never destroyed (as idle_pool.hpp's
/// pools: at exit the runtime may be gone); pool null: the device has no memory pools.
struct DevicePool {
  cudaMemPool_t pool = nullptr;
  cudaStream_t stream = nullptr;
};
std::mutex g_pools_mutex;
std::map<int, DevicePool>& pools() {  // under g_pools_mutex
  static auto* made = new std::map<int, DevicePool>;
  return *made;
}

bool index_pool_on() {
  static const bool on = !detail::env_switch_off("GKNN_INDEX_POOL");
  return on;
}

/// A pool on `device` (current) that keeps what is freed into it (release threshold UINT64_MAX: never trimmed at a
/// synchronisation, only by trim_device_pools).
DevicePool make_pool(int device) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  DevicePool p;
  GKNN_CUDA_TRY(cudaStreamCreateWithFlags(&p.stream, cudaStreamNonBlocking));
  GKNN_CUDA_TRY(cudaMemPoolCreate(&p.pool, &props));
  uint64_t keep = UINT64_MAX;
  GKNN_CUDA_TRY(cudaMemPoolSetAttribute(p.pool, cudaMemPoolAttrReleaseThreshold, &keep));
  return p;
}

/// The pool of `device` (current), made at its first use.
DevicePool device_pool(int device) {
  std::lock_guard<std::mutex> lock(g_pools_mutex);
  if (auto it = pools().find(device); it != pools().end()) return it->second;
  int supported = 0;
  GKNN_CUDA_TRY(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device));
  return pools().emplace(device, supported ? make_pool(device) : DevicePool{}).first->second;
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

/// Makes `device` current for a while (noexcept, for frees and trims; DeviceScope throws).
class CurrentDevice {
 public:
  explicit CurrentDevice(int device) noexcept {
    GKNN_CUDA_TRY_NOTHROW(cudaGetDevice(&previous_));
    if (device != previous_) GKNN_CUDA_TRY_NOTHROW(cudaSetDevice(device));
  }
  ~CurrentDevice() { GKNN_CUDA_TRY_NOTHROW(cudaSetDevice(previous_)); }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int previous_ = 0;
};
}  // namespace

void* allocate_device(size_t bytes) {
  void* p = nullptr;
  const cudaError_t err = allocate_or_trim([&] { return cudaMalloc(&p, bytes); });
  if (err != cudaSuccess) throw_device_allocation(err, bytes);
  return p;
}

void* PooledDeviceMemory::allocate(size_t bytes) {
  int current = 0;
  GKNN_CUDA_TRY(cudaGetDevice(&current));
  const DevicePool p = index_pool_on() ? device_pool(current) : DevicePool{};
  device = p.pool ? current : -1;
  if (!p.pool) return allocate_device(bytes);
  void* block = nullptr;
  const cudaError_t err = allocate_or_trim([&] { return cudaMallocFromPoolAsync(&block, bytes, p.pool, p.stream); });
  if (err != cudaSuccess) throw_device_allocation(err, bytes);
  if (const cudaError_t synced = cudaStreamSynchronize(p.stream); synced != cudaSuccess) {  // usable by every stream
    free(block);
    throw_cuda(synced, "cudaStreamSynchronize(pool stream)", __FILE__, __LINE__);
  }
  return block;
}

void PooledDeviceMemory::free(void* p) noexcept {
  if (device < 0) {
    GKNN_CUDA_TRY_NOTHROW(cudaFree(p));
    return;
  }
  cudaStream_t stream = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_pools_mutex);
    if (const auto it = pools().find(device); it != pools().end()) stream = it->second.stream;
  }
  CurrentDevice scope(device);
  GKNN_CUDA_TRY_NOTHROW(cudaDeviceSynchronize());  // as cudaFree: no work on any stream still reads the block
  GKNN_CUDA_TRY_NOTHROW(cudaFreeAsync(p, stream));
}

void trim_device_pools() noexcept {
  std::lock_guard<std::mutex> lock(g_pools_mutex);
  for (const auto& [device, p] : pools()) {
    if (!p.pool) continue;
    CurrentDevice scope(device);
    GKNN_CUDA_TRY_NOTHROW(cudaDeviceSynchronize());  // frees still pending on the pool's stream complete
    GKNN_CUDA_TRY_NOTHROW(cudaMemPoolTrimTo(p.pool, 0));
  }
}

size_t pooled_idle_bytes(int device) noexcept {
  std::lock_guard<std::mutex> lock(g_pools_mutex);
  const auto it = pools().find(device);
  if (it == pools().end() || !it->second.pool) return 0;
  uint64_t reserved = 0, used = 0;
  if (cudaMemPoolGetAttribute(it->second.pool, cudaMemPoolAttrReservedMemCurrent, &reserved) != cudaSuccess ||
      cudaMemPoolGetAttribute(it->second.pool, cudaMemPoolAttrUsedMemCurrent, &used) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return reserved > used ? static_cast<size_t>(reserved - used) : 0;
}

bool index_pool_enabled() { return index_pool_on(); }

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
