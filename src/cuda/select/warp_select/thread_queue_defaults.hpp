// thread_queue_defaults.hpp: THE table of default thread-queue lengths of warp_select and block_select
// (SelectOptions::thread_queue = 0), per k bucket. Chosen by sweeping 2..10 per k on the target GPU
// (gknn_select_bench --sweep-thread-queue, thesis 5.4.1); the starting values are FAISS' defaults.
// A length used here must also be in kAlwaysBuilt (warp_queue_kernel.cuh builds only those, plus every
// length 2..10 when configured with -DGKNN_SELECT_TUNING=ON).
#pragma once

namespace gknn::cuda_detail::thread_queue {

constexpr int default_length(bool block_select, int bucket) {
  (void)block_select;  // one table for both until the H100 sweep says otherwise
  return bucket <= 32 ? 2 : bucket <= 128 ? 3 : bucket <= 256 ? 4 : 8;
}

/// Lengths built for buckets below 1024 besides the defaults (1024 builds its default only); compile time grows
/// with every length.
constexpr int kAlwaysBuilt[] = {2, 8};
constexpr int kMinLength = 2, kMaxLength = 10;

}  // namespace gknn::cuda_detail::thread_queue
