// merge.hpp: the exact merge of partial top-k lists (one per shard, device or MPI rank) into one top-k list.
//
// Every part holds, for each query row, its best entries in KEY form (keys.hpp: ascending keys, before any
// sqrt/pow/negation of finalize) with GLOBAL base indices, sorted in the total order (order.hpp). Because the
// parts partition the base, the k best of their union under (key, index) are exactly the k best of the whole
// base: merging keys, not reported values, keeps L2 and Lp exact where sqrt/pow map distinct keys to one value.
// The one-process ShardedIndex and the MPI layer both merge here.
#pragma once

#include <cstdint>
#include <vector>

#include "core/backend.hpp"

namespace gknn::detail {

/// One part's lists: `rows` rows of `k` entries each (row-major, row stride k). k may be 0 (an empty shard).
/// Keys are float32, or float64 where the parts carry the exactness guard's float64 keys (MPI ranks: two rows whose
/// float64 keys differ may round to one float32 key on different ranks; only the float64 keys order them as one
/// device does).
template <class Key>
struct KeyListsOf {
  const Key* keys = nullptr;
  const int64_t* indices = nullptr;
  int64_t rows = 0;
  int64_t k = 0;
};
using KeyListsView = KeyListsOf<float>;

inline KeyListsView lists_of(const KeyResult& r) { return {r.distances.data(), r.indices.data(), r.rows, r.k}; }

/// Per row, the `k` first entries of the union of the parts in the total order (a k-way merge of sorted lists).
/// Every part must have `rows` rows, and the parts together at least k entries per row (k <= total base rows).
/// Rows are merged in parallel (OpenMP, `threads`; 0 = all hardware threads).
KeyResult merge_key_lists(const std::vector<KeyListsView>& parts, int64_t rows, int64_t k, int threads = 0);

/// The same merge into rows x k arrays of the caller's, which may be the storage of a part whose k is k (each row is
/// merged into a buffer of its thread first): a merge into the first part's lists allocates no result.
template <class Key>
void merge_key_lists_into(const std::vector<KeyListsOf<Key>>& parts, int64_t rows, int64_t k, int threads,
                          Key* out_keys, int64_t* out_indices);

/// out[i] = float(keys[i]) for i < count (round to nearest, as one device's guard rounds its float64 keys), in ranges
/// on the host pool: 10k x 100 keys were a millisecond on one thread after a guarded sharded merge.
void round_keys_into(const double* keys, float* out, int64_t count);

}  // namespace gknn::detail
