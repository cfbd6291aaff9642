// shared_bitonic.cuh: bitonic sort of a power-of-two array in shared memory by one block of kThreads threads,
// 32-bit ordered keys alone or (key, label) pairs in the library's total order (core/order.hpp). The register
// networks of the same family are in bitonic.cuh. Used by large-k selection for the random sample of sample
// select and for the final candidates of every search (thesis 4.3: "sorted using Bitonic sort").
#pragma once

#include <cstdint>

#include "core/order.hpp"

namespace gknn::detail::cuda::bitonic {

/// True when entry a comes strictly before entry b.
template <bool kPairs>
__device__ __forceinline__ bool precedes(const uint32_t* keys, const int64_t* labels, uint32_t a, uint32_t b) {
  if constexpr (kPairs) return detail::ranks_before(keys[a], labels[a], keys[b], labels[b]);
  else return keys[a] < keys[b];
}

/// Sorts keys[0, n) (and labels[0, n) with them when kPairs) ascending; n is a power of two. Every thread of
/// the block must call it; ends with a barrier.
template <int kThreads, bool kPairs>
__device__ void shared_sort(uint32_t* keys, int64_t* labels, uint32_t n) {
  __syncthreads();
  for (uint32_t size = 2; size <= n; size <<= 1) {
    for (uint32_t stride = size / 2; stride > 0; stride >>= 1) {
      for (uint32_t i = threadIdx.x; i < n / 2; i += kThreads) {
        const uint32_t lo = 2 * i - (i & (stride - 1));  // index with bit `stride` clear
        const uint32_t hi = lo + stride;
        const bool ascending = (lo & size) == 0;
        // swap when the pair is out of order for this half's direction (equal pairs never swap)
        const bool swap = ascending ? precedes<kPairs>(keys, labels, hi, lo) : precedes<kPairs>(keys, labels, lo, hi);
        if (swap) {
          const uint32_t k = keys[lo];
          keys[lo] = keys[hi];
          keys[hi] = k;
          if constexpr (kPairs) {
            const int64_t l = labels[lo];
            labels[lo] = labels[hi];
            labels[hi] = l;
          }
        }
      }
      __syncthreads();
    }
  }
}

/// Smallest power of two >= n (n >= 1).
__host__ __device__ constexpr uint32_t next_pow2(uint32_t n) {
  uint32_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace gknn::detail::cuda::bitonic
