// atomic.cu: one thread per component, accumulated straight into the output with atomics — the report's second
// variant. The report lost accuracy here; this version is exact up to float summation order: the output is
// zeroed on the stream first, every term is added exactly once, and Linf uses atomicMax on the float's bit
// pattern (valid because |q-x| >= 0, and non-negative floats order like their int bits).
//
// NON-DETERMINISM: the order in which atomicAdd folds the terms varies between runs, so keys can differ in the
// last bits from run to run and from the direct kernels (ties between nearly equal keys may flip). On data whose
// sums are exact in float (small integers) every order gives the same key, so results are then exact.
#include "cuda/distance/block_shape.cuh"
#include "cuda/distance/key_ops.cuh"
#include "cuda/distance/kernels.cuh"
#include "cuda/distance/query_launch.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr int kThreads = ComponentBlock::kThreads;

template <Metric M>
__global__ void __launch_bounds__(kThreads)
    atomic_kernel(const float* __restrict__ queries, int64_t query_stride, int64_t /*nq: grid.y*/,
                  const float* __restrict__ base, int64_t base_stride, int64_t nb, int64_t dim, float p,
                  float* __restrict__ out, int64_t out_stride) {
  const int tx = threadIdx.x;
  const int64_t qi = blockIdx.y;
  const int64_t j = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  if (j >= nb || tx >= dim) return;
  const float* q = queries + qi * query_stride;
  const float* x = base + j * base_stride;
  float acc = 0.f;
  for (int64_t d = tx; d < dim; d += blockDim.x) acc = KeyOp<M>::combine(acc, KeyOp<M>::term(q[d], x[d], p));
  float* target = out + qi * out_stride + j;
  if constexpr (M == Metric::Linf) {
    atomicMax(reinterpret_cast<int*>(target), __float_as_int(acc));
  } else {
    atomicAdd(target, acc);
  }
}

}  // namespace

void atomic_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx) {
  // Zero (all-bits-zero = +0.0f) is the identity of both + and max over non-negative terms.
  GKNN_CUDA_TRY(cudaMemset2DAsync(out.keys, static_cast<size_t>(out.stride) * sizeof(float), 0,
                                  static_cast<size_t>(in.nb) * sizeof(float), static_cast<size_t>(in.nq), ctx.stream));
  launch_over_queries(in, out, ctx.stream, component_grid(in.dim), in.base,
                      [](auto tag) { return &atomic_kernel<decltype(tag)::value>; });
}

}  // namespace gknn::detail::cuda
