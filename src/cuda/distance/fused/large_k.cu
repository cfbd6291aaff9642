// large_k.cu: the small kernels around the fused kernel's filter rounds (see large_k.cuh): the strided sample of
// the base, the first thresholds, the settling of each query's candidate list, and the compaction of the queries
// that go to another round.
#include <algorithm>

#include "cuda/common/error.cuh"
#include "cuda/distance/fused/large_k.cuh"
#include "cuda/primitives/ordered.cuh"
#include "cuda/primitives/shared_bitonic.cuh"

namespace gknn::detail::cuda::fused_large_k {
namespace {

constexpr int kColumnBits = 32;  // the fused kernel's composite words: ordered key above the base column
constexpr int kSettleThreads = 512;

unsigned blocks_for(int64_t items, int threads) {
  return static_cast<unsigned>(std::min<int64_t>((items + threads - 1) / threads, 1 << 16));
}

__global__ void gather_sample_kernel(const uint32_t* __restrict__ base, const float* __restrict__ norms, int words,
                                     int64_t m, int64_t rows, uint32_t* __restrict__ out, float* __restrict__ out_norms) {
  for (int64_t w = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; w < rows * words;
       w += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = w / words, c = w % words;
    out[w] = base[r * m * words + c];
    if (norms && c == 0) out_norms[r] = norms[r * m];
  }
}

__global__ void thresholds_kernel(const float* __restrict__ keys, int64_t stride, int64_t nq, int last,
                                  uint64_t* __restrict__ thresholds) {
  const int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (q < nq) thresholds[q] = composite_key(ordered_key(keys[q * stride + last]), ~0u, kColumnBits);
}

__global__ void __launch_bounds__(kSettleThreads)
    settle_kernel(const uint64_t* __restrict__ candidates, const unsigned* __restrict__ counts, int k,
                  const int* __restrict__ rows, float* __restrict__ out_keys, int64_t* __restrict__ out_labels,
                  int64_t out_stride, int64_t label_offset, uint64_t* __restrict__ next, int* __restrict__ failed,
                  unsigned* __restrict__ failed_count) {
  __shared__ uint64_t v[kCandidateCap];
  const int64_t list = blockIdx.x;
  const int q = rows ? rows[list] : static_cast<int>(list);
  const unsigned count = counts[list];
  if (count < static_cast<unsigned>(k)) {  // the threshold was too low: the next round takes every key
    if (threadIdx.x == 0) {
      next[q] = kTakeAll;
      failed[atomicAdd(failed_count, 1u)] = q;
    }
    return;
  }
  const uint32_t n = count < kCandidateCap ? count : static_cast<uint32_t>(kCandidateCap);
  const uint32_t padded = bitonic::next_pow2(n);
  const uint64_t* src = candidates + list * kCandidateCap;
  for (uint32_t j = threadIdx.x; j < padded; j += kSettleThreads) v[j] = j < n ? src[j] : kTakeAll;
  bitonic::shared_sort<kSettleThreads, false, uint64_t>(v, nullptr, padded);
  if (count > kCandidateCap) {  // the list is cut: its k-th entry is the next (lower) threshold
    if (threadIdx.x == 0) {
      next[q] = v[k - 1];
      failed[atomicAdd(failed_count, 1u)] = q;
    }
    return;
  }
  const int64_t at = int64_t(q) * out_stride;
  for (int j = threadIdx.x; j < k; j += kSettleThreads) {
    out_keys[at + j] = key_from_ordered(composite_ordered(v[j], kColumnBits));
    out_labels[at + j] = label_offset + composite_column(v[j], kColumnBits);
  }
}

__global__ void gather_failed_kernel(const uint32_t* __restrict__ queries, int words, const uint64_t* __restrict__ next,
                                     const int* __restrict__ failed, int64_t n, uint32_t* __restrict__ out,
                                     uint64_t* __restrict__ out_thresholds) {
  for (int64_t w = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; w < n * words;
       w += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = w / words, c = w % words;
    const int q = failed[i];
    out[w] = queries[int64_t(q) * words + c];
    if (c == 0) out_thresholds[i] = next[q];
  }
}

}  // namespace

void gather_sample(const unsigned char* base, const float* norms, int row_bytes, int64_t m, int64_t rows,
                   unsigned char* out, float* out_norms, cudaStream_t s) {
  const int words = row_bytes / 4;
  gather_sample_kernel<<<blocks_for(rows * words, 256), 256, 0, s>>>(
      reinterpret_cast<const uint32_t*>(base), norms, words, m, rows, reinterpret_cast<uint32_t*>(out), out_norms);
  GKNN_CUDA_CHECK_LAUNCH();
}

void thresholds_from_sample(const float* sample_keys, int64_t stride, int64_t nq, int last, uint64_t* thresholds,
                            cudaStream_t s) {
  thresholds_kernel<<<blocks_for(nq, 256), 256, 0, s>>>(sample_keys, stride, nq, last, thresholds);
  GKNN_CUDA_CHECK_LAUNCH();
}

void settle_candidates(const uint64_t* candidates, const unsigned* counts, int64_t lists, int k, const int* rows,
                       float* out_keys, int64_t* out_labels, int64_t out_stride, int64_t label_offset,
                       uint64_t* next, int* failed, unsigned* failed_count, cudaStream_t s) {
  if (lists == 0) return;
  settle_kernel<<<static_cast<unsigned>(lists), kSettleThreads, 0, s>>>(
      candidates, counts, k, rows, out_keys, out_labels, out_stride, label_offset, next, failed, failed_count);
  GKNN_CUDA_CHECK_LAUNCH();
}

void gather_failed(const unsigned char* queries, int row_bytes, const uint64_t* next, const int* failed, int64_t n,
                   unsigned char* out, uint64_t* out_thresholds, cudaStream_t s) {
  const int words = row_bytes / 4;
  gather_failed_kernel<<<blocks_for(n * words, 256), 256, 0, s>>>(reinterpret_cast<const uint32_t*>(queries), words,
                                                                 next, failed, n, reinterpret_cast<uint32_t*>(out),
                                                                 out_thresholds);
  GKNN_CUDA_CHECK_LAUNCH();
}

}  // namespace gknn::detail::cuda::fused_large_k
