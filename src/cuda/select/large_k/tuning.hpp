// tuning.hpp: every tuning number of the large-k selections (sample select, radix select), CUB style: one Policy
// per architecture that the dispatch layer and the kernels read (plain C++). The k-independent search has no
// k-buckets. Only sm_90 (H100) has been measured: every architecture takes its numbers until another one is (add
// a branch on `arch` below). The structural sizes (256 bins of 8-bit digits) are in common.cuh.
#pragma once

#include <cstdint>

namespace gknn::detail::cuda::large_k {

struct Policy {
  int threads;           ///< threads of every large-k block (one per histogram bin)
  int min_blocks;        ///< resident blocks per SM the heavy kernels are built for
  int items;             ///< keys per thread per tile (loads in flight)
  uint32_t sort_cap;     ///< candidates a block sorts in shared memory (power of two)
  uint32_t sample_size;  ///< sample select: keys sampled per pass (power of two)
  int blocks_per_sm;     ///< cooperating passes: resident 256-thread blocks with ~34 KB shared memory each
  /// Below this many rows one block per row leaves most of an H100's 132 SMs idle, so blocks cooperate on each
  /// row (a constant, not the device's SM count: the workspace size must not depend on the device) ...
  int64_t multi_block_max_rows;
  int64_t multi_block_min_tiles;  ///< ... and only for rows of at least this many tiles (work for several blocks)
};

/// `arch` is the compute capability times ten (90 for sm_90).
constexpr Policy policy(int arch) {
  (void)arch;  // measured on sm_90 only
  return {256, 4, 8, 2048, 1024, 6, 128, 8};
}

/// The architecture whose policy this build uses (the measured one).
inline constexpr int kPolicyArch = 90;
inline constexpr Policy kPolicy = policy(kPolicyArch);

}  // namespace gknn::detail::cuda::large_k
