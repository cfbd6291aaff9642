// pinned_pool.cuh: page-locked host blocks kept from one use to the next in the process (the join's chunk buffers,
// the searches' Results): cudaHostAlloc locks every page of a block (and cudaFreeHost unlocks them), milliseconds a
// few MB, which a search or join of that size would pay at every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "cuda/common/buffer.cuh"

namespace gknn::detail::cuda {

/// Freed blocks are kept up to kKeptBytes in all (portable: any device's context may copy with them); a request
/// takes the smallest kept block that holds it. Never destroyed: the CUDA runtime may be gone when static objects
/// are, and the process's exit frees the memory.
class PinnedPool {
 public:
  static constexpr size_t kKeptBytes = size_t(256) << 20;
  static PinnedPool& get();
  /// A block of at least `bytes` bytes (`held` is set to its size): the smallest kept one of at most `most`
  /// bytes, else, where `may_allocate`, a new one (cudaHostAlloc's error thrown), else null.
  void* take(size_t bytes, size_t& held, size_t most = SIZE_MAX, bool may_allocate = true);
  /// Whether kept blocks would serve two takes of `a` and `b` bytes now, each of at most `slack` times its request.
  bool holds(size_t a, size_t b, size_t slack);
  /// Gives a block back (no copy into or out of it may be in flight): kept, or freed past kKeptBytes.
  void give(void* p, size_t held) noexcept;
  /// Frees every kept block (release_cached_device_resources; blocks in use come back later, and are kept then).
  void trim() noexcept;

 private:
  /// Under mutex_: the smallest kept block of [bytes, most] other than block `skip`, or blocks_.size().
  size_t best_fit(size_t bytes, size_t most, size_t skip) const;

  std::mutex mutex_;
  std::vector<std::pair<void*, size_t>> blocks_;
  size_t kept_ = 0;
};

/// How a PinnedBuffer gets a PinnedPool block (and gives it back when destroyed).
struct PooledPinnedMemory {
  size_t held = 0;  ///< the block's size (a kept block may be larger than asked for)
  void* allocate(size_t bytes) { return PinnedPool::get().take(bytes, held); }
  void free(void* p) noexcept { PinnedPool::get().give(p, held); }
};

/// A PinnedBuffer in a PinnedPool block.
template <class T>
using PooledPinned = PinnedBuffer<T, PooledPinnedMemory>;

}  // namespace gknn::detail::cuda
