// merge.cuh: exact merge of two sorted top-k lists per row (database tiles -> one running top-k).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace gknn::detail::cuda {

/// Sorted lists of `rows` rows, `stride` elements apart, each row holding `len` valid (key, label) pairs.
struct SortedLists {
  const float* keys;
  const int64_t* labels;
  int64_t stride;
  int64_t len;
};

/// out row r = the first out_len elements of merge(a row r, b row r) in the total order (core/order.hpp).
/// Labels of a and b must be disjoint (distinct base rows), so the total order is strict and the merge exact.
/// Requires out_len <= a.len + b.len; out must not alias a or b.
void merge_sorted_lists(const SortedLists& a, const SortedLists& b, int64_t rows, int64_t out_len, float* out_keys,
                        int64_t* out_labels, int64_t out_stride, cudaStream_t stream);

}  // namespace gknn::detail::cuda
