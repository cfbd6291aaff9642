// partial_bitonic.cuh: Kruliš et al.'s partial bitonic sort (thesis 3.5.1), one thread block per row.
//
// The block holds two k-segments (K = bucket >= k pairs each) as one blocked register array of 2K pairs
// (bitonic.cuh; large strides through shared memory by rows). The lower segment is the running top-K, the
// upper one receives the next K keys of the row, unfiltered. Per segment: sort the segments, split them with
// the reversed separator R_2K (the K smallest go to the lower segment, as a bitonic sequence) and sort the
// lower segment again with log2(K) separator layers. Unlike bits there is no threshold and no buffer: every
// key goes through the network, which is what makes this the baseline the buffered kernels improve on.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "cuda/select/select.cuh"

namespace gknn::detail::cuda {

/// Explicitly instantiated once per bucket by the units buckets.cmake generates (partial_bitonic_kNNNN.cu).
template <int K>
void partial_bitonic_launch(const RowsLaunch& launch);

}  // namespace gknn::detail::cuda
