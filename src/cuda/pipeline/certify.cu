// certify.cu: see certify.cuh. The certificate is rerank.cpp's rerank_row, decided the same way: the K'-th
// computed key (the largest of the valid candidates, the finaliser's row offset added in float) minus the query's
// bound must exceed the k-th float64 key, or K' must cover every base row.
//
// Two ways to the candidates' float64 keys, bit for bit the same (exact_key.cuh's steps in the same order):
// * per thread: thread j walks candidate j's row component by component. A warp's load then touches 32 rows, 32
//   sectors for 32 floats; at d = 960 and K' = 1250 the certificate took ~104 ms of a 10k-query search (H200).
// * staged (the default, hook_state.cuh staged_certificate_enabled; squared L2 and inner product, the guarded key
//   metrics): a round of 256 candidates has their rows copied through shared memory kChunk components at a time,
//   one warp reading 128 coalesced bytes of a row per load into a transposed tile; each thread then sums its own
//   row's components from the tile (conflict-free: a tile row is padded to kThreads + 1 floats). H200, d = 960:
//   the searches 1.7-2.2x faster than per thread.
// Where a computed key is already exact (CertifyArgs::exact_below: int8_mma's integer keys below 2^24), it is its
// float64 key: the per-thread kernel skips that row, the staged one a round whose every key is such.
#include <algorithm>
#include <climits>

#include "core/backend.hpp"
#include "core/rerank.hpp"
#include "cuda/common/error.cuh"
#include "cuda/pipeline/certify.cuh"
#include "cuda/pipeline/exact_key.cuh"
#include "cuda/pipeline/hook_state.cuh"
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

constexpr int kChunk = 32;                  // components of a row staged at a time (one per lane)
constexpr int kTileStride = kThreads + 1;   // floats a tile row: a column step moves one bank
constexpr int kRowsPerWarp = kThreads / kWarps;  // candidates' rows a warp stages a chunk
/// The staged kernel's shared memory after the keys and labels: the round's rows (int64), the transposed tile
/// (kChunk x kTileStride floats) and the query's chunk.
constexpr size_t kStagedBytes = kThreads * sizeof(int64_t) + kChunk * kTileStride * sizeof(float) + kChunk * sizeof(float);

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

/// One query's candidates as the kernel sees them: the computed keys and rows of its list, and what the entries
/// add up to (valid candidates, the largest computed key).
struct CandidateRow {
  const float* q;
  const float* computed;
  const int64_t* ids;
  float offset;
  uint64_t* keys;
  int64_t* labels;
  double valid = 0, last = -HUGE_VAL;

  __device__ int64_t id(const CertifyArgs& a, uint32_t j) const { return j < a.candidates ? ids[j] : -1; }

  /// Whether candidate j's computed key is its exact key (CertifyArgs::exact_below; padding needs none either).
  __device__ bool exact_as_computed(const CertifyArgs& a, uint32_t j, int64_t id) const {
    return id < 0 || fabs(static_cast<double>(computed[j])) < a.exact_below;
  }

  /// Candidate j's computed key in float64 (0 for padding, which put() ignores).
  __device__ double computed_key(uint32_t j, int64_t id) const {
    return id < 0 ? 0.0 : static_cast<double>(computed[j]);
  }

  /// Candidate j's entry (`key` its float64 key; padding where id < 0).
  __device__ void put(const CertifyArgs& a, uint32_t j, int64_t id, double key) {
    if (id < 0) {
      keys[j] = kPaddingKey;
      labels[j] = LLONG_MAX;
      return;
    }
    keys[j] = ordered_key64(key);
    labels[j] = id;
    valid += 1;
    const float c = a.row_offsets ? fmaxf(0.f, computed[j] + offset) : computed[j];
    last = fmax(last, static_cast<double>(c));
  }
};

/// Per thread: thread j reads candidate j's row itself.
__device__ void direct_keys(const CertifyArgs& a, uint32_t padded, CandidateRow& r) {
  for (uint32_t j = threadIdx.x; j < padded; j += kThreads) {
    const int64_t id = r.id(a, j);
    r.put(a, j, id, r.exact_as_computed(a, j, id) ? r.computed_key(j, id)
                                                  : exact_key(a.metric, 2.0, r.q, a.base + id * a.base_stride, a.dim));
  }
}

/// Staged (see the file's comment): rounds of kThreads candidates, their rows through the transposed tile.
template <Metric kMetric>
__device__ void staged_keys(const CertifyArgs& a, uint32_t padded, CandidateRow& r, unsigned char* staging) {
  int64_t* round_ids = reinterpret_cast<int64_t*>(staging);
  float* tile = reinterpret_cast<float*>(round_ids + kThreads);
  float* q_chunk = tile + kChunk * kTileStride;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  // Rounds up to the last candidate's; the padding past it (up to the sort's power of two) is written directly.
  const uint32_t staged_end =
      min(padded, static_cast<uint32_t>((a.candidates + kThreads - 1) / kThreads) * static_cast<uint32_t>(kThreads));
  for (uint32_t j = staged_end + threadIdx.x; j < padded; j += kThreads) r.put(a, j, -1, 0.0);
  for (uint32_t round = 0; round < staged_end; round += kThreads) {
    const uint32_t j = round + threadIdx.x;
    const int64_t id = r.id(a, j);
    // A round whose keys are all exact as computed stages no row (the barrier also orders the last round's reads of
    // round_ids before this round's writes).
    if (!__syncthreads_or(!r.exact_as_computed(a, j, id))) {
      if (j < padded) r.put(a, j, id, r.computed_key(j, id));
      continue;
    }
    round_ids[threadIdx.x] = id;  // the last chunk's staging read them before its second barrier
    double acc = 0;
    for (int64_t c0 = 0; c0 < a.dim; c0 += kChunk) {
      const int width = static_cast<int>(min(static_cast<int64_t>(kChunk), a.dim - c0));
      __syncthreads();  // round_ids written; the previous chunk's tile read
      if (warp == 0 && lane < width) q_chunk[lane] = r.q[c0 + lane];
      // The warp's kRowsPerWarp row loads all in flight before the first store (registers, then the tile).
      float staged[kRowsPerWarp];
#pragma unroll
      for (int u = 0; u < kRowsPerWarp; ++u) {
        const int64_t rid = round_ids[warp + u * kWarps];
        staged[u] = rid >= 0 && lane < width ? a.base[rid * a.base_stride + c0 + lane] : 0.f;
      }
#pragma unroll
      for (int u = 0; u < kRowsPerWarp; ++u) tile[lane * kTileStride + warp + u * kWarps] = staged[u];
      __syncthreads();
      if (id >= 0)
        for (int t = 0; t < width; ++t)
          acc = exact_key_step<kMetric>(acc, q_chunk[t], tile[t * kTileStride + threadIdx.x]);
    }
    if (j < padded) r.put(a, j, id, exact_key_finish<kMetric>(acc));
  }
}

/// kStaged: the staged keys of kMetric (squared L2 or inner product); else per thread, a.metric.
template <bool kStaged, Metric kMetric>
__global__ void __launch_bounds__(kThreads) certify_kernel(CertifyArgs a, uint32_t padded) {
  extern __shared__ uint64_t shared[];
  __shared__ double scratch[kWarps];
  const int64_t row = blockIdx.x;
  CandidateRow r{a.queries + row * a.query_stride, a.keys + row * a.list_stride, a.labels + row * a.list_stride,
                 a.row_offsets ? a.row_offsets[row] : 0.f, shared, reinterpret_cast<int64_t*>(shared + padded)};
  if constexpr (kStaged) staged_keys<kMetric>(a, padded, r, reinterpret_cast<unsigned char*>(shared + 2 * padded));
  else direct_keys(a, padded, r);
  const float* q = r.q;
  uint64_t* keys = r.keys;
  int64_t* labels = r.labels;
  double last = r.last, valid = r.valid;
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

namespace {

void launch_certify(void (*kernel)(CertifyArgs, uint32_t), const CertifyArgs& args, uint32_t padded, size_t bytes,
                    cudaStream_t stream) {
  // Past the default 48 KiB (K' above 2048 pads to 4096 entries, 64 KiB; the staged tile adds 34 KiB), opted in on
  // the current device.
  if (bytes > 40 * 1024)
    GKNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  kernel<<<static_cast<unsigned>(args.rows), kThreads, bytes, stream>>>(args, padded);
  GKNN_CUDA_CHECK_LAUNCH();
}

}  // namespace

void certify_rows(const CertifyArgs& args, cudaStream_t stream) {
  if (args.rows == 0) return;
  GKNN_EXPECT(args.candidates >= args.k && args.candidates <= DeviceCertificate::kMaxCandidates,
              ErrorCode::Internal, "certify_rows: ", args.candidates, " candidates for k = ", args.k);
  const uint32_t padded = padded_count(args.candidates);
  const bool staged = staged_certificate_enabled() &&
                      (args.metric == Metric::SquaredL2 || args.metric == Metric::InnerProduct);
  if (!staged) return launch_certify(certify_kernel<false, Metric::SquaredL2>, args, padded, shared_bytes(padded),
                                     stream);
  const size_t bytes = shared_bytes(padded) + kStagedBytes;
  if (args.metric == Metric::SquaredL2)
    return launch_certify(certify_kernel<true, Metric::SquaredL2>, args, padded, bytes, stream);
  launch_certify(certify_kernel<true, Metric::InnerProduct>, args, padded, bytes, stream);
}

}  // namespace gknn::detail::cuda
