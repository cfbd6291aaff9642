// norms.cu: squared L2 norm of every row (the |q|^2 and |x|^2 terms of the cuBLAS decomposition).
// One warp per row: lanes read consecutive components (coalesced), then a shuffle reduction. The fold order is
// fixed, so a row's norm is the same bits in every call (an Index's stored norms equal a fresh computation).
#include <algorithm>

#include "cuda/common/error.cuh"
#include "cuda/distance/distance.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

__global__ void row_squared_norms_kernel(const float* __restrict__ rows, int64_t count, int64_t stride, int64_t dim,
                                         float* __restrict__ out) {
  const int lane = threadIdx.x % 32;
  const int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= count) return;  // whole warps leave together
  const float* x = rows + row * stride;
  float acc = 0.f;
  for (int64_t d = lane; d < dim; d += 32) acc += x[d] * x[d];
  for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
  if (lane == 0) out[row] = acc;
}

}  // namespace

void row_squared_norms(const float* rows, int64_t count, int64_t stride, int64_t dim, float* out, cudaStream_t s) {
  if (count == 0) return;
  const int64_t blocks = (count + kWarpsPerBlock - 1) / kWarpsPerBlock;
  row_squared_norms_kernel<<<static_cast<unsigned>(blocks), kWarpsPerBlock * 32, 0, s>>>(rows, count, stride, dim, out);
  GKNN_CUDA_CHECK_LAUNCH();
}

}  // namespace gknn::detail::cuda
