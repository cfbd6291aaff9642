// result_memory.cu: see result_memory.cuh.
#include <atomic>

#include "core/env_switch.hpp"
#include "core/finalize.hpp"
#include "cuda/common/error.cuh"
#include "cuda/common/pinned_pool.cuh"
#include "cuda/pipeline/result_memory.cuh"

namespace gknn::detail::cuda {
namespace {

std::atomic<int> g_blocks_out{0};
/// A kept block serves a result array of at least 1 / kBlockSlack of its size (a smaller one gets its own).
constexpr size_t kBlockSlack = 2;

bool enabled() {
  static const bool off = detail::env_switch_off("GKNN_PINNED_RESULTS");
  return !off;
}

void* take_block(size_t bytes, size_t* held) noexcept {
  if (bytes > kMostResultBytes) return nullptr;
  try {
    const bool may_allocate = g_blocks_out.load(std::memory_order_relaxed) < kMostResultBlocks;
    void* p = PinnedPool::get().take(bytes, *held, kBlockSlack * bytes, may_allocate);
    if (p) g_blocks_out.fetch_add(1, std::memory_order_relaxed);
    return p;
  } catch (...) {  // cudaHostAlloc failed: ordinary memory instead
    return nullptr;
  }
}

void give_block(void* p, size_t held) noexcept {
  g_blocks_out.fetch_sub(1, std::memory_order_relaxed);
  PinnedPool::get().give(p, held);
}

}  // namespace

void register_page_locked_results() {
  static const bool registered = [] {
    if (enabled()) set_page_locked_memory(PageLockedMemory{&take_block, &give_block});
    return true;
  }();
  (void)registered;
}

bool page_locked_result_kept(size_t n) {
  return enabled() && n * sizeof(int64_t) <= kMostResultBytes &&
         PinnedPool::get().holds(n * sizeof(float), n * sizeof(int64_t), kBlockSlack);
}

bool page_locked(const void* p) noexcept {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();  // not an error of the search: the pointer is just not CUDA's
    return false;
  }
  return a.type == cudaMemoryTypeHost;
}

}  // namespace gknn::detail::cuda
