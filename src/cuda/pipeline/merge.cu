// merge.cu: merge of two sorted top-k lists, one thread per output element (the search lives in merge_path.hpp).
#include <algorithm>

#include "cuda/common/error.cuh"
#include "cuda/pipeline/merge.cuh"
#include "cuda/pipeline/merge_path.hpp"

namespace gknn::detail::cuda {
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
    const MergePick pick = merge_path_pick(ak, al, a.len, bk, bl, b.len, j);
    out_keys[r * out_stride + j] = pick.from_a ? ak[pick.index] : bk[pick.index];
    out_labels[r * out_stride + j] = pick.from_a ? al[pick.index] : bl[pick.index];
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

}  // namespace gknn::detail::cuda
