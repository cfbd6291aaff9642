// row_sort.cuh: the one row sort of the CUDA backend — every row of (key, label) pairs sorted in the library's
// total order (ascending key, -0.0 equal to +0.0, ties by ascending label) with CUB's radix sorts, and the first
// `keep` pairs of each sorted row written out. Used by the sort-based selection (select/sort/: whole rows, keep
// k) and by the sorted output of sample/radix select (select/large_k/: the k selected pairs, in place).
//
// How ties come out in label order, by what the labels are:
//   * implied by the position (labels == nullptr: label_offset + position): the positions are in label order
//     already, so one stable sort of the keys carrying int32 positions;
//   * columns of a row (explicit, within a known span): one sort of 64-bit composite keys, the ordered key right
//     above the column's bits (primitives/ordered.cuh), over only the bits that can be set;
//   * any int64 labels: a sort of the labels carrying positions, then a stable sort of the keys gathered in
//     label order, carrying their rank in it.
// Keys are sorted canonical (-0.0 -> +0.0, since a radix sort orders bit patterns). The output takes the caller's
// own key (gathered by position) where the input is kept and the position known, else the canonical key: an
// in-place sort, or the composite path.
// CUB counts items in int: rows are sorted in chunks of at most INT_MAX pairs (and of what `room` holds); a
// plan of one row per chunk uses CUB's device-wide sort, for few long rows.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace gknn::detail::cuda {

struct RowSortInput {
  const float* keys = nullptr;
  const int64_t* labels = nullptr;  ///< null: the label of position j is label_offset + j
  int64_t stride = 0;               ///< elements between rows (of keys and labels)
  int64_t rows = 0;
  int64_t width = 0;  ///< pairs per row
  int64_t label_offset = 0;
  /// Explicit labels only: > 0 when every label lies in [label_offset, label_offset + label_span) (composite
  /// keys over only the bits the span needs); 0: any int64 labels.
  int64_t label_span = 0;
};

/// The first `keep` (<= width) pairs of every sorted row. May be the input itself (an in-place sort).
struct RowSortOutput {
  float* keys = nullptr;
  int64_t* labels = nullptr;
  int64_t stride = 0;
  int64_t keep = 0;
};

struct RowSortPlan {
  int64_t chunk_rows = 0;  ///< rows sorted per CUB call (1: a device-wide sort per row)
  size_t bytes = 0;        ///< workspace of sort_rows
};

/// Rows per chunk: one when row_by_row, else as many as `room` bytes of workspace hold (at least one), within
/// CUB's int item count. explicit_labels / label_span as in RowSortInput.
RowSortPlan plan_row_sort(int64_t rows, int64_t width, bool explicit_labels, int64_t label_span, bool row_by_row,
                          size_t room);
/// Sorts on `stream`; `workspace` holds plan.bytes (256-byte aligned). in.width must fit an int.
void sort_rows(const RowSortInput& in, const RowSortOutput& out, void* workspace, const RowSortPlan& plan,
               cudaStream_t stream);

}  // namespace gknn::detail::cuda
