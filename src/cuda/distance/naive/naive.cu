// naive.cu: one thread per (query, base row) pair — the report's third and fastest variant.
//
// Consecutive threads of a block take consecutive base rows of one query (grid.y = query), so the output row is
// written coalesced; the query is staged once per block in shared memory (chunks of kQueryChunk components)
// and read by every thread as a broadcast. Each thread walks its own base row sequentially (served by L1/L2).
#include "cuda/distance/key_ops.cuh"
#include "cuda/distance/kernels.cuh"
#include "cuda/distance/query_launch.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kQueryChunk = 1024;

template <Metric M>
__global__ void __launch_bounds__(kThreads)
    naive_kernel(const float* __restrict__ queries, int64_t query_stride, int64_t /*nq: grid.y*/,
                 const float* __restrict__ base, int64_t base_stride, int64_t nb, int64_t dim, float p,
                 float* __restrict__ out, int64_t out_stride) {
  __shared__ float query[kQueryChunk];
  const int64_t qi = blockIdx.y;
  const int64_t j = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  const bool active = j < nb;
  const float* q = queries + qi * query_stride;
  const float* x = base + (active ? j : 0) * base_stride;
  float acc = 0.f;
  for (int64_t d0 = 0; d0 < dim; d0 += kQueryChunk) {
    const int len = static_cast<int>(min(int64_t(kQueryChunk), dim - d0));
    __syncthreads();  // the previous chunk is no longer read
    for (int t = threadIdx.x; t < len; t += kThreads) query[t] = q[d0 + t];
    __syncthreads();
    if (active)
      for (int d = 0; d < len; ++d) acc = KeyOp<M>::combine(acc, KeyOp<M>::term(query[d], x[d0 + d], p));
  }
  if (active) out[qi * out_stride + j] = acc;
}

}  // namespace

void naive_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx) {
  launch_over_queries(in, out, ctx.stream, {dim3(kThreads), kThreads, 1}, in.base,
                      [](auto tag) { return &naive_kernel<decltype(tag)::value>; });
}

}  // namespace gknn::detail::cuda
