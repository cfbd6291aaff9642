// segments.cuh: the segment offsets CUB's segmented sorts take, for rows of equal length.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace gknn::detail::cuda {

/// offsets[i] = i * length for i in [0, segments] (segments + 1 entries; every value must fit an int).
void fill_segment_offsets(int* offsets, int64_t segments, int64_t length, cudaStream_t stream);

}  // namespace gknn::detail::cuda
