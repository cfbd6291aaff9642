// shared_bitonic.cuh: bitonic sort of a power-of-two array in shared memory by one block of kThreads threads,
// 32-bit ordered keys alone or (key, label) pairs in the library's total order (core/order.hpp); and by one warp,
// 64-bit composite keys of any length, with the merge-path step that combines two sorted lists. The register
// networks of the same family are in bitonic.cuh. Used by large-k selection for the random sample of sample
// select and for the final candidates of every search (thesis 4.3: "sorted using Bitonic sort").
#pragma once

#include <cstdint>

#include "core/order.hpp"

namespace gknn::detail::cuda::bitonic {

/// True when entry a comes strictly before entry b.
template <bool kPairs, class Key>
__device__ __forceinline__ bool precedes(const Key* keys, const int64_t* labels, uint32_t a, uint32_t b) {
  if constexpr (kPairs) return detail::ranks_before(keys[a], labels[a], keys[b], labels[b]);
  else return keys[a] < keys[b];
}

/// Sorts keys[0, n) (and labels[0, n) with them when kPairs) ascending; n is a power of two; Key: 32- or 64-bit
/// ordered keys. Every thread of the block must call it; ends with a barrier.
template <int kThreads, bool kPairs, class Key = uint32_t>
__device__ void shared_sort(Key* keys, int64_t* labels, uint32_t n) {
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
          const Key k = keys[lo];
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

// ---- one warp, 64-bit composite keys (ordered.cuh: composite_key), any length -----------------------------------
// The fused distance kernel cuts each query's candidate buffer to k with these: the appends are sorted, then
// merged with the list kept so far.

__device__ __forceinline__ void compare_swap(uint64_t* v, int lo, int hi) {
  const uint64_t x = v[lo], y = v[hi];
  if (y < x) {
    v[lo] = y;
    v[hi] = x;
  }
}

/// Ascending sort of v[0, n) in shared memory by the calling warp (every lane calls it). The network of
/// bitonic.cuh's all-ascending form (each merge first compares mirrored pairs): every comparator puts the smaller
/// value at the lower index, so the virtual padding up to a power of two (+infinity at [n, m)) never moves and is
/// never stored; n need not be a power of two.
__device__ inline void warp_sort_padded(uint64_t* v, int n, int lane) {
  int m = 2;
  while (m < n) m <<= 1;
  for (int size = 2; size <= m; size <<= 1) {
    const int half = size >> 1;
    for (int i = lane; i < m / 2; i += 32) {
      const int off = i & (half - 1), first = (i & ~(half - 1)) << 1;
      if (first + size - 1 - off < n) compare_swap(v, first + off, first + size - 1 - off);
    }
    __syncwarp();
    for (int stride = half >> 1; stride > 0; stride >>= 1) {
      for (int i = lane; i < m / 2; i += 32) {
        const int lo = ((i & ~(stride - 1)) << 1) | (i & (stride - 1));
        if (lo + stride < n) compare_swap(v, lo, lo + stride);
      }
      __syncwarp();
    }
  }
}

/// The j-th smallest entry (from 0) of two ascending lists of distinct values (merge path: a binary search for how
/// many of the first j come from a).
__device__ inline uint64_t merged_at(const uint64_t* a, int na, const uint64_t* b, int nb, int j) {
  int lo = max(0, j - nb), hi = min(j, na);
  while (lo < hi) {
    const int i = (lo + hi) >> 1;
    if (a[i] < b[j - i - 1]) lo = i + 1;
    else hi = i;
  }
  const uint64_t x = lo < na ? a[lo] : ~uint64_t(0), y = j - lo < nb ? b[j - lo] : ~uint64_t(0);
  return x < y ? x : y;
}

/// Smallest power of two >= n (n >= 1).
__host__ __device__ constexpr uint32_t next_pow2(uint32_t n) {
  uint32_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace gknn::detail::cuda::bitonic
