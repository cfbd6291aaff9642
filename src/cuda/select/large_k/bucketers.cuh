// bucketers.cuh: how a pass splits candidates into 256 buckets: radix digits or sample splitters.
//
// A bucketer has three block-level steps, used unchanged by the one-block-per-row search and by the
// cooperating multi-block passes:
//   prepare(sh, s, src, n, row): fills sh.params for the next pass over the n candidates (ends with a barrier);
//   bucket(params, key):        bucket of an ordered key, monotone in the key;
//   advance(s, params, choice, progress, &value) (thread 0): updates the bucketer's state after the choice;
//                               true when every key in the chosen bucket equals *value.
#pragma once

#include <cstdint>

#include <curand_kernel.h>

#include "cuda/primitives/shared_bitonic.cuh"
#include "cuda/select/large_k/common.cuh"

namespace gknn::detail::cuda::large_k {

/// Fills sh.u.sort.keys[0, kSampleSize) with the sorted keys of kSampleSize candidates drawn uniformly with
/// replacement (cuRAND Philox; fixed seed and (row, draw) streams: the same input gives the same sample).
__device__ inline void sorted_sample(Shared& sh, const Source& src, uint32_t n, unsigned long long seed, uint32_t row,
                                     uint32_t draw) {
  constexpr uint32_t kPerThread = kSampleSize / kThreads;
  static_assert(kPerThread == 4, "one curand4 per thread");
  curandStatePhilox4_32_10_t rng;
  curand_init(seed, static_cast<unsigned long long>(row) * kThreads + threadIdx.x, 4ull * draw, &rng);
  const uint4 r = curand4(&rng);
  const uint32_t pick[kPerThread] = {r.x, r.y, r.z, r.w};
#pragma unroll
  for (uint32_t j = 0; j < kPerThread; ++j) {
    const auto index = static_cast<uint32_t>((uint64_t{pick[j]} * n) >> 32);  // uniform in [0, n)
    sh.u.sort.keys[threadIdx.x * kPerThread + j] = src.key(index);
  }
  bitonic::shared_sort<kThreads, false>(sh.u.sort.keys, nullptr, kSampleSize);
}

/// Radix select (thesis 3.7.2): the most significant 8-bit digit not yet fixed. A pass whose candidates all
/// share the digit moves nothing (the caller sees no progress) and only fixes the digit: rows of tiny values,
/// powers of two or equal values skip their common leading digits without copying. After the last digit
/// the chosen bucket's keys are all equal.
struct RadixBucketer {
  static __device__ void prepare(Shared& sh, const RowSearch& s, const Source&, uint32_t, uint32_t) {
    if (threadIdx.x == 0) sh.params.shift = s.shift;
    __syncthreads();
  }
  static __device__ __forceinline__ uint32_t bucket(const PassParams& p, uint32_t key) {
    return (key >> p.shift) & (kBins - 1);
  }
  static __device__ bool advance(RowSearch& s, const PassParams& p, const Choice& c, bool, uint32_t* value) {
    s.prefix |= c.bucket << p.shift;
    if (p.shift == 0) {
      *value = s.prefix;
      return true;
    }
    s.shift -= kRadixBits;
    return false;
  }
};

/// Sample select (thesis 3.7.1, 4.3): kSampleSize random candidates (cuRAND Philox, fixed seed: the same
/// input gives the same passes) are bitonic-sorted; the 255 splitters at the percentiles i/256 are stored as
/// an implicit binary search tree (heap order: children of node j at 2j+1, 2j+2), so a key finds its bucket
/// with 8 branch-free steps. Bucket i holds the keys in [splitter i-1, splitter i).
///
/// Duplicates: a pass makes no progress only if every candidate falls in the top bucket, i.e. every splitter
/// (all drawn from the candidates) equals the smallest candidate v. The next pass then splits {< v, == v, > v}:
/// either the k-th key is v (done) or the candidates equal to v are dropped, so the search always advances.
struct SampleBucketer {
  static constexpr unsigned long long kSeed = 0x5EEDC0FFEEull;

  static __device__ void prepare(Shared& sh, const RowSearch& s, const Source& src, uint32_t n, uint32_t row) {
    if (s.eq_mode) {
      if (threadIdx.x == 0) {
        sh.params.eq_mode = 1;
        sh.params.eq_value = s.eq_value;
      }
      __syncthreads();
      return;
    }
    sorted_sample(sh, src, n, kSeed, row, s.pass);
    constexpr uint32_t kGap = kSampleSize / kBins;  // sample entries per bucket
    if (threadIdx.x < kSplitters) {
      // Node j sits at depth d, position pos in its level; in-order it is splitter (2 pos + 1) 2^(7-d) - 1.
      const uint32_t j = threadIdx.x;
      const uint32_t depth = 31 - __clz(j + 1);
      const uint32_t pos = j + 1 - (1u << depth);
      const uint32_t splitter = ((2 * pos + 1) << (kTreeLevels - 1 - depth)) - 1;
      sh.params.tree[j] = sh.u.sort.keys[(splitter + 1) * kGap];
    }
    if (threadIdx.x == 0) {
      sh.params.max_splitter = sh.u.sort.keys[kSplitters * kGap];
      sh.params.eq_mode = 0;
    }
    __syncthreads();
  }

  static __device__ __forceinline__ uint32_t bucket(const PassParams& p, uint32_t key) {
    if (p.eq_mode) return key < p.eq_value ? 0u : (key == p.eq_value ? 1u : 2u);
    uint32_t j = 0;
#pragma unroll
    for (int level = 0; level < kTreeLevels; ++level) j = 2 * j + 1 + (key >= p.tree[j] ? 1u : 0u);
    return j - kSplitters;  // leaves kSplitters .. 2 kSplitters: the number of splitters <= key
  }

  static __device__ bool advance(RowSearch& s, const PassParams& p, const Choice& c, bool progress, uint32_t* value) {
    ++s.pass;
    if (p.eq_mode) {
      if (c.bucket == 1) {
        *value = p.eq_value;
        return true;
      }
      s.eq_mode = 0;
      return false;
    }
    if (!progress) {
      s.eq_mode = 1;
      s.eq_value = p.max_splitter;
    }
    return false;
  }
};

}  // namespace gknn::detail::cuda::large_k
