// entry.cuh: the element of Tang et al.'s queues and the warp policies of the "aligned" and "buffered"
// votes. Host-and-device code (core/hd.hpp): the host emulation test runs the very same queue code.
//
// An entry is (key, position) plus, when the rows carry explicit labels, the label. Two entries compare in
// the library's total order (core/order.hpp: key, then label); without explicit labels the label is
// label_offset + column, so comparing positions is the same order and saves 8 bytes per queue slot.
// At the levels of the hierarchical partition the position is the entry's index in its level; ordering by
// it is still the order of the groups' best elements, because groups are contiguous ranges of columns.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/hd.hpp"
#include "core/order.hpp"

// Unrolling pragmas for the device pass only (host compilers warn about unknown pragmas).
#if defined(__CUDA_ARCH__)
#define GKNN_TANG_UNROLL _Pragma("unroll")
#define GKNN_TANG_NO_UNROLL _Pragma("unroll 1")
#else
#define GKNN_TANG_UNROLL
#define GKNN_TANG_NO_UNROLL
#endif

namespace gknn::detail::cuda::tang {

/// Entry of rows without explicit labels (8 bytes): the position orders ties.
struct ColumnEntry {
  float key;
  int32_t pos;

  GKNN_HD int32_t order() const { return pos; }
  GKNN_HD int64_t label(int64_t label_offset) const { return label_offset + pos; }
  /// Worse than every real entry: fills an empty queue (positions are < INT32_MAX, see check_options).
  static GKNN_HD ColumnEntry worst() { return {INFINITY, INT32_MAX}; }
  /// Better than every real entry: pads a merge queue beyond k (never evicted, never reported).
  static GKNN_HD ColumnEntry phantom() { return {-INFINITY, -1}; }
  /// Builds the entry of `key` at `pos` (labels unused) and says whether it ranks before `head`.
  static GKNN_HD bool admit(float key, const int64_t* /*labels*/, int32_t pos, const ColumnEntry& head,
                            ColumnEntry& out) {
    out = {key, pos};
    return detail::ranks_before(out.key, out.pos, head.key, head.pos);
  }
};

/// Entry of rows with explicit labels (16 bytes): the label orders ties and is what is reported.
struct LabelEntry {
  float key;
  int32_t pos;
  int64_t id;  ///< the explicit label

  GKNN_HD int64_t order() const { return id; }
  GKNN_HD int64_t label(int64_t /*label_offset*/) const { return id; }
  static GKNN_HD LabelEntry worst() { return {INFINITY, INT32_MAX, INT64_MAX}; }
  static GKNN_HD LabelEntry phantom() { return {-INFINITY, -1, INT64_MIN}; }
  /// The label is read only when the key alone does not reject the element (labels[pos] is a scattered
  /// global read, rare on distance-like rows).
  static GKNN_HD bool admit(float key, const int64_t* labels, int32_t pos, const LabelEntry& head, LabelEntry& out) {
    out = {key, pos, INT64_MAX};
    if (key > head.key) return false;
    out.id = labels[pos];
    return detail::ranks_before(out.key, out.id, head.key, head.id);
  }
};

template <class E>
GKNN_HD bool ranks_before(const E& a, const E& b) {
  return detail::ranks_before(a.key, a.order(), b.key, b.order());
}

/// True for an entry of a level of `n` entries (not worst() nor phantom()).
template <class E>
GKNN_HD bool is_real(const E& e, int32_t n) {
  return e.pos >= 0 && e.pos < n;
}

/// A parent whose children the top-down search visits: its key (to skip groups that cannot beat the
/// queue's head) and its position in its level.
struct Candidate {
  float key;
  int32_t pos;
};

/// Runtime shape of a queue, the same for every row of a launch (so loops over it are warp-uniform).
struct QueueShape {
  int k = 0;         ///< results per row
  int capacity = 0;  ///< elements the queue holds: k, or merge_capacity(k, m) for the merge queue
  int m = 8;         ///< merge queue: size of the first two levels
  bool aligned = false;  ///< merge queue: the warp merges a level whenever any of its threads must
};

/// Votes of the 32 threads of a warp. Every caller of any() is warp-uniform code (all 32 lanes call it).
struct DeviceWarp {
  static GKNN_HD bool any(bool p) {
#if defined(__CUDA_ARCH__)
    return __any_sync(0xffffffffu, p);
#else
    return p;
#endif
  }
};

/// Host emulation of one lane alone: a vote is the lane's own predicate.
struct SoloWarp {
  static GKNN_HD bool any(bool p) { return p; }
};

/// Host emulation of the worst case of aligned votes: some other lane always wants to merge or flush, so
/// every vote passes (every merge level is merged, every buffer flushed at every element).
struct EagerWarp {
  static GKNN_HD bool any(bool) { return true; }
};

}  // namespace gknn::detail::cuda::tang
