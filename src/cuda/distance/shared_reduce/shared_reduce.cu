// shared_reduce.cu: one thread per component, partial terms combined by a shared-memory tree reduction — the
// report's first variant. A block holds `shape.y` base rows of one query (grid.y = query); thread x of a row
// folds components x, x + shape.x, ... (coalesced reads along the row), then the row's shape.x partials are
// reduced in shared memory.
#include "cuda/distance/block_shape.cuh"
#include "cuda/distance/key_ops.cuh"
#include "cuda/distance/kernels.cuh"
#include "cuda/distance/query_launch.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr int kThreads = ComponentBlock::kThreads;

template <Metric M>
__global__ void __launch_bounds__(kThreads)
    shared_reduce_kernel(const float* __restrict__ queries, int64_t query_stride, int64_t /*nq: grid.y*/,
                         const float* __restrict__ base, int64_t base_stride, int64_t nb, int64_t dim, float p,
                         float* __restrict__ out, int64_t out_stride) {
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
  launch_over_queries(in, out, ctx.stream, component_grid(in.dim), in.base,
                      [](auto tag) { return &shared_reduce_kernel<decltype(tag)::value>; });
}

}  // namespace gknn::detail::cuda
