// certify.cu: see certify.cuh. The certificate is rerank.cpp's rerank_row, decided the same way: the K'-th
// computed key (the largest of the valid candidates, the finaliser's row offset added in float) minus the query's
// bound must exceed the k-th float64 key, or K' must cover every base row.
#include <algorithm>
#include <climits>

#include "core/backend.hpp"
#include "core/rerank.hpp"
#include "cuda/common/error.cuh"
#include "cuda/pipeline/certify.cuh"
#include "cuda/pipeline/exact_key.cuh"
#include "cuda/primitives/ordered.cuh"
#include "cuda/primitives/shared_bitonic.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr uint64_t kPaddingKey = ~uint64_t{0};

uint32_t padded_count(int64_t candidates) {
  uint32_t n = 1;
  while (n < candidates) n <<= 1;
  return n;
}

size_t shared_bytes(uint32_t padded) { return static_cast<size_t>(padded) * (sizeof(uint64_t) + sizeof(int64_t)); }

/// Block-wide sum (op = 0) or maximum (op = 1) of one double per thread; every thread gets the result.
template <int kOp>
__device__ double block_reduce(double v, double* scratch) {
  for (int o = 16; o > 0; o >>= 1) {
    const double w = __shfl_xor_sync(0xffffffffu, v, o);
    v = kOp == 0 ? v + w : fmax(v, w);
  }
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  double r = scratch[0];
  for (int w = 1; w < kWarps; ++w) r = kOp == 0 ? r + scratch[w] : fmax(r, scratch[w]);
  __syncthreads();  // scratch is reused by the next call
  return r;
}

__global__ void __launch_bounds__(kThreads) certify_kernel(CertifyArgs a, uint32_t padded) {
  extern __shared__ uint64_t shared[];
  uint64_t* keys = shared;
  int64_t* labels = reinterpret_cast<int64_t*>(shared + padded);
  __shared__ double scratch[kWarps];
  const int64_t row = blockIdx.x;
  const float* q = a.queries + row * a.query_stride;
  const float* computed = a.keys + row * a.list_stride;
  const int64_t* ids = a.labels + row * a.list_stride;
  const float offset = a.row_offsets ? a.row_offsets[row] : 0.f;
  double last = -HUGE_VAL, valid = 0;
  for (uint32_t j = threadIdx.x; j < padded; j += kThreads) {
    const int64_t id = j < a.candidates ? ids[j] : -1;
    if (id < 0) {
      keys[j] = kPaddingKey;
      labels[j] = LLONG_MAX;
      continue;
    }
    keys[j] = ordered_key64(exact_key(a.metric, 2.0, q, a.base + id * a.base_stride, a.dim));
    labels[j] = id;
    valid += 1;
    const float key = a.row_offsets ? fmaxf(0.f, computed[j] + offset) : computed[j];
    last = fmax(last, static_cast<double>(key));
  }
  double square_norm = 0;
  for (int64_t j = threadIdx.x; j < a.dim; j += kThreads) square_norm += double(q[j]) * q[j];
  square_norm = block_reduce<0>(square_norm, scratch);
  last = block_reduce<1>(last, scratch);
  const int64_t keep = min(a.k, static_cast<int64_t>(block_reduce<0>(valid, scratch)));
  bitonic::shared_sort<kThreads, true, uint64_t>(keys, labels, padded);
  for (int64_t j = threadIdx.x; j < a.k; j += kThreads) {
    const bool held = j < keep;
    a.out_keys[row * a.k + j] = held ? __double2float_rn(key64_from_ordered(keys[j])) : HUGE_VALF;
    a.out_labels[row * a.k + j] = held ? labels[j] : -1;
    if (a.out_exact) {
      a.out_exact[row * a.k + j] = held ? key64_from_ordered(keys[j]) : HUGE_VAL;
      a.out_exact_rows[row * a.k + j] = held ? labels[j] : -1;
    }
  }
  if (threadIdx.x != 0) return;
  const double max_base_norm =
      a.max_base_norm >= 0 ? a.max_base_norm
                           : sqrt(__longlong_as_double(static_cast<long long>(*a.max_norm_bits))) * (1 + 1e-12);
  const double eps = key_error_bound(a.input_error, a.terms, sqrt(square_norm), max_base_norm);
  const bool every_row = a.candidates >= a.base_rows;  // nothing outside the candidates
  a.certified[row] = every_row || (keep == a.k && isfinite(last) && isfinite(eps) &&
                                   last - eps > key64_from_ordered(keys[a.k - 1]));
}

__global__ void max_square_norm_kernel(const float* __restrict__ rows, int64_t count, int64_t stride, int64_t dim,
                                       unsigned long long* __restrict__ out) {
  double best = 0;
  for (int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < count; r += int64_t(gridDim.x) * blockDim.x) {
    const float* x = rows + r * stride;
    double s = 0;
    for (int64_t j = 0; j < dim; ++j) s += static_cast<double>(x[j]) * x[j];
    best = fmax(best, s);
  }
  atomicMax(out, static_cast<unsigned long long>(__double_as_longlong(best)));
}

}  // namespace

void launch_max_square_norm(const float* rows, int64_t count, int64_t stride, int64_t dim, unsigned long long* out,
                            cudaStream_t stream) {
  if (count == 0) return;
  const unsigned blocks =
      static_cast<unsigned>(std::clamp<int64_t>((count + kThreads - 1) / kThreads, 1, int64_t(1) << 16));
  max_square_norm_kernel<<<blocks, kThreads, 0, stream>>>(rows, count, stride, dim, out);
  GKNN_CUDA_CHECK_LAUNCH();
}

void certify_rows(const CertifyArgs& args, cudaStream_t stream) {
  if (args.rows == 0) return;
  GKNN_EXPECT(args.candidates >= args.k && args.candidates <= DeviceCertificate::kMaxCandidates,
              ErrorCode::Internal, "certify_rows: ", args.candidates, " candidates for k = ", args.k);
  const uint32_t padded = padded_count(args.candidates);
  const size_t bytes = shared_bytes(padded);
  // K' above 2048 pads to 4096 entries (64 KiB): past the default 48 KiB, opted in on the current device.
  if (bytes > 40 * 1024)
    GKNN_CUDA_TRY(cudaFuncSetAttribute(certify_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(bytes)));
  certify_kernel<<<static_cast<unsigned>(args.rows), kThreads, bytes, stream>>>(args, padded);
  GKNN_CUDA_CHECK_LAUNCH();
}

}  // namespace gknn::detail::cuda
