// tuning.hpp: every tuning number of partial_bitonic, CUB style: the k-buckets and one Policy per
// (architecture, bucket) that the dispatch layer hands to the kernel (plain C++).
// Not swept: the thread count is the natural one of the network (one thread per pair of a K-segment, at most
// 256), the same on every architecture.
#pragma once

#include "cuda/select/buckets.hpp"

namespace gknn::detail::cuda::partial_bitonic_tuning {

using PartialBitonicBuckets = BucketList<32, 64, 128, 256, 512, 1024, 2048>;

struct Policy {
  int threads;  ///< threads per block (MT): each holds 2K / threads pairs of the merge array
};

/// `arch` is the compute capability times ten (90 for sm_90).
constexpr Policy policy(int arch, int bucket) {
  (void)arch;
  return {bucket < 256 ? bucket : 256};
}

inline constexpr int kPolicyArch = 90;

}  // namespace gknn::detail::cuda::partial_bitonic_tuning
