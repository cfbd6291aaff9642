// sort_output.cuh: sorts each row's k selected (key, label) pairs in the total order with CUB radix sort
// (thesis 4.3: "Radix sort ... uses a constant number of passes over global memory").
//
// Column labels (labels == nullptr): one sort of 64-bit keys (the ordered key directly above the column bits,
// ordered.cuh), keys only, over only the bits that can be set. User labels: a sort by label, then a stable sort by key.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "cuda/select/select.cuh"

namespace gknn::detail::cuda::large_k {

struct SortPlan {
  int64_t chunk_rows = 0;  ///< rows sorted per CUB call (1: a device-wide sort per row)
  size_t bytes = 0;        ///< workspace of one call
};

/// room: bytes the caller can lend anyway (chunks are sized to fit it when rows allow).
SortPlan plan_output_sort(int64_t rows, int64_t cols, int64_t k, bool user_labels, bool row_by_row, size_t room);
void sort_output(const SelectOutput& out, int64_t rows, int64_t cols, int64_t k, bool user_labels,
                 int64_t label_offset, void* ws, const SortPlan& plan, cudaStream_t stream);

}  // namespace gknn::detail::cuda::large_k
