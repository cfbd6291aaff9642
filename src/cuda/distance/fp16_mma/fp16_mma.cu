// fp16_mma.cu: exact tensor-core distances for integer data (gknn): squared L2 and inner product from one fp16
// GEMM with fp32 accumulation, the base norms folded into the GEMM (cublas/gemm_keys.cuh has the layout and the
// proof of exactness). Registered for data on which fp16_exact() holds (integers, |x| <= 2048, partial sums
// below 2^24: SIFT-like uint8 data up to dimension 128), where it returns the float64 oracle's ids and values.
#include "cuda/distance/cublas/gemm_keys.cuh"
#include "cuda/distance/kernels.cuh"

namespace gknn::detail::cuda {

void fp16_mma_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx) {
  gemm_keys(in, out, ctx, GemmPrecision::Fp16);
}

size_t fp16_mma_workspace(int64_t nq, int64_t nb, int64_t dim) {
  return gemm_keys_workspace(nq, nb, dim, GemmPrecision::Fp16);
}

bool fp16_mma_exact_on(const DataFacts& facts) { return fp16_exact(facts); }

}  // namespace gknn::detail::cuda
