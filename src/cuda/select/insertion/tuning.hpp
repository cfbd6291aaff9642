// tuning.hpp: every tuning number of Garcia's modified insertion sort (insertion.cu), CUB style: the Policy its
// two kernels are launched with (plain C++). Only sm_90 has been measured: every architecture takes its numbers
// until another one is (add a branch on `arch` below). The largest k (1024, entries.inc) is a bound on the
// worst case, O(cols * k) global-memory steps per thread, not a tuning number.
#pragma once

namespace gknn::detail::cuda::insertion {

struct Policy {
  int threads;         ///< threads per block of both kernels (one row per thread)
  int output_columns;  ///< grid.y of the transposing output kernel: list positions in flight per row block
};

/// `arch` is the compute capability times ten (90 for sm_90).
constexpr Policy policy(int arch) {
  (void)arch;  // measured on sm_90 only (see above)
  return {128, 64};
}

/// The architecture whose policy this build uses (the measured one), and that policy.
inline constexpr int kPolicyArch = 90;
inline constexpr Policy kPolicy = policy(kPolicyArch);

}  // namespace gknn::detail::cuda::insertion
