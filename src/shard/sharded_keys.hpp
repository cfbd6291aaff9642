// sharded_keys.hpp: the ShardedIndex's search before finalisation, for layers that merge further (gknn::mpi).
#pragma once

#include <vector>

#include "core/backend.hpp"
#include "gknn/sharded_index.hpp"
#include "shard/segments.hpp"

namespace gknn::detail {

/// Where a search may leave its key lists on a device instead of returning them (gknn::mpi: the ranks' lists merged
/// on the root's device): taken when the search is sharded and unguarded and all the index's rows are on one CUDA
/// shard, and `lists` has room on its device.
struct DeviceListsTarget {
  cuda::ProcessListMerge* lists = nullptr;
  bool written = false;  ///< the lists were written there (the returned keys then hold no entries)
  GlobalRows rows;       ///< when written: the lists' row indices (the shard's rows) -> the index's rows
};

struct ShardedAccess {
  /// The user's params checked against the index (metric, k > 0, p), as ShardedIndex::search uses them.
  static SearchParams checked_params(const ShardedIndex& index, const SearchParams& params);
  /// Validated search in key form (keys.hpp) with global indices: q x min(k, size()) ascending keys. An empty
  /// index gives q x 0 (an MPI rank without rows); `queries` are the user's (cosine rows normalised here).
  /// When the exactness guard re-ranked the keys, `exact` (if given) gets their float64 values (q x k; left empty
  /// otherwise: the float keys are then the path's own, exact on the data the guard lets through).
  /// With `on_device`, the lists may be left there instead (see DeviceListsTarget).
  static KeyResult search_keys(const ShardedIndex& index, FloatView queries, const SearchParams& checked,
                               HostArray<double>* exact = nullptr, DeviceListsTarget* on_device = nullptr);
};

}  // namespace gknn::detail
