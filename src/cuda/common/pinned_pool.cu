// pinned_pool.cu: see pinned_pool.cuh.
#include <algorithm>
#include <cstddef>

#include "cuda/common/error.cuh"
#include "cuda/common/pinned_pool.cuh"

namespace gknn::detail::cuda {

PinnedPool& PinnedPool::get() {
  static PinnedPool* pool = new PinnedPool;
  return *pool;
}

size_t PinnedPool::best_fit(size_t bytes, size_t most, size_t skip) const {
  size_t best = blocks_.size();
  for (size_t i = 0; i < blocks_.size(); ++i)
    if (i != skip && blocks_[i].second >= bytes && blocks_[i].second <= most &&
        (best == blocks_.size() || blocks_[i].second < blocks_[best].second))
      best = i;
  return best;
}

void* PinnedPool::take(size_t bytes, size_t& held, size_t most, bool may_allocate) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    const size_t best = best_fit(bytes, most, blocks_.size());
    if (best < blocks_.size()) {
      void* p = blocks_[best].first;
      held = blocks_[best].second;
      kept_ -= held;
      blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(best));
      return p;
    }
  }
  if (!may_allocate) return nullptr;
  void* p = nullptr;
  GKNN_CUDA_TRY(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
  held = bytes;
  return p;
}

bool PinnedPool::holds(size_t a, size_t b, size_t slack) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const size_t larger = std::max(a, b), smaller = std::min(a, b);
  const size_t first = best_fit(larger, slack * larger, blocks_.size());
  return first < blocks_.size() && best_fit(smaller, slack * smaller, first) < blocks_.size();
}

void PinnedPool::give(void* p, size_t held) noexcept {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (kept_ + held <= kKeptBytes) {
      try {
        blocks_.emplace_back(p, held);
        kept_ += held;
        return;
      } catch (...) {  // no room to keep it: freed below
      }
    }
  }
  GKNN_CUDA_TRY_NOTHROW(cudaFreeHost(p));
}

void PinnedPool::trim() noexcept {
  std::vector<std::pair<void*, size_t>> blocks;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    blocks.swap(blocks_);
    kept_ = 0;
  }
  for (const auto& [p, held] : blocks) GKNN_CUDA_TRY_NOTHROW(cudaFreeHost(p));
}

}  // namespace gknn::detail::cuda
