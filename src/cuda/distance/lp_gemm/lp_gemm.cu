// lp_gemm.cu: the thesis' modified MAGMA-style GEMM (document 000, chapter on distance computation): a
// register-blocked SGEMM whose multiply is the metric's per-component term and whose add is its combine
// (key_ops.cuh), so one kernel computes squared L2, inner product, L1, L-infinity and Lp keys in GEMM tiles.
//
// A block of 256 threads computes a 128 (queries) x 128 (base rows) tile of keys; each thread holds 8 x 8 of them
// in registers. The dimension is walked in steps of kStep components: both 128 x kStep sub-matrices are staged
// in shared memory transposed (component-major), so that a thread reads its 8 query values and 8 base values of
// one component as two float4 each, and every value read from shared memory feeds 8 terms (Kuang's tiled kernel
// and garcia_global feed one). The next step's components are loaded from global memory into registers while the
// current step is computed (software prefetch, one shared buffer).
//
// Exactness: every key is folded in increasing component order, starting from 0, exactly like garcia_global and
// naive, so the keys are the same float32 values bit for bit; components and rows past the ends are loaded as 0,
// the identity of every key metric (key_ops.cuh), and only appended after the real components.
#include "cuda/distance/key_ops.cuh"
#include "cuda/distance/kernels.cuh"
#include "cuda/distance/tile_store.cuh"
#include "cuda/distance/query_launch.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kTileRows = 128;          ///< queries and base rows of a block tile
constexpr int kPerThread = 8;           ///< a thread's 8 x 8 keys: rows {4t..4t+3, 64+4t..64+4t+3}
constexpr int kStep = 8;                ///< components staged per step
constexpr int kPitch = kTileRows + 4;   ///< shared row pitch: the transposed stores of one warp hit 32 banks
constexpr int kLoadsPerThread = kTileRows * kStep / kThreads;  // 4 components of one row per matrix
static_assert(kLoadsPerThread == 4, "each thread stages 4 consecutive components of one row");

const QueryGrid kLpGemmGrid{dim3(kThreads), kTileRows, kTileRows};

/// Row `row` (of `rows`), components [d, d + 4) of a row-major matrix; 0 past either end.
__device__ __forceinline__ void load4(const float* __restrict__ m, int64_t stride, int64_t rows, int64_t dim,
                                      int64_t row, int64_t d, float (&v)[4]) {
  const bool in_rows = row < rows;
  const float* p = m + row * stride;
#pragma unroll
  for (int i = 0; i < 4; ++i) v[i] = (in_rows && d + i < dim) ? __ldg(p + d + i) : 0.f;
}

template <Metric M>
__global__ void __launch_bounds__(kThreads, 2)
    lp_gemm_kernel(const float* __restrict__ queries, int64_t query_stride, int64_t nq,
                   const float* __restrict__ base, int64_t base_stride, int64_t nb, int64_t dim, float p,
                   float* __restrict__ out, int64_t out_stride) {
  __shared__ __align__(16) float sq[kStep][kPitch];  // [component][query row of the tile]
  __shared__ __align__(16) float sb[kStep][kPitch];  // [component][base row of the tile]
  const int tid = threadIdx.x;
  const int64_t q_first = int64_t(blockIdx.y) * kTileRows, b_first = int64_t(blockIdx.x) * kTileRows;
  // Staging: thread tid loads components [c0, c0 + 4) of tile row `load_row` of both matrices.
  const int load_row = tid / 2, c0 = (tid % 2) * 4;
  // Compute: thread (ty, tx) of a 16 x 16 layout owns query rows 4ty.. and 64+4ty.., base rows 4tx.. and 64+4tx..
  const int tx = tid % 16, ty = tid / 16;

  float acc[kPerThread][kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i)
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) acc[i][j] = 0.f;

  float next_q[4], next_b[4];
  load4(queries, query_stride, nq, dim, q_first + load_row, c0, next_q);
  load4(base, base_stride, nb, dim, b_first + load_row, c0, next_b);
  for (int64_t d0 = 0; d0 < dim; d0 += kStep) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      sq[c0 + i][load_row] = next_q[i];
      sb[c0 + i][load_row] = next_b[i];
    }
    __syncthreads();
    if (d0 + kStep < dim) {  // the next step's loads are in flight while this one is computed
      load4(queries, query_stride, nq, dim, q_first + load_row, d0 + kStep + c0, next_q);
      load4(base, base_stride, nb, dim, b_first + load_row, d0 + kStep + c0, next_b);
    }
#pragma unroll
    for (int c = 0; c < kStep; ++c) {
      float a[kPerThread], b[kPerThread];
      *reinterpret_cast<float4*>(a) = *reinterpret_cast<const float4*>(&sq[c][4 * ty]);
      *reinterpret_cast<float4*>(a + 4) = *reinterpret_cast<const float4*>(&sq[c][64 + 4 * ty]);
      *reinterpret_cast<float4*>(b) = *reinterpret_cast<const float4*>(&sb[c][4 * tx]);
      *reinterpret_cast<float4*>(b + 4) = *reinterpret_cast<const float4*>(&sb[c][64 + 4 * tx]);
#pragma unroll
      for (int i = 0; i < kPerThread; ++i)
#pragma unroll
        for (int j = 0; j < kPerThread; ++j) acc[i][j] = KeyOp<M>::combine(acc[i][j], KeyOp<M>::term(a[i], b[j], p));
    }
    __syncthreads();
  }

  store_tile_keys(acc, [](float a) { return a; }, out, out_stride, nq, nb, q_first, b_first, tx, ty);
}

}  // namespace

void lp_gemm_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx) {
  launch_over_queries(in, out, ctx.stream, kLpGemmGrid, in.base,
                      [](auto tag) { return &lp_gemm_kernel<decltype(tag)::value>; });
}

}  // namespace gknn::detail::cuda
