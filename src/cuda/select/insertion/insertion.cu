// insertion.cu: Garcia's modified insertion sort (document 002), one thread per row.
//
// Each thread scans its row once and keeps only the k best (key, label) pairs, sorted in the total order
// (core/order.hpp): an element that ranks before the current k-th is inserted by shifting the worse ones down,
// and the old k-th drops out. Comparing whole (key, label) pairs makes the result independent of the scan order,
// so user labels in any order tie-break correctly.
//
// As in the document, the k lists live in global memory laid out k x rows (element i of row r at i * rows + r):
// threads of a warp working at the same list position touch consecutive addresses. The list is then copied to
// the row-major output. Cost: O(cols * k) per row in the worst case (descending input), O(cols) when few
// elements beat the k-th; max_k (entries.inc) bounds that worst case. Block sizes: tuning.hpp.
#include <algorithm>

#include "core/order.hpp"
#include "cuda/select/families.cuh"
#include "cuda/select/insertion/insert_bounded.hpp"
#include "cuda/select/insertion/tuning.hpp"

namespace gknn::detail::cuda {
namespace {

constexpr int kThreads = insertion::kPolicy.threads;

__global__ void insertion_kernel(SelectInput in, int64_t k, float* __restrict__ list_keys,
                                 int64_t* __restrict__ list_labels) {
  const int64_t r = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (r >= in.rows) return;
  const int64_t rows = in.rows;
  const float* keys = in.keys + r * in.stride;
  const int64_t* labels = in.labels ? in.labels + r * in.stride : nullptr;
  float* my_keys = list_keys + r;  // entry i at my_keys[i * rows]: coalesced across the warp
  int64_t* my_labels = list_labels + r;
  int64_t len = 0;
  float worst_key = 0.f;  // the k-th entry, kept in registers once the list is full (the common rejection test)
  int64_t worst_label = 0;
  for (int64_t c = 0; c < in.cols; ++c) {
    const float key = keys[c];
    const int64_t label = labels ? labels[c] : in.label_offset + c;
    if (len == k && !detail::ranks_before(key, label, worst_key, worst_label)) continue;
    len = insert_bounded(my_keys, my_labels, rows, len, k, key, label);
    if (len == k) {
      worst_key = my_keys[(k - 1) * rows];
      worst_label = my_labels[(k - 1) * rows];
    }
  }
}

/// Transposes the k x rows lists into the row-major output.
__global__ void insertion_output_kernel(const float* __restrict__ list_keys, const int64_t* __restrict__ list_labels,
                                        int64_t rows, int64_t k, SelectOutput out) {
  const int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  for (int64_t i = blockIdx.y; i < k; i += gridDim.y) {
    out.keys[r * out.stride + i] = list_keys[i * rows + r];
    out.labels[r * out.stride + i] = list_labels[i * rows + r];
  }
}

size_t list_bytes(int64_t rows, int64_t k) { return static_cast<size_t>(rows * k) * sizeof(float); }

}  // namespace

size_t insertion_workspace(int64_t rows, int64_t /*cols*/, int64_t k) {
  const size_t key_bytes = (list_bytes(rows, k) + 255) / 256 * 256;
  return key_bytes + static_cast<size_t>(rows * k) * sizeof(int64_t);
}

void insertion_run(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx) {
  if (in.rows == 0) return;
  auto* base = static_cast<unsigned char*>(ctx.workspace.get(insertion_workspace(in.rows, in.cols, k)));
  auto* list_keys = reinterpret_cast<float*>(base);
  auto* list_labels = reinterpret_cast<int64_t*>(base + (list_bytes(in.rows, k) + 255) / 256 * 256);
  const unsigned blocks = static_cast<unsigned>((in.rows + kThreads - 1) / kThreads);
  insertion_kernel<<<blocks, kThreads, 0, ctx.stream>>>(in, k, list_keys, list_labels);
  GKNN_CUDA_CHECK_LAUNCH();
  const dim3 grid(blocks, static_cast<unsigned>(std::min<int64_t>(k, insertion::kPolicy.output_columns)));
  insertion_output_kernel<<<grid, kThreads, 0, ctx.stream>>>(list_keys, list_labels, in.rows, k, out);
  GKNN_CUDA_CHECK_LAUNCH();
}

}  // namespace gknn::detail::cuda
