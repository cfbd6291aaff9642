// merge.cu: merge-path merge, one thread per output element.
//
// Output position j of a row takes i elements from a and j - i from b, where i is the smallest value in
// [max(0, j - b.len), min(j, a.len)] for which "a[i] ranks before b[j-i-1]" is false (that predicate is true
// for every smaller i and false for every larger one, since a ascends and b's index descends as i grows). The
// j-th output is then a[i] if a[i] exists and ranks before b[j-i] (or b is exhausted), else b[j-i]. Every
// thread does its binary search independently: no synchronisation, O(log k) per output.
#include <algorithm>

#include "core/order.hpp"
#include "cuda/common/error.cuh"
#include "cuda/pipeline/merge.cuh"

namespace gknn::cuda_detail {
namespace {

constexpr int kThreads = 128;

__global__ void merge_kernel(SortedLists a, SortedLists b, int64_t rows, int64_t out_len, float* __restrict__ out_keys,
                             int64_t* __restrict__ out_labels, int64_t out_stride) {
  const int64_t j = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (j >= out_len) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const float* ak = a.keys + r * a.stride;
    const int64_t* al = a.labels + r * a.stride;
    const float* bk = b.keys + r * b.stride;
    const int64_t* bl = b.labels + r * b.stride;
    int64_t lo = j > b.len ? j - b.len : 0, hi = j < a.len ? j : a.len;
    while (lo < hi) {  // smallest i in [lo, hi] with !take_more_from_a(i); hi always qualifies
      const int64_t i = lo + (hi - lo) / 2;
      const bool take_more_from_a = detail::ranks_before(ak[i], al[i], bk[j - i - 1], bl[j - i - 1]);
      if (take_more_from_a) lo = i + 1;
      else hi = i;
    }
    const int64_t i = lo, jb = j - i;
    const bool from_a = i < a.len && (jb >= b.len || detail::ranks_before(ak[i], al[i], bk[jb], bl[jb]));
    out_keys[r * out_stride + j] = from_a ? ak[i] : bk[jb];
    out_labels[r * out_stride + j] = from_a ? al[i] : bl[jb];
  }
}

}  // namespace

void merge_sorted_lists(const SortedLists& a, const SortedLists& b, int64_t rows, int64_t out_len, float* out_keys,
                        int64_t* out_labels, int64_t out_stride, cudaStream_t stream) {
  if (rows == 0 || out_len == 0) return;
  const dim3 grid(static_cast<unsigned>((out_len + kThreads - 1) / kThreads),
                  static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
  merge_kernel<<<grid, kThreads, 0, stream>>>(a, b, rows, out_len, out_keys, out_labels, out_stride);
  GKNN_CUDA_CHECK_LAUNCH();
}

}  // namespace gknn::cuda_detail
