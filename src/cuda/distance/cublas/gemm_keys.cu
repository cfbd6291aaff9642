// gemm_keys.cu: see gemm_keys.cuh.
#include <algorithm>
#include <climits>

#include "cuda/common/error.cuh"
#include "cuda/common/initialized_mark.cuh"
#include "cuda/distance/cublas/gemm_keys.cuh"
#include "cuda/distance/cublas/handle_pool.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr int kThreads = 256;
constexpr double kExactLimit = 16777216.0;  // 2^24: float32 holds every integer below it
constexpr float kFp16MaxInteger = 2048.f;   // fp16 holds every integer up to it

template <class T>
__device__ __forceinline__ T to(float v);
template <>
__device__ __forceinline__ float to<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half to<__half>(float v) { return __float2half_rn(v); }

/// One thread per output element of the augmented rows (row-major, out_dim columns).
template <class T>
__global__ void augment_kernel(const float* __restrict__ rows, int64_t stride, int64_t count, int64_t dim,
                               const float* __restrict__ norms, bool is_query, bool l2, T* __restrict__ out,
                               int64_t out_dim) {
  const int64_t total = count * out_dim;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / out_dim, c = e % out_dim;
    float v = 0.f;
    if (c < dim) {
      const float x = rows[r * stride + c];
      v = is_query ? (l2 ? -2.f * x : -x) : x;
    } else if (l2) {
      const int64_t extra = c - dim;
      if (sizeof(T) == sizeof(float)) {
        if (extra == 0) v = is_query ? 1.f : norms[r];
      } else if (extra < 3) {
        if (is_query) {
          v = extra == 0 ? 1.f : 2048.f;
        } else {  // |x|^2 is an integer below 2^24 on data fp16_exact() accepted: three 11-bit pieces
          const int64_t n = static_cast<int64_t>(norms[r]);
          v = extra == 0 ? float(n & 2047) : extra == 1 ? float((n >> 11) & 2047) : float(n >> 22) * 2048.f;
        }
      }
    }
    out[e] = to<T>(v);
  }
}

template <class T>
void augment(const float* rows, int64_t stride, int64_t count, int64_t dim, const float* norms, bool is_query,
             bool l2, T* out, int64_t out_dim, cudaStream_t s) {
  const int64_t total = count * out_dim;
  if (total == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((total + kThreads - 1) / kThreads, 1 << 20));
  augment_kernel<T><<<blocks, kThreads, 0, s>>>(rows, stride, count, dim, norms, is_query, l2, out, out_dim);
  GKNN_CUDA_CHECK_LAUNCH();
}

void check_int(int64_t value, const char* what) {
  GKNN_EXPECT(value <= INT_MAX, ErrorCode::Unsupported, "distance gemm: ", what, " = ", value,
              " exceeds cuBLAS's 32-bit sizes (use smaller tiles or another distance algorithm)");
}

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

size_t element_bytes(GemmPrecision p) { return p == GemmPrecision::Fp16 ? sizeof(__half) : sizeof(float); }

}  // namespace

int64_t augmented_dim(int64_t dim, GemmPrecision precision) {
  return precision == GemmPrecision::Fp16 ? (dim + 3 + 7) / 8 * 8 : (dim + 1 + 3) / 4 * 4;
}

size_t gemm_keys_workspace(int64_t nq, int64_t nb, int64_t dim, GemmPrecision precision) {
  const size_t row = static_cast<size_t>(augmented_dim(dim, precision)) * element_bytes(precision);
  return aligned(static_cast<size_t>(nq) * row) + aligned(static_cast<size_t>(nb) * row);
}

bool fp16_exact(const DataFacts& f) {
  const detail::ValueStats& v = f.values;
  if (!v.known || !v.integral || v.max_abs > kFp16MaxInteger) return false;
  const double m2 = static_cast<double>(v.max_abs) * v.max_abs, d = static_cast<double>(f.dim);
  return (v.nonnegative ? 2.0 * d * m2 : 4.0 * d * m2) < kExactLimit;
}

void gemm_keys(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx,
               GemmPrecision precision) {
  const bool l2 = in.metric == Metric::SquaredL2;
  GKNN_EXPECT(l2 || in.metric == Metric::InnerProduct, ErrorCode::Internal, "gemm keys called with metric ",
              to_string(in.metric));
  GKNN_EXPECT(!l2 || in.base_norms, ErrorCode::Internal, "gemm keys: base norms not provided");
  const int64_t ad = augmented_dim(in.dim, precision);
  check_int(in.nb, "base rows");
  check_int(in.nq, "query rows");
  check_int(ad, "augmented dimension");
  check_int(out.stride, "output stride");
  const size_t row_bytes = static_cast<size_t>(ad) * element_bytes(precision);
  auto* scratch = static_cast<unsigned char*>(ctx.workspace.get(gemm_keys_workspace(in.nq, in.nb, in.dim, precision)));
  void* queries = scratch;
  void* base = scratch + aligned(static_cast<size_t>(in.nq) * row_bytes);
  const float one = 1.f, zero = 0.f;
  CublasLease lease(ctx.device, ctx.stream);
  if (precision == GemmPrecision::Fp16) {
    augment(in.queries, in.query_stride, in.nq, in.dim, nullptr, true, l2, static_cast<__half*>(queries), ad,
            ctx.stream);
    augment(in.base, in.base_stride, in.nb, in.dim, in.base_norms, false, l2, static_cast<__half*>(base), ad,
            ctx.stream);
    // Default math: tensor cores, fp16 products, fp32 accumulation (CUBLAS_COMPUTE_32F, never 16F).
    GKNN_CUBLAS_TRY(cublasSetMathMode(lease.get(), CUBLAS_DEFAULT_MATH));
    const cublasStatus_t status =
        cublasGemmEx(lease.get(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(in.nb), static_cast<int>(in.nq),
                     static_cast<int>(ad), &one, base, CUDA_R_16F, static_cast<int>(ad), queries, CUDA_R_16F,
                     static_cast<int>(ad), &zero, out.keys, CUDA_R_32F, static_cast<int>(out.stride),
                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    GKNN_CUBLAS_TRY(cublasSetMathMode(lease.get(), CUBLAS_PEDANTIC_MATH));  // the pool's handles stay pedantic
    GKNN_CUBLAS_TRY(status);
  } else {
    augment(in.queries, in.query_stride, in.nq, in.dim, nullptr, true, l2, static_cast<float*>(queries), ad,
            ctx.stream);
    augment(in.base, in.base_stride, in.nb, in.dim, in.base_norms, false, l2, static_cast<float*>(base), ad,
            ctx.stream);
    GKNN_CUBLAS_TRY(cublasSgemm(lease.get(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(in.nb),
                                static_cast<int>(in.nq), static_cast<int>(ad), &one, static_cast<const float*>(base),
                                static_cast<int>(ad), static_cast<const float*>(queries), static_cast<int>(ad), &zero,
                                out.keys, static_cast<int>(out.stride)));
  }
  mark_initialized(out.keys, in.nq, in.nb, out.stride, ctx.stream);
}

}  // namespace gknn::detail::cuda
