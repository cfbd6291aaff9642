// tuning.hpp: every tuning number of the warp-queue family (warp_select, block_select), CUB style: the k-buckets,
// and one Policy per (architecture, bucket) that the dispatch layer hands to the kernels (plain C++).
//
// Thread-queue lengths: chosen by sweeping 2..10 per bucket on an H100 80GB HBM3 (1024 rows x 2^20 uniform keys;
// gknn_select_bench --sweep-thread-queue, thesis 5.4.1; the table is in bench/results/thread_queue_sweep.md).
// The winners: 2 up to k = 64, 3 at 128, 4 at 256 and 512, 8 at 1024 and 2048, for both kernels (block_select at
// 1024: 7, within 1% of 8). Longer queues pay at large k, where the warp queue's merges dominate; at small k a
// short queue keeps registers free for occupancy. Only sm_90 has been measured: every architecture takes its
// numbers until another one is (add a branch on `arch` below).
#pragma once

#include "cuda/select/buckets.hpp"

namespace gknn::detail::cuda::warp_queue {

using WarpQueueBuckets = BucketList<32, 64, 128, 256, 512, 1024, 2048>;  // 2048: FAISS' limit

inline constexpr int kWarps = 4;  ///< warps per block (rows per block for warp_select)
inline constexpr int kLoads = 2;  ///< 16-byte loads in flight per lane per round

struct Policy {
  int thread_queue;  ///< default thread-queue length (SelectOptions::thread_queue = 0)
  /// Resident blocks per SM the register allocation must allow: the warp queue takes 2*K/32 registers (3*K/32
  /// with int64 labels), so large buckets get up to 255 registers rather than spilling.
  int min_blocks;
};

/// `arch` is the compute capability times ten (90 for sm_90); block: block_select, else warp_select.
constexpr Policy policy(int arch, bool block, int bucket) {
  (void)arch;   // measured on sm_90 only (see above)
  (void)block;  // the H100 sweep found the same best length for both kernels
  return {bucket <= 64 ? 2 : bucket <= 128 ? 3 : bucket <= 512 ? 4 : 8,
          bucket <= 128 ? 6 : bucket <= 512 ? 4 : 2};
}

/// The architecture whose policy this build uses (the measured one).
inline constexpr int kPolicyArch = 90;

/// Thread-queue lengths a user may ask for, and those built for buckets below 1024 besides the defaults (1024 and
/// above build their default only; compile time grows with every length). -DGKNN_SELECT_TUNING=ON builds all.
inline constexpr int kMinLength = 2, kMaxLength = 10;
inline constexpr int kAlwaysBuilt[] = {2, 8};

}  // namespace gknn::detail::cuda::warp_queue
