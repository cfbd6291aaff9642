// cublas.cu: knn_cublas (document 002): keys from squared norms and one SGEMM per tile.
//   SquaredL2:    key(i, j) = |x_j|^2 - 2 q_i.x_j; the finaliser adds |q_i|^2 and clamps at 0 (cancellation can
//                 dip below 0). With more queries than dimensions the norm is folded into the GEMM (gemm_keys.cuh:
//                 one more column, no pass over the key matrix); with few queries copying the base into that
//                 layout would cost more than one pass over the small key matrix, so SGEMM + a norm pass.
//   InnerProduct: key(i, j) = -q_i.x_j, computed by SGEMM directly with alpha = -1
// Row-major trick: the row-major nq x nb key matrix is, in cuBLAS's column-major view, the nb x nq matrix
// B * Q^T, where the row-major base (nb x dim) is a column-major dim x nb matrix (op T) and the row-major
// queries a column-major dim x nq matrix (op N). No transposed copies are made.
// The handle runs in CUBLAS_PEDANTIC_MATH (handle_pool.cuh): no TF32, so integer data below 2^24 is exact.
#include <algorithm>
#include <climits>

#include "cuda/common/error.cuh"
#include "cuda/common/initialized_mark.cuh"
#include "cuda/distance/cublas/gemm_keys.cuh"
#include "cuda/distance/cublas/handle_pool.cuh"
#include "cuda/distance/kernels.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr int64_t kMaxNormRowsPerLaunch = 4096;  // grid.y; the kernel strides over further rows

/// keys(i, j) = |x_j|^2 + keys(i, j), where keys holds -2 q_i.x_j.
__global__ void add_base_norms_kernel(float* __restrict__ keys, int64_t stride, int64_t nq, int64_t nb,
                                      const float* __restrict__ base_norms) {
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= nb) return;
  const float xn = base_norms[j];
  for (int64_t i = blockIdx.y; i < nq; i += gridDim.y) keys[i * stride + j] += xn;
}

void check_int(int64_t value, const char* what) {
  GKNN_EXPECT(value <= INT_MAX, ErrorCode::Unsupported, "distance cublas: ", what, " = ", value,
              " exceeds cuBLAS's 32-bit sizes (use smaller tiles or another distance algorithm)");
}

}  // namespace

void cublas_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx) {
  GKNN_EXPECT(in.metric == Metric::SquaredL2 || in.metric == Metric::InnerProduct, ErrorCode::Internal,
              "cublas distance called with metric ", to_string(in.metric));
  check_int(in.nb, "base rows");
  check_int(in.nq, "query rows");
  check_int(in.dim, "dimension");
  check_int(in.base_stride, "base stride");
  check_int(in.query_stride, "query stride");
  check_int(out.stride, "output stride");
  const bool l2 = in.metric == Metric::SquaredL2;
  GKNN_EXPECT(!l2 || in.base_norms, ErrorCode::Internal, "cublas distance: norms not provided");
  if (l2 && in.nq > in.dim) return gemm_keys(in, out, ctx, GemmPrecision::Fp32);
  const float alpha = l2 ? -2.f : -1.f, beta = 0.f;
  {
    CublasLease lease(ctx.device, ctx.stream);
    GKNN_CUBLAS_TRY(cublasSgemm(lease.get(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(in.nb),
                                static_cast<int>(in.nq), static_cast<int>(in.dim), &alpha, in.base,
                                static_cast<int>(in.base_stride), in.queries, static_cast<int>(in.query_stride), &beta,
                                out.keys, static_cast<int>(out.stride)));
  }
  mark_initialized(out.keys, in.nq, in.nb, out.stride, ctx.stream);
  if (!l2) return;
  const int threads = 256;
  const dim3 grid(static_cast<unsigned>((in.nb + threads - 1) / threads),
                  static_cast<unsigned>(std::min<int64_t>(in.nq, kMaxNormRowsPerLaunch)));
  add_base_norms_kernel<<<grid, threads, 0, ctx.stream>>>(out.keys, out.stride, in.nq, in.nb, in.base_norms);
  GKNN_CUDA_CHECK_LAUNCH();
}

size_t cublas_workspace(int64_t nq, int64_t nb, int64_t dim) {
  return gemm_keys_workspace(nq, nb, dim, GemmPrecision::Fp32);
}

}  // namespace gknn::detail::cuda
