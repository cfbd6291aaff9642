// garcia_global.cu: the tiled shared-memory kernel of knn_cuda_global (document 002), in row-major terms.
//
// A 16x16 block computes a 16 (queries) x 16 (base rows) tile of keys. It walks the dimension in steps of 16:
// each step loads a 16x16 sub-matrix of the queries and one of the base rows into shared memory (thread (tx, ty)
// loads component d0+tx of row ty, so global reads are coalesced along rows), then every thread folds the 16
// components of its (query ty, base row tx) pair. Out-of-range rows and components are loaded as 0, which adds
// the identity for every key metric (key_ops.cuh), so the inner loop never branches. The +1 padding of the base
// tile makes the column reads sB[tx][d] of a half-warp hit 16 different banks.
#include "cuda/distance/key_ops.cuh"
#include "cuda/distance/kernels.cuh"
#include "cuda/distance/query_launch.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr int kTile = 16;
const QueryGrid kTileGrid{dim3(kTile, kTile), kTile, kTile};

template <Metric M>
__global__ void __launch_bounds__(kTile * kTile)
    garcia_global_kernel(const float* __restrict__ queries, int64_t query_stride, int64_t nq,
                         const float* __restrict__ base, int64_t base_stride, int64_t nb, int64_t dim, float p,
                         float* __restrict__ out, int64_t out_stride) {
  __shared__ float sq[kTile][kTile + 1];  // [query row][component]
  __shared__ float sb[kTile][kTile + 1];  // [base row][component]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t q_first = int64_t(blockIdx.y) * kTile, b_first = int64_t(blockIdx.x) * kTile;
  const int64_t q_load = q_first + ty, b_load = b_first + ty;  // rows this thread loads
  float acc = 0.f;
  for (int64_t d0 = 0; d0 < dim; d0 += kTile) {
    const int64_t d = d0 + tx;
    sq[ty][tx] = (q_load < nq && d < dim) ? queries[q_load * query_stride + d] : 0.f;
    sb[ty][tx] = (b_load < nb && d < dim) ? base[b_load * base_stride + d] : 0.f;
    __syncthreads();
#pragma unroll
    for (int c = 0; c < kTile; ++c) acc = KeyOp<M>::combine(acc, KeyOp<M>::term(sq[ty][c], sb[tx][c], p));
    __syncthreads();
  }
  const int64_t qi = q_first + ty, j = b_first + tx;
  if (qi < nq && j < nb) out[qi * out_stride + j] = acc;
}

}  // namespace

void garcia_global_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx) {
  launch_over_queries(in, out, ctx.stream, kTileGrid, in.base,
                      [](auto tag) { return &garcia_global_kernel<decltype(tag)::value>; });
}

}  // namespace gknn::detail::cuda
