// thread_queue_defaults.hpp: THE table of default thread-queue lengths of warp_select and block_select
// (SelectOptions::thread_queue = 0), per k bucket, chosen by sweeping 2..10 per bucket on an H100 80GB HBM3
// (1024 rows x 2^20 uniform keys; gknn_select_bench --sweep-thread-queue, thesis 5.4.1; the table is in
// bench/results/thread_queue_sweep.md). The winners: 2 up to k = 64, 3 at 128, 4 at 256 and 512, 8 at 1024
// and 2048, for both kernels (block_select at 1024: 7, within 1% of 8). Longer queues pay at large k, where the
// warp queue's merges dominate; at small k a short queue keeps registers free for occupancy.
// warp_queue_kernel.cuh builds the default of each bucket, plus kAlwaysBuilt below 1024, plus every length
// 2..10 when configured with -DGKNN_SELECT_TUNING=ON.
#pragma once

namespace gknn::cuda_detail::thread_queue {

constexpr int default_length(bool block_select, int bucket) {
  (void)block_select;  // the H100 sweep found the same best length for both kernels
  return bucket <= 64 ? 2 : bucket <= 128 ? 3 : bucket <= 512 ? 4 : 8;
}

/// Lengths built for buckets below 1024 besides the defaults (1024 builds its default only); compile time grows
/// with every length.
constexpr int kAlwaysBuilt[] = {2, 8};
constexpr int kMinLength = 2, kMaxLength = 10;

}  // namespace gknn::cuda_detail::thread_queue
