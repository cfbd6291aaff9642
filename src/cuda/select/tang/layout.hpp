// layout.hpp: host-side arithmetic of Tang et al.'s k-selection (plain C++, no CUDA): option checks, queue
// capacities, compile-time queue buckets, and the memory layout of the hierarchical partition.
//
// Shared by the CUDA launcher, the host emulation test and the benchmark, so the memory cost the benchmark
// prints is the one the launcher allocates.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cuda/select/buckets.hpp"
#include "cuda/select/tang/tuning.hpp"
#include "gknn/error.hpp"
#include "gknn/types.hpp"

namespace gknn::detail::cuda::tang {

/// Largest k served. One thread keeps a whole queue in local memory, so the queue array is sized by a
/// compile-time bucket (tuning.hpp's QueueBuckets); 1024 matches the paper's largest k.
inline constexpr int64_t kMaxK = 1024;
static_assert(QueueBuckets::largest == kMaxK);
/// Levels above the input the hierarchy can have: G >= 2 and cols < 2^31 give at most 31.
inline constexpr int kMaxLevels = 32;
/// Limits of the options (TangOptions::m, ::group), checked by check_options.
inline constexpr int kMaxM = 512;
inline constexpr int kMaxGroup = 1024;

inline bool is_power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

inline int64_t next_power_of_two(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

/// Throws gknn::Error naming the option or argument that a Tang queue cannot serve.
inline void check_options(const TangOptions& t, int64_t cols, int64_t k) {
  GKNN_EXPECT(is_power_of_two(t.m) && t.m <= kMaxM, ErrorCode::InvalidArgument, "select option tang.m = ", t.m,
              ": the merge queue's level size must be a power of two in [1, ", kMaxM, "]");
  GKNN_EXPECT(t.group >= 2 && t.group <= kMaxGroup, ErrorCode::InvalidArgument, "select option tang.group = ",
              t.group, ": the hierarchical partition's group size must be in [2, ", kMaxGroup, "]");
  GKNN_EXPECT(cols < INT32_MAX, ErrorCode::Unsupported, "Tang queues keep 32-bit column positions: rows of ", cols,
              " columns are too long (at most ", INT32_MAX - 1, ")");
  GKNN_EXPECT(k >= 1 && k <= kMaxK && k <= cols, ErrorCode::Internal, "Tang queue called with k = ", k,
              " for rows of ", cols, " columns (must be 1 <= k <= min(cols, ", kMaxK, "))");
}

/// Elements a merge queue holds for k: levels m, m, 2m, 4m, ... add up to a power of two >= 2m. The
/// capacity - k slots beyond k are filled with phantoms that rank before every real element, so the queue's
/// head is still the k-th best (see MergeQueue).
inline int64_t merge_capacity(int64_t k, int m) { return std::max(next_power_of_two(k), int64_t(2) * m); }

/// Smallest bucket >= capacity (capacity <= kMaxK).
inline int bucket_for(int64_t capacity) { return QueueBuckets::smallest_at_least(capacity); }

/// The hierarchical partition of every row: level 0 is the input row (n_0 = cols); level l+1 holds, for
/// each group of G consecutive entries of level l, the best entry (its key, and its label when the rows have
/// explicit labels). Levels are built while n_l > k, so the top level has at most k entries.
struct HierarchyLayout {
  int levels = 0;                        ///< T: levels built above the input (0 when cols <= k)
  int32_t size[kMaxLevels + 1] = {};     ///< n_l, entries per row at level l (size[0] = cols)
  size_t key_offset[kMaxLevels + 1] = {};    ///< byte offset of level l's keys (rows x n_l floats)
  size_t label_offset[kMaxLevels + 1] = {};  ///< byte offset of level l's labels (rows x n_l int64), if any
  size_t bytes = 0;                      ///< workspace bytes: the memory cost of the partition
};

inline size_t align256(size_t bytes) { return (bytes + 255) / 256 * 256; }

/// Memory cost: rows * sum_{l=1..T} n_l * (4 bytes of key + 8 bytes of label if with_labels), each array
/// 256-byte aligned. With G = 4, sum n_l is about cols / 3 (the paper's N/3).
inline HierarchyLayout hierarchy_layout(int64_t rows, int64_t cols, int64_t k, int group, bool with_labels) {
  HierarchyLayout h;
  h.size[0] = static_cast<int32_t>(cols);
  for (int64_t n = cols; n > k && h.levels < kMaxLevels;) {
    n = (n + group - 1) / group;
    ++h.levels;
    h.size[h.levels] = static_cast<int32_t>(n);
    h.key_offset[h.levels] = h.bytes;
    h.bytes += align256(static_cast<size_t>(rows * n) * sizeof(float));
    if (with_labels) {
      h.label_offset[h.levels] = h.bytes;
      h.bytes += align256(static_cast<size_t>(rows * n) * sizeof(int64_t));
    }
  }
  return h;
}

/// The workspace a Tang queue may need for any options (SelectWorkspaceFn carries no options): the
/// partition's cost at the smallest group size (2) with labels, the largest it can be.
inline size_t workspace_bound(int64_t rows, int64_t cols, int64_t k) {
  return hierarchy_layout(rows, cols, k, 2, true).bytes;
}

}  // namespace gknn::detail::cuda::tang
