// pinned_pool.cu: see pinned_pool.cuh.
#include <algorithm>

#include "cuda/common/error.cuh"
#include "cuda/common/pinned_pool.cuh"

namespace gknn::detail::cuda {

PinnedPool& PinnedPool::get() {
  static PinnedPool* pool = new PinnedPool;
  return *pool;
}

void* PinnedPool::take(size_t bytes, size_t& held, size_t most, bool may_allocate) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto best = blocks_.end();
    for (auto it = blocks_.begin(); it != blocks_.end(); ++it)
      if (it->second >= bytes && it->second <= most && (best == blocks_.end() || it->second < best->second)) best = it;
    if (best != blocks_.end()) {
      void* p = best->first;
      held = best->second;
      kept_ -= held;
      blocks_.erase(best);
      return p;
    }
  }
  if (!may_allocate) return nullptr;
  void* p = nullptr;
  GKNN_CUDA_TRY(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
  held = bytes;
  return p;
}

bool PinnedPool::holds(size_t a, size_t b) {
  const std::lock_guard<std::mutex> lock(mutex_);
  auto best_for = [&](size_t bytes, size_t skip) {
    size_t best = blocks_.size();
    for (size_t i = 0; i < blocks_.size(); ++i)
      if (i != skip && blocks_[i].second >= bytes && blocks_[i].second <= 2 * bytes &&
          (best == blocks_.size() || blocks_[i].second < blocks_[best].second))
        best = i;
    return best;
  };
  const size_t first = best_for(std::max(a, b), blocks_.size());
  return first < blocks_.size() && best_for(std::min(a, b), first) < blocks_.size();
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

}  // namespace gknn::detail::cuda

namespace gknn::detail::cuda {

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
