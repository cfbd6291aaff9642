// tf32.cu: float data on the tensor cores (issue 12): squared L2 and inner product keys from one cuBLAS GEMM in
// TF32 mode, the base norms folded in exactly (cublas/gemm_keys.cuh has both layouts).
//   tf32    the values rounded to TF32 (10 mantissa bits): 8x the float32 SGEMM's arithmetic rate, keys within
//           2^-10-relative products of the exact ones;
//   tf32x3  each value split into big + small TF32 parts and three products per component summed in one GEMM over
//           3d columns: keys at float32 SGEMM's accuracy, at three times TF32's work.
// Neither is exact on float data: the exactness guard takes k' candidates, re-ranks them on float64 keys and
// certifies the top k within each path's error bound (catalogue precision tf32 / tf32x3, core/guard.cpp).
#include "cuda/distance/cublas/gemm_keys.cuh"
#include "cuda/distance/kernels.cuh"

namespace gknn::detail::cuda {

void tf32_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx) {
  gemm_keys(in, out, ctx, GemmPrecision::Tf32);
}

size_t tf32_workspace(int64_t nq, int64_t nb, int64_t dim) {
  return gemm_keys_workspace(nq, nb, dim, GemmPrecision::Tf32);
}

void tf32x3_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx) {
  gemm_keys(in, out, ctx, GemmPrecision::Tf32x3);
}

size_t tf32x3_workspace(int64_t nq, int64_t nb, int64_t dim) {
  return gemm_keys_workspace(nq, nb, dim, GemmPrecision::Tf32x3);
}

}  // namespace gknn::detail::cuda
