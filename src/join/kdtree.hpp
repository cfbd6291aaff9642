// kdtree.hpp: exact k-nearest search over the base with nanoflann's kd-tree (the CPU side of the join).
#pragma once

#include <cstdint>
#include <memory>

#include "gknn/types.hpp"
#include "join/neighbours.hpp"

namespace gknn::detail::join {

class KdTree {
 public:
  explicit KdTree(FloatView base);
  ~KdTree();
  KdTree(const KdTree&) = delete;
  KdTree& operator=(const KdTree&) = delete;

  /// The k nearest base rows of `query` other than `exclude` (-1: none), exact in the total order: distances are
  /// recomputed in float64 as the oracle does and ties at the k-th distance are all visited, the smaller index
  /// kept. `best` must have capacity k and be empty.
  void search(const float* query, int64_t exclude, BoundedNeighbours& best) const;

  struct Impl;  ///< one nanoflann tree per dimension 1..8 (kdtree.cpp)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gknn::detail::join
