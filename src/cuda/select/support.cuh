// support.cuh: small pieces shared by the register/shared-memory selection families (partial_bitonic, the
// warp-queue family, bits); their k-buckets are buckets.hpp's.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_runtime.h>

#include "cuda/common/error.cuh"
#include "gknn/error.hpp"

namespace gknn::detail::cuda::selsup {

/// Indices travel as int32 columns (label = label_offset + column) or as the caller's int64 labels.
template <class Idx>
__device__ __forceinline__ int64_t to_label(Idx v, int64_t label_offset) {
  if constexpr (std::is_same_v<Idx, int64_t>) return v;
  else return label_offset + static_cast<int64_t>(v);
}

/// Columns are int32 inside the kernels.
inline void check_columns(int64_t cols, const char* family) {
  GKNN_EXPECT(cols < (int64_t(1) << 31) - 1, ErrorCode::Unsupported, family, ": rows of ", cols,
              " keys exceed the 2^31-1 columns the kernels index");
}

/// Dynamic shared memory that, with the kernel's static shared variables, may pass the 48 KiB default needs
/// an explicit opt-in per kernel.
template <class Kernel>
void allow_shared(Kernel kernel, size_t bytes) {
  if (bytes > 40 * 1024)
    GKNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

inline size_t align256(size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace gknn::detail::cuda::selsup
