// launch.cuh: the bucketer-independent kernels of a large-k selection (defined once in kernels.cu).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "cuda/select/large_k/common.cuh"

namespace gknn::detail::cuda::large_k {

/// Every row: all columns are candidates for the k-th smallest key.
void launch_init(const Problem& pb, cudaStream_t stream);
/// Two-stage, cooperating blocks: filter pass over the input (state found by row_kernel), then the label
/// selection among ties for the rows whose ties are not all needed.
void launch_filter(const Problem& pb, uint32_t blocks_per_row, cudaStream_t stream);
void launch_ties(const Problem& pb, cudaStream_t stream);

}  // namespace gknn::detail::cuda::large_k
