// sharded_keys.hpp: the ShardedIndex's search before finalisation, for layers that merge further (gknn::mpi).
#pragma once

#include "core/backend.hpp"
#include "gknn/sharded_index.hpp"

namespace gknn::detail {

struct ShardedAccess {
  /// The user's params checked against the index (metric, k > 0, p), as ShardedIndex::search uses them.
  static SearchParams checked_params(const ShardedIndex& index, const SearchParams& params);
  /// Validated search in key form (keys.hpp) with global indices: q x min(k, size()) ascending keys. An empty
  /// index gives q x 0 (an MPI rank without rows); `queries` are the user's (cosine rows normalised here).
  static KeyResult search_keys(const ShardedIndex& index, FloatView queries, const SearchParams& checked);
};

}  // namespace gknn::detail
