// segments.cu: fill_segment_offsets (segments.cuh).
#include "cuda/common/error.cuh"
#include "cuda/primitives/segments.cuh"

namespace gknn::detail::cuda {
namespace {

__global__ void segment_offsets_kernel(int* offsets, int64_t segments, int64_t length) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i <= segments) offsets[i] = static_cast<int>(i * length);
}

}  // namespace

void fill_segment_offsets(int* offsets, int64_t segments, int64_t length, cudaStream_t stream) {
  constexpr int kThreads = 256;
  segment_offsets_kernel<<<static_cast<unsigned>((segments + kThreads) / kThreads), kThreads, 0, stream>>>(
      offsets, segments, length);
  GKNN_CUDA_CHECK_LAUNCH();
}

}  // namespace gknn::detail::cuda
