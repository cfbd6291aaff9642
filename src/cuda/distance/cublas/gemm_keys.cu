// gemm_keys.cu: see gemm_keys.cuh.
#include <algorithm>
#include <climits>

#include "core/env_switch.hpp"
#include "cuda/common/error.cuh"
#include "cuda/common/initialized_mark.cuh"
#include "cuda/distance/cublas/gemm_keys.cuh"
#include "cuda/distance/cublas/handle_pool.cuh"
#include "cuda/distance/cublas/tf32_split.hpp"
#include "core/guard.hpp"

namespace gknn::detail::cuda {
namespace {

constexpr int kThreads = 256;

template <class T>
__device__ __forceinline__ T to(float v);
template <>
__device__ __forceinline__ float to<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half to<__half>(float v) { return __float2half_rn(v); }

/// The value at column c of a row's augmented copy (gemm_keys.cuh: the layouts); `norm` is read for base rows only.
template <GemmPrecision P>
__device__ float augmented_value(const float* row, int64_t dim, const float* norm, bool is_query, bool l2, int64_t c) {
  constexpr bool tf32 = P == GemmPrecision::Tf32 || P == GemmPrecision::Tf32x3;
  const int64_t value_columns = P == GemmPrecision::Tf32x3 ? 3 * dim : dim;
  if (c < value_columns) {
    const int64_t part = c / dim;  // tf32x3: [big, big, small] . [big, small, big]
    const float x = row[c - part * dim];
    const float v = is_query ? (l2 ? -2.f * x : -x) : x;
    if constexpr (P == GemmPrecision::Tf32) return round_to_tf32(v);
    if constexpr (P == GemmPrecision::Tf32x3) {
      const Tf32Pair pieces = split_tf32(v);
      return (is_query ? part == 2 : part == 1) ? pieces.small : pieces.big;
    }
    return v;
  }
  const int64_t extra = c - value_columns;
  if (!l2) return 0.f;
  if constexpr (P == GemmPrecision::Fp32) return extra == 0 ? (is_query ? 1.f : *norm) : 0.f;
  if (extra >= 3) return 0.f;
  if constexpr (tf32) {  // |x|^2 as three TF32 pieces whose sum is exactly the float32 norm
    if (is_query) return 1.f;
    const Tf32Triple n = split_tf32_exact(*norm);
    return extra == 0 ? n.p0 : extra == 1 ? n.p1 : n.p2;
  }
  if (is_query) return extra == 0 ? 1.f : 2048.f;
  // |x|^2 is an integer below 2^24 on data fp16_exact() accepted: three 11-bit pieces
  const int64_t n = static_cast<int64_t>(*norm);
  return extra == 0 ? float(n & 2047) : extra == 1 ? float((n >> 11) & 2047) : float(n >> 22) * 2048.f;
}

/// One thread per output element of the augmented rows (row-major, out_dim columns).
template <class T, GemmPrecision P>
__global__ void augment_kernel(const float* __restrict__ rows, int64_t stride, int64_t count, int64_t dim,
                               const float* __restrict__ norms, bool is_query, bool l2, T* __restrict__ out,
                               int64_t out_dim) {
  const int64_t total = count * out_dim;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / out_dim, c = e % out_dim;
    out[e] = to<T>(augmented_value<P>(rows + r * stride, dim, is_query ? nullptr : norms + r, is_query, l2, c));
  }
}

template <class T, GemmPrecision P>
void augment(const float* rows, int64_t stride, int64_t count, int64_t dim, const float* norms, bool is_query,
             bool l2, T* out, int64_t out_dim, cudaStream_t s) {
  const int64_t total = count * out_dim;
  if (total == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((total + kThreads - 1) / kThreads, 1 << 20));
  augment_kernel<T, P><<<blocks, kThreads, 0, s>>>(rows, stride, count, dim, norms, is_query, l2, out, out_dim);
  GKNN_CUDA_CHECK_LAUNCH();
}

void check_int(int64_t value, const char* what) {
  GKNN_EXPECT(value <= INT_MAX, ErrorCode::Unsupported, "distance gemm: ", what, " = ", value,
              " exceeds cuBLAS's 32-bit sizes (use smaller tiles or another distance algorithm)");
}

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

size_t element_bytes(GemmPrecision p) { return p == GemmPrecision::Fp16 ? sizeof(__half) : sizeof(float); }

/// The queries' and the base tile's augmented copies (row-major, ad columns of T) in the workspace.
template <class T, GemmPrecision P>
void augment_operands(const DistanceInput& in, bool l2, void* queries, void* base, int64_t ad, cudaStream_t s) {
  augment<T, P>(in.queries, in.query_stride, in.nq, in.dim, nullptr, true, l2, static_cast<T*>(queries), ad, s);
  augment<T, P>(in.base, in.base_stride, in.nb, in.dim, in.base_norms, false, l2, static_cast<T*>(base), ad, s);
}

/// keys = base'^T query' on the tensor cores (operands of `type`, float32 output and accumulation), in the default
/// math mode that the request needs; the pool's handles are pedantic otherwise (handle_pool.cuh), so it is restored.
/// GKNN_GEMM_NO_TENSOR_CORES set (not "0"): the TF32 paths' float operands (already TF32 values, augment) are
/// multiplied by a float32 GEMM in the pool's pedantic math instead of the TF32 tensor-core GEMM. A diagnosis switch
/// (issue 16: racecheck's hardware exception beside the TF32 GEMM): exactness is unchanged, since the products of
/// TF32 values are exact in float32 and the sums are float32 as the paths' bounds count them (core/guard.cpp).
bool tensor_cores_disabled() {
  static const bool off = detail::env_switch_on("GKNN_GEMM_NO_TENSOR_CORES");
  return off;
}

void tensor_gemm(cublasHandle_t handle, const DistanceInput& in, const DistanceOutput& out, int64_t ad,
                 const void* base, const void* queries, cudaDataType_t type, cublasComputeType_t compute) {
  const float one = 1.f, zero = 0.f;
  if (type == CUDA_R_32F && tensor_cores_disabled()) {
    GKNN_CUBLAS_TRY(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(in.nb), static_cast<int>(in.nq),
                                 static_cast<int>(ad), &one, base, type, static_cast<int>(ad), queries, type,
                                 static_cast<int>(ad), &zero, out.keys, CUDA_R_32F, static_cast<int>(out.stride),
                                 CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT));
    return;
  }
  GKNN_CUBLAS_TRY(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  const cublasStatus_t status =
      cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(in.nb), static_cast<int>(in.nq),
                   static_cast<int>(ad), &one, base, type, static_cast<int>(ad), queries, type, static_cast<int>(ad),
                   &zero, out.keys, CUDA_R_32F, static_cast<int>(out.stride), compute, CUBLAS_GEMM_DEFAULT);
  GKNN_CUBLAS_TRY(cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH));
  GKNN_CUBLAS_TRY(status);
}

}  // namespace

int64_t augmented_dim(int64_t dim, GemmPrecision precision) {
  switch (precision) {
    case GemmPrecision::Fp16: return (dim + 3 + 7) / 8 * 8;
    case GemmPrecision::Tf32: return (dim + 3 + 3) / 4 * 4;
    case GemmPrecision::Tf32x3: return (3 * dim + 3 + 3) / 4 * 4;
    case GemmPrecision::Fp32: break;
  }
  return (dim + 1 + 3) / 4 * 4;
}

size_t gemm_keys_workspace(int64_t nq, int64_t nb, int64_t dim, GemmPrecision precision) {
  const size_t row = static_cast<size_t>(augmented_dim(dim, precision)) * element_bytes(precision);
  return aligned(static_cast<size_t>(nq) * row) + aligned(static_cast<size_t>(nb) * row);
}

bool fp16_exact(const DataFacts& f) { return detail::half_exact(f.values, f.dim); }

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
  CublasLease lease(ctx.device, ctx.stream);
  switch (precision) {
    case GemmPrecision::Fp16:
      augment_operands<__half, GemmPrecision::Fp16>(in, l2, queries, base, ad, ctx.stream);
      // fp16 products, fp32 accumulation (CUBLAS_COMPUTE_32F, never 16F).
      tensor_gemm(lease.get(), in, out, ad, base, queries, CUDA_R_16F, CUBLAS_COMPUTE_32F);
      break;
    case GemmPrecision::Tf32:
      // Rounded to TF32 by the augment kernel: the tensor cores' TF32 mode drops no bit of them, whichever rounding
      // it applies.
      augment_operands<float, GemmPrecision::Tf32>(in, l2, queries, base, ad, ctx.stream);
      tensor_gemm(lease.get(), in, out, ad, base, queries, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32);
      break;
    case GemmPrecision::Tf32x3:
      // The operands are TF32 values already (tf32_split.hpp): the tensor cores' TF32 mode drops no bit of them.
      augment_operands<float, GemmPrecision::Tf32x3>(in, l2, queries, base, ad, ctx.stream);
      tensor_gemm(lease.get(), in, out, ad, base, queries, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32);
      break;
    case GemmPrecision::Fp32: {
      const float one = 1.f, zero = 0.f;
      augment_operands<float, GemmPrecision::Fp32>(in, l2, queries, base, ad, ctx.stream);
      GKNN_CUBLAS_TRY(cublasSgemm(lease.get(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(in.nb),
                                  static_cast<int>(in.nq), static_cast<int>(ad), &one,
                                  static_cast<const float*>(base), static_cast<int>(ad),
                                  static_cast<const float*>(queries), static_cast<int>(ad), &zero, out.keys,
                                  static_cast<int>(out.stride)));
      break;
    }
  }
  mark_initialized(out.keys, in.nq, in.nb, out.stride, ctx.stream);
}

}  // namespace gknn::detail::cuda
