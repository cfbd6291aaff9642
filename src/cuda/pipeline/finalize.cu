// finalize.cu: see finalize.cuh. One block per row: the conversion is coalesced; the tie repair, which sqrt,
// pow, the added norm or the clamp at 0 make necessary only when distinct keys become one value, runs on one
// thread and only for rows where a disorder was detected.
#include <algorithm>

#include "core/keys.hpp"
#include "cuda/common/error.cuh"
#include "cuda/pipeline/finalize.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int64_t kMaxBlocks = 65535;

/// Heap sort of a[0..n) ascending (indices inside one run of equal values; O(n log n) whatever the run).
__device__ void heap_sort(int64_t* a, int64_t n) {
  auto sift = [a](int64_t root, int64_t end) {
    while (2 * root + 1 < end) {
      int64_t child = 2 * root + 1;
      if (child + 1 < end && a[child] < a[child + 1]) ++child;
      if (a[root] >= a[child]) return;
      const int64_t t = a[root];
      a[root] = a[child];
      a[child] = t;
      root = child;
    }
  };
  for (int64_t i = n / 2 - 1; i >= 0; --i) sift(i, n);
  for (int64_t end = n - 1; end > 0; --end) {
    const int64_t t = a[0];
    a[0] = a[end];
    a[end] = t;
    sift(0, end);
  }
}

/// Sorts the indices of every run of equal values (values are non-decreasing).
__device__ void repair_ties(const float* values, int64_t* indices, int64_t count) {
  for (int64_t begin = 0; begin < count;) {
    int64_t end = begin + 1;
    while (end < count && values[end] == values[begin]) ++end;
    if (end - begin > 1) heap_sort(indices + begin, end - begin);
    begin = end;
  }
}

__global__ void finalize_kernel(FinalizeArgs a) {
  __shared__ int disorder;
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    if (threadIdx.x == 0) disorder = 0;
    __syncthreads();
    const float offset = a.row_offsets ? a.row_offsets[r] : 0.f;
    float* values = a.values + r * a.k;
    int64_t* indices = a.indices + r * a.k;
    for (int64_t j = threadIdx.x; j < a.k; j += blockDim.x) {
      if (j < a.kept) {
        float key = a.keys[r * a.in_stride + j];
        if (a.row_offsets) key = fmaxf(0.f, key + offset);
        values[j] = detail::key_to_value(a.metric, a.p, key);
        indices[j] = a.labels[r * a.in_stride + j];
      } else {
        values[j] = detail::padding_value(a.metric);
        indices[j] = -1;
      }
    }
    __syncthreads();  // global writes of the block are visible to the block after the barrier
    for (int64_t j = threadIdx.x; j + 1 < a.kept; j += blockDim.x)
      if (values[j] == values[j + 1] && indices[j] > indices[j + 1]) disorder = 1;
    __syncthreads();
    if (disorder && threadIdx.x == 0) repair_ties(values, indices, a.kept);
    if (a.ids) {
      __syncthreads();
      for (int64_t j = threadIdx.x; j < a.kept; j += blockDim.x) indices[j] = a.ids[indices[j]];
    }
    __syncthreads();
  }
}

}  // namespace

void finalize_rows(const FinalizeArgs& args, cudaStream_t stream) {
  if (args.rows == 0 || args.k == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min(args.rows, kMaxBlocks));
  finalize_kernel<<<blocks, kThreads, 0, stream>>>(args);
  GKNN_CUDA_CHECK_LAUNCH();
}

}  // namespace gknn::detail::cuda
