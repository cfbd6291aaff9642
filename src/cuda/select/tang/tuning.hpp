// tuning.hpp: every tuning number of Tang et al.'s queues (insertion_queue, heap_queue, merge_queue), CUB style:
// the k-buckets, and the Policy the kernel, the candidate buffer and the hierarchy build take (plain C++: the host
// emulation of the queues includes it too). Only sm_90 has been measured: every architecture takes its numbers
// until another one is (add a branch on `arch` below).
#pragma once

#include "cuda/select/buckets.hpp"

namespace gknn::detail::cuda::tang {

/// Compile-time queue capacities. The bucket only sizes the per-thread array (the stack frame, hence the local
/// memory the driver reserves); the algorithms use the exact runtime capacity, so a finer bucket list would not
/// change the work done, only the reservation. 1024 matches the paper's largest k (layout.hpp's kMaxK).
using QueueBuckets = BucketList<32, 128, 512, 1024>;

struct Policy {
  /// Slots of a thread's candidate buffer (buffered search, buffer.cuh): a power of two small enough for
  /// registers (8 x 16 bytes with labels), large enough that a flush, which costs the whole warp, happens at most
  /// every 8 candidates of its fastest-filling lane.
  int buffer_slots;
  /// Threads per block of the hierarchical partition's construction (common.cu), one output entry each.
  int build_threads;
};

/// `arch` is the compute capability times ten (90 for sm_90).
constexpr Policy policy(int arch) {
  (void)arch;  // measured on sm_90 only (see above)
  return {8, 256};
}

/// The architecture whose policy this build uses (the measured one), and that policy.
inline constexpr int kPolicyArch = 90;
inline constexpr Policy kPolicy = policy(kPolicyArch);

}  // namespace gknn::detail::cuda::tang
