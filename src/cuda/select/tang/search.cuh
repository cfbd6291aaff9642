// search.cuh: the hierarchical partition (Tang et al. III-E): the per-group minimum of the bottom-up
// construction and the top-down search, as host-and-device code over one row.
//
// Bottom-up: level l+1 holds the best entry of each group of G consecutive entries of level l, until a level
// has at most k entries. Top-down: every entry of the top level is offered to the queue; then, level by
// level, only the children of the entries the queue kept are offered to a fresh queue.
//
// Why this is exact (in the total order): every entry of a level is the best element of a contiguous range
// of columns, and it ranks exactly as that element does. If an element e is among the k best of the row,
// its ancestor a at a level is no worse than e; were a not among the k best children offered at that level,
// k offered entries would rank before a, hence k distinct elements before e: a contradiction. So the
// ancestors of the k best always survive, down to level 0, where the entries are the elements themselves.
#pragma once

#include <cstdint>

#include "cuda/select/tang/buffer.cuh"
#include "cuda/select/tang/entry.cuh"
#include "cuda/select/tang/layout.hpp"

namespace gknn::detail::cuda::tang {

/// One row of one level: n entries' keys and, with explicit labels, the labels of their best elements.
struct LevelRow {
  const float* keys;
  const int64_t* labels;  ///< null without explicit labels
  int32_t size;
};

/// Where the levels of every row live. Level 0 is the input; levels 1..levels are the workspace arrays of a
/// HierarchyLayout (rows x size[l], row-major, so their row stride is size[l]).
struct HierarchyView {
  int levels = 0;
  int group = 4;
  int32_t size[kMaxLevels + 1] = {};
  const float* keys[kMaxLevels + 1] = {};
  const int64_t* labels[kMaxLevels + 1] = {};
  int64_t stride[kMaxLevels + 1] = {};

  GKNN_HD LevelRow row(int level, int64_t r) const {
    const int64_t at = r * stride[level];
    return {keys[level] + at, labels[level] ? labels[level] + at : nullptr, size[level]};
  }
};

/// Best entry of src[first, last) in the total order: (key, label) with labels, else (key, position), which
/// a strict "<" scanning left to right gives by keeping the first of equal keys.
GKNN_HD void group_best(const LevelRow& src, int32_t first, int32_t last, float& key, int64_t& label) {
  key = src.keys[first];
  label = src.labels ? src.labels[first] : 0;
  for (int32_t c = first + 1; c < last; ++c) {
    const float k2 = src.keys[c];
    if (src.labels) {
      const int64_t l2 = src.labels[c];
      if (detail::ranks_before(k2, l2, key, label)) {
        key = k2;
        label = l2;
      }
    } else if (k2 < key) {
      key = k2;
    }
  }
}

/// Top-down search of one row (warp-uniform: loop bounds depend only on the shape of the launch).
/// `row(l)` gives the row's LevelRow at level l; `cand` has room for the queue's capacity.
template <class W, bool Buffered, class Queue, class E, class RowAt>
GKNN_HD void top_down(Queue& q, CandidateBuffer<E>& buffer, Candidate* cand, const RowAt& row, int levels,
                      int group, bool active, const QueueShape& s) {
  const LevelRow top = row(levels);
  for (int32_t p = 0; p < top.size; ++p)
    offer<W, Buffered>(q, buffer, active, active ? top.keys[p] : INFINITY, top.labels, p, s);
  drain<W, Buffered>(q, buffer, s);

  for (int level = levels - 1; level >= 0; --level) {
    const LevelRow parents = row(level + 1);
    const LevelRow children = row(level);
    const int kept = active ? q.collect(cand, parents.size, s) : 0;
    q.reset(s);
    const int bound = s.k < parents.size ? s.k : parents.size;  // the same in every lane
    for (int i = 0; i < bound; ++i) {
      const Candidate parent = i < kept ? cand[i] : Candidate{INFINITY, -1};
      // A group whose best entry is already worse than the head cannot contribute (its other entries are
      // worse still): the search descends only into groups that beat the current k-th entry.
      const bool live = parent.pos >= 0 && !(parent.key > q.head.key);
      const int64_t first = int64_t(parent.pos) * group;
      for (int g = 0; g < group; ++g) {
        const int64_t child = first + g;
        const bool valid = live && child < children.size;
        offer<W, Buffered>(q, buffer, valid, valid ? children.keys[child] : INFINITY, children.labels,
                           static_cast<int32_t>(child), s);
      }
    }
    drain<W, Buffered>(q, buffer, s);
  }
}

}  // namespace gknn::detail::cuda::tang
