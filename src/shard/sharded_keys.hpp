// sharded_keys.hpp: the ShardedIndex's search before finalisation, for layers that merge further (gknn::mpi).
#pragma once

#include <vector>

#include "core/backend.hpp"
#include "gknn/sharded_index.hpp"

namespace gknn::detail {

struct ShardedAccess {
  /// The user's params checked against the index (metric, k > 0, p), as ShardedIndex::search uses them.
  static SearchParams checked_params(const ShardedIndex& index, const SearchParams& params);
  /// Validated search in key form (keys.hpp) with global indices: q x min(k, size()) ascending keys. An empty
  /// index gives q x 0 (an MPI rank without rows); `queries` are the user's (cosine rows normalised here).
  /// When the exactness guard re-ranked the keys, `exact` (if given) gets their float64 values (q x k; left empty
  /// otherwise: the float keys are then the path's own, exact on the data the guard lets through).
  static KeyResult search_keys(const ShardedIndex& index, FloatView queries, const SearchParams& checked,
                               std::vector<double>* exact = nullptr);
};

}  // namespace gknn::detail
