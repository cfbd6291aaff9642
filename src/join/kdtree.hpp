// kdtree.hpp: exact k-nearest search over the base with nanoflann's kd-trees (the CPU side of the join), one per
// spatial part of the base, the parts' trees built in parallel.
//
// nanoflann is header-only (Debian libnanoflann-dev) and optional at build time, so that a GPU host without the
// package still builds the GPU join. A build without it has no kd-tree: knn_join refuses the modes that need one
// (cpu, hybrid, round_robin) with Unsupported naming the package, rather than answering them by an O(n) scan per
// query (the scan below is kept for the one case where it is the right algorithm: a base smaller than k, where
// every base row is in every answer, and for the tests' direct run_join calls).
#pragma once

#include <cstdint>
#include <memory>

#include "gknn/types.hpp"
#include "join/neighbours.hpp"

namespace gknn::detail::join {

class KdTree {
 public:
  /// `parts` > 0 forces that many parts (rounded down to a power of two, at most 64 and one per row: the tests'
  /// way to cut small sets); 0 picks them: one per core, each of at least 2^15 rows.
  explicit KdTree(FloatView base, int parts = 0);
  ~KdTree();
  KdTree(const KdTree&) = delete;
  KdTree& operator=(const KdTree&) = delete;

  /// The k nearest base rows of `query` other than `exclude` (-1: none), exact in the total order: distances are
  /// recomputed in float64 as the oracle does and ties at the k-th distance are all visited, the smaller index
  /// kept. `best` must have capacity k and be empty.
  void search(const float* query, int64_t exclude, BoundedNeighbours& best) const;

  /// Whether this build has the kd-tree (nanoflann was found at configure time), and a test may not pretend
  /// otherwise (set_unavailable_for_testing).
  static bool available();
  /// Test hook: makes available() false (true) or restores the build's answer (false), to cover the refusal.
  static void set_unavailable_for_testing(bool unavailable);
  /// The package that provides the kd-tree, for error messages.
  static constexpr const char* kPackage = "nanoflann (nanoflann.hpp; Debian/Ubuntu: libnanoflann-dev)";

  struct Impl;  ///< a forest of nanoflann trees over median-cut parts (kdtree.cpp); without nanoflann a scan

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gknn::detail::join
