// tuning.hpp: every tuning number of the bits family (bits, bits_global), CUB style: the k-buckets, one Policy per
// (architecture, bucket) that the dispatch layer hands to the kernel, and into how many segments a row is split
// (plain C++, host-tested).
//
// Measured on the H100 (1024 x 2^20 and 8192 x 2^17 keys, 2026-11-21): capping registers for 4 resident blocks
// of 256 threads (64 registers; the kernel was at 72 with 3 blocks, 37.5% occupancy, issue-bound per ncu) lifted
// bits+prefetch from 83/74/66% to 95/88/80% of the read bandwidth at k = 1/32/128; 4 loads in flight instead of 2
// helped only from k = 1024 on (+7% at 2048), where merges keep 2 blocks per SM. GKNN_BITS_LOADS /
// GKNN_BITS_MIN_BLOCKS (compile definitions) override the small-k values for such experiments. Only sm_90 has
// been measured: every architecture takes its numbers until another one is (add a branch on `arch` below).
#pragma once

#include <algorithm>
#include <cstdint>

#include "cuda/select/buckets.hpp"

#ifndef GKNN_BITS_LOADS
#define GKNN_BITS_LOADS 2
#endif
#ifndef GKNN_BITS_MIN_BLOCKS
#define GKNN_BITS_MIN_BLOCKS 4
#endif

namespace gknn::detail::cuda::bits_tuning {

using BitsBuckets = BucketList<32, 64, 128, 256, 512, 1024, 2048>;
/// bits_global keeps the top-k in global memory, so it goes beyond shared memory's limit.
using BitsGlobalBuckets = BucketList<256, 1024, 4096>;

struct Policy {
  int threads;     ///< threads per block
  int loads;       ///< 16-byte loads in flight per thread per round
  int min_blocks;  ///< resident blocks per SM the register allocation must allow
};

/// `arch` is the compute capability times ten (90 for sm_90); global: bits_global, else bits.
constexpr Policy policy(int arch, bool global, int bucket) {
  (void)arch;  // measured on sm_90 only (see above)
  return {global && bucket >= 4096 ? 512 : 256, bucket >= 1024 ? 4 : GKNN_BITS_LOADS,
          global && bucket >= 4096 ? 1 : bucket >= 1024 ? 2 : GKNN_BITS_MIN_BLOCKS};
}

/// The architecture whose policy this build uses (the measured one).
inline constexpr int kPolicyArch = 90;

/// Into how many segments each row is split. One thread block per (row, segment). With few rows (the
/// single-query path, thesis 4.1 / 5.4.2) one block per row leaves most SMs idle, so each row is split; the
/// per-segment top-k lists are merged by a further launch. Many rows are not split: measured on the H100
/// (1024 x 2^20, bits+prefetch), splitting each row in 3 to fill the last wave of blocks made k = 32 and k = 128
/// 10-15% slower, not faster.
inline int split_parts(int64_t rows, int64_t cols, int bucket, int sm_count) {
  if (rows >= sm_count) return 1;
  // Enough blocks for a few resident per SM (loads in flight), but segments long enough that the extra merge
  // pass over parts * k partial results stays small next to the row itself.
  const int64_t min_seg = std::max<int64_t>(8192, 8 * int64_t(bucket));
  const int64_t by_length = cols / min_seg;
  const int64_t by_occupancy = (4 * int64_t(sm_count) + rows - 1) / rows;
  return static_cast<int>(std::clamp<int64_t>(std::min(by_length, by_occupancy), 1, 1 << 16));
}

}  // namespace gknn::detail::cuda::bits_tuning
