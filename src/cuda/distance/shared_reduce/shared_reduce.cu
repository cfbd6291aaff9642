// shared_reduce.cu: one thread per component, partial terms combined by a shared-memory tree reduction — the
// report's first variant. A block holds `shape.y` base rows of one query (grid.y = query); thread x of a row
// folds components x, x + shape.x, ... (coalesced reads along the row), then the row's shape.x partials are
// reduced in shared memory.
#include <algorithm>

#include "cuda/distance/block_shape.cuh"
#include "cuda/distance/key_ops.cuh"
#include "cuda/distance/kernels.cuh"

namespace gknn::cuda_detail {
namespace {

constexpr int kThreads = ComponentBlock::kThreads;

template <Metric M>
__global__ void __launch_bounds__(kThreads)
    shared_reduce_kernel(const float* __restrict__ queries, int64_t query_stride, const float* __restrict__ base,
                         int64_t base_stride, int64_t nb, int64_t dim, float p, float* __restrict__ out,
                         int64_t out_stride) {
  __shared__ float partial[kThreads];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t qi = blockIdx.y;
  const int64_t j = int64_t(blockIdx.x) * blockDim.y + ty;
  const float* q = queries + qi * query_stride;
  float acc = 0.f;
  if (j < nb) {
    const float* x = base + j * base_stride;
    for (int64_t d = tx; d < dim; d += blockDim.x) acc = KeyOp<M>::combine(acc, KeyOp<M>::term(q[d], x[d], p));
  }
  float* row = partial + ty * blockDim.x;
  row[tx] = acc;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (tx < half) row[tx] = KeyOp<M>::combine(row[tx], row[tx + half]);
    __syncthreads();
  }
  if (tx == 0 && j < nb) out[qi * out_stride + j] = row[0];
}

}  // namespace

void shared_reduce_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx) {
  const ComponentBlock shape = component_block(in.dim);
  const unsigned blocks_x = static_cast<unsigned>((in.nb + shape.y - 1) / shape.y);
  dispatch_key_metric(in.metric, [&](auto tag) {
    constexpr Metric M = decltype(tag)::value;
    for (int64_t q0 = 0; q0 < in.nq; q0 += kMaxGridY) {
      const unsigned rows = static_cast<unsigned>(std::min(kMaxGridY, in.nq - q0));
      shared_reduce_kernel<M><<<dim3(blocks_x, rows), dim3(shape.x, shape.y), 0, ctx.stream>>>(
          in.queries + q0 * in.query_stride, in.query_stride, in.base, in.base_stride, in.nb, in.dim, in.p,
          out.keys + q0 * out.stride, out.stride);
      GKNN_CUDA_CHECK_LAUNCH();
    }
  });
}

}  // namespace gknn::cuda_detail
